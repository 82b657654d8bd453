//! The migration procedure through a crash of the whole server: `pg_ctl
//! restart -m immediate` of the scratch cluster while
//! `run_sandbox_operation_backfill` commits page after page; after the
//! restart, calling it again ends with exactly the rows an uninterrupted run
//! writes on a twin database, no identity twice, and the checkpoint complete.
//!
//! This binary restarts the cluster every integration test shares, so it holds
//! one test only (cargo runs test binaries one after another, the tests of one
//! binary in parallel); the cluster is up again when it ends.

mod common;

use common::{backfill_operations as operations, backfill_phase as phase, count};
use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

const CALL: &str = "CALL runtime_sandbox.run_sandbox_operation_backfill";

/// A ledger of `runs` runs with two attempts each, 1-3 sandboxes per attempt,
/// sandbox ids repeating across attempts, ties on updated_at, and some
/// operations that exist already.
fn seeded(name: &str, runs: i32) -> String {
    let db = common::fresh_database(name);
    common::connect(&db)
        .batch_execute(&format!(
            "{}
             INSERT INTO runtime_scheduler.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state)
             SELECT 'app:' || g, 'modal', 'app-run', 1, 'org', 'sb-' || (g * 37 % ({runs} * 2)), 'app-' || (g % 3), 'live'
             FROM generate_series(1, {runs} / 20) g
             ON CONFLICT DO NOTHING;",
            common::backfill_attempts_sql(runs, 3)
        ))
        .unwrap();
    db
}


/// `pg_ctl restart -m immediate` of the shared scratch cluster (as scripts/cluster.sh runs pg_ctl: as postgres).
fn restart_immediately() {
    let config = std::env::var("PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
    let bindir = Command::new(&config).arg("--bindir").output().expect("pg_config --bindir");
    let pg_ctl = PathBuf::from(String::from_utf8(bindir.stdout).unwrap().trim()).join("pg_ctl");
    let data = common::cluster_dir().join("data");
    let log = common::cluster_dir().join("server.log");
    let args = ["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-m", "immediate", "-w", "restart"];
    let whoami = Command::new("id").arg("-un").output().expect("id -un");
    let status = if String::from_utf8_lossy(&whoami.stdout).trim() == "postgres" {
        Command::new(&pg_ctl).args(args).current_dir("/").status()
    } else {
        Command::new("sudo").arg("-u").arg("postgres").arg(&pg_ctl).args(args).current_dir("/").status()
    }
    .expect("run pg_ctl");
    assert!(status.success(), "pg_ctl restart -m immediate failed");
}

#[test]
fn backfill_procedure_resumes_after_an_immediate_restart_of_the_server() {
    let runs = 1500;
    let db = seeded("backfill_restart", runs);
    let reference = seeded("backfill_restart_ref", runs);
    let expected = {
        let mut c = common::connect(&reference);
        c.batch_execute(&format!("{CALL}(1000)")).unwrap();
        operations(&mut c)
    };
    let total = expected.lines().count() as i64;

    let mut runner = common::connect(&db);
    // The scratch cluster runs with synchronous_commit = off; the migration's session turns it on, so every
    // page the watcher sees committed is on disk when the server dies (what survives does not depend on the
    // WAL writer's timing, which differs between majors).
    runner.batch_execute("SET synchronous_commit = on").unwrap();
    let call = thread::spawn(move || runner.batch_execute(&format!("{CALL}(25, NULL, '10 ms')")));
    let mut watcher = common::connect(&db);
    let started = Instant::now();
    let backfilled = "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations WHERE operation_key LIKE 'backfill:%'";
    while count(&mut watcher, backfilled) < 200 {
        assert!(started.elapsed() < Duration::from_secs(60), "the CALL made no progress");
        assert!(!call.is_finished(), "the CALL ended before the restart: {:?}", call.join());
        thread::sleep(Duration::from_millis(10));
    }
    drop(watcher);
    restart_immediately();
    call.join().unwrap().expect_err("the CALL's server went away");

    let mut c = common::connect(&db);
    let crashed = operations(&mut c);
    assert_eq!(phase(&mut c).as_deref(), Some("pending"), "the run was interrupted mid-way");
    assert!(crashed.lines().count() < expected.lines().count(), "the restart came after the last page");
    assert!(
        crashed.lines().filter(|row| row.starts_with("backfill:")).count() >= 200,
        "a page seen committed was lost in the restart"
    );
    // What survived is a prefix of the run: every operation it holds is the uninterrupted run's.
    let expected_rows: std::collections::BTreeSet<&str> = expected.lines().collect();
    assert!(crashed.lines().all(|row| expected_rows.contains(row)), "a row the uninterrupted run does not write");
    // No session holds the run lock after the restart; the next CALL resumes from the checkpoint.
    assert_eq!(count(&mut c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), 0);
    c.batch_execute(&format!("{CALL}(25)")).unwrap();
    assert_eq!(phase(&mut c).as_deref(), Some("complete"));
    assert_eq!(operations(&mut c), expected);
    assert_eq!(count(&mut c, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations"), total);
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) - count(DISTINCT (provider, sandbox_id, routing_domain_key)) FROM runtime_scheduler.runtime_sandbox_operations"
        ),
        0,
        "an identity twice"
    );
}
