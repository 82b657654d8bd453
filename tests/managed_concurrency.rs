//! Two real connections reconciling the managed environment at once.
mod common;

use common::count;
use postgres::Client;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const RECONCILE: &str = "SELECT row_to_json(r)::text FROM runtime_sandbox.reconcile_managed_environment(
    'Daytona', 'daytona', $1::text::jsonb, 'Managed Daytona sandbox environment.') r";

fn setup(db: &str) -> String {
    let name = common::fresh_database(db);
    let mut c = common::connect(&name);
    c.batch_execute(
        "SELECT runtime_sandbox.install_environment_tables('public');
         INSERT INTO companies (id, name) VALUES
             ('00000000-0000-0000-0000-0000000000c1', 'one'), ('00000000-0000-0000-0000-0000000000c2', 'two');",
    )
    .unwrap();
    name
}

fn reconcile(c: &mut Client, config: &str) -> serde_json::Value {
    let text: String = c.query_one(RECONCILE, &[&config]).unwrap().get(0);
    serde_json::from_str(&text).unwrap()
}


/// One managed row; every binding points at it, and every binding hash is
/// the application's hash of its defaults and of the row as it is now.
fn assert_consistent(c: &mut Client) {
    assert_eq!(count(c, "SELECT count(*) FROM environments"), 1);
    assert_eq!(count(c, "SELECT count(*) FROM built_in_managed_resources"), 2);
    assert_eq!(
        count(c, "SELECT count(*) FROM built_in_managed_resources b JOIN environments e ON e.id = b.resource_id"),
        2
    );
    assert_eq!(
        count(c, "SELECT count(*) FROM built_in_managed_resources WHERE stock_hash <> runtime_sandbox.stock_hash(defaults_json)"),
        0
    );
    assert_eq!(
        count(c, "SELECT count(*) FROM runtime_sandbox.managed_environment_drift() WHERE stock_status <> 'stock_current'"),
        0
    );
}

fn wait_until_blocked(observer: &mut Client, pid: i32) {
    let start = Instant::now();
    loop {
        let blocked: bool = observer
            .query_one("SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .get(0);
        if blocked {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "second reconciler never waited");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn managed_concurrent_first_reconcile_converges_on_one_row() {
    let db = setup("managed_concurrency_insert");
    let mut a = common::connect(&db);
    let mut b = common::connect(&db);
    let mut observer = common::connect(&db);
    let b_pid: i32 = b.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);

    a.batch_execute("BEGIN").unwrap();
    let first = reconcile(&mut a, r#"{"target":"us"}"#);
    assert_eq!(first["action"], "added");

    // B starts while A's insert is uncommitted: its insert waits on the unique index.
    let second = thread::spawn(move || {
        b.batch_execute("BEGIN").unwrap();
        let r = reconcile(&mut b, r#"{"target":"us"}"#);
        b.batch_execute("COMMIT").unwrap();
        r
    });
    wait_until_blocked(&mut observer, b_pid);
    a.batch_execute("COMMIT").unwrap();
    let second = second.join().unwrap();

    assert_eq!(second["environment_id"], first["environment_id"]);
    assert_eq!(second["action"], "unchanged");
    assert_eq!(second["stock_status"], "stock_current");
    // It re-read the bindings the winner committed.
    assert_eq!(second["tracking_initialized"], false);
    assert_eq!(second["activity_action"], serde_json::Value::Null);
    assert_consistent(&mut observer);
}

#[test]
fn managed_concurrent_stock_changes_serialize_on_the_row_lock() {
    let db = setup("managed_concurrency_update");
    let mut observer = common::connect(&db);
    reconcile(&mut observer, r#"{"target":"us"}"#);
    for round in 0..10 {
        let barrier = Arc::new(Barrier::new(2));
        let workers: Vec<_> = ["eu", "ap"]
            .into_iter()
            .map(|target| {
                let barrier = barrier.clone();
                let db = db.clone();
                thread::spawn(move || {
                    let mut c = common::connect(&db);
                    barrier.wait();
                    reconcile(&mut c, &format!(r#"{{"target":"{target}","round":{round}}}"#))
                })
            })
            .collect();
        let results: Vec<serde_json::Value> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        // Both succeed; both are stock updates of a stock-controlled row (the
        // later one sees the earlier one's bindings, never "operator_modified").
        for r in &results {
            assert_eq!(r["action"], "updated", "round {round}: {r}");
        }
        assert_consistent(&mut observer);
    }
}

#[test]
fn managed_concurrent_first_reconcile_race_many_times() {
    for round in 0..5 {
        let db = setup(&format!("managed_concurrency_race_{round}"));
        let barrier = Arc::new(Barrier::new(2));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let barrier = barrier.clone();
                let db = db.clone();
                thread::spawn(move || {
                    let mut c = common::connect(&db);
                    barrier.wait();
                    reconcile(&mut c, r#"{"target":"us"}"#)
                })
            })
            .collect();
        let results: Vec<serde_json::Value> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        let added = results.iter().filter(|r| r["action"] == "added").count();
        assert_eq!(added, 1, "{results:?}");
        assert_eq!(results[0]["environment_id"], results[1]["environment_id"]);
        assert_consistent(&mut common::connect(&db));
        common::connect("postgres").batch_execute(&format!("DROP DATABASE \"{db}\" WITH (FORCE)")).unwrap();
    }
}

/// Every environment and binding row, as text.
fn snapshot(c: &mut postgres::Client) -> String {
    c
        .query_one(
            "SELECT (SELECT jsonb_agg(e ORDER BY id) FROM environments e)::text
                 || (SELECT jsonb_agg(b ORDER BY id) FROM built_in_managed_resources b)::text",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn managed_bad_input_writes_nothing() {
    let db = setup("managed_bad_input");
    let mut c = common::connect(&db);
    reconcile(&mut c, r#"{"target":"us"}"#);
    let before = snapshot(&mut c);
    for (sql, argument) in [
        ("SELECT runtime_sandbox.reconcile_managed_environment('', 'daytona')", "name"),
        ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '[]')", "config"),
        ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', extra_metadata => '1')", "extra_metadata"),
        ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'nope')", "app_schema"),
        ("SELECT runtime_sandbox.archive_managed_environment('')", "provider"),
    ] {
        let err = c.batch_execute(sql).unwrap_err();
        let db_err = err.as_db_error().unwrap();
        assert_eq!(db_err.code().code(), "22023", "{sql}");
        assert!(db_err.message().starts_with(&format!("runtime_sandbox: invalid argument {argument}:")), "{}", db_err.message());
    }
    let after = snapshot(&mut c);
    assert_eq!(before, after);
}

// ---- REPEATABLE READ and SERIALIZABLE -------------------------------------------------------------
// The lock-then-read rule needs the reads after the row locks to see what is committed by then. At these
// levels the call reads with the transaction's snapshot; it either decides from data that is still current
// (and then behaves as at READ COMMITTED) or fails with SQLSTATE 40001 and a retry hint.

const LEVELS: [&str; 2] = ["REPEATABLE READ", "SERIALIZABLE"];

/// The server's answer to a call: its row as JSON, or the error's SQLSTATE, message and hint.
#[derive(Debug)]
struct Failure {
    code: String,
    message: String,
    hint: Option<String>,
}

fn call(c: &mut Client, sql: &str) -> Result<serde_json::Value, Failure> {
    match c.query_one(&format!("SELECT row_to_json(r)::text FROM {sql} r"), &[]) {
        Ok(row) => Ok(serde_json::from_str(&row.get::<_, String>(0)).unwrap()),
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
            Err(Failure { code: db.code().code().into(), message: db.message().into(), hint: db.hint().map(Into::into) })
        }
    }
}

fn reconcile_call(config: &str) -> String {
    format!(
        "runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{config}',
             'Managed Daytona sandbox environment.')"
    )
}

const ARCHIVE_CALL: &str = "runtime_sandbox.archive_managed_environment('daytona')";

/// The 40001 the extension raises: retryable, saying what changed and what to do.
fn assert_retryable(failure: &Failure) {
    assert_eq!(failure.code, "40001", "{failure:?}");
    assert!(
        failure.message.starts_with("runtime_sandbox: the managed sandbox environment changed concurrently"),
        "{failure:?}"
    );
    assert!(failure.hint.as_deref().is_some_and(|h| h.starts_with("Retry")), "{failure:?}");
}

fn begin(c: &mut Client, level: &str) {
    // The snapshot is taken by the first statement, before the call: as in a migration.
    c.batch_execute(&format!("BEGIN ISOLATION LEVEL {level}; SELECT 1")).unwrap();
}

/// Run `sql` on `c` in its own thread; returns once it waits for a lock.
fn start_blocked(db: &str, mut c: Client, sql: String) -> thread::JoinHandle<(Client, Result<serde_json::Value, Failure>)> {
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let handle = thread::spawn(move || {
        let outcome = call(&mut c, &sql);
        (c, outcome)
    });
    wait_until_blocked(&mut common::connect(db), pid);
    handle
}

fn config_target(c: &mut Client) -> String {
    c.query_one("SELECT config->>'target' FROM environments", &[]).unwrap().get(0)
}

#[test]
fn managed_isolation_without_concurrency_behaves_as_read_committed() {
    // The whole life cycle at each level gives the same answers and rows as at READ COMMITTED.
    let mut results = Vec::new();
    for level in ["READ COMMITTED", LEVELS[0], LEVELS[1]] {
        let db = setup(&format!("managed_isolation_plain_{}", level.replace(' ', "_").to_lowercase()));
        let mut c = common::connect(&db);
        let mut steps = Vec::new();
        let mut step = |c: &mut Client, sql: &str| {
            begin(c, level);
            let r = call(c, sql).unwrap_or_else(|f| panic!("{level}: {sql}: {f:?}"));
            c.batch_execute("COMMIT").unwrap();
            let keep = ["action", "stock_status", "stock_hash", "provider_reactivated", "tracking_initialized", "archived", "bindings_updated"];
            steps.push(keep.iter().map(|k| r.get(*k).cloned().unwrap_or_default()).collect::<Vec<_>>());
        };
        step(&mut c, &reconcile_call(r#"{"target":"us"}"#));
        step(&mut c, &reconcile_call(r#"{"target":"us"}"#));
        step(&mut c, &reconcile_call(r#"{"target":"eu"}"#));
        c.batch_execute("UPDATE environments SET config = config || '{\"cpu\": 4}'").unwrap();
        step(&mut c, &reconcile_call(r#"{"target":"ap"}"#));
        step(&mut c, ARCHIVE_CALL);
        step(&mut c, &reconcile_call(r#"{"target":"ap"}"#));
        let rows: String = c
            .query_one(
                "SELECT (SELECT jsonb_agg(jsonb_build_object('name', name, 'status', status, 'config', config,
                                   'metadata', metadata)) FROM environments)::text
                     || (SELECT jsonb_agg(jsonb_build_object('company', company_id, 'hash', stock_hash,
                                   'defaults', defaults_json) ORDER BY company_id) FROM built_in_managed_resources)::text",
                &[],
            )
            .unwrap()
            .get(0);
        results.push((level, steps, rows));
    }
    let (_, rc_steps, rc_rows) = &results[0];
    assert_eq!(rc_steps[3][0], "skipped", "the operator's edit is kept");
    for (level, steps, rows) in &results[1..] {
        assert_eq!(steps, rc_steps, "{level}");
        assert_eq!(rows, rc_rows, "{level}");
    }
}

#[test]
fn managed_isolation_stock_changes_racing_fail_retryably_without_lost_update() {
    for level in LEVELS {
        let db = setup(&format!("managed_isolation_race_{}", level.replace(' ', "_").to_lowercase()));
        let mut a = common::connect(&db);
        call(&mut a, &reconcile_call(r#"{"target":"us"}"#)).unwrap();

        // B's snapshot is older than A's stock change; B waits for A's row lock.
        let mut b = common::connect(&db);
        begin(&mut b, level);
        a.batch_execute("BEGIN").unwrap();
        assert_eq!(call(&mut a, &reconcile_call(r#"{"target":"eu"}"#)).unwrap()["action"], "updated");
        let waiting = start_blocked(&db, b, reconcile_call(r#"{"target":"ap"}"#));
        a.batch_execute("COMMIT").unwrap();
        let (mut b, outcome) = waiting.join().unwrap();
        assert_retryable(&outcome.unwrap_err());
        b.batch_execute("ROLLBACK").unwrap();
        assert_eq!(config_target(&mut a), "eu", "{level}: A's update stands");

        // The retry reads A's stock as stock: an update, not an operator edit.
        begin(&mut b, level);
        let retried = call(&mut b, &reconcile_call(r#"{"target":"ap"}"#)).unwrap();
        b.batch_execute("COMMIT").unwrap();
        assert_eq!((retried["action"].as_str(), retried["stock_status"].as_str()), (Some("updated"), Some("stock_update_available")), "{level}");
        assert_eq!(config_target(&mut a), "ap");
        assert_consistent(&mut a);
    }
}

#[test]
fn managed_isolation_bindings_written_under_a_lock_only_are_not_missed() {
    // A pass that only inserts bindings (a company without one) locks the row without updating it, so
    // PostgreSQL lets a waiting REPEATABLE READ pass lock it too: without the snapshot check the archive
    // would re-base only the bindings of its snapshot, and the reconcile would misjudge tracking.
    for level in LEVELS {
        for (name, waiting_call) in [("archive", ARCHIVE_CALL.to_string()), ("reconcile", reconcile_call(r#"{"target":"us"}"#))] {
            let db = setup(&format!("managed_isolation_lock_only_{name}_{}", level.replace(' ', "_").to_lowercase()));
            let mut a = common::connect(&db);
            let only_c1 = "runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{\"target\":\"us\"}',
                     'Managed Daytona sandbox environment.', company_id => '00000000-0000-0000-0000-0000000000c1')";
            call(&mut a, only_c1).unwrap();
            assert_eq!(count(&mut a, "SELECT count(*) FROM built_in_managed_resources"), 1);

            let mut b = common::connect(&db);
            begin(&mut b, level);
            a.batch_execute("BEGIN").unwrap();
            let tracked = call(&mut a, &reconcile_call(r#"{"target":"us"}"#)).unwrap();
            assert_eq!((tracked["action"].as_str(), tracked["tracking_initialized"].as_bool()), (Some("unchanged"), Some(true)));
            let waiting = start_blocked(&db, b, waiting_call.clone());
            a.batch_execute("COMMIT").unwrap();
            let (mut b, outcome) = waiting.join().unwrap();
            let failure = outcome.unwrap_err();
            assert_retryable(&failure);
            assert!(failure.message.contains("committed after the transaction's snapshot"), "{failure:?}");
            b.batch_execute("ROLLBACK").unwrap();

            begin(&mut b, level);
            let retried = call(&mut b, &waiting_call).unwrap();
            b.batch_execute("COMMIT").unwrap();
            if name == "archive" {
                assert_eq!((retried["archived"].as_bool(), retried["bindings_updated"].as_i64()), (Some(true), Some(2)), "{level}");
            } else {
                assert_eq!((retried["action"].as_str(), retried["tracking_initialized"].as_bool()), (Some("unchanged"), Some(false)), "{level}");
                assert_consistent(&mut a);
            }
        }
    }
}

#[test]
fn managed_isolation_operator_edit_after_the_snapshot_is_not_overwritten() {
    for level in LEVELS {
        let db = setup(&format!("managed_isolation_operator_{}", level.replace(' ', "_").to_lowercase()));
        let mut a = common::connect(&db);
        call(&mut a, &reconcile_call(r#"{"target":"us"}"#)).unwrap();

        // B's snapshot still shows the stock row; the operator's edit commits before B's call.
        let mut b = common::connect(&db);
        begin(&mut b, level);
        a.batch_execute("UPDATE environments SET config = config || '{\"cpu\": 4}'").unwrap();
        let platform = "runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{\"target\":\"eu\"}',
                            'Managed Daytona sandbox environment.')";
        assert_retryable(&call(&mut b, platform).unwrap_err());
        b.batch_execute("ROLLBACK").unwrap();
        begin(&mut b, level);
        let retried = call(&mut b, platform).unwrap();
        b.batch_execute("COMMIT").unwrap();
        assert_eq!((retried["action"].as_str(), retried["stock_status"].as_str()), (Some("skipped"), Some("operator_modified")), "{level}");
        let config: String = a.query_one("SELECT config::text FROM environments", &[]).unwrap().get(0);
        assert_eq!(config, r#"{"cpu": 4, "target": "us", "provider": "daytona"}"#, "{level}: the edit stands");
    }
}

#[test]
fn managed_isolation_first_reconciles_racing_converge_after_a_retry() {
    for level in LEVELS {
        let db = setup(&format!("managed_isolation_first_{}", level.replace(' ', "_").to_lowercase()));
        let mut a = common::connect(&db);
        let mut b = common::connect(&db);
        begin(&mut a, level);
        begin(&mut b, level);
        let first = call(&mut a, &reconcile_call(r#"{"target":"us"}"#)).unwrap();
        assert_eq!(first["action"], "added");
        // B's insert waits on A's uncommitted row in the unique index.
        let waiting = start_blocked(&db, b, reconcile_call(r#"{"target":"us"}"#));
        a.batch_execute("COMMIT").unwrap();
        let (mut b, outcome) = waiting.join().unwrap();
        assert_retryable(&outcome.unwrap_err());
        b.batch_execute("ROLLBACK").unwrap();
        begin(&mut b, level);
        let retried = call(&mut b, &reconcile_call(r#"{"target":"us"}"#)).unwrap();
        b.batch_execute("COMMIT").unwrap();
        assert_eq!(retried["environment_id"], first["environment_id"]);
        assert_eq!((retried["action"].as_str(), retried["tracking_initialized"].as_bool()), (Some("unchanged"), Some(false)));
        assert_consistent(&mut a);
    }
}

#[test]
fn managed_isolation_many_racing_rounds_each_call_succeeds_or_fails_retryably() {
    for level in LEVELS {
        let db = setup(&format!("managed_isolation_rounds_{}", level.replace(' ', "_").to_lowercase()));
        reconcile(&mut common::connect(&db), r#"{"target":"us"}"#);
        let mut retries = 0;
        for round in 0..8 {
            let barrier = Arc::new(Barrier::new(2));
            let workers: Vec<_> = ["eu", "ap"]
                .into_iter()
                .map(|target| {
                    let (barrier, db) = (barrier.clone(), db.clone());
                    thread::spawn(move || {
                        let mut c = common::connect(&db);
                        let config = format!(r#"{{"target":"{target}","round":{round}}}"#);
                        let mut failures = 0;
                        barrier.wait();
                        loop {
                            begin(&mut c, level);
                            let outcome = call(&mut c, &reconcile_call(&config));
                            match outcome {
                                Ok(r) => match c.batch_execute("COMMIT") {
                                    Ok(()) => return (r, failures),
                                    // SSI may also refuse the commit itself: 40001 from PostgreSQL.
                                    Err(e) => assert_eq!(e.as_db_error().unwrap().code().code(), "40001", "{e:?}"),
                                },
                                Err(f) => {
                                    assert_retryable(&f);
                                    c.batch_execute("ROLLBACK").unwrap();
                                }
                            }
                            failures += 1;
                            assert!(failures < 20, "no progress");
                        }
                    })
                })
                .collect();
            for (r, failures) in workers.into_iter().map(|w| w.join().unwrap()) {
                retries += failures;
                // Never misread the other pass's stock as an operator edit.
                assert_eq!(r["action"], "updated", "{level} round {round}: {r}");
            }
            assert_consistent(&mut common::connect(&db));
        }
        eprintln!("{level}: {retries} retries in 8 rounds");
    }
}
