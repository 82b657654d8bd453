//! Through an HTTP proxy, as ureq reads it from the process's environment: ALL_PROXY, HTTPS_PROXY or HTTP_PROXY
//! (the first set, for every request) and NO_PROXY. A proxy of the test's own (CONNECT tunnels and absolute-form
//! requests) in front of the fake Daytona counts what went through it. One test in a binary of its own: it sets
//! the process's environment.

mod fake_daytona;

use clap::Parser;
use fake_daytona::{Fake, FakeSandbox};
use runtime_sandbox_recorder::run;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A forward proxy on 127.0.0.1: its port and how many connections it forwarded.
fn proxy() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let forwarded = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&forwarded);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let count = Arc::clone(&count);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let mut parts = line.split_whitespace();
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("").to_string());
                let mut head = Vec::new();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    head.push(header);
                }
                let mut client = client;
                let (address, first) = if method == "CONNECT" {
                    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").unwrap();
                    (target.clone(), None)
                } else {
                    // Absolute form: http://host:port/path -> the origin form to host:port.
                    let rest = target.trim_start_matches("http://");
                    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
                    (authority.to_string(), Some(format!("{method} /{path} HTTP/1.1\r\n{}\r\n", head.concat())))
                };
                let Ok(mut server) = TcpStream::connect(&address) else { return };
                count.fetch_add(1, Ordering::SeqCst);
                if let Some(first) = first {
                    server.write_all(first.as_bytes()).unwrap();
                }
                let mut upstream = server.try_clone().unwrap();
                let buffered: Vec<u8> = reader.buffer().to_vec();
                upstream.write_all(&buffered).unwrap();
                let mut from_client = reader.into_inner();
                let to_server = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_client, &mut upstream);
                    let _ = upstream.shutdown(std::net::Shutdown::Write);
                });
                let mut buf = [0u8; 8192];
                loop {
                    match server.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if client.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = to_server.join();
            });
        }
    });
    (port, forwarded)
}

#[test]
fn the_listing_goes_through_the_proxy_the_environment_names_unless_no_proxy_says_otherwise() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(
        (0..3).map(|i| FakeSandbox::new(&format!("sb-{i}"), "org-1", &[("app", "runtime-scheduler")], "started")).collect(),
    );
    let (port, forwarded) = proxy();
    let list = || {
        let cli = Cli::try_parse_from([
            "runtime-sandbox-recorder", "--api-url", &fake.url, "--labels", r#"{"app":"runtime-scheduler"}"#,
            "--operation-label", "runtime-op", "--organization-id", "org-1", "--dry-run", "--allow-missing-operation-label",
        ])
        .unwrap();
        run(&cli, &|name| (name == "DAYTONA_API_KEY").then(|| "key-1".to_string()), &mut |_| {})
    };
    use runtime_sandbox_recorder::Cli;
    // SAFETY: this binary's only test; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("HTTPS_PROXY", format!("http://127.0.0.1:{port}")) };
    assert_eq!(list().unwrap().sandboxes, 3);
    let through = forwarded.load(Ordering::SeqCst);
    assert!(through >= 1, "nothing went through the proxy");
    unsafe { std::env::set_var("NO_PROXY", "127.0.0.1") };
    assert_eq!(list().unwrap().sandboxes, 3);
    assert_eq!(forwarded.load(Ordering::SeqCst), through, "NO_PROXY's host went through the proxy");
    unsafe {
        std::env::remove_var("HTTPS_PROXY");
        std::env::remove_var("NO_PROXY");
    }
}
