//! The orchestrator's applied page against a concurrent writer of the same
//! sandbox identity: the page's optimistic plain INSERT waits for the other
//! transaction like `ON CONFLICT DO NOTHING` does, and ends as it would: the
//! other's row kept when it commits, the page's row when it rolls back.

mod common;

use std::thread;
use std::time::{Duration, Instant};

const PAGE: &str = "SELECT (p.phase, p.scanned_attempts, p.inserted_operations)::text
                    FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1) p";

fn ledger(name: &str) -> String {
    let db = common::fresh_database(name);
    let mut c = common::connect(&db);
    c.batch_execute(
        r#"SELECT runtime_sandbox.install_ledger();
           INSERT INTO runtime_scheduler.runs (run_id, org_id) VALUES ('r1', 'org-1');
           INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
             ('r1', 1, '2026-01-01 00:00:00+00', '[{"kind":"daytona_sandbox","sandboxId":"a"},
                                                  {"kind":"daytona_sandbox","sandboxId":"b"},
                                                  {"kind":"daytona_sandbox","sandboxId":"c"}]')"#,
    )
    .unwrap();
    db
}

/// Runs the page while another transaction holds an uncommitted operation for
/// sandbox "b", then ends that transaction with `end`; returns the page's
/// result and the operation keys afterwards.
fn page_beside_a_writer(name: &str, end: &str) -> (String, String) {
    let db = ledger(name);
    let mut writer = common::connect(&db);
    writer
        .batch_execute(
            "BEGIN;
             INSERT INTO runtime_scheduler.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state)
             VALUES ('app:b', 'daytona', 'r1', 1, 'org-1', 'b', 'live')",
        )
        .unwrap();
    let page_db = db.clone();
    let page = thread::spawn(move || {
        let row = common::connect(&page_db).query_one(PAGE, &[]).unwrap();
        row.get::<_, String>(0)
    });
    let mut watcher = common::connect(&db);
    let start = Instant::now();
    loop {
        let waiting = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'
                   AND query LIKE '%advance_sandbox_operation_backfill%' AND pid <> pg_backend_pid()",
                &[&db],
            )
            .unwrap()
            .get::<_, i64>(0);
        if waiting == 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the page never waited for the writer");
        thread::sleep(Duration::from_millis(20));
    }
    writer.batch_execute(end).unwrap();
    let result = page.join().unwrap();
    let keys = watcher
        .query_one(
            "SELECT string_agg(operation_key, ' ' ORDER BY operation_key) FROM runtime_scheduler.runtime_sandbox_operations",
            &[],
        )
        .unwrap()
        .get::<_, String>(0);
    (result, keys)
}

#[test]
fn backfill_page_keeps_a_concurrent_writers_committed_row() {
    let (result, keys) = page_beside_a_writer("backfill_concurrency_commit", "COMMIT");
    assert_eq!(result, "(complete,3,2)");
    assert_eq!(keys, "app:b backfill:daytona:a: backfill:daytona:c:");
}

#[test]
fn backfill_page_inserts_what_a_concurrent_writer_rolled_back() {
    let (result, keys) = page_beside_a_writer("backfill_concurrency_rollback", "ROLLBACK");
    assert_eq!(result, "(complete,3,3)");
    assert_eq!(keys, "backfill:daytona:a: backfill:daytona:b: backfill:daytona:c:");
}
