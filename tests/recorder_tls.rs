//! The recorder over TLS to a real PostgreSQL: a server of the test's own with `ssl = on`, a certificate for
//! `localhost` signed by a CA the test makes, and a `pg_hba.conf` with `hostssl` lines only (a connection without
//! TLS is refused). libpq's sslmode semantics, from a connection string, a URI or the PG* variables: verify-full
//! records on the certificate's host name and refuses (exit 6, saying why) another name or an unknown CA;
//! verify-ca checks the chain only; require and prefer encrypt; disable is refused by the server. The snapshot
//! table is read after every refused run: nothing recorded.

#[path = "../recorder/tests/certs/mod.rs"]
mod certs;
mod common;
#[path = "../recorder/tests/fake_daytona/mod.rs"]
mod fake_daytona;

use clap::Parser;
use fake_daytona::{Fake, FakeSandbox};
use postgres::{Client, NoTls};
use runtime_sandbox_recorder::{exit, run, Cli, Failure, Outcome};
use std::path::PathBuf;
use std::process::Command;

const SCOPE: &str = r#"{"app":"runtime-scheduler"}"#;
const LEDGER: &str = "tls_ledger";

struct Server {
    dir: PathBuf,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = common::as_postgres(&common::bindir().join("pg_ctl"), &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"], &self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start() -> Server {
    let port = common::port() + 30;
    let dir = PathBuf::from(format!("/tmp/runtime_sandbox-tls-{port}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    certs::make(&dir);
    let server = Server { dir: dir.clone(), port };
    let data = dir.join("data");
    common::as_postgres(&common::bindir().join("initdb"), &["-D", data.to_str().unwrap(), "-A", "trust", "-U", "postgres"], &dir).unwrap();
    for file in ["server.crt", "server.key"] {
        std::fs::copy(dir.join(file), data.join(file)).unwrap();
        let out = Command::new("chown").args(["postgres:postgres", data.join(file).to_str().unwrap()]).output().unwrap();
        assert!(out.status.success());
        std::fs::set_permissions(data.join(file), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut conf = std::fs::OpenOptions::new().append(true).open(data.join("postgresql.conf")).unwrap();
    use std::io::Write;
    writeln!(
        conf,
        "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'",
        dir.display()
    )
    .unwrap();
    // TLS or nothing over TCP; the socket for the test's own set-up.
    std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n").unwrap();
    let log = dir.join("log");
    common::as_postgres(&common::bindir().join("pg_ctl"), &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-w", "start"], &dir)
        .unwrap();
    server
}

fn socket(server: &Server) -> Client {
    postgres::Config::new()
        .host_path(&server.dir)
        .port(server.port)
        .user("postgres")
        .dbname("postgres")
        .connect(NoTls)
        .unwrap()
}

fn snapshots(server: &Server) -> i64 {
    socket(server).query_one(&format!("SELECT count(*) FROM {LEDGER}.provider_inventory_snapshots"), &[]).unwrap().get(0)
}

fn record(fake: &Fake, database: Option<&str>, vars: &[(&str, String)]) -> Result<Outcome, Failure> {
    let mut args = vec![
        "runtime-sandbox-recorder", "--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--ledger-schema", LEDGER, "--timeout", "5",
    ];
    if let Some(database) = database {
        args.extend(["--database", database]);
    }
    let cli = Cli::try_parse_from(args).unwrap();
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let env = move |name: &str| {
        if name == "DAYTONA_API_KEY" {
            return Some("key-1".to_string());
        }
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    };
    run(&cli, &env, &mut |_| {})
}

#[test]
fn the_recorder_connects_over_tls_with_libpqs_sslmodes() {
    let server = start();
    socket(&server)
        .batch_execute(&format!(
            "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
             DROP SCHEMA IF EXISTS {LEDGER} CASCADE; SELECT runtime_sandbox.install_ledger('{LEDGER}');"
        ))
        .unwrap();
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(
        (0..3).map(|i| FakeSandbox::new(&format!("sb-{i}"), "org-1", &[("app", "runtime-scheduler"), ("runtime-op", "t")], "started")).collect(),
    );
    let ca = server.dir.join("ca.pem").display().to_string();
    let other = server.dir.join("other.pem").display().to_string();
    let port = server.port;
    let recorded = |result: Result<Outcome, Failure>, what: &str| {
        let outcome = result.unwrap_or_else(|f| panic!("{what}: exit {} {}", f.code, f.message));
        assert!(outcome.snapshot_id.is_some(), "{what}");
    };
    let refused = |result: Result<Outcome, Failure>, why: &str, what: &str| {
        let failure = result.err().unwrap_or_else(|| panic!("{what}: recorded"));
        assert_eq!(failure.code, exit::DATABASE, "{what}: {}", failure.message);
        assert!(failure.message.contains(why), "{what}: {}", failure.message);
    };

    // verify-full on the certificate's name: recorded.
    let mut count = snapshots(&server);
    let full = format!("host=localhost port={port} user=postgres dbname=postgres sslmode=verify-full sslrootcert={ca}");
    recorded(record(&fake, Some(&full), &[]), "verify-full on localhost");
    count += 1;
    assert_eq!(snapshots(&server), count);

    // Another name, an unknown CA: refused, saying why and where; nothing recorded.
    let by_address = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=verify-full sslrootcert={ca}");
    refused(record(&fake, Some(&by_address), &[]), "not valid for this host name", "verify-full on 127.0.0.1");
    refused(record(&fake, Some(&by_address), &[]), &format!("127.0.0.1:{port}"), "the host named");
    let unknown = format!("host=localhost port={port} user=postgres dbname=postgres sslmode=verify-full sslrootcert={other}");
    refused(record(&fake, Some(&unknown), &[]), "unknown CA", "an unknown CA");
    // Without TLS the server's hostssl-only rules refuse the connection.
    let plain = format!("host=localhost port={port} user=postgres dbname=postgres sslmode=disable");
    refused(record(&fake, Some(&plain), &[]), "no encryption", "sslmode=disable");
    // verify-full without a root certificate is a configuration error, as in libpq.
    let no_root = format!("host=localhost port={port} user=postgres dbname=postgres sslmode=verify-full");
    let failure = record(&fake, Some(&no_root), &[]).err().unwrap();
    assert_eq!(failure.code, exit::USAGE, "{}", failure.message);
    assert_eq!(snapshots(&server), count, "a refused run recorded a snapshot");

    // verify-ca checks the chain, not the name; a URI carries the same parameters.
    let uri = format!("postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=verify-ca&sslrootcert={}", ca.replace('/', "%2F"));
    recorded(record(&fake, Some(&uri), &[]), "verify-ca by address, from a URI");
    // The PG* variables: PGSSLMODE=verify-full with PGSSLROOTCERT; require; and libpq's default, prefer.
    let vars = |extra: &[(&str, &str)]| -> Vec<(&'static str, String)> {
        let mut v: Vec<(&'static str, String)> = vec![
            ("PGHOST", "localhost".into()),
            ("PGPORT", port.to_string()),
            ("PGUSER", "postgres".into()),
            ("PGDATABASE", "postgres".into()),
        ];
        for (k, value) in extra {
            let k: &'static str = Box::leak(k.to_string().into_boxed_str());
            v.push((k, value.to_string()));
        }
        v
    };
    recorded(record(&fake, None, &vars(&[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", &ca)])), "PGSSLMODE=verify-full");
    refused(record(&fake, None, &vars(&[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", &other)])), "unknown CA", "PGSSLROOTCERT of another CA");
    recorded(record(&fake, None, &vars(&[("PGSSLMODE", "require")])), "PGSSLMODE=require");
    recorded(record(&fake, None, &vars(&[])), "the default, prefer");
    assert_eq!(snapshots(&server), count + 4);
    drop(server);
}
