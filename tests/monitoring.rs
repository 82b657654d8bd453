//! The monitoring files in monitoring/: postgres_exporter (Debian's prometheus-postgres-exporter) runs with
//! monitoring/postgres_exporter.yaml against a ledger whose last runs were blocked, and its /metrics carry the
//! health view's values; promtool (Debian's prometheus) checks monitoring/alerts.yaml and runs its unit tests
//! (monitoring/alerts_test.yaml).

mod common;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    Some(body)
}

/// The value of the metric line that starts with `name{` and carries `label`.
fn metric(body: &str, name: &str, label: &str) -> Option<f64> {
    body.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn postgres_exporter_serves_the_health_view() {
    let db = common::fresh_database("it_monitoring");
    common::connect(&db)
        .batch_execute(
            "SET client_min_messages = error;
             SELECT runtime_sandbox.install_ledger();
             INSERT INTO runtime_scheduler.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             SELECT 'k' || g, 'daytona', 'r', 1, 'o', 'sb' || g, 'live', now() - interval '2 hours' FROM generate_series(1, 20) g;
             SELECT status FROM runtime_sandbox.reconcile_daytona(
                 (SELECT jsonb_agg(jsonb_build_object('sandboxId', 'sb' || g)) FROM generate_series(1, 20) g), now(), false);
             SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false);
             SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false);",
        )
        .unwrap();
    let port = 30_000 + (std::process::id() % 900) as u16;
    let mut exporter = Command::new("prometheus-postgres-exporter")
        .args([
            &format!("--extend.query-path={}", repo().join("monitoring/postgres_exporter.yaml").display()),
            &format!("--web.listen-address=127.0.0.1:{port}"),
            // Debian 12's exporter (0.11) reads pg_stat_bgwriter columns PostgreSQL 17 moved; not ours to test.
            "--no-collector.bgwriter",
        ])
        .env("DATA_SOURCE_NAME", format!("postgresql://postgres@127.0.0.1:{}/{db}?sslmode=disable", common::port()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prometheus-postgres-exporter (make setup installs it)");
    let started = Instant::now();
    let body = loop {
        if let Some(body) = get(port, "/metrics").filter(|b| b.contains("runtime_sandbox_reconciliation_")) {
            break body;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "postgres_exporter served no runtime_sandbox metrics");
        std::thread::sleep(Duration::from_millis(200));
    };
    exporter.kill().ok();
    let mut log = String::new();
    exporter.stderr.take().unwrap().read_to_string(&mut log).ok();
    exporter.wait().ok();
    assert!(!log.contains("level=error"), "postgres_exporter reported errors:\n{log}");
    let at = |name: &str| metric(&body, &format!("runtime_sandbox_reconciliation_{name}"), "ledger=\"runtime_scheduler\"");
    assert_eq!(at("consecutive_blocked_runs"), Some(2.0), "{body}");
    assert_eq!(at("last_run_blocked"), Some(1.0));
    assert_eq!(at("live_operations"), Some(20.0));
    assert_eq!(at("absent_candidates"), Some(20.0));
    assert_eq!(at("absent_backlog"), Some(0.0));
    assert!(at("last_run_age_seconds").is_some_and(|age| age < 600.0));
    assert!(at("last_applied_age_seconds").is_some_and(|age| age < 600.0));
    assert_eq!(at("newest_snapshot_age_seconds"), Some(1e10), "no snapshot yet reads as 1e10 seconds");
    common::connect("postgres").batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)")).unwrap();
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    let dir = repo().join("monitoring");
    for args in [["check", "rules", "alerts.yaml"], ["test", "rules", "alerts_test.yaml"]] {
        let out = Command::new("promtool").args(args).current_dir(&dir).output().expect("promtool (make setup installs it)");
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
