//! The Daytona edge over real TLS: a one-page HTTPS server on 127.0.0.1 whose certificate (for `localhost`) is
//! signed by a CA the test makes with openssl. The roots a run trusts: --ca-file, else SSL_CERT_FILE and
//! SSL_CERT_DIR (which replace the bundled roots, as OpenSSL's do), else the bundled roots. A certificate refused
//! for its CA or its name ends the run at once (exit 4, naming the host and the cause), never retried.

mod certs;

use clap::Parser;
use runtime_sandbox_recorder::{exit, run, Cli, Failure, Outcome};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const PAGE: &str = r#"{"items":[{"id":"sb-1","organizationId":"org-1","labels":{"app":"runtime-scheduler","runtime-op":"t"}}],"nextCursor":null}"#;

/// Serve PAGE over TLS to every connection; count the requests answered.
fn serve(dir: &Path) -> (u16, Arc<AtomicUsize>) {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("server.crt")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match tls.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            if request.windows(4).any(|w| w == b"\r\n\r\n") {
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                if tls.write_all(response.as_bytes()).is_ok() {
                    let _ = tls.flush();
                    count.fetch_add(1, Ordering::SeqCst);
                }
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        }
    });
    (port, answered)
}

fn list(url: &str, extra: &[&str], vars: &[(&str, String)]) -> Result<Outcome, Failure> {
    let mut args = vec![
        "runtime-sandbox-recorder", "--api-url", url, "--labels", r#"{"app":"runtime-scheduler"}"#, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--dry-run", "--backoff-ms", "10", "--timeout", "5",
    ];
    args.extend_from_slice(extra);
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let env = move |name: &str| {
        if name == "DAYTONA_API_KEY" {
            return Some("key-1".into());
        }
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    };
    run(&Cli::try_parse_from(args).unwrap(), &env, &mut |_| {})
}

#[test]
fn the_roots_a_run_trusts_and_a_refused_certificate() {
    let dir = PathBuf::from(format!("/tmp/recorder-https-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("certs")).unwrap();
    certs::make(&dir);
    std::fs::copy(dir.join("ca.pem"), dir.join("certs/test-ca.pem")).unwrap();
    let (port, answered) = serve(&dir);
    let url = format!("https://localhost:{port}/api");
    let path = |name: &str| dir.join(name).display().to_string();

    // The bundled roots do not know the test's CA: refused at once, saying why and where.
    let failure = list(&url, &[], &[]).err().unwrap();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
    assert!(failure.message.contains(&format!("localhost:{port}: TLS: the server's certificate is signed by an unknown CA")), "{}", failure.message);
    assert!(failure.message.contains("not retried"), "{}", failure.message);
    assert_eq!(answered.load(Ordering::SeqCst), 0);

    // SSL_CERT_FILE, SSL_CERT_DIR: the test's CA instead of the bundled roots.
    assert_eq!(list(&url, &[], &[("SSL_CERT_FILE", path("ca.pem"))]).unwrap().sandboxes, 1);
    assert_eq!(list(&url, &[], &[("SSL_CERT_DIR", path("certs"))]).unwrap().sandboxes, 1);
    // --ca-file wins over both, either way.
    assert_eq!(list(&url, &["--ca-file", &path("ca.pem")], &[("SSL_CERT_FILE", path("other.pem"))]).unwrap().sandboxes, 1);
    let failure = list(&url, &["--ca-file", &path("other.pem")], &[("SSL_CERT_FILE", path("ca.pem"))]).err().unwrap();
    assert!(failure.message.contains("unknown CA"), "{}", failure.message);
    // A certificate for another name than the URL's host.
    let by_address = format!("https://127.0.0.1:{port}/api");
    let failure = list(&by_address, &[], &[("SSL_CERT_FILE", path("ca.pem"))]).err().unwrap();
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains("not valid for this host name"), "{}", failure.message);
    // A variable without certificates is a configuration error.
    let failure = list(&url, &[], &[("SSL_CERT_FILE", path("san.ext"))]).err().unwrap();
    assert_eq!(failure.code, exit::USAGE, "{}", failure.message);
    assert_eq!(answered.load(Ordering::SeqCst), 3, "the three runs that trusted the CA");
    std::fs::remove_dir_all(&dir).unwrap();
}
