//! reconcile_daytona with real connections: the overlap guard and the
//! one-transaction guarantee (run by `make test-integration`).

mod common;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

const LEDGER: &str = "SELECT runtime_sandbox.install_ledger('runtime_scheduler');
    INSERT INTO runtime_scheduler.runtime_sandbox_operations
        (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
    VALUES ('k1', 'daytona', 'run-1', 1, 'org', 'sb1', 'live', now() - interval '1 hour'),
           ('k2', 'daytona', 'run-2', 1, 'org', 'sb2', 'live', now() - interval '1 hour');";

fn status(client: &mut Client, sql: &str) -> String {
    client.query_one(sql, &[]).unwrap().get::<_, String>(0)
}

const APPLY: &str = "SELECT status FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb1\"}]', now(), false)";
const DRY: &str = "SELECT status FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb1\"}]', now(), true)";

#[test]
fn reconcile_overlapping_applies_skip_instead_of_queueing() {
    let db = common::fresh_database("reconcile_overlap");
    let mut first = common::connect(&db);
    let mut second = common::connect(&db);
    first.batch_execute(LEDGER).unwrap();

    // The first apply holds the guard until its transaction ends.
    let mut tx = first.transaction().unwrap();
    assert_eq!(tx.query_one(APPLY, &[]).unwrap().get::<_, String>(0), "applied");
    assert_eq!(status(&mut second, APPLY), "skipped_concurrent");
    let skipped = second
        .query_one(
            "SELECT (to_jsonb(r) - 'diagnostics' - 'provider' - 'status' - 'unmatched_provider_sandbox_ids' - 'provider_sandbox_count' - 'dry_run' - 'environment')::text AS counts, \
                    cardinality(r.diagnostics) AS n FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb1\"}]', now(), false) r",
            &[],
        )
        .unwrap();
    let counts: serde_json::Value = serde_json::from_str(skipped.get::<_, &str>(0)).unwrap();
    // Every count 0; what the valve weighs and the snapshot were never looked at.
    assert!(counts.as_object().unwrap().values().all(|v| v == 0 || v == false || v.is_null()), "{counts}");
    assert_eq!(skipped.get::<_, i32>(1), 0);
    // A dry run takes no guard: it plans from what it can see (the first
    // apply's writes are not committed yet).
    assert_eq!(status(&mut second, DRY), "planned");
    tx.commit().unwrap();

    // Skipped runs are in the history too (a run stuck holding the ledger
    // shows as a streak of them), beside the committed apply.
    let history: Vec<String> = second
        .query("SELECT status FROM runtime_scheduler.reconciliation_runs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(history, ["applied", "skipped_concurrent", "skipped_concurrent"]);
    // The guard went with the transaction; the next apply runs (and finds the
    // ledger already reconciled).
    assert_eq!(status(&mut second, APPLY), "applied");
    let marked: i64 = second
        .query_one(
            "SELECT marked_deleted FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb1\"}]', now(), false)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(marked, 0);

    // Another ledger schema has its own guard.
    second.batch_execute("SELECT runtime_sandbox.install_ledger('other_ledger')").unwrap();
    let mut tx = first.transaction().unwrap();
    tx.query_one(APPLY, &[]).unwrap();
    assert_eq!(
        status(
            &mut second,
            "SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false, ledger_schema => 'other_ledger')"
        ),
        "applied"
    );
    tx.rollback().unwrap();
}

#[test]
fn reconcile_a_failure_anywhere_rolls_back_every_phase() {
    let db = common::fresh_database("reconcile_atomic");
    let mut client = common::connect(&db);
    client.batch_execute(LEDGER).unwrap();
    // A terminal lease the first phase releases ...
    client
        .batch_execute(
            "INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id)
                 VALUES ('t1', 'org', 'run-t', 'daytona', 'sb-t');
             INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status, deleted_at)
                 VALUES ('daytona', 'sb-t', 'run-t', 1, 'deleted', now());
             -- ... and a reserved create whose recovery collides with k1's identity (sb1).
             INSERT INTO runtime_scheduler.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, state, provider_operation_token)
                 VALUES ('r1', 'daytona', 'run-r', 1, 'org', 'reserved', 'tok');
             INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id)
                 VALUES ('r1', 'org', 'run-r');
             INSERT INTO runtime_scheduler.runs VALUES ('run-r', 'org');
             INSERT INTO runtime_scheduler.attempts (run_id, attempt) VALUES ('run-r', 1);",
        )
        .unwrap();
    let err = client
        .query_one(
            "SELECT status FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb1\",\"operationKey\":\"tok\"}]', now(), false)",
            &[],
        )
        .unwrap_err();
    let message = err.as_db_error().map(|e| e.message().to_string()).unwrap_or_default();
    assert!(message.contains("duplicate key"), "{err:?}");
    // The application would have committed the release before failing; here
    // nothing happened at all.
    let open: i64 = client
        .query_one(
            "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_capacity_leases WHERE released_at IS NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(open, 2);
    let state: String = client
        .query_one(
            "SELECT state::text FROM runtime_scheduler.runtime_sandbox_operations WHERE operation_key = 'r1'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(state, "reserved");
    let history: i64 =
        client.query_one("SELECT count(*) FROM runtime_scheduler.reconciliation_runs", &[]).unwrap().get(0);
    assert_eq!(history, 0);
}

#[test]
fn reconcile_a_blocked_apply_warns_and_notifies_listeners() {
    let db = common::fresh_database("reconcile_notify");
    let mut listener = common::connect(&db);
    listener.batch_execute("LISTEN runtime_sandbox").unwrap();
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = warnings.clone();
    let mut caller = postgres::Config::new()
        .host("127.0.0.1")
        .port(common::port())
        .user("postgres")
        .dbname(&db)
        .notice_callback(move |notice| seen.lock().unwrap().push(format!("{}: {}", notice.severity(), notice.message())))
        .connect(postgres::NoTls)
        .unwrap();
    caller.batch_execute(LEDGER).unwrap();

    // An empty listing against live operations: blocked, nothing marked.
    let status: String = caller
        .query_one("SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false)", &[])
        .unwrap()
        .get(0);
    assert_eq!(status, "blocked_mass_absence");
    assert_eq!(
        warnings.lock().unwrap().as_slice(),
        ["WARNING: runtime_sandbox: reconciliation of ledger \"runtime_scheduler\" blocked_mass_absence: 2 absent \
          candidates among 2 live operations are too many to believe (an empty or partial listing?); nothing was \
          seeded or marked absent"]
    );
    let notification = listener
        .notifications()
        .timeout_iter(std::time::Duration::from_secs(10))
        .next()
        .unwrap()
        .expect("a notification on channel runtime_sandbox");
    assert_eq!(notification.channel(), "runtime_sandbox");
    let payload: serde_json::Value = serde_json::from_str(notification.payload()).unwrap();
    let run_id: i64 =
        caller.query_one("SELECT id FROM runtime_scheduler.reconciliation_runs", &[]).unwrap().get(0);
    assert_eq!(
        payload,
        serde_json::json!({
            "ledger_schema": "runtime_scheduler", "provider": "daytona", "environment": "production", "status": "blocked_mass_absence",
            "run_id": run_id, "snapshot_id": null, "provider_sandbox_count": 0, "unmatched_provider_sandboxes": 0,
            "absent_candidates": 2, "live_operations": 2, "released_terminal_leases": 0,
            "recovered_reserved_operations": 0, "would_release_terminal_leases": 0, "would_recover_reserved_operations": 0
        })
    );
    // Rolled back: no notification, and no history.
    let mut tx = caller.transaction().unwrap();
    tx.query_one("SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false)", &[]).unwrap();
    tx.rollback().unwrap();
    assert!(listener.notifications().timeout_iter(std::time::Duration::from_secs(1)).next().unwrap().is_none());
    let live: i64 = caller
        .query_one("SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations WHERE state = 'live'", &[])
        .unwrap()
        .get(0);
    assert_eq!(live, 2);
}

#[test]
fn reconcile_two_environments_applies_do_not_skip_each_other() {
    let db = common::fresh_database("reconcile_overlap_environments");
    let mut production = common::connect(&db);
    let mut staging = common::connect(&db);
    let mut again = common::connect(&db);
    production.batch_execute(LEDGER).unwrap();
    production
        .batch_execute(
            "INSERT INTO runtime_scheduler.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, state, provider_created_at)
             VALUES ('s1', 'daytona', 'run-s1', 1, 'org', 'staging', 'sb-s1', 'live', now() - interval '1 hour')",
        )
        .unwrap();
    const STAGING: &str = "SELECT status FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"sb-s1\"}]', now(), false,
                                                                            environment => 'staging')";
    // A production apply holds its guard: staging's apply runs beside it, a second production apply skips.
    let mut tx = production.transaction().unwrap();
    assert_eq!(tx.query_one(APPLY, &[]).unwrap().get::<_, String>(0), "applied");
    assert_eq!(status(&mut staging, STAGING), "applied");
    assert_eq!(status(&mut again, APPLY), "skipped_concurrent");
    tx.commit().unwrap();
    // And the other way round: a staging apply held, production applies.
    let mut tx = staging.transaction().unwrap();
    assert_eq!(tx.query_one(STAGING, &[]).unwrap().get::<_, String>(0), "applied");
    assert_eq!(status(&mut production, APPLY), "applied");
    assert_eq!(status(&mut again, STAGING), "skipped_concurrent");
    tx.commit().unwrap();
    let runs: Vec<(String, String)> = production
        .query("SELECT environment, status FROM runtime_scheduler.reconciliation_runs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let count = |e: &str, s: &str| runs.iter().filter(|(re, rs)| re == e && rs == s).count();
    assert_eq!((count("production", "applied"), count("staging", "applied")), (2, 2), "{runs:?}");
    assert_eq!((count("production", "skipped_concurrent"), count("staging", "skipped_concurrent")), (1, 1), "{runs:?}");
}
