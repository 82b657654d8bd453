// SQL-level tests of the operations functions (run by `cargo pgrx test`):
// snapshots, reconcile_daytona_latest, the health view and the pg_cron jobs,
// each on a small hand-built ledger in its own schema.

use pgrx::prelude::*;
use serde_json::{json, Value};

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn text(sql: &str) -> Option<String> {
    Spi::get_one::<String>(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn int(sql: &str) -> i64 {
    Spi::get_one::<i64>(sql).unwrap_or_else(|e| panic!("{sql}: {e}")).unwrap_or(0)
}

fn rows(sql: &str) -> Value {
    serde_json::from_str(&text(&format!("SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]')::text FROM ({sql}) q")).unwrap())
        .unwrap()
}

/// Run `sql`; its error as `SQLSTATE message | hint`, or "ok".
fn attempt(sql: &str) -> String {
    run(r#"CREATE OR REPLACE FUNCTION pg_temp.attempt(sql text) RETURNS text LANGUAGE plpgsql AS $f$
           DECLARE state text; message text; hint text;
           BEGIN
             EXECUTE sql;
             RETURN 'ok';
           EXCEPTION WHEN others THEN
             GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
             RETURN state || ' ' || message || ' | ' || hint;
           END $f$"#);
    text(&format!("SELECT pg_temp.attempt($q${sql}$q$)")).unwrap()
}

/// A fresh ledger with live operations `<key>` on sandboxes `sb-<key>`, created `age` ago.
fn ledger(s: &str, live: &[(&str, &str)]) {
    run(&format!("SELECT runtime_sandbox.install_ledger('{s}')"));
    for (key, age) in live {
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, \
             state, provider_created_at) VALUES ('{key}', 'daytona', 'run-{key}', 1, 'org-1', 'sb-{key}', 'live', \
             now() - interval '{age}')"
        ));
    }
}

/// Record a snapshot listing sandboxes `sb-<key>`, captured `ago` before now.
fn snapshot(s: &str, keys: &[&str], ago: &str, keep_last: i32) -> i64 {
    let items = Value::Array(keys.iter().map(|k| json!({"sandboxId": format!("sb-{k}")})).collect());
    int(&format!(
        "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '{items}', now() - interval '{ago}', \
         keep_last => {keep_last}, ledger_schema => '{s}')"
    ))
}

fn latest(s: &str, args: &str) -> Value {
    serde_json::from_str(
        &text(&format!(
            "SELECT (to_jsonb(r) - 'diagnostics')::text FROM runtime_sandbox.reconcile_daytona_latest(ledger_schema => '{s}'{args}) r"
        ))
        .unwrap(),
    )
    .unwrap()
}

#[pg_test]
fn operations_record_snapshot_validates_and_normalizes_like_the_inventory() {
    ledger("op_record", &[]);
    let id = int(
        r#"SELECT runtime_sandbox.record_inventory_snapshot('daytona',
               '[{"sandboxId": " sb-2 ", "routingDomain": "  "}, {"sandboxId": "sb-1", "operationKey": "k", "routingDomain": "eu"},
                 {"sandboxId": "sb-2"}, {"sandboxId": "sb-1", "operationKey": " k ", "routingDomain": "eu", "extra": 1}]',
               now() - interval '1 minute', ledger_schema => 'op_record')"#,
    );
    assert_eq!(
        rows(&format!("SELECT item_index, sandbox_id, routing_domain, operation_key FROM op_record.provider_inventory_items \
                       WHERE snapshot_id = {id} ORDER BY item_index")),
        json!([
            {"item_index": 0, "sandbox_id": "sb-2", "routing_domain": null, "operation_key": null},
            {"item_index": 1, "sandbox_id": "sb-1", "routing_domain": "eu", "operation_key": "k"},
        ])
    );
    assert_eq!(
        rows(&format!("SELECT provider, item_count, recorded_at >= captured_at AS ordered, reconciled_run_id \
                       FROM op_record.provider_inventory_snapshots WHERE snapshot_id = {id}")),
        json!([{"provider": "daytona", "item_count": 2, "ordered": true, "reconciled_run_id": null}])
    );
    // A capture time a little ahead of the database's clock is stored as the moment of recording.
    let ahead = int("SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now() + interval '2 minutes', \
                     ledger_schema => 'op_record')");
    assert_eq!(int(&format!("SELECT count(*) FROM op_record.provider_inventory_snapshots WHERE snapshot_id = {ahead} \
                             AND captured_at <= clock_timestamp()")), 1);

    let ok = "ledger_schema => 'op_record'";
    let before = int("SELECT count(*) FROM op_record.provider_inventory_items");
    for (args, expected) in [
        (format!("'modal', '[]', now(), {ok}"), "22023 runtime_sandbox: invalid argument provider: must be 'daytona'"),
        (format!("NULL, '[]', now(), {ok}"), "22023 runtime_sandbox: invalid argument provider: must not be NULL"),
        (format!("'daytona', NULL, now(), {ok}"), "22023 runtime_sandbox: invalid argument items: must not be NULL"),
        (format!("'daytona', '{{}}', now(), {ok}"), "22023 runtime_sandbox: invalid argument items: must be a JSON array, got an object"),
        (format!("'daytona', '[{{\"sandboxId\": \"a\"}}, {{\"id\": 1}}]', now(), {ok}"),
         "22023 runtime_sandbox: invalid argument items: element 1: sandboxId is required"),
        (format!("'daytona', '[{{\"sandboxId\": \" \"}}]', now(), {ok}"), "22023 runtime_sandbox: invalid argument items: element 0: sandboxId is blank"),
        (format!("'daytona', '[]', NULL, {ok}"), "22023 runtime_sandbox: invalid argument captured_at: must not be NULL"),
        (format!("'daytona', '[]', 'infinity', {ok}"), "22023 runtime_sandbox: invalid argument captured_at: must be a finite time"),
        (format!("'daytona', '[]', '1969-07-20', {ok}"), "22023 runtime_sandbox: invalid argument captured_at: must be a positive time"),
        (format!("'daytona', '[]', now() + interval '1 hour', {ok}"),
         "22023 runtime_sandbox: invalid argument captured_at: must not be more than 5 minutes ahead"),
        (format!("'daytona', '[]', now(), keep_last => 0, {ok}"), "22023 runtime_sandbox: invalid argument keep_last: must be an integer from 1 through 1000, got 0"),
        ("'daytona', '[]', now(), ledger_schema => 'x;y'".to_string(), "22023 runtime_sandbox: invalid argument ledger_schema: \"x;y\" is not a plain identifier"),
        ("'daytona', '[]', now(), ledger_schema => 'op_nowhere'".to_string(), "22023 runtime_sandbox: invalid argument ledger_schema: schema \"op_nowhere\" does not exist"),
    ] {
        let got = attempt(&format!("SELECT runtime_sandbox.record_inventory_snapshot({args})"));
        assert!(got.starts_with(expected), "{args}: {got}");
    }
    assert_eq!(int("SELECT count(*) FROM op_record.provider_inventory_items"), before, "no bad call wrote anything");
    // A ledger of an earlier version: told to run install_ledger.
    run("CREATE SCHEMA op_record_old");
    assert_eq!(
        attempt("SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now(), ledger_schema => 'op_record_old')"),
        "42P01 runtime_sandbox: ledger_schema \"op_record_old\" lacks the ledger's table(s) \
         provider_inventory_snapshots, provider_inventory_items | Point ledger_schema at the ledger's schema, or run \
         SELECT runtime_sandbox.install_ledger('op_record_old') to create the tables."
    );
}

/// Stream rows (sandbox, routing domain, operation key; SQL literals) into the ledger's stream, as COPY would.
fn stream(s: &str, rows: &[(&str, &str, &str)]) {
    for (sandbox, domain, key) in rows {
        run(&format!(
            "INSERT INTO {s}.provider_inventory_stream (sandbox_id, routing_domain, operation_key) VALUES ({sandbox}, {domain}, {key})"
        ));
    }
}

fn items(s: &str, id: i64) -> Value {
    rows(&format!(
        "SELECT item_index, sandbox_id, routing_domain, operation_key FROM {s}.provider_inventory_items \
         WHERE snapshot_id = {id} ORDER BY item_index"
    ))
}

#[pg_test]
fn operations_publish_records_a_streamed_listing_as_record_does() {
    ledger("op_stream", &[]);
    // The listing of operations_record_snapshot_validates_and_normalizes_like_the_inventory, with every
    // whitespace JavaScript trims and NULLs: the same snapshot, item for item.
    let json = "[{\"sandboxId\": \" sb-2 \", \"routingDomain\": \"  \"}, \
                 {\"sandboxId\": \"\u{FEFF}sb-1\u{3000}\", \"operationKey\": \"k\", \"routingDomain\": \"eu\"}, \
                 {\"sandboxId\": \"sb-2\"}, {\"sandboxId\": \"sb-1\", \"operationKey\": \" k \", \"routingDomain\": \"eu\"}, \
                 {\"sandboxId\": \"sb-3\", \"operationKey\": \"\u{0085}k\"}]";
    let recorded = int(&format!(
        "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '{json}', now() - interval '1 minute', ledger_schema => 'op_stream')"
    ));
    stream("op_stream", &[
        ("' sb-2 '", "'  '", "NULL"),
        ("E'\\uFEFFsb-1\\u3000'", "'eu'", "'k'"),
        ("'sb-2'", "NULL", "NULL"),
        ("'sb-1'", "'eu'", "' k '"),
        ("'sb-3'", "NULL", "E'\\u0085k'"),
    ]);
    let published = int(
        "SELECT runtime_sandbox.publish_inventory_snapshot('daytona', 5, now() - interval '1 minute', ledger_schema => 'op_stream')",
    );
    assert_ne!(published, recorded);
    assert_eq!(items("op_stream", published), items("op_stream", recorded));
    assert_eq!(
        items("op_stream", published),
        json!([
            {"item_index": 0, "sandbox_id": "sb-2", "routing_domain": null, "operation_key": null},
            {"item_index": 1, "sandbox_id": "sb-1", "routing_domain": "eu", "operation_key": "k"},
            {"item_index": 2, "sandbox_id": "sb-3", "routing_domain": null, "operation_key": "\u{0085}k"},
        ])
    );
    let snapshot = |id: i64| {
        rows(&format!("SELECT provider, item_count, environment, reconciled_run_id FROM op_stream.provider_inventory_snapshots \
                       WHERE snapshot_id = {id}"))
    };
    assert_eq!(snapshot(published), snapshot(recorded));
    assert_eq!(int("SELECT count(*) FROM op_stream.provider_inventory_stream"), 0, "the stream's rows are consumed");

    // An empty listing publishes as '[]' records; rows of a transaction that ended without publishing are
    // removed by the next publish, a later transaction's (still running, as far as this one can tell) kept.
    run("INSERT INTO op_stream.provider_inventory_stream (stream, sandbox_id) VALUES ('3', 'stale')");
    run("INSERT INTO op_stream.provider_inventory_stream (stream, sandbox_id) \
         VALUES ((pg_current_xact_id()::text::bigint + 1000)::text::xid8, 'later')");
    let empty = int("SELECT runtime_sandbox.publish_inventory_snapshot('daytona', 0, now(), ledger_schema => 'op_stream', \
                     environment => 'staging')");
    assert_eq!(snapshot(empty), json!([{"provider": "daytona", "item_count": 0, "environment": "staging", "reconciled_run_id": null}]));
    assert_eq!(rows("SELECT sandbox_id FROM op_stream.provider_inventory_stream"), json!([{"sandbox_id": "later"}]));
    run("DELETE FROM op_stream.provider_inventory_stream");

    // Refused, naming the first bad element (in listing order, as the JSON inventory's errors do); nothing written.
    let before = int("SELECT count(*) FROM op_stream.provider_inventory_items");
    let long = "x".repeat(1001);
    let ok = "now(), ledger_schema => 'op_stream'";
    for (rows_in, count, expected) in [
        (vec![("'a'", "NULL", "NULL")], 2, "22023 runtime_sandbox: invalid argument streamed_items: is 2, but this transaction streamed 1 rows"),
        (vec![("'a'", "NULL", "NULL"), ("NULL", "'eu'", "NULL")], 2, "22023 runtime_sandbox: invalid argument streamed_items: element 1: sandboxId is required"),
        (vec![("'a'", "NULL", "NULL"), ("E' \\t'", "NULL", "NULL")], 2, "22023 runtime_sandbox: invalid argument streamed_items: element 1: sandboxId is blank"),
        (vec![("'a'", &format!("' {long} '"), "NULL"), ("NULL", "NULL", "NULL")], 2,
         "22023 runtime_sandbox: invalid argument streamed_items: element 0: routingDomain is 1001 bytes long; at most 1000"),
        (vec![("'a'", "NULL", &format!("'{long}'"))], 1, "22023 runtime_sandbox: invalid argument streamed_items: element 0: operationKey is 1001 bytes long"),
    ] {
        let rows_in: Vec<(&str, &str, &str)> = rows_in.iter().map(|(a, b, c)| (*a, *b as &str, *c as &str)).collect();
        let values = rows_in.iter().map(|(a, b, c)| format!("({a}, {b}, {c})")).collect::<Vec<_>>().join(", ");
        let got = attempt(&format!(
            "INSERT INTO op_stream.provider_inventory_stream (sandbox_id, routing_domain, operation_key) VALUES {values}; \
             SELECT runtime_sandbox.publish_inventory_snapshot('daytona', {count}, {ok})"
        ));
        assert!(got.starts_with(expected), "{values}: {got}");
        assert_eq!(int("SELECT count(*) FROM op_stream.provider_inventory_stream"), 0, "the refused call's rows rolled back");
    }
    for (args, expected) in [
        (format!("'daytona', NULL, {ok}"), "22023 runtime_sandbox: invalid argument streamed_items: must not be NULL"),
        (format!("'daytona', -1, {ok}"), "22023 runtime_sandbox: invalid argument streamed_items: must be 0 or more"),
        (format!("'modal', 0, {ok}"), "22023 runtime_sandbox: invalid argument provider: must be 'daytona'"),
        (format!("'daytona', 0, now() + interval '1 hour', ledger_schema => 'op_stream'"),
         "22023 runtime_sandbox: invalid argument captured_at: must not be more than 5 minutes ahead"),
    ] {
        let got = attempt(&format!("SELECT runtime_sandbox.publish_inventory_snapshot({args})"));
        assert!(got.starts_with(expected), "{args}: {got}");
    }
    assert_eq!(int("SELECT count(*) FROM op_stream.provider_inventory_items"), before, "no refused call wrote anything");

    // Published snapshots are pruned with the recorded ones, by keep_last.
    stream("op_stream", &[("'sb-9'", "NULL", "NULL")]);
    let last = int("SELECT runtime_sandbox.publish_inventory_snapshot('daytona', 1, now(), keep_last => 1, ledger_schema => 'op_stream')");
    assert_eq!(rows("SELECT snapshot_id FROM op_stream.provider_inventory_snapshots WHERE environment = 'production'"),
               json!([{"snapshot_id": last}]));

    // A ledger installed before the stream table: told to run install_ledger.
    run("DROP TABLE op_stream.provider_inventory_stream");
    assert_eq!(
        attempt("SELECT runtime_sandbox.publish_inventory_snapshot('daytona', 0, now(), ledger_schema => 'op_stream')"),
        "42P01 runtime_sandbox: ledger_schema \"op_stream\" lacks the ledger's table(s) provider_inventory_stream | Point \
         ledger_schema at the ledger's schema, or run SELECT runtime_sandbox.install_ledger('op_stream') to create the tables."
    );
}

#[pg_test]
fn operations_record_snapshot_keeps_the_newest_and_the_one_just_recorded() {
    ledger("op_prune", &[]);
    let s1 = snapshot("op_prune", &["a"], "40 minutes", 2);
    let s2 = snapshot("op_prune", &["a", "b"], "30 minutes", 2);
    let s3 = snapshot("op_prune", &["b"], "20 minutes", 2);
    let kept = |_: ()| {
        rows("SELECT snapshot_id AS id, (SELECT count(*) FROM op_prune.provider_inventory_items i \
              WHERE i.snapshot_id = s.snapshot_id) AS items FROM op_prune.provider_inventory_snapshots s ORDER BY 1")
    };
    assert_eq!(kept(()), json!([{"id": s2, "items": 2}, {"id": s3, "items": 1}]), "s1 pruned with its items");
    // Recorded late with an old capture time: not among the newest two, kept anyway.
    let late = snapshot("op_prune", &["c"], "50 minutes", 2);
    assert_eq!(kept(()), json!([{"id": s2, "items": 2}, {"id": s3, "items": 1}, {"id": late, "items": 1}]));
    let s5 = snapshot("op_prune", &[], "10 minutes", 2);
    assert_eq!(kept(()), json!([{"id": s3, "items": 1}, {"id": s5, "items": 0}]));
    assert_eq!(int("SELECT count(*) FROM op_prune.provider_inventory_items"), 1);
    let _ = s1;
}

#[pg_test]
fn operations_latest_needs_a_fresh_snapshot() {
    ledger("op_fresh", &[("k1", "2 hours"), ("k2", "2 hours")]);
    // None at all: nothing reconciled; an apply leaves a history row saying so.
    let dry = latest("op_fresh", ", dry_run => true");
    assert_eq!((dry["status"].clone(), dry["snapshot_id"].clone()), (json!("no_fresh_snapshot"), Value::Null));
    assert_eq!(int("SELECT count(*) FROM op_fresh.reconciliation_runs"), 0, "a dry run writes nothing");
    let s = latest("op_fresh", "");
    assert_eq!((s["status"].clone(), s["provider_sandbox_count"].clone()), (json!("no_fresh_snapshot"), json!(0)));
    // Too old (20 minutes, the default limit is 15): the same, naming the snapshot.
    let stale = snapshot("op_fresh", &["k1"], "20 minutes", 20);
    let s = latest("op_fresh", "");
    assert_eq!((s["status"].clone(), s["snapshot_id"].clone()), (json!("no_fresh_snapshot"), json!(stale)));
    assert_eq!(int("SELECT count(*) FROM op_fresh.runtime_sandbox_capacity_leases"), 0, "nothing reconciled");
    // ... fresh enough under a longer limit.
    let s = latest("op_fresh", ", max_snapshot_age => '30 minutes', absent_confirmations => 1");
    assert_eq!((s["status"].clone(), s["seeded_leases"].clone(), s["marked_deleted"].clone()), (json!("applied"), json!(1), json!(1)));
    // Fresh: reconciled, and the run and the snapshot name each other.
    let fresh = snapshot("op_fresh", &["k1"], "1 minute", 20);
    let s = latest("op_fresh", "");
    assert_eq!((s["status"].clone(), s["snapshot_id"].clone(), s["confirming_snapshots"].clone()),
               (json!("applied"), json!(fresh), json!(2)));
    assert_eq!(
        rows("SELECT status, snapshot_id, (SELECT reconciled_run_id = r.id FROM op_fresh.provider_inventory_snapshots p \
              WHERE p.snapshot_id = r.snapshot_id) AS linked FROM op_fresh.reconciliation_runs r ORDER BY id"),
        json!([
            {"status": "no_fresh_snapshot", "snapshot_id": null, "linked": null},
            {"status": "no_fresh_snapshot", "snapshot_id": null, "linked": null},
            {"status": "applied", "snapshot_id": stale, "linked": true},
            {"status": "applied", "snapshot_id": fresh, "linked": true},
        ])
    );
    for (args, expected) in [
        (", max_snapshot_age => '0'", "22023 runtime_sandbox: invalid argument max_snapshot_age: must be positive"),
        (&format!(", max_snapshot_age => {}", crate::reconcile::tests::INFINITE_INTERVAL), "22023 runtime_sandbox: invalid argument max_snapshot_age: must be a finite interval"),
        (", max_snapshot_age => NULL", "22023 runtime_sandbox: invalid argument max_snapshot_age: must not be NULL"),
        (", absent_confirmations => 0", "22023 runtime_sandbox: invalid argument absent_confirmations: must be an integer from 1 through 100, got 0"),
        (", max_absent_ratio => 2", "22023 runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 2"),
        (", batch_size => 0", "22023 runtime_sandbox: invalid argument batch_size"),
    ] {
        let got = attempt(&format!("SELECT runtime_sandbox.reconcile_daytona_latest(ledger_schema => 'op_fresh'{args})"));
        assert!(got.starts_with(expected), "{args}: {got}");
    }
    run("CREATE SCHEMA op_fresh_old");
    let got = attempt("SELECT runtime_sandbox.reconcile_daytona_latest(ledger_schema => 'op_fresh_old')");
    // Every table it uses, checked up front: the snapshots' and reconcile_daytona's.
    assert!(got.starts_with("42P01 runtime_sandbox: ledger_schema \"op_fresh_old\" lacks the ledger's table(s) \
                             provider_inventory_snapshots, provider_inventory_items, reconciliation_runs, \
                             runtime_sandbox_operations, runtime_sandbox_capacity_leases, \
                             sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, attempts | Point ledger_schema at the \
                             ledger's schema, or run SELECT runtime_sandbox.install_ledger('op_fresh_old')"),
            "{got}");
    // A dry run too: the snapshot tables and what reconcile_daytona reads.
    let got = attempt("SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => true, ledger_schema => 'op_fresh_old')");
    assert!(got.starts_with("42P01 runtime_sandbox: ledger_schema \"op_fresh_old\" lacks the ledger's table(s) \
                             provider_inventory_snapshots, provider_inventory_items, runtime_sandbox_operations, \
                             runtime_sandbox_capacity_leases, sandbox_cleanup_jobs_v2 | "),
            "{got}");
}

#[pg_test]
fn operations_latest_confirms_absence_across_snapshots() {
    // a, b, c listed less and less; d created between the first and second
    // captures; e created after the last.
    ledger("op_confirm", &[("a", "2 hours"), ("b", "2 hours"), ("c", "2 hours"), ("d", "25 minutes"), ("e", "1 minute")]);
    snapshot("op_confirm", &["a", "b", "c"], "30 minutes", 20);
    snapshot("op_confirm", &["a", "b"], "20 minutes", 20);
    let newest = snapshot("op_confirm", &["a"], "10 minutes", 20);
    let absent = |n: i32| {
        let s = latest("op_confirm", &format!(", dry_run => true, minimum_age => '0', absent_confirmations => {n}, max_absent_ratio => 1"));
        (s["absent_candidates"].clone(), s["confirming_snapshots"].clone(), s["snapshot_id"].clone())
    };
    // One snapshot: b, c, d are missing from it (e was created after its capture).
    assert_eq!(absent(1), (json!(3), json!(1), json!(newest)));
    // Two: c and d are missing from both (b is in the second).
    assert_eq!(absent(2), (json!(2), json!(2), json!(newest)));
    // Three: c is in the first; d was created after it was captured.
    assert_eq!(absent(3), (json!(0), json!(3), json!(newest)));
    // Four asked, three exist: nothing is called absent yet.
    assert_eq!(absent(4), (Value::Null, json!(3), json!(newest)));
    // The apply marks exactly the confirmed ones.
    let s = latest("op_confirm", ", minimum_age => '0', absent_confirmations => 2, max_absent_ratio => 1");
    assert_eq!((s["status"].clone(), s["marked_deleted"].clone()), (json!("applied"), json!(2)));
    assert_eq!(
        rows("SELECT operation_key, state::text FROM op_confirm.runtime_sandbox_operations ORDER BY 1"),
        json!([
            {"operation_key": "a", "state": "live"}, {"operation_key": "b", "state": "live"},
            {"operation_key": "c", "state": "deleted"}, {"operation_key": "d", "state": "deleted"},
            {"operation_key": "e", "state": "live"},
        ])
    );
}

#[pg_test]
fn operations_latest_valve_blocks_an_empty_snapshot() {
    ledger("op_empty", &[("a", "2 hours"), ("b", "2 hours")]);
    snapshot("op_empty", &[], "12 minutes", 20);
    let single = snapshot("op_empty", &[], "2 minutes", 20);
    let s = latest("op_empty", ", absent_confirmations => 2");
    assert_eq!(
        (s["status"].clone(), s["absent_candidates"].clone(), s["live_operations"].clone(), s["marked_deleted"].clone()),
        (json!("blocked_mass_absence"), json!(2), json!(2), json!(0))
    );
    assert_eq!(
        rows("SELECT status, snapshot_id FROM op_empty.reconciliation_runs"),
        json!([{"status": "blocked_mass_absence", "snapshot_id": single}])
    );
}

#[pg_test]
fn operations_health_view_says_what_to_alert_on() {
    ledger("op_health", &[("a", "2 hours")]);
    // Before any run: one row, nothing known.
    assert_eq!(
        rows("SELECT provider, last_run_id, last_status, consecutive_blocked_runs, newest_snapshot_id FROM op_health.reconciliation_health"),
        json!([{"provider": "daytona", "last_run_id": null, "last_status": null, "consecutive_blocked_runs": 0, "newest_snapshot_id": null}])
    );
    let s1 = snapshot("op_health", &["a"], "1 minute", 20);
    latest("op_health", "");
    run("SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"stray\"}]', now(), false, ledger_schema => 'op_health')");
    run("SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, ledger_schema => 'op_health')");
    let health = rows(
        "SELECT last_status, last_run_age IS NOT NULL AS aged, last_applied_at IS NOT NULL AS applied_before, \
                consecutive_blocked_runs, absent_candidates, live_operations, unmatched_provider_sandboxes, marked_deleted, \
                newest_snapshot_id, newest_snapshot_age BETWEEN '1 minute' AND '2 minutes' AS snapshot_age, \
                newest_snapshot_items, newest_snapshot_reconciled_run_id IS NOT NULL AS reconciled \
         FROM op_health.reconciliation_health",
    );
    assert_eq!(
        health,
        json!([{
            "last_status": "blocked_mass_absence", "aged": true, "applied_before": true, "consecutive_blocked_runs": 2,
            "absent_candidates": 1, "live_operations": 1, "unmatched_provider_sandboxes": 0, "marked_deleted": 0,
            "newest_snapshot_id": s1, "snapshot_age": true, "newest_snapshot_items": 1, "reconciled": true
        }])
    );
    // An applied run ends the streak.
    latest("op_health", "");
    assert_eq!(int("SELECT consecutive_blocked_runs FROM op_health.reconciliation_health"), 0);
    assert_eq!(text("SELECT last_status FROM op_health.reconciliation_health").as_deref(), Some("applied"));
}

#[pg_test]
fn operations_schedule_without_pg_cron_is_a_clear_error() {
    ledger("op_nocron", &[]);
    let got = attempt("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_nocron')");
    assert_eq!(
        got,
        "55000 runtime_sandbox: schedule_reconciliation: pg_cron is not installed in database \"pgrx_tests\" | \
         Run CREATE EXTENSION pg_cron in database \"pgrx_tests\" first."
    );
    let got = attempt("SELECT runtime_sandbox.unschedule_sandbox_operation_backfill(ledger_schema => 'op_nocron')");
    assert!(got.starts_with("55000 runtime_sandbox: unschedule_sandbox_operation_backfill: pg_cron is not installed"), "{got}");
    // Arguments are checked first.
    let got = attempt("SELECT runtime_sandbox.schedule_reconciliation('every minute', ledger_schema => 'op_nocron')");
    assert!(got.starts_with("22023 runtime_sandbox: invalid argument schedule: \"every minute\" is not a cron schedule"), "{got}");
}

#[pg_test]
fn operations_schedule_jobs_by_name_with_quoted_commands() {
    run("CREATE EXTENSION IF NOT EXISTS pg_cron");
    ledger("op_cron", &[]);
    let id = int("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_cron')");
    // Idempotent by name: the same job, its schedule replaced.
    assert_eq!(int("SELECT runtime_sandbox.schedule_reconciliation('*/10 * * * *', ledger_schema => 'op_cron')"), id);
    let named = int("SELECT runtime_sandbox.schedule_reconciliation('0 * * * *', 'hourly ''check''', 'op_cron')");
    assert_ne!(named, id);
    let backfill = int("SELECT runtime_sandbox.schedule_sandbox_operation_backfill(batch_size => 1000, max_batches => 5, \
                        ledger_schema => 'op_cron')");
    assert_eq!(
        rows("SELECT jobname, schedule, substring(command from 'CALL [^;]*') AS call, database = current_database() AS here, \
              username = current_user AS mine, command LIKE 'DO $runtime_sandbox_job$%' AS wrapped FROM cron.job ORDER BY jobid"),
        json!([
            {"jobname": "reconcile_daytona:op_cron", "schedule": "*/10 * * * *", "here": true, "mine": true, "wrapped": true,
             "call": "CALL runtime_sandbox.run_reconciliation_job(batch_size => 500, minimum_age => pg_catalog.make_interval(months => 0, days => 0, secs => 600.000000), max_snapshot_age => pg_catalog.make_interval(months => 0, days => 0, secs => 900.000000), absent_confirmations => 2, max_absent_ratio => 0.5, ledger_schema => 'op_cron')"},
            {"jobname": "hourly 'check'", "schedule": "0 * * * *", "here": true, "mine": true, "wrapped": true,
             "call": "CALL runtime_sandbox.run_reconciliation_job(batch_size => 500, minimum_age => pg_catalog.make_interval(months => 0, days => 0, secs => 600.000000), max_snapshot_age => pg_catalog.make_interval(months => 0, days => 0, secs => 900.000000), absent_confirmations => 2, max_absent_ratio => 0.5, ledger_schema => 'op_cron')"},
            {"jobname": "sandbox_operation_backfill:op_cron", "schedule": "* * * * *", "here": true, "mine": true, "wrapped": true,
             "call": "CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 1000, max_batches => 5, ledger_schema => 'op_cron')"},
        ])
    );
    let _ = backfill;
    assert_eq!(text("SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => 'op_cron')::text").as_deref(), Some("true"));
    assert_eq!(text("SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => 'op_cron')::text").as_deref(), Some("false"));
    assert_eq!(text("SELECT runtime_sandbox.unschedule_reconciliation('hourly ''check''')::text").as_deref(), Some("true"));
    assert_eq!(text("SELECT runtime_sandbox.unschedule_sandbox_operation_backfill(ledger_schema => 'op_cron')::text").as_deref(), Some("true"));
    assert_eq!(int("SELECT count(*) FROM cron.job"), 0);

    for (sql, expected) in [
        ("SELECT runtime_sandbox.schedule_reconciliation('* * * *', ledger_schema => 'op_cron')",
         "22023 runtime_sandbox: invalid argument schedule: \"* * * *\" is not a cron schedule (4 fields;"),
        ("SELECT runtime_sandbox.schedule_reconciliation(job_name => '', ledger_schema => 'op_cron')",
         "22023 runtime_sandbox: invalid argument job_name: must not be blank"),
        ("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_cron_nowhere')",
         "22023 runtime_sandbox: invalid argument ledger_schema: schema \"op_cron_nowhere\" does not exist"),
        ("SELECT runtime_sandbox.schedule_sandbox_operation_backfill(batch_size => 0, ledger_schema => 'op_cron')",
         "22023 runtime_sandbox: invalid argument batch_size"),
        ("SELECT runtime_sandbox.schedule_sandbox_operation_backfill(max_batches => 0, ledger_schema => 'op_cron')",
         "22023 runtime_sandbox: invalid argument max_batches: must be NULL or at least 1, got 0"),
    ] {
        let got = attempt(sql);
        assert!(got.starts_with(expected), "{sql}: {got}");
    }
    // A ledger the job could not run against is refused now, not at every tick.
    run("CREATE SCHEMA op_cron_old");
    let got = attempt("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_cron_old')");
    assert!(got.starts_with("42P01 runtime_sandbox: ledger_schema \"op_cron_old\" lacks the ledger's table(s)"), "{got}");
    assert_eq!(int("SELECT count(*) FROM cron.job"), 0);
}

/// The ledger's owner, not a superuser and without pg_read_all_settings,
/// schedules its own reconciliation with the documented grants.
#[pg_test]
fn operations_a_non_superuser_owner_schedules_its_ledger() {
    run("CREATE EXTENSION IF NOT EXISTS pg_cron");
    run("CREATE ROLE op_cron_owner NOLOGIN");
    run("CREATE SCHEMA op_cron_owned AUTHORIZATION op_cron_owner");
    run("SELECT runtime_sandbox.install_ledger('op_cron_owned')");
    run("GRANT EXECUTE ON FUNCTION runtime_sandbox.schedule_reconciliation, runtime_sandbox.unschedule_reconciliation TO op_cron_owner");
    run("GRANT USAGE ON SCHEMA cron TO op_cron_owner");
    // A job its role could not run (no EXECUTE on the job's procedure) is refused, nothing scheduled.
    run("SET LOCAL ROLE op_cron_owner");
    run("DO $$ BEGIN
           PERFORM runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_cron_owned');
           RAISE EXCEPTION 'scheduled a job its role could not run';
         EXCEPTION WHEN insufficient_privilege THEN NULL;
         END $$");
    run("RESET ROLE");
    assert_eq!(int("SELECT count(*) FROM cron.job WHERE username = 'op_cron_owner'"), 0);
    run("GRANT EXECUTE ON ROUTINE runtime_sandbox.run_reconciliation_job, runtime_sandbox.run_reconciliation_job_in_environment,
         runtime_sandbox.reconcile_daytona_latest TO op_cron_owner");
    run("SET LOCAL ROLE op_cron_owner");
    let id = int("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'op_cron_owned')");
    assert!(id > 0);
    assert_eq!(text(&format!("SELECT username FROM cron.job WHERE jobid = {id}")).as_deref(), Some("op_cron_owner"));
    assert_eq!(text("SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => 'op_cron_owned')::text").as_deref(), Some("true"));
    run("RESET ROLE");
}
