//! Certificates for the TLS tests, made with openssl in a folder of the test's: a CA (`ca.pem`), a server
//! certificate for `localhost` signed by it (`server.crt`, `server.key`), and another CA (`other.pem`). Shared by
//! recorder/tests/https.rs and tests/recorder_tls.rs.

#![allow(dead_code)]

use std::path::Path;

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl").args(args).current_dir(dir).output().expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub fn make(dir: &Path) {
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=recorder-test-ca"]);
    openssl(dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
    openssl(dir, &[
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2",
        "-extfile", "san.ext",
    ]);
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-days", "2", "-subj", "/CN=other-ca"]);
}
