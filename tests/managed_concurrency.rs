//! Two real connections reconciling the managed environment at once.
mod common;

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

fn count(c: &mut Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
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
