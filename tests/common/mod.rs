//! Shared by the integration tests: one scratch cluster (scripts/cluster.sh)
//! and a fresh database per test, with the installed extension created in it.
//! `make test-integration` installs the extension and restarts the cluster first.
#![allow(dead_code)]

use postgres::{Client, NoTls};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Once;

/// The scratch cluster's port (`RUNTIME_SANDBOX_IT_PORT`, default 28816).
pub fn port() -> u16 {
    std::env::var("RUNTIME_SANDBOX_IT_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(28816)
}

pub fn cluster_dir() -> PathBuf {
    PathBuf::from(std::env::var("RUNTIME_SANDBOX_IT_DIR").unwrap_or_else(|_| "/tmp/runtime_sandbox-it".into()))
}

/// Start the shared cluster once per test binary (idempotent across binaries).
pub fn ensure_cluster() {
    static START: Once = Once::new();
    START.call_once(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh");
        let status = Command::new(script)
            .args(["start", cluster_dir().to_str().unwrap(), &port().to_string()])
            .status()
            .expect("run scripts/cluster.sh");
        assert!(status.success(), "scratch cluster did not start");
    });
}

pub fn connect(db: &str) -> Client {
    ensure_cluster();
    Client::connect(&format!("host=127.0.0.1 port={} user=postgres dbname={db}", port()), NoTls)
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
}

/// A new, empty database named `name` with `CREATE EXTENSION runtime_sandbox`.
pub fn fresh_database(name: &str) -> String {
    let mut admin = connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE \"{name}\"")).unwrap();
    let mut db = connect(name);
    db.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    name.to_string()
}

/// The server's message for an error (postgres::Error's Display is just "db error").
pub fn db_message(err: &postgres::Error) -> String {
    err.as_db_error().map(|e| e.message().to_string()).unwrap_or_else(|| err.to_string())
}
