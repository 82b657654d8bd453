// SQL-level tests of reconcile_daytona (run by `cargo pgrx test`), each on a
// small hand-built ledger in its own schema where every expected row is named.

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

/// The SQLSTATE and message of `sql`'s error (None: it ran).
fn error_of(sql: &str) -> Option<String> {
    run(r#"CREATE OR REPLACE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
           BEGIN EXECUTE q; RETURN NULL;
           EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM; END $$"#);
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_of($1)", &[sql.into()]).expect("error_of runs")
}

fn rows(sql: &str) -> Value {
    serde_json::from_str(&text(&format!("SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]')::text FROM ({sql}) q")).unwrap())
        .unwrap()
}

/// A fresh ledger schema with a few builders for its rows. Times are relative
/// to now() (the inventory is captured at now()).
struct Ledger {
    s: &'static str,
}

impl Ledger {
    fn new(s: &'static str) -> Self {
        run(&format!("SELECT runtime_sandbox.install_ledger('{s}')"));
        // Every table's rows, hashed: "byte-identical" checks compare these.
        run(&format!(
            r#"CREATE OR REPLACE FUNCTION pg_temp.checksum_{s}() RETURNS text LANGUAGE plpgsql AS $f$
            DECLARE t text; sum text; result text := '';
            BEGIN
              FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = '{s}' ORDER BY tablename LOOP
                EXECUTE format('SELECT md5(coalesce(string_agg(x::text, chr(10) ORDER BY x::text), %L)) FROM {s}.%I x', '', t) INTO sum;
                result := result || t || '=' || sum || ' ';
              END LOOP;
              RETURN result;
            END $f$"#
        ));
        Ledger { s }
    }

    fn checksum(&self) -> String {
        text(&format!("SELECT pg_temp.checksum_{}()", self.s)).unwrap()
    }

    /// An operation; `age` is how long before now() the provider created it.
    fn op(&self, key: &str, state: &str, sandbox: Option<&str>, domain: Option<&str>, token: Option<&str>, age: &str) {
        let q = |v: Option<&str>| v.map_or("NULL".to_string(), |v| format!("'{v}'"));
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, \
             routing_domain, state, provider_operation_token, provider_created_at) \
             VALUES ('{key}', 'daytona', 'run-{key}', 1, 'org-1', {sb}, {rd}, '{state}', {tok}, now() - interval '{age}')",
            s = self.s,
            sb = q(sandbox),
            rd = q(domain),
            tok = q(token),
        ));
    }

    fn lease(&self, id: &str, run_id: &str, sandbox: Option<&str>, released: bool) {
        let sb = sandbox.map_or("NULL".to_string(), |v| format!("'{v}'"));
        let provider = if sandbox.is_some() { "'daytona'" } else { "NULL" };
        let released = if released { "now() - interval '1 day'" } else { "NULL" };
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, released_at) \
             VALUES ('{id}', 'org-1', '{run_id}', {provider}, {sb}, {released})",
            s = self.s
        ));
    }

    fn cleanup(&self, sandbox: &str, run_id: &str, status: &str, owner: Option<&str>) {
        let owner = owner.map_or("NULL".to_string(), |v| format!("'{v}'"));
        let deleted_at = if status == "deleted" { "now() - interval '1 hour'" } else { "NULL" };
        run(&format!(
            "INSERT INTO {s}.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status, lease_owner, deleted_at) \
             VALUES ('daytona', '{sandbox}', '{run_id}', 1, '{status}', {owner}, {deleted_at})",
            s = self.s
        ));
    }

    fn attempt(&self, run_id: &str, resource_json: &str) {
        run(&format!(
            "INSERT INTO {s}.runs (run_id, org_id) VALUES ('{run_id}', 'org-1') ON CONFLICT DO NOTHING; \
             INSERT INTO {s}.attempts (run_id, attempt, resource_json) VALUES ('{run_id}', 1, {resource_json})",
            s = self.s
        ));
    }

    /// reconcile_daytona on this ledger, as JSON. Before every apply, a dry
    /// run of the same call must say what the apply releases and recovers.
    fn reconcile(&self, inventory: &Value, dry_run: bool, extra: &str) -> Value {
        let call = |dry_run: bool| {
            let sql = format!(
                "SELECT to_jsonb(r)::text FROM runtime_sandbox.reconcile_daytona('{inventory}'::jsonb, now(), {dry_run}, \
                 ledger_schema => '{s}'{extra}) r",
                s = self.s
            );
            serde_json::from_str::<Value>(&text(&sql).unwrap()).unwrap()
        };
        if dry_run {
            return call(true);
        }
        let planned = call(true);
        let applied = call(false);
        assert_would_match(&planned, &applied);
        applied
    }

    fn state(&self, key: &str) -> String {
        text(&format!("SELECT state::text FROM {}.runtime_sandbox_operations WHERE operation_key = '{key}'", self.s))
            .unwrap()
    }
}

/// A dry run's `would_*` columns are the apply's release and recovery
/// counts, which an apply repeats in its own `would_*`; the dry run's
/// application columns stay 0, as the application's dry run skips both phases.
fn assert_would_match(planned: &Value, applied: &Value) {
    let pick = |s: &Value, a: &str, b: &str| (s[a].clone(), s[b].clone());
    let done = pick(applied, "released_terminal_leases", "recovered_reserved_operations");
    if applied["status"] != "skipped_concurrent" {
        assert_eq!(pick(planned, "would_release_terminal_leases", "would_recover_reserved_operations"), done, "{planned}\n{applied}");
    }
    assert_eq!(pick(applied, "would_release_terminal_leases", "would_recover_reserved_operations"), done);
    assert_eq!(pick(planned, "released_terminal_leases", "recovered_reserved_operations"), (json!(0), json!(0)));
}

fn counts(summary: &Value) -> Value {
    let mut c = summary.clone();
    let o = c.as_object_mut().unwrap();
    o.remove("diagnostics");
    c
}

fn phases(summary: &Value) -> Vec<(String, i64)> {
    summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["phase"].as_str().unwrap().to_string(), d["row_count"].as_i64().unwrap()))
        .collect()
}

fn p(name: &str, n: i64) -> (String, i64) {
    (name.to_string(), n)
}

#[pg_test]
fn reconcile_recovers_reserved_creates_by_unique_label() {
    let l = Ledger::new("rc_recover");
    // Three reserved creates with open leases, their attempts' resource_json
    // NULL, an array and an object.
    for (key, resource) in [("k1", "NULL"), ("k2", r#"'[{"kind":"modal_sandbox"}]'"#), ("k3", r#"'{"kind":"old"}'"#)] {
        l.op(key, "reserved", None, None, Some(&format!("tok-{key}")), "1 hour");
        l.lease(key, &format!("run-{key}"), None, false);
        l.attempt(&format!("run-{key}"), resource);
    }
    let inventory = json!([
        {"sandboxId": "sb1", "operationKey": "tok-k1"},
        {"sandboxId": "sb2", "operationKey": "tok-k2", "routingDomain": "eu"},
        {"sandboxId": "sb3", "operationKey": "tok-k3"},
    ]);

    let before = l.checksum();
    let dry = l.reconcile(&inventory, true, "");
    assert_eq!(l.checksum(), before, "a dry run writes nothing");
    assert_eq!(dry["status"], "planned");
    assert_eq!(dry["matched_live_sandboxes"], 0, "still reserved in a dry run: owned, not matched");
    assert_eq!(dry["unmatched_provider_sandbox_ids"], json!([]));
    assert_eq!(dry["recovered_reserved_operations"], 0);
    assert_eq!(phases(&dry), vec![p("recover_reserved_operations", 3), p("match_provider_inventory", 0), p("find_absent_operations", 0)]);

    let applied = l.reconcile(&inventory, false, "");
    assert_eq!(applied["status"], "applied");
    assert_eq!(applied["recovered_reserved_operations"], 3);
    assert_eq!(applied["matched_live_sandboxes"], 3, "recovered operations are deleting, so matched");
    assert_eq!(applied["live_leases_to_seed"], 0, "their leases are bound");
    assert_eq!(
        phases(&applied),
        vec![
            p("release_terminal_capacity", 0),
            p("recover_reserved_operations", 3),
            p("recover_reserved_operations", 3),
            p("match_provider_inventory", 3),
            p("find_absent_operations", 0),
            // Each recovered create's lease is open (recovery bound it): no history is inspected.
            p("inspect_capacity_bindings", 0),
            p("inspect_capacity_bindings", 0),
            p("release_terminal_capacity", 0),
        ]
    );
    assert_eq!(
        rows("SELECT operation_key, state::text, sandbox_id, routing_domain, provider_created_at IS NOT NULL AS created \
              FROM rc_recover.runtime_sandbox_operations ORDER BY 1"),
        json!([
            {"operation_key": "k1", "state": "deleting", "sandbox_id": "sb1", "routing_domain": null, "created": true},
            {"operation_key": "k2", "state": "deleting", "sandbox_id": "sb2", "routing_domain": "eu", "created": true},
            {"operation_key": "k3", "state": "deleting", "sandbox_id": "sb3", "routing_domain": null, "created": true},
        ])
    );
    assert_eq!(
        rows("SELECT lease_id, provider, sandbox_id, routing_domain, released_at IS NULL AS open \
              FROM rc_recover.runtime_sandbox_capacity_leases ORDER BY 1"),
        json!([
            {"lease_id": "k1", "provider": "daytona", "sandbox_id": "sb1", "routing_domain": null, "open": true},
            {"lease_id": "k2", "provider": "daytona", "sandbox_id": "sb2", "routing_domain": "eu", "open": true},
            {"lease_id": "k3", "provider": "daytona", "sandbox_id": "sb3", "routing_domain": null, "open": true},
        ])
    );
    assert_eq!(
        rows("SELECT sandbox_id, run_id, status, routing_domain FROM rc_recover.sandbox_cleanup_jobs_v2 ORDER BY 1"),
        json!([
            {"sandbox_id": "sb1", "run_id": "run-k1", "status": "pending", "routing_domain": null},
            {"sandbox_id": "sb2", "run_id": "run-k2", "status": "pending", "routing_domain": "eu"},
            {"sandbox_id": "sb3", "run_id": "run-k3", "status": "pending", "routing_domain": null},
        ])
    );
    // The late fact: NULL becomes a one-element array, an array is appended
    // to, a lone object is wrapped first.
    let facts = rows(
        "SELECT run_id, jsonb_array_length(resource_json) AS n, resource_json->0->>'kind' AS first, \
                (resource_json -> -1) - 'billingStartedAt' AS fact, \
                jsonb_typeof((resource_json -> -1) -> 'billingStartedAt') AS billing \
         FROM rc_recover.attempts ORDER BY 1",
    );
    let fact = |sb: &str, key: &str, domain: Value| {
        json!({"kind": "daytona_sandbox", "sandboxId": sb, "runtimeEnvironment": "production",
               "daytonaOrganizationId": domain, "sandboxCapacityLeaseId": key, "lateAcquired": true})
    };
    assert_eq!(
        facts,
        json!([
            {"run_id": "run-k1", "n": 1, "first": "daytona_sandbox", "fact": fact("sb1", "k1", Value::Null), "billing": "number"},
            {"run_id": "run-k2", "n": 2, "first": "modal_sandbox", "fact": fact("sb2", "k2", json!("eu")), "billing": "number"},
            {"run_id": "run-k3", "n": 2, "first": "old", "fact": fact("sb3", "k3", Value::Null), "billing": "number"},
        ])
    );

    // Idempotent: the second apply finds nothing to do.
    let before = l.checksum_without_history();
    let again = l.reconcile(&inventory, false, "");
    assert_eq!(l.checksum_without_history(), before);
    assert_eq!(again["recovered_reserved_operations"], 0);
    assert_eq!(again["matched_live_sandboxes"], 3);
    assert_eq!(again["status"], "applied");
}

impl Ledger {
    /// Every table except the run history (which an apply always appends to).
    fn checksum_without_history(&self) -> String {
        self.checksum().split(' ').filter(|t| !t.starts_with("reconciliation_runs=")).collect::<Vec<_>>().join(" ")
    }
}

#[pg_test]
fn reconcile_duplicate_labels_recover_nothing_and_fail_closed() {
    let l = Ledger::new("rc_duplicate");
    l.op("k1", "reserved", None, None, Some("tok"), "1 hour");
    l.lease("k1", "run-k1", None, false);
    l.attempt("run-k1", "NULL");
    // A terminal lease to release: the first release's writes stay.
    l.op("k9", "deleting", Some("sb9"), None, None, "2 hours");
    l.lease("k9", "run-k9", Some("sb9"), false);
    l.cleanup("sb9", "run-k9", "deleted", None);
    // An old absent live operation: not marked when failing closed.
    l.op("k8", "live", Some("sb8"), None, None, "3 hours");
    let inventory = json!([
        {"sandboxId": "sb1", "operationKey": "tok"},
        {"sandboxId": "sb2", "operationKey": "tok"},
        {"sandboxId": "sb9"},
    ]);
    let dry = l.reconcile(&inventory, true, "");
    assert_eq!(dry["status"], "blocked_unowned_sandboxes");
    assert_eq!(dry["unmatched_provider_sandbox_ids"], json!(["sb1", "sb2"]));

    let s = l.reconcile(&inventory, false, "");
    assert_eq!(
        counts(&s),
        json!({
            "provider": "daytona", "provider_sandbox_count": 3, "matched_live_sandboxes": 1,
            "unmatched_provider_sandbox_ids": ["sb1", "sb2"], "live_leases_to_seed": 0, "absent_ledger_rows": 0,
            "seeded_leases": 0, "released_terminal_leases": 1, "marked_deleted": 0,
            "recovered_reserved_operations": 0, "has_more_absent_ledger_rows": false, "dry_run": false,
            "status": "blocked_unowned_sandboxes",
            // The ledger was read (one live operation), absence never looked at.
            "absent_candidates": null, "live_operations": 1, "snapshot_id": null, "confirming_snapshots": null,
            "environment": "production", "unowned_in_other_environments": {},
            "would_release_terminal_leases": 1, "would_recover_reserved_operations": 0
        })
    );
    // The select sees both items (2 rows), so recovery runs and promotes none.
    assert_eq!(
        phases(&s),
        vec![
            p("release_terminal_capacity", 1),
            p("recover_reserved_operations", 2),
            p("recover_reserved_operations", 0),
            p("match_provider_inventory", 1),
        ]
    );
    assert_eq!(l.state("k1"), "reserved");
    assert_eq!(l.state("k8"), "live");
    assert_eq!(int("SELECT count(*) FROM rc_duplicate.runtime_sandbox_capacity_leases WHERE released_at IS NULL"), 1);
    assert_eq!(
        rows("SELECT status, dry_run, summary->'unmatched_provider_sandbox_ids' AS ids FROM rc_duplicate.reconciliation_runs"),
        json!([{"status": "blocked_unowned_sandboxes", "dry_run": false, "ids": ["sb1", "sb2"]}])
    );
}

#[pg_test]
fn reconcile_fails_closed_on_unowned_sandboxes_in_inventory_order() {
    let l = Ledger::new("rc_closed");
    l.op("k1", "live", Some("sb1"), None, None, "1 hour");
    l.op("k2", "live", Some("sb2"), Some("eu"), None, "1 hour");
    l.op("k3", "deleted", Some("sb3"), None, None, "1 hour");
    l.op("k4", "live", Some("sb4"), None, None, "1 hour");
    let before = l.checksum_without_history();
    let s = l.reconcile(
        &json!([
            {"sandboxId": "zz"}, {"sandboxId": "sb1"}, {"sandboxId": "sb2"}, {"sandboxId": "sb3"},
            {"sandboxId": "aa", "operationKey": "unknown"}, {"sandboxId": "zz "}
        ]),
        false,
        "",
    );
    // sb2 is listed without its routing domain, sb3 is deleted: both unowned.
    assert_eq!(s["unmatched_provider_sandbox_ids"], json!(["zz", "sb2", "sb3", "aa"]));
    assert_eq!(s["provider_sandbox_count"], 5);
    assert_eq!(s["matched_live_sandboxes"], 1);
    assert_eq!(s["absent_ledger_rows"], 0);
    assert_eq!(l.checksum_without_history(), before, "nothing written after failing closed");
    assert_eq!(l.state("k4"), "live");
}

#[pg_test]
fn reconcile_captured_at_and_minimum_age_boundaries() {
    Ledger::new("rc_bounds");
    run("INSERT INTO rc_bounds.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at) VALUES
         ('at-capture', 'daytona', 'r1', 1, 'o', 'sb-at', 'live', '2026-01-01 00:00:00+00'),
         ('after-capture', 'daytona', 'r2', 1, 'o', 'sb-after', 'live', '2026-01-01 00:00:00.000001+00'),
         ('no-created-at', 'daytona', 'r3', 1, 'o', 'sb-null', 'live', NULL),
         ('staging', 'daytona', 'r4', 1, 'o', 'sb-staging', 'live', '2025-01-01'),
         ('modal', 'modal', 'r5', 1, 'o', 'sb-modal', 'live', '2025-01-01')");
    run("UPDATE rc_bounds.runtime_sandbox_operations SET environment = 'staging' WHERE operation_key = 'staging'");
    let absent = |captured: &str, age: &str| -> i64 {
        let s: Value = serde_json::from_str(
            &text(&format!(
                "SELECT to_jsonb(r)::text FROM runtime_sandbox.reconcile_daytona('[]', '{captured}', true, \
                 minimum_age => '{age}', ledger_schema => 'rc_bounds') r"
            ))
            .unwrap(),
        )
        .unwrap();
        s["absent_ledger_rows"].as_i64().unwrap()
    };
    // Recorded at the capture instant counts; one microsecond later does not.
    assert_eq!(absent("2026-01-01 00:00:00+00", "0"), 1);
    assert_eq!(absent("2026-01-01 00:00:00.000001+00", "0"), 2);
    assert_eq!(absent("2025-12-31 23:59:59.999999+00", "0"), 0);
    // Minimum age against the clock: both rows are older than 1 hour, the
    // capture bound still applies, and an age reaching past them hides them.
    assert_eq!(absent("2030-01-01", "1 hour"), 2);
    // Ages in plain seconds (no days: a day is not always 24 hours).
    let age_of_first = text(
        "SELECT make_interval(secs => floor(extract(epoch FROM clock_timestamp() - '2026-01-01 00:00:00+00'::timestamptz)) - 1)::text",
    )
    .unwrap();
    assert_eq!(absent("2030-01-01", &age_of_first), 2);
    let past_both = text(
        "SELECT make_interval(secs => floor(extract(epoch FROM clock_timestamp() - '2026-01-01 00:00:00+00'::timestamptz)) + 3600)::text",
    )
    .unwrap();
    assert_eq!(absent("2030-01-01", &past_both), 0);
}

#[pg_test]
fn reconcile_marks_absent_rows_but_never_a_workers_cleanup() {
    let l = Ledger::new("rc_mark");
    // Absent and unowned: marked.
    l.op("k1", "live", Some("sb1"), None, None, "3 hours");
    l.lease("k1", "run-k1", Some("sb1"), false);
    l.lease("k1-other-run", "run-other", Some("sb1"), false);
    // Absent with a pending cleanup nobody holds: moved to deleted.
    l.op("k2", "live", Some("sb2"), None, None, "2 hours 59 minutes");
    l.cleanup("sb2", "run-k2", "pending", None);
    // Absent but a worker holds its cleanup: untouched.
    l.op("k3", "live", Some("sb3"), None, None, "2 hours 58 minutes");
    l.cleanup("sb3", "run-k3", "pending", Some("worker-1"));
    // Absent but its cleanup is mid-delete: untouched.
    l.op("k4", "live", Some("sb4"), None, None, "2 hours 57 minutes");
    l.cleanup("sb4", "run-k4", "deleting", None);
    // Absent with a deleted cleanup: not a candidate at all.
    l.op("k5", "live", Some("sb5"), None, None, "2 hours 56 minutes");
    l.cleanup("sb5", "run-k5", "deleted", None);
    // Too young.
    l.op("k6", "live", Some("sb6"), None, None, "5 minutes");
    // Listed: matched, not absent.
    l.op("k7", "live", Some("sb7"), None, None, "4 hours");
    let workers_rows = "SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM rc_mark.sandbox_cleanup_jobs_v2 c \
                        WHERE sandbox_id IN ('sb3', 'sb4')";
    let workers_before = text(workers_rows);

    let s = l.reconcile(&json!([{"sandboxId": "sb7"}]), false, "");
    assert_eq!(s["absent_ledger_rows"], 4);
    assert_eq!(s["marked_deleted"], 2);
    assert_eq!(s["has_more_absent_ledger_rows"], false);
    assert_eq!(s["seeded_leases"], 1, "sb7 had no lease");
    assert_eq!(text(workers_rows), workers_before, "a worker's cleanup rows are untouched");
    assert_eq!(
        rows("SELECT operation_key AS k, state::text, delete_confirmed_at IS NOT NULL AS confirmed \
              FROM rc_mark.runtime_sandbox_operations ORDER BY 1"),
        json!([
            {"k": "k1", "state": "deleted", "confirmed": true},
            {"k": "k2", "state": "deleted", "confirmed": true},
            {"k": "k3", "state": "live", "confirmed": false},
            {"k": "k4", "state": "live", "confirmed": false},
            {"k": "k5", "state": "live", "confirmed": false},
            {"k": "k6", "state": "live", "confirmed": false},
            {"k": "k7", "state": "live", "confirmed": false},
        ])
    );
    assert_eq!(
        rows("SELECT sandbox_id, run_id, status, last_error, deleted_at IS NOT NULL AS deleted \
              FROM rc_mark.sandbox_cleanup_jobs_v2 WHERE sandbox_id IN ('sb1', 'sb2') ORDER BY 1"),
        json!([
            {"sandbox_id": "sb1", "run_id": "run-k1", "status": "deleted", "last_error": "reconciled_provider_confirmed_absent", "deleted": true},
            {"sandbox_id": "sb2", "run_id": "run-k2", "status": "deleted", "last_error": "reconciled_provider_confirmed_absent", "deleted": true},
        ])
    );
    assert_eq!(
        rows("SELECT sandbox_id, run_id, event_type, cleanup_attempt, details_json FROM rc_mark.sandbox_cleanup_events_v2 ORDER BY 1"),
        json!([
            {"sandbox_id": "sb1", "run_id": "run-k1", "event_type": "reconciled_provider_confirmed_absent", "cleanup_attempt": 0,
             "details_json": {"source": "runtime-sandbox-ledger-reconciliation"}},
            {"sandbox_id": "sb2", "run_id": "run-k2", "event_type": "reconciled_provider_confirmed_absent", "cleanup_attempt": 0,
             "details_json": {"source": "runtime-sandbox-ledger-reconciliation"}},
        ])
    );
    // Only the same run's lease is released by marking.
    assert_eq!(
        rows("SELECT lease_id, released_at IS NOT NULL AS released FROM rc_mark.runtime_sandbox_capacity_leases ORDER BY 1"),
        json!([
            {"lease_id": "k1", "released": true},
            {"lease_id": "k1-other-run", "released": false},
            {"lease_id": "k7", "released": false},
        ])
    );

    // Idempotent: the second apply changes nothing (the workers' rows are
    // still absent candidates, still untouched).
    let before = l.checksum_without_history();
    let again = l.reconcile(&json!([{"sandboxId": "sb7"}]), false, "");
    assert_eq!(l.checksum_without_history(), before);
    assert_eq!(
        (again["absent_ledger_rows"].clone(), again["marked_deleted"].clone(), again["seeded_leases"].clone(),
         again["released_terminal_leases"].clone()),
        (json!(2), json!(0), json!(0), json!(0))
    );
    assert_eq!(int("SELECT count(*) FROM rc_mark.reconciliation_runs WHERE status = 'applied'"), 2);
}

#[pg_test]
fn reconcile_batches_absent_rows_oldest_first() {
    let l = Ledger::new("rc_batch");
    l.op("b", "live", Some("sb-b"), None, None, "2 hours");
    l.op("a", "live", Some("sb-a"), None, None, "2 hours");
    l.op("c", "live", Some("sb-c"), None, None, "3 hours");
    // An empty listing: the valve would block it (see reconcile_valve_*).
    let s = l.reconcile(&json!([]), false, ", batch_size => 2, max_absent_ratio => 1");
    assert_eq!((s["absent_ledger_rows"].clone(), s["has_more_absent_ledger_rows"].clone()), (json!(2), json!(true)));
    assert_eq!((s["absent_candidates"].clone(), s["live_operations"].clone()), (json!(3), json!(3)));
    assert_eq!(phases(&s), vec![p("release_terminal_capacity", 0), p("find_absent_operations", 3),
                                p("mark_provider_confirmed_absent", 2), p("release_terminal_capacity", 0)]);
    // Oldest first, then operation key among equals.
    assert_eq!((l.state("c"), l.state("a"), l.state("b")), ("deleted".into(), "deleted".into(), "live".into()));
    let s = l.reconcile(&json!([]), false, ", batch_size => 2, max_absent_ratio => 1");
    assert_eq!((s["absent_ledger_rows"].clone(), s["has_more_absent_ledger_rows"].clone()), (json!(1), json!(false)));
}

#[pg_test]
fn reconcile_releases_terminal_leases_and_seeds_by_the_rules() {
    let l = Ledger::new("rc_leases");
    // Terminal: the lease of a deleted cleanup (same run) is released; a
    // lease of another run for the same sandbox is not.
    l.op("t1", "deleted", Some("sbt"), None, None, "5 hours");
    l.cleanup("sbt", "run-t1", "deleted", None);
    l.lease("t1", "run-t1", Some("sbt"), false);
    l.lease("t1-other", "run-x", Some("sbt"), false);
    // Live and listed without a lease: seeded.
    l.op("s1", "live", Some("sb-s1"), None, None, "1 hour");
    // Live with a lease already (released even): nothing to seed.
    l.op("s2", "live", Some("sb-s2"), None, None, "1 hour");
    l.lease("old-s2", "run-s2", Some("sb-s2"), true);
    // Live but durably deleted at the provider side of the ledger: not seeded.
    l.op("s3", "deleting", Some("sb-s3"), None, None, "1 hour");
    l.cleanup("sb-s3", "run-s3", "deleted", None);
    // An unbound open lease with the operation's key: rebound (counts as seeded).
    l.op("s4", "live", Some("sb-s4"), None, None, "1 hour");
    l.lease("s4", "run-s4", None, false);
    // An unbound released lease with the key: to seed, but not rebound.
    l.op("s5", "live", Some("sb-s5"), None, None, "1 hour");
    l.lease("s5", "run-s5", None, true);
    // Listed twice under two operation labels: two matched rows, one lease.
    l.op("s6", "live", Some("sb-s6"), None, None, "1 hour");
    let inventory = json!([
        {"sandboxId": "sb-s1"}, {"sandboxId": "sb-s2"}, {"sandboxId": "sb-s3"}, {"sandboxId": "sb-s4"},
        {"sandboxId": "sb-s5"}, {"sandboxId": "sb-s6", "operationKey": "x"}, {"sandboxId": "sb-s6", "operationKey": "y"},
    ]);
    let dry = l.reconcile(&inventory, true, "");
    assert_eq!((dry["matched_live_sandboxes"].clone(), dry["live_leases_to_seed"].clone()), (json!(7), json!(5)));
    assert_eq!(dry["released_terminal_leases"], 0);

    let s = l.reconcile(&inventory, false, "");
    assert_eq!(s["released_terminal_leases"], 1);
    assert_eq!(s["matched_live_sandboxes"], 7);
    assert_eq!(s["live_leases_to_seed"], 5);
    assert_eq!(s["seeded_leases"], 3, "s1, s4 rebound, s6 once; s5's released lease stays released");
    assert_eq!(
        phases(&s),
        vec![
            p("release_terminal_capacity", 1),
            p("recover_reserved_operations", 0),
            p("match_provider_inventory", 7),
            p("find_absent_operations", 0),
            // distinct (sandbox, domain) lease pairs: sb-s2 (the unbound
            // leases have no sandbox yet); terminal pairs: sb-s3.
            p("inspect_capacity_bindings", 1),
            p("inspect_capacity_bindings", 1),
            p("seed_capacity_bindings", 3),
            p("release_terminal_capacity", 1),
        ]
    );
    assert_eq!(
        rows("SELECT lease_id, run_id, sandbox_id, released_at IS NOT NULL AS released, expires_at IS NOT NULL AS expires \
              FROM rc_leases.runtime_sandbox_capacity_leases ORDER BY 1"),
        json!([
            {"lease_id": "old-s2", "run_id": "run-s2", "sandbox_id": "sb-s2", "released": true, "expires": false},
            {"lease_id": "s1", "run_id": "run-s1", "sandbox_id": "sb-s1", "released": false, "expires": true},
            {"lease_id": "s4", "run_id": "run-s4", "sandbox_id": "sb-s4", "released": false, "expires": true},
            {"lease_id": "s5", "run_id": "run-s5", "sandbox_id": null, "released": true, "expires": false},
            {"lease_id": "s6", "run_id": "run-s6", "sandbox_id": "sb-s6", "released": false, "expires": true},
            {"lease_id": "t1", "run_id": "run-t1", "sandbox_id": "sbt", "released": true, "expires": false},
            {"lease_id": "t1-other", "run_id": "run-x", "sandbox_id": "sbt", "released": false, "expires": false},
        ])
    );
    let again = l.reconcile(&inventory, false, "");
    assert_eq!((again["seeded_leases"].clone(), again["live_leases_to_seed"].clone(), again["released_terminal_leases"].clone()),
               (json!(0), json!(1), json!(0)), "only s5's identity is still without a lease");
}

#[pg_test]
fn reconcile_dry_run_leaves_every_table_byte_identical() {
    let l = Ledger::new("rc_dry");
    l.op("r1", "reserved", None, None, Some("tok-r1"), "1 hour");
    l.lease("r1", "run-r1", None, false);
    l.attempt("run-r1", "NULL");
    l.op("l1", "live", Some("sb-l1"), None, None, "1 hour");
    l.op("a1", "live", Some("sb-a1"), None, None, "1 hour");
    l.op("t1", "deleted", Some("sb-t1"), None, None, "1 hour");
    l.lease("t1", "run-t1", Some("sb-t1"), false);
    l.cleanup("sb-t1", "run-t1", "deleted", None);
    let inventory = json!([{"sandboxId": "sb-r1", "operationKey": "tok-r1"}, {"sandboxId": "sb-l1"}]);
    let before = l.checksum();
    let dry = l.reconcile(&inventory, true, "");
    assert_eq!(l.checksum(), before);
    assert_eq!(
        counts(&dry),
        json!({
            "provider": "daytona", "provider_sandbox_count": 2, "matched_live_sandboxes": 1,
            "unmatched_provider_sandbox_ids": [], "live_leases_to_seed": 1, "absent_ledger_rows": 1,
            "seeded_leases": 0, "released_terminal_leases": 0, "marked_deleted": 0,
            "recovered_reserved_operations": 0, "has_more_absent_ledger_rows": false, "dry_run": true,
            "status": "planned",
            "absent_candidates": 1, "live_operations": 2, "snapshot_id": null, "confirming_snapshots": null,
            "environment": "production", "unowned_in_other_environments": null,
            "would_release_terminal_leases": 1, "would_recover_reserved_operations": 1
        })
    );
    let applied = l.reconcile(&inventory, false, "");
    assert_eq!(
        counts(&applied),
        json!({
            "provider": "daytona", "provider_sandbox_count": 2, "matched_live_sandboxes": 2,
            "unmatched_provider_sandbox_ids": [], "live_leases_to_seed": 1, "absent_ledger_rows": 1,
            "seeded_leases": 1, "released_terminal_leases": 1, "marked_deleted": 1,
            "recovered_reserved_operations": 1, "has_more_absent_ledger_rows": false, "dry_run": false,
            "status": "applied",
            "absent_candidates": 1, "live_operations": 2, "snapshot_id": null, "confirming_snapshots": null,
            "environment": "production", "unowned_in_other_environments": null,
            "would_release_terminal_leases": 1, "would_recover_reserved_operations": 1
        })
    );
    let history = rows("SELECT status, dry_run, summary - 'diagnostics' AS summary, finished_at >= started_at AS ordered \
                        FROM rc_dry.reconciliation_runs");
    assert_eq!(history, json!([{"status": "applied", "dry_run": false, "summary": counts(&applied), "ordered": true}]));
}

#[pg_test]
fn reconcile_returns_named_columns() {
    Ledger::new("rc_columns");
    let columns = text(
        "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute \
         WHERE attrelid = 'runtime_sandbox.reconciliation_summary'::regclass AND attnum > 0",
    )
    .unwrap();
    assert_eq!(
        columns,
        "provider,provider_sandbox_count,matched_live_sandboxes,unmatched_provider_sandbox_ids,live_leases_to_seed,\
         absent_ledger_rows,seeded_leases,released_terminal_leases,marked_deleted,recovered_reserved_operations,\
         has_more_absent_ledger_rows,dry_run,status,diagnostics,absent_candidates,live_operations,snapshot_id,\
         confirming_snapshots,environment,unowned_in_other_environments,would_release_terminal_leases,\
         would_recover_reserved_operations"
    );
    assert_eq!(
        text("SELECT status || ':' || provider_sandbox_count || ':' || cardinality(diagnostics) \
              FROM runtime_sandbox.reconcile_daytona('[]', now(), true, ledger_schema => 'rc_columns')")
        .as_deref(),
        Some("planned:0:1")
    );
    // The per-call planner settings are put back.
    run("SET LOCAL enable_nestloop = off; SET LOCAL jit = on");
    text("SELECT status FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\":\"x\"}]', now(), false, ledger_schema => 'rc_columns')");
    assert_eq!(
        text("SELECT current_setting('enable_nestloop') || current_setting('enable_mergejoin') || current_setting('jit')").as_deref(),
        Some("offonon")
    );
    assert_eq!(
        text("SELECT (diagnostics[1]).phase FROM runtime_sandbox.reconcile_daytona('[]', now(), true, ledger_schema => 'rc_columns')")
            .as_deref(),
        Some("find_absent_operations")
    );
}

/// PostgreSQL 17's `'infinity'` interval. Before 17 the same stored value is a
/// (finite, absurd) interval the functions refuse alike.
#[cfg(any(feature = "pg17", feature = "pg18"))]
pub(crate) const INFINITE_INTERVAL: &str = "'infinity'::interval";
#[cfg(any(feature = "pg17", feature = "pg18"))]
pub(crate) const INFINITE_INTERVAL_TEXT: &str = "infinity";
#[cfg(not(any(feature = "pg17", feature = "pg18")))]
pub(crate) const INFINITE_INTERVAL: &str = "'2147483647 mons 2147483647 days 2562047788:00:54.775807'::interval";
#[cfg(not(any(feature = "pg17", feature = "pg18")))]
pub(crate) const INFINITE_INTERVAL_TEXT: &str = "178956970 years 7 mons 2147483647 days 2562047788:00:54.775807";

#[pg_test]
fn reconcile_rejects_every_bad_input_and_writes_nothing() {
    assert_eq!(text(&format!("SELECT ({INFINITE_INTERVAL})::text")).as_deref(), Some(INFINITE_INTERVAL_TEXT));
    let l = Ledger::new("rc_bad");
    l.op("t1", "deleted", Some("sb-t1"), None, None, "1 hour");
    l.lease("t1", "run-t1", Some("sb-t1"), false);
    l.cleanup("sb-t1", "run-t1", "deleted", None);
    run(r#"CREATE FUNCTION pg_temp.try_reconcile(args text) RETURNS text LANGUAGE plpgsql AS $f$
           BEGIN
             EXECUTE 'SELECT runtime_sandbox.reconcile_daytona(' || args || ')';
             RETURN 'ok';
           EXCEPTION WHEN others THEN
             RETURN SQLSTATE || ' ' || SQLERRM;
           END $f$"#);
    let before = l.checksum();
    let ok = "'[]', now(), false, ledger_schema => 'rc_bad'";
    let cases = [
        ("NULL, now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: must not be NULL"),
        ("'{}', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: must be a JSON array, got an object"),
        ("'\"x\"', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: must be a JSON array, got a string"),
        ("'[{\"sandboxId\":\"a\"}, 1]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 1: must be an object, got a number"),
        ("'[{}]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 0: sandboxId is required"),
        ("'[{\"sandboxId\":5}]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 0: sandboxId must be a string, got a number"),
        ("'[{\"sandboxId\":\" \"}]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 0: sandboxId is blank"),
        ("'[{\"sandboxId\":\"a\",\"operationKey\":{}}]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 0: operationKey must be a string or null, got an object"),
        ("'[{\"sandboxId\":\"a\",\"routingDomain\":true}]', now(), false, ledger_schema => 'rc_bad'", "invalid argument inventory: element 0: routingDomain must be a string or null, got a boolean"),
        ("'[]', NULL, false, ledger_schema => 'rc_bad'", "invalid argument inventory_captured_at: must not be NULL"),
        ("'[]', 'epoch', false, ledger_schema => 'rc_bad'", "invalid argument inventory_captured_at: must be a positive time"),
        ("'[]', '1969-12-31', false, ledger_schema => 'rc_bad'", "invalid argument inventory_captured_at: must be a positive time"),
        ("'[]', 'infinity', false, ledger_schema => 'rc_bad'", "invalid argument inventory_captured_at: must be a finite time"),
        ("'[]', now(), NULL, ledger_schema => 'rc_bad'", "invalid argument dry_run: must not be NULL"),
        (&format!("{ok}, batch_size => 0"), "invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
        (&format!("{ok}, batch_size => 1001"), "invalid argument batch_size: must be an integer from 1 through 1000, got 1001"),
        (&format!("{ok}, batch_size => NULL"), "invalid argument batch_size: must not be NULL"),
        (&format!("{ok}, minimum_age => '-1 second'"), "invalid argument minimum_age: must not be negative"),
        (&format!("{ok}, minimum_age => NULL"), "invalid argument minimum_age: must not be NULL"),
        (&format!("{ok}, minimum_age => {INFINITE_INTERVAL}"), "invalid argument minimum_age: must be a finite interval"),
        ("'[]', now(), false, ledger_schema => 'bad-name'", "invalid argument ledger_schema: \"bad-name\" is not a plain identifier"),
        ("'[]', now(), false, ledger_schema => 'no_such_schema'", "invalid argument ledger_schema: schema \"no_such_schema\" does not exist"),
        ("'[]', now(), false, ledger_schema => NULL", "invalid argument ledger_schema: must not be NULL"),
        (&format!("{ok}, max_absent_ratio => 0"), "invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 0"),
        (&format!("{ok}, max_absent_ratio => 1.5"), "invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 1.5"),
        (&format!("{ok}, max_absent_ratio => 'NaN'"), "invalid argument max_absent_ratio: must be greater than 0 and at most 1, got NaN"),
        (&format!("{ok}, max_absent_ratio => NULL"), "invalid argument max_absent_ratio: must not be NULL"),
        (&format!("{ok}, environment => NULL"), "invalid argument environment: must not be NULL"),
        (&format!("{ok}, environment => ''"), "invalid argument environment: must not be empty"),
        (&format!("{ok}, environment => ' prod'"), "invalid argument environment: \" prod\" begins or ends with white space"),
    ];
    for (args, expected) in cases {
        let got = text(&format!("SELECT pg_temp.try_reconcile($a${args}$a$)")).unwrap();
        assert!(got.starts_with(&format!("22023 runtime_sandbox: {expected}")), "{args}: {got}");
    }
    assert_eq!(l.checksum(), before, "no bad call wrote anything");
    // The same ledger with good arguments does write (the terminal lease).
    assert_eq!(text(&format!("SELECT pg_temp.try_reconcile($a${ok}$a$)")).as_deref(), Some("ok"));
    assert_ne!(l.checksum(), before);
}

#[pg_test]
fn reconcile_reads_the_inventory_from_jsonb_binary_like_its_text() {
    // The inventory is read from jsonb's binary form: padded, escaped and
    // non-ASCII strings, duplicate keys (the last wins), extra members of any
    // kind, and a document large enough to be stored compressed and out of line.
    let l = Ledger::new("rc_binary");
    l.op("k1", "live", Some("sb-\u{e9}\"q"), Some("org-\u{fc}"), None, "1 hour");
    l.op("k2", "live", Some("sb-2"), None, None, "1 hour");
    l.op("k3", "live", Some("sb-3"), None, None, "1 hour");
    run("INSERT INTO rc_binary.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
         SELECT 'bulk-' || g, 'daytona', 'run-bulk', 1, 'org-1', 'bulk-' || g, 'live', now() - interval '1 hour'
         FROM generate_series(1, 3000) AS g");
    run(r#"CREATE TABLE rc_binary.inventory AS
         SELECT (jsonb_build_array(
                     '{"sandboxId": " sb-\u00e9\"q\t", "routingDomain": "org-\u00fc", "extra": {"n": [1, 2.5e3, null]}}'::jsonb,
                     '{"sandboxId": "wrong", "sandboxId": "sb-2", "operationKey": "  "}'::jsonb,
                     '{"sandboxId": "sb-2", "operationKey": null}'::jsonb)
                 || (SELECT jsonb_agg(jsonb_build_object('sandboxId', 'bulk-' || g, 'seen', g)) FROM generate_series(1, 3000) AS g)
                ) AS inventory"#);
    assert!(int("SELECT pg_column_size(inventory) FROM rc_binary.inventory") < int("SELECT octet_length(inventory::text) FROM rc_binary.inventory"),
            "the stored inventory is compressed");
    let s: Value = serde_json::from_str(&text(
        "SELECT to_jsonb(r)::text FROM rc_binary.inventory,
                runtime_sandbox.reconcile_daytona(inventory, now(), true, ledger_schema => 'rc_binary') r",
    ).unwrap()).unwrap();
    // The two sb-2 elements normalize to one item; sb-3 is absent.
    assert_eq!(s["provider_sandbox_count"], 3002);
    assert_eq!(s["matched_live_sandboxes"], 3002);
    assert_eq!(s["unmatched_provider_sandbox_ids"], json!([]));
    assert_eq!(s["absent_ledger_rows"], 1);
    assert_eq!(s["live_leases_to_seed"], 3002);
}

#[pg_test]
fn reconcile_absent_candidates_by_probe_and_by_scan_agree() {
    // Few lone live operations among many are reached by primary-key probes,
    // many by one pass over the table: the same rows, in the same order (5
    // lone of 105 operations are probed; 5 of 5 are scanned).
    let mut outcomes = Vec::new();
    for (s, others) in [("rc_probe", 100), ("rc_scan", 0)] {
        let l = Ledger::new(s);
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             SELECT 'other-' || g, 'daytona', 'run-o', 1, 'org-1', 'other-' || g, 'deleting', now() - interval '5 hours'
             FROM generate_series(1, {others}) AS g"
        ));
        l.op("k-b", "live", Some("sb-b"), None, None, "3 hours");
        l.op("k-a", "live", Some("sb-a"), None, None, "3 hours");
        l.op("k-c", "live", Some("sb-c"), None, None, "2 hours");
        l.op("k-new", "live", Some("sb-new"), None, None, "1 minute");
        l.op("k-gone", "live", Some("sb-gone"), None, None, "4 hours");
        l.cleanup("sb-gone", "run-k-gone", "deleted", None);
        let summary = l.reconcile(&json!([]), false, ", batch_size => 2, max_absent_ratio => 1");
        let marked = rows(&format!("SELECT sandbox_id, status FROM {s}.sandbox_cleanup_jobs_v2 ORDER BY id"));
        outcomes.push((counts(&summary), marked));
    }
    let (probe, scan) = (&outcomes[0], &outcomes[1]);
    assert_eq!(probe.0["absent_ledger_rows"], 2);
    assert_eq!(probe.0["has_more_absent_ledger_rows"], true);
    // Oldest first, a tie broken by operation key; too new and already deleted are not absent.
    assert_eq!(
        probe.1,
        json!([
            {"sandbox_id": "sb-gone", "status": "deleted"},
            {"sandbox_id": "sb-a", "status": "deleted"},
            {"sandbox_id": "sb-b", "status": "deleted"}
        ])
    );
    assert_eq!(probe, scan);
}

/// `n` live operations `<prefix>-<i>` on sandboxes `sb-<prefix>-<i>`, created two hours ago.
fn live_fleet(l: &Ledger, prefix: &str, n: usize) {
    run(&format!(
        "INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
         SELECT '{prefix}-' || g, 'daytona', 'run-{prefix}-' || g, 1, 'org-1', 'sb-{prefix}-' || g, 'live', now() - interval '2 hours'
         FROM generate_series(1, {n}) AS g",
        s = l.s
    ));
}

/// An inventory listing sandboxes `sb-<prefix>-<from..=to>`.
fn listing(prefix: &str, from: usize, to: usize) -> Value {
    Value::Array((from..=to).map(|i| json!({"sandboxId": format!("sb-{prefix}-{i}")})).collect())
}

#[pg_test]
fn reconcile_valve_boundaries() {
    let l = Ledger::new("rc_valve");
    live_fleet(&l, "v", 40);
    let status = |inventory: &Value, extra: &str| -> (String, i64, i64) {
        let s = l.reconcile(inventory, true, extra);
        (s["status"].as_str().unwrap().to_string(), s["absent_candidates"].as_i64().unwrap(), s["live_operations"].as_i64().unwrap())
    };
    // Exactly half of 40 absent is not more than half; 21 is.
    assert_eq!(status(&listing("v", 1, 20), ""), ("planned".into(), 20, 40));
    assert_eq!(status(&listing("v", 1, 19), ""), ("blocked_mass_absence".into(), 21, 40));
    // A handful (10) never blocks, whatever the ratio; 11 does past it.
    assert_eq!(status(&listing("v", 1, 30), ", max_absent_ratio => 0.1"), ("planned".into(), 10, 40));
    assert_eq!(status(&listing("v", 1, 29), ", max_absent_ratio => 0.1"), ("blocked_mass_absence".into(), 11, 40));
    // 1.0 is the application's behaviour: never blocks, not even an empty listing.
    assert_eq!(status(&listing("v", 1, 0), ", max_absent_ratio => 1"), ("planned".into(), 40, 40));
    assert_eq!(status(&listing("v", 1, 1), ", max_absent_ratio => 1"), ("planned".into(), 39, 40));
    // An empty listing with anything to call absent always blocks below 1.
    assert_eq!(status(&listing("v", 1, 0), ", max_absent_ratio => 0.99"), ("blocked_mass_absence".into(), 40, 40));

    // ... even when those are few: 3 live operations, an empty listing.
    let small = Ledger::new("rc_valve_small");
    live_fleet(&small, "s", 3);
    let s = small.reconcile(&json!([]), true, "");
    assert_eq!((s["status"].clone(), s["absent_candidates"].clone()), (json!("blocked_mass_absence"), json!(3)));
    // Nothing absent (all too young): an empty listing is believed.
    let young = Ledger::new("rc_valve_young");
    young.op("y1", "live", Some("sb-y1"), None, None, "1 minute");
    let s = young.reconcile(&json!([]), false, "");
    assert_eq!((s["status"].clone(), s["absent_candidates"].clone(), s["live_operations"].clone()),
               (json!("applied"), json!(0), json!(1)));
}

#[pg_test]
fn reconcile_valve_in_a_dry_run_reports_every_count() {
    let l = Ledger::new("rc_valve_dry");
    live_fleet(&l, "d", 30);
    // Listed without a lease: would be seeded.
    l.op("seed-me", "live", Some("sb-seed"), None, None, "1 hour");
    let inventory = json!([{"sandboxId": "sb-seed"}, {"sandboxId": "sb-d-1"}]);
    let before = l.checksum();
    let dry = l.reconcile(&inventory, true, ", batch_size => 5");
    assert_eq!(l.checksum(), before);
    assert_eq!(
        counts(&dry),
        json!({
            "provider": "daytona", "provider_sandbox_count": 2, "matched_live_sandboxes": 2,
            "unmatched_provider_sandbox_ids": [], "live_leases_to_seed": 2, "absent_ledger_rows": 5,
            "seeded_leases": 0, "released_terminal_leases": 0, "marked_deleted": 0,
            "recovered_reserved_operations": 0, "has_more_absent_ledger_rows": true, "dry_run": true,
            "status": "blocked_mass_absence",
            "absent_candidates": 29, "live_operations": 31, "snapshot_id": null, "confirming_snapshots": null,
            "environment": "production", "unowned_in_other_environments": null,
            "would_release_terminal_leases": 0, "would_recover_reserved_operations": 0
        })
    );
    assert_eq!(
        phases(&dry),
        vec![p("recover_reserved_operations", 0), p("match_provider_inventory", 2), p("find_absent_operations", 6),
             p("inspect_capacity_bindings", 0), p("inspect_capacity_bindings", 0)]
    );
}

#[pg_test]
fn reconcile_blocked_apply_keeps_only_the_phases_before_the_valve() {
    let l = Ledger::new("rc_valve_apply");
    live_fleet(&l, "a", 20);
    // A terminal lease (first release pass) and a lost create (recovery):
    // both run before the valve and keep their writes.
    l.op("t1", "deleted", Some("sb-t1"), None, None, "5 hours");
    l.lease("t1", "run-t1", Some("sb-t1"), false);
    l.cleanup("sb-t1", "run-t1", "deleted", None);
    l.op("r1", "reserved", None, None, Some("tok-r1"), "1 hour");
    l.lease("r1", "run-r1", None, false);
    l.attempt("run-r1", "NULL");
    // Listed without a lease: not seeded when blocked.
    l.op("seed-me", "live", Some("sb-seed"), None, None, "1 hour");
    let inventory = json!([{"sandboxId": "sb-seed"}, {"sandboxId": "sb-r1", "operationKey": "tok-r1"}]);
    let dry = l.reconcile(&inventory, true, "");
    assert_eq!((dry["status"].clone(), dry["absent_candidates"].clone()), (json!("blocked_mass_absence"), json!(20)));

    let s = l.reconcile(&inventory, false, "");
    assert_eq!(
        counts(&s),
        json!({
            "provider": "daytona", "provider_sandbox_count": 2, "matched_live_sandboxes": 2,
            "unmatched_provider_sandbox_ids": [], "live_leases_to_seed": 1, "absent_ledger_rows": 20,
            "seeded_leases": 0, "released_terminal_leases": 1, "marked_deleted": 0,
            "recovered_reserved_operations": 1, "has_more_absent_ledger_rows": false, "dry_run": false,
            "status": "blocked_mass_absence",
            "absent_candidates": 20, "live_operations": 21, "snapshot_id": null, "confirming_snapshots": null,
            "environment": "production", "unowned_in_other_environments": null,
            "would_release_terminal_leases": 1, "would_recover_reserved_operations": 1
        })
    );
    // No seeding, no marking, no second release pass.
    assert_eq!(
        phases(&s),
        vec![
            p("release_terminal_capacity", 1),
            p("recover_reserved_operations", 1),
            p("recover_reserved_operations", 1),
            p("match_provider_inventory", 2),
            p("find_absent_operations", 20),
            // The matched identity has its open lease: nothing to inspect.
            p("inspect_capacity_bindings", 0),
            p("inspect_capacity_bindings", 0),
        ]
    );
    assert_eq!(l.state("r1"), "deleting");
    assert_eq!(l.state("a-1"), "live");
    assert_eq!(int("SELECT count(*) FROM rc_valve_apply.runtime_sandbox_capacity_leases WHERE lease_id = 'seed-me'"), 0);
    assert_eq!(int("SELECT count(*) FROM rc_valve_apply.sandbox_cleanup_jobs_v2 WHERE status = 'deleted'"), 1);
    assert_eq!(int("SELECT count(*) FROM rc_valve_apply.runtime_sandbox_capacity_leases WHERE released_at IS NOT NULL"), 1);
    assert_eq!(
        rows("SELECT status, summary->'absent_candidates' AS candidates, summary->'live_operations' AS live \
              FROM rc_valve_apply.reconciliation_runs"),
        json!([{"status": "blocked_mass_absence", "candidates": 20, "live": 21}])
    );
    // The application's behaviour on request: the same call goes through.
    let s = l.reconcile(&inventory, false, ", max_absent_ratio => 1");
    assert_eq!((s["status"].clone(), s["marked_deleted"].clone(), s["seeded_leases"].clone()),
               (json!("applied"), json!(20), json!(1)));
}

#[pg_test]
fn reconcile_apply_without_history_table_fails_before_any_work() {
    let l = Ledger::new("rc_no_history");
    l.op("t1", "deleted", Some("sb-t1"), None, None, "5 hours");
    l.lease("t1", "run-t1", Some("sb-t1"), false);
    l.cleanup("sb-t1", "run-t1", "deleted", None);
    run("DROP TABLE rc_no_history.reconciliation_runs CASCADE");
    run(r#"CREATE FUNCTION pg_temp.try_apply(sql text) RETURNS text LANGUAGE plpgsql AS $f$
           DECLARE state text; message text; hint text;
           BEGIN
             EXECUTE sql;
             RETURN 'ok';
           EXCEPTION WHEN others THEN
             GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
             RETURN state || ' ' || message || ' | ' || hint;
           END $f$"#);
    let before = l.checksum();
    let got = text("SELECT pg_temp.try_apply($q$SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, \
                    ledger_schema => 'rc_no_history')$q$)")
    .unwrap();
    assert_eq!(
        got,
        "42P01 runtime_sandbox: ledger_schema \"rc_no_history\" lacks the ledger's table(s) reconciliation_runs | \
         Point ledger_schema at the ledger's schema, or run SELECT runtime_sandbox.install_ledger('rc_no_history') to \
         create the tables."
    );
    assert_eq!(l.checksum(), before, "the terminal lease was not released");
    // A dry run needs no history.
    assert_eq!(
        text("SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), true, ledger_schema => 'rc_no_history')")
            .as_deref(),
        Some("planned")
    );
    // Nor the attempts table, as the application's dry run: with a lost create to count, it predicts no
    // recovery (an apply is refused there) instead of failing on the missing table.
    l.op("r1", "reserved", None, None, Some("tok-r1"), "1 hour");
    l.lease("r1", "run-r1", None, false);
    run("DROP TABLE rc_no_history.attempts CASCADE");
    assert_eq!(
        text("SELECT (status, recovered_reserved_operations, would_recover_reserved_operations)::text \
              FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-r1\", \"operationKey\": \"tok-r1\"}]', \
              now(), true, ledger_schema => 'rc_no_history')")
            .as_deref(),
        Some("(planned,0,0)")
    );
}

#[pg_test]
fn reconcile_history_is_probed_and_few_rows_are_scanned_alike() {
    // The same ledger three times, with no history, 1,000 and 5,000 rows of
    // it (released leases, deleted cleanups of other sandboxes): deleted
    // cleanups few (the first pass is one statement driven by them), read
    // whole, and, past 2 x 1,000 (leases: 3 x), probed from the listing's
    // side. Same summaries, same rows.
    let mut outcomes = Vec::new();
    // A fourth ledger probes as the third, but through indexes of its own
    // (install_ledger's bytewise ones replaced): one probe per sandbox
    // instead of one index scan keyed by all of them.
    for (s, history) in
        [("rc_reach_scan", 0), ("rc_reach_whole", 1000), ("rc_reach_probe", 5000), ("rc_reach_own", 5000)]
    {
        let l = Ledger::new(s);
        let by_key = |s: &str| {
            let sizes = include_str!("../../sql/queries/reconcile/capacity_sizes.sql").replace("@ledger@", s);
            text(&format!("SELECT concat_ws(',', a, b) FROM ({sizes}) AS sizes(leases, cleanups, a, b)")).unwrap_or_default()
        };
        assert_eq!(by_key(s), "t,t", "{s}");
        if s == "rc_reach_own" {
            run(&format!(
                "DROP INDEX {s}.sandbox_cleanup_jobs_v2_terminal_idx, {s}.runtime_sandbox_capacity_leases_released_idx;
                 CREATE INDEX own_cleanup_sandbox ON {s}.sandbox_cleanup_jobs_v2 (sandbox_id) WHERE status = 'deleted';
                 CREATE INDEX own_released ON {s}.runtime_sandbox_capacity_leases (sandbox_id COLLATE \"C\") WHERE released_at IS NOT NULL"
            ));
            assert_eq!(by_key(s), "f,f");
        }
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, released_at)
             SELECT 'old-' || g, 'org-1', 'old-run-' || g, 'daytona', 'old-sb-' || g, now() - interval '9 days'
             FROM generate_series(1, {history}) AS g;
             INSERT INTO {s}.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status, deleted_at)
             SELECT 'daytona', 'old-sb-' || g, 'old-run-' || g, 1, 'deleted', now() - interval '9 days'
             FROM generate_series(1, {history}) AS g"
        ));
        // Terminal: its open lease is released by the first pass.
        l.op("t1", "deleted", Some("sb-t1"), None, None, "5 hours");
        l.lease("t1", "run-t1", Some("sb-t1"), false);
        l.cleanup("sb-t1", "run-t1", "deleted", None);
        // Listed, leased under another domain long ago (released): counted, still seeded.
        l.op("s1", "live", Some("sb-s1"), None, None, "1 hour");
        run(&format!("INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, released_at)
                      VALUES ('s1-old', 'org-1', 'run-s1', 'daytona', 'sb-s1', 'eu', now() - interval '3 days')"));
        // Listed, with a released lease of its own identity: not seeded.
        l.op("s2", "live", Some("sb-s2"), None, None, "1 hour");
        l.lease("s2-old", "run-s2", Some("sb-s2"), true);
        // Listed but durably deleted (terminal): not seeded.
        l.op("s3", "deleting", Some("sb-s3"), None, None, "1 hour");
        l.cleanup("sb-s3", "run-s3", "deleted", None);
        // Absent: marked, its lease released by marking.
        l.op("a1", "live", Some("sb-a1"), None, None, "3 hours");
        l.lease("a1", "run-a1", Some("sb-a1"), false);
        // A lost create recovered onto a sandbox whose cleanup (same run) is
        // already deleted: the lease recovery binds is released by the second pass.
        l.op("r1", "reserved", None, None, Some("tok-r1"), "1 hour");
        l.lease("r1", "run-r1", None, false);
        l.attempt("run-r1", "NULL");
        l.cleanup("sb-r1", "run-r1", "deleted", None);
        // Open leases whose sandbox has a durably deleted cleanup of another run, or of another routing domain:
        // not terminal (the first pass hands the first to the release statement, which compares runs).
        l.lease("x1", "run-x1", Some("sb-x1"), false);
        l.cleanup("sb-x1", "run-other", "deleted", None);
        run(&format!("INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain)
                      VALUES ('x2', 'org-1', 'run-x2', 'daytona', 'sb-x2', 'eu')"));
        l.cleanup("sb-x2", "run-x2", "deleted", None);
        let inventory = json!([{"sandboxId": "sb-s1"}, {"sandboxId": "sb-s2"}, {"sandboxId": "sb-s3"},
                               {"sandboxId": "sb-r1", "operationKey": "tok-r1"}]);
        let released_idx = if s == "rc_reach_own" { "own_released" } else { "runtime_sandbox_capacity_leases_released_idx" };
        let probes = || int(&format!("SELECT pg_stat_get_xact_numscans('{s}.{released_idx}'::regclass)"));
        let before = probes();
        let dry = l.reconcile(&inventory, true, "");
        let applied = l.reconcile(&inventory, false, "");
        // Released leases are probed (through their own index) only past the threshold.
        assert_eq!(probes() > before, history == 5000, "{s}");
        let leases = rows(&format!(
            "SELECT lease_id, sandbox_id, released_at IS NOT NULL AS released FROM {s}.runtime_sandbox_capacity_leases \
             WHERE lease_id NOT LIKE 'old-%' ORDER BY 1"
        ));
        let cleanups = rows(&format!(
            "SELECT sandbox_id, status FROM {s}.sandbox_cleanup_jobs_v2 WHERE sandbox_id NOT LIKE 'old-%' ORDER BY 1"
        ));
        outcomes.push((counts(&dry), counts(&applied), phases(&applied), leases, cleanups));
    }
    let (scan, whole, probe, own) = (&outcomes[0], &outcomes[1], &outcomes[2], &outcomes[3]);
    assert_eq!(scan.1["live_leases_to_seed"], 1, "{}", scan.1);
    assert_eq!(scan.1["released_terminal_leases"], 2);
    let open = |leases: &Value, lease: &str| {
        leases.as_array().into_iter().flatten().any(|row| row["lease_id"] == lease && row["released"] == false)
    };
    for outcome in [scan, whole, probe, own] {
        assert!(open(&outcome.3, "x1") && open(&outcome.3, "x2"), "{}", outcome.3);
    }
    assert_eq!(scan.1["marked_deleted"], 1);
    assert_eq!(scan.1["recovered_reserved_operations"], 1);
    assert_eq!(
        scan.2,
        vec![
            p("release_terminal_capacity", 1),
            p("recover_reserved_operations", 1),
            p("recover_reserved_operations", 1),
            p("match_provider_inventory", 4),
            p("find_absent_operations", 1),
            // Inspected: sb-s1, sb-s2, sb-s3 (sb-r1 has the open lease recovery bound): leases (sb-s1, eu),
            // (sb-s2, NULL); terminal (sb-s3, NULL).
            p("inspect_capacity_bindings", 2),
            p("inspect_capacity_bindings", 1),
            p("seed_capacity_bindings", 1),
            p("mark_provider_confirmed_absent", 1),
            // t1 in the first pass, r1 (bound by recovery) in the second.
            p("release_terminal_capacity", 2),
        ]
    );
    assert_eq!(
        scan.3,
        json!([
            {"lease_id": "a1", "sandbox_id": "sb-a1", "released": true},
            {"lease_id": "r1", "sandbox_id": "sb-r1", "released": true},
            {"lease_id": "s1", "sandbox_id": "sb-s1", "released": false},
            {"lease_id": "s1-old", "sandbox_id": "sb-s1", "released": true},
            {"lease_id": "s2-old", "sandbox_id": "sb-s2", "released": true},
            {"lease_id": "t1", "sandbox_id": "sb-t1", "released": true},
            {"lease_id": "x1", "sandbox_id": "sb-x1", "released": false},
            {"lease_id": "x2", "sandbox_id": "sb-x2", "released": false},
        ])
    );
    assert_eq!(scan, whole);
    assert_eq!(scan, probe);
    assert_eq!(scan, own);
}

/// Rows the ledger's tables and indexes handed out since the transaction
/// began (tuples returned by scans plus fetched through indexes).
fn rows_read(s: &str) -> i64 {
    int(&format!(
        "SELECT sum(pg_stat_get_xact_tuples_returned(c.oid) + pg_stat_get_xact_tuples_fetched(c.oid))::bigint
         FROM pg_class AS c WHERE c.relnamespace = '{s}'::regnamespace"
    ))
}

#[pg_test]
fn reconcile_work_stays_linear_without_statistics() {
    // Ledgers loaded in this transaction have never been analyzed: what the
    // planner sees right after a bulk load. n and 4n sandboxes (md5 ids, the
    // steady mix spread by hash, twice as much history, a fifth of the fleet
    // with an earlier life under another routing domain): the rows every
    // statement reads must grow about 4x, not 16x. A count of rows, not a time.
    let mut read = Vec::new();
    for (s, n) in [("rc_linear_1", 1500), ("rc_linear_4", 6000)] {
        Ledger::new(s);
        run(&format!(
            "CREATE TEMP TABLE fleet_{s} AS
             SELECT i, md5('sb' || i) AS sandbox, 'op-' || md5('op' || i) AS op, 'run-' || md5('run' || i) AS run,
                    CASE WHEN abs(hashint4(i)) % 3 = 0 THEN 'eu' END AS domain,
                    CASE WHEN h < 1 THEN 16 WHEN h < 3 THEN 12 WHEN h < 5 THEN 17 WHEN h < 7 THEN 19 WHEN h < 17 THEN 14 ELSE 0 END AS k,
                    abs(hashint4(i * 7)) % 5 = 0 AS repeat
             FROM generate_series(1, {n}) AS i, LATERAL (SELECT abs(hashint4(i)) % 100 AS h) AS spread;
             INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             SELECT 'old-' || g, 'daytona', 'old-run-' || g, 1, 'o', md5('old' || g), 'deleted', now() - interval '30 days'
             FROM generate_series(1, 2 * {n}) AS g;
             INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, released_at)
             SELECT 'old-' || g, 'o', 'old-run-' || g, 'daytona', md5('old' || g), now() - interval '29 days'
             FROM generate_series(1, 2 * {n}) AS g
             UNION ALL
             SELECT 'prev-' || op, 'o', 'prev-' || run, 'daytona', sandbox, now() - interval '9 days' FROM fleet_{s} WHERE repeat;
             INSERT INTO {s}.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status, deleted_at, routing_domain)
             SELECT 'daytona', md5('old' || g), 'old-run-' || g, 1, 'deleted', now() - interval '29 days', NULL
             FROM generate_series(1, 2 * {n}) AS g
             UNION ALL
             SELECT 'daytona', sandbox, 'prev-' || run, 1, 'deleted', now() - interval '9 days', 'us' FROM fleet_{s} WHERE repeat;
             INSERT INTO {s}.runs (run_id, org_id) SELECT run, 'o' FROM fleet_{s};
             INSERT INTO {s}.attempts (run_id, attempt) SELECT run, 1 FROM fleet_{s};
             INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain,
                                                        state, provider_operation_token, provider_created_at)
             SELECT op, 'daytona', run, 1, 'o', CASE WHEN k = 16 THEN NULL ELSE sandbox END, CASE WHEN k = 16 THEN NULL ELSE domain END,
                    (CASE k WHEN 14 THEN 'deleting' WHEN 16 THEN 'reserved' WHEN 19 THEN 'deleted' ELSE 'live' END)::{s}.runtime_sandbox_operation_state,
                    'tok-' || op, CASE WHEN k = 16 THEN NULL ELSE now() - interval '2 hours' END
             FROM fleet_{s};
             INSERT INTO {s}.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain)
             SELECT op, 'o', run, CASE WHEN k = 16 THEN NULL ELSE 'daytona' END, CASE WHEN k = 16 THEN NULL ELSE sandbox END,
                    CASE WHEN k = 16 THEN NULL ELSE domain END
             FROM fleet_{s} WHERE k <> 12;
             INSERT INTO {s}.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
             SELECT 'daytona', sandbox, run, 1, domain, CASE WHEN k = 19 THEN 'deleted' ELSE 'pending' END,
                    CASE WHEN k = 19 THEN now() - interval '1 hour' END
             FROM fleet_{s} WHERE k IN (14, 19);
             CREATE TEMP TABLE inventory_{s} AS
             SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object('sandboxId', CASE WHEN k = 16 THEN md5('new' || i) ELSE sandbox END,
                        'operationKey', 'tok-' || op, 'routingDomain', domain)) ORDER BY md5('order' || i)) AS inventory
             FROM fleet_{s} WHERE k NOT IN (17, 19);"
        ));
        let before = rows_read(s);
        let status = text(&format!(
            "SELECT status FROM inventory_{s}, runtime_sandbox.reconcile_daytona(inventory, now(), false, ledger_schema => '{s}')"
        ));
        assert_eq!(status.as_deref(), Some("applied"));
        read.push(rows_read(s) - before);
    }
    let growth = read[1] as f64 / read[0] as f64;
    assert!(growth < 6.0, "4x the sandboxes read {growth:.1}x the rows ({read:?})");
}

#[pg_test]
fn reconcile_many_lost_creates_recover_in_steps_with_the_same_rules() {
    // More than 64 owned items take the four-statement recovery: 70 lost
    // creates, two of them sharing one attempt, two without an attempt row
    // (promoted, not bound nor counted), and one whose lease was released.
    let l = Ledger::new("rc_steps");
    run("INSERT INTO rc_steps.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, state, provider_operation_token)
         SELECT 'k' || lpad(g::text, 3, '0'), 'daytona', CASE WHEN g = 2 THEN 'run-001' ELSE 'run-' || lpad(g::text, 3, '0') END,
                1, 'org-1', 'reserved', 'tok-' || g
         FROM generate_series(1, 71) AS g;
         INSERT INTO rc_steps.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, released_at)
         SELECT 'k' || lpad(g::text, 3, '0'), 'org-1', 'run-' || lpad(g::text, 3, '0'), CASE WHEN g = 71 THEN now() END
         FROM generate_series(1, 71) AS g;
         INSERT INTO rc_steps.runs (run_id, org_id) SELECT 'run-' || lpad(g::text, 3, '0'), 'org-1' FROM generate_series(1, 71) AS g;
         INSERT INTO rc_steps.attempts (run_id, attempt, resource_json)
         SELECT 'run-' || lpad(g::text, 3, '0'), 1, CASE WHEN g % 2 = 0 THEN '[{\"kind\":\"modal_sandbox\"}]'::jsonb END
         FROM generate_series(1, 71) AS g WHERE g NOT IN (2, 69, 70)");
    let inventory = Value::Array(
        (1..=71).map(|g| json!({"sandboxId": format!("sb-{g}"), "operationKey": format!("tok-{g}")})).collect(),
    );
    let s = l.reconcile(&inventory, false, "");
    // k069, k070 have no attempt row; k071's lease is released (not owned: it
    // recovers nothing, so its item is unowned and fails the run closed).
    assert_eq!(s["status"], "blocked_unowned_sandboxes");
    assert_eq!(s["unmatched_provider_sandbox_ids"], json!(["sb-71"]));
    assert_eq!(s["recovered_reserved_operations"], 68);
    assert_eq!(phases(&s)[1..3], [p("recover_reserved_operations", 70), p("recover_reserved_operations", 68)]);
    assert_eq!(
        rows("SELECT count(*) FILTER (WHERE state = 'deleting') AS deleting, count(*) FILTER (WHERE state = 'reserved') AS reserved
              FROM rc_steps.runtime_sandbox_operations"),
        json!([{"deleting": 70, "reserved": 1}])
    );
    assert_eq!(int("SELECT count(*) FROM rc_steps.runtime_sandbox_capacity_leases WHERE sandbox_id IS NOT NULL"), 68);
    assert_eq!(int("SELECT count(*) FROM rc_steps.sandbox_cleanup_jobs_v2 WHERE status = 'pending'"), 68);
    // k001 and k002 share run-001's attempt: both facts, in key order (NULL
    // before: nothing else); run-004's array keeps its modal resource first.
    assert_eq!(
        rows("SELECT jsonb_array_length(resource_json) AS n, jsonb_path_query_array(resource_json, '$[*].sandboxCapacityLeaseId') AS keys
              FROM rc_steps.attempts WHERE run_id IN ('run-001', 'run-004') ORDER BY run_id"),
        json!([{"n": 2, "keys": ["k001", "k002"]}, {"n": 2, "keys": ["k004"]}])
    );
    assert_eq!(
        rows("SELECT sandbox_id, routing_domain, provider FROM rc_steps.runtime_sandbox_capacity_leases WHERE lease_id = 'k010'"),
        json!([{"sandbox_id": "sb-10", "routing_domain": null, "provider": "daytona"}])
    );
}

// ---- The environment argument (0.4.0): two environments in one ledger are
// reconciled apart, phase by phase; 'production' stays the default.

impl Ledger {
    /// A live (or other state) operation of `environment`, created a day ago.
    fn op_in(&self, environment: &str, key: &str, state: &str, sandbox: &str) {
        run(&format!(
            "INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, environment, \
             sandbox_id, state, provider_created_at) \
             VALUES ('{key}', 'daytona', 'run-{key}', 1, 'org-1', '{environment}', '{sandbox}', '{state}', now() - interval '1 day')",
            s = self.s
        ));
    }
}

fn sandboxes(ids: &[&str]) -> Value {
    Value::Array(ids.iter().map(|id| json!({"sandboxId": id})).collect())
}

#[pg_test]
fn reconcile_two_environments_apart_phase_by_phase() {
    let l = Ledger::new("rc_envs");
    // staging: one listed, one gone, one reserved-free; production: the same shape.
    l.op_in("staging", "s1", "live", "sb-s1");
    l.op_in("staging", "s2", "live", "sb-s2");
    l.op_in("production", "p1", "live", "sb-p1");
    l.op_in("production", "p2", "live", "sb-p2");
    // A terminal lease of a production sandbox: released by any environment's run (ledger-wide, as the seed).
    l.op_in("production", "p3", "deleted", "sb-p3");
    l.lease("lease-p3", "run-p3", Some("sb-p3"), false);
    l.cleanup("sb-p3", "run-p3", "deleted", None);

    // The staging listing reconciled as production (the default): every sandbox looks unowned, and the
    // result says whose they are.
    let wrong = l.reconcile(&sandboxes(&["sb-s1", "sb-s2"]), true, "");
    assert_eq!(wrong["status"], "blocked_unowned_sandboxes");
    assert_eq!(wrong["environment"], "production");
    assert_eq!(wrong["unowned_in_other_environments"], json!({"staging": 2}));

    // A production listing that also holds a staging sandbox fails closed as before, naming it.
    let before = l.checksum();
    let mixed = l.reconcile(&sandboxes(&["sb-p1", "sb-s1"]), false, ", max_absent_ratio => 1");
    assert_eq!(mixed["status"], "blocked_unowned_sandboxes");
    assert_eq!(mixed["unmatched_provider_sandbox_ids"], json!(["sb-s1"]));
    assert_eq!(mixed["unowned_in_other_environments"], json!({"staging": 1}));
    assert_eq!(mixed["seeded_leases"], 0);
    assert_eq!(mixed["marked_deleted"], 0);
    assert_eq!(l.state("p2"), "live");
    assert_ne!(l.checksum(), before, "the first pass released the terminal lease, as the seed does");
    assert_eq!(int("SELECT count(*) FROM rc_envs.runtime_sandbox_capacity_leases WHERE released_at IS NULL"), 0);

    // Staging, applied: its own sandbox seeded, its own absent one marked; production untouched.
    let staging = l.reconcile(&sandboxes(&["sb-s1"]), false, ", environment => 'staging'");
    assert_eq!(staging["status"], "applied");
    assert_eq!(staging["environment"], "staging");
    assert_eq!(staging["unowned_in_other_environments"], Value::Null);
    assert_eq!(staging["matched_live_sandboxes"], 1);
    assert_eq!(staging["live_operations"], 2);
    assert_eq!(staging["absent_candidates"], 1);
    assert_eq!(staging["seeded_leases"], 1);
    assert_eq!(staging["marked_deleted"], 1);
    assert_eq!(l.state("s2"), "deleted");
    assert_eq!(l.state("p1"), "live");
    assert_eq!(l.state("p2"), "live");
    assert_eq!(
        rows("SELECT sandbox_id, environment, status FROM rc_envs.sandbox_cleanup_jobs_v2 WHERE sandbox_id <> 'sb-p3' ORDER BY 1"),
        json!([{"sandbox_id": "sb-s2", "environment": "staging", "status": "deleted"}])
    );
    assert_eq!(
        rows("SELECT sandbox_id FROM rc_envs.runtime_sandbox_capacity_leases WHERE released_at IS NULL ORDER BY 1"),
        json!([{"sandbox_id": "sb-s1"}])
    );

    // Production, applied with its own listing: sb-p1 seeded, sb-p2 marked; staging's rows unchanged.
    let production = l.reconcile(&sandboxes(&["sb-p1"]), false, "");
    assert_eq!(production["status"], "applied");
    assert_eq!(production["environment"], "production");
    assert_eq!(production["live_operations"], 2);
    assert_eq!(production["matched_live_sandboxes"], 1);
    assert_eq!(production["seeded_leases"], 1);
    assert_eq!(production["marked_deleted"], 1);
    assert_eq!(l.state("s1"), "live");
    assert_eq!(l.state("p2"), "deleted");
    // The history names each run's environment.
    assert_eq!(
        rows("SELECT environment, status FROM rc_envs.reconciliation_runs ORDER BY id"),
        json!([
            {"environment": "production", "status": "blocked_unowned_sandboxes"},
            {"environment": "staging", "status": "applied"},
            {"environment": "production", "status": "applied"}
        ])
    );
    // The health view: one row per environment.
    assert_eq!(
        rows("SELECT environment, last_status, consecutive_blocked_runs FROM rc_envs.reconciliation_health ORDER BY environment"),
        json!([
            {"environment": "production", "last_status": "applied", "consecutive_blocked_runs": 0},
            {"environment": "staging", "last_status": "applied", "consecutive_blocked_runs": 0}
        ])
    );
}

#[pg_test]
fn reconcile_latest_reads_only_its_environments_snapshots() {
    let l = Ledger::new("rc_env_snap");
    l.op_in("staging", "s1", "live", "sb-s1");
    l.op_in("production", "p1", "live", "sb-p1");
    let record = |items: &[&str], environment: &str| {
        int(&format!(
            "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '{}', now(), keep_last => 1, \
             ledger_schema => 'rc_env_snap', environment => '{environment}')",
            sandboxes(items)
        ))
    };
    let latest = |environment: &str| -> Value {
        serde_json::from_str(
            &text(&format!(
                "SELECT to_jsonb(r)::text FROM runtime_sandbox.reconcile_daytona_latest(dry_run => true, \
                 ledger_schema => 'rc_env_snap', environment => '{environment}') r"
            ))
            .unwrap(),
        )
        .unwrap()
    };
    // Only a production snapshot: staging has none to reconcile (never production's listing).
    let production_snapshot = record(&["sb-p1"], "production");
    let staging = latest("staging");
    assert_eq!(staging["status"], "no_fresh_snapshot");
    assert_eq!(staging["environment"], "staging");
    assert_eq!(staging["snapshot_id"], Value::Null);
    // A staging snapshot, newer than production's: each environment reconciles its own.
    let staging_snapshot = record(&["sb-s1"], "staging");
    assert_eq!(latest("staging")["snapshot_id"], staging_snapshot);
    assert_eq!(latest("staging")["status"], "planned");
    assert_eq!(latest("production")["snapshot_id"], production_snapshot);
    assert_eq!(latest("production")["status"], "planned");
    // keep_last prunes per environment: a second staging snapshot leaves production's alone.
    let newer = record(&["sb-s1"], "staging");
    assert_eq!(
        rows("SELECT snapshot_id, environment FROM rc_env_snap.provider_inventory_snapshots ORDER BY snapshot_id"),
        json!([{"snapshot_id": production_snapshot, "environment": "production"}, {"snapshot_id": newer, "environment": "staging"}])
    );
    assert_eq!(
        rows("SELECT environment, newest_snapshot_id FROM rc_env_snap.reconciliation_health ORDER BY environment"),
        json!([{"environment": "production", "newest_snapshot_id": production_snapshot}, {"environment": "staging", "newest_snapshot_id": newer}])
    );
}

#[pg_test]
fn reconcile_ledger_of_0_3_0_keeps_production_and_refuses_other_environments() {
    // A ledger installed by 0.3.0: no environment column on the history and snapshot tables.
    let l = Ledger::new("rc_env_old");
    run("DROP VIEW rc_env_old.reconciliation_health");
    run("ALTER TABLE rc_env_old.reconciliation_runs DROP COLUMN environment");
    run("ALTER TABLE rc_env_old.provider_inventory_snapshots DROP COLUMN environment");
    l.op_in("production", "p1", "live", "sb-p1");
    let problems = rows("SELECT object, severity FROM runtime_sandbox.check_ledger('rc_env_old') WHERE object LIKE '%environment%'");
    assert_eq!(
        problems,
        json!([
            {"object": "rc_env_old.reconciliation_runs.environment", "severity": "warning"},
            {"object": "rc_env_old.reconciliation_runs (provider, environment, id)", "severity": "warning"},
            {"object": "rc_env_old.provider_inventory_snapshots.environment", "severity": "warning"}
        ])
    );
    // production: recorded, reconciled, history written, as in 0.3.0.
    run("SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{\"sandboxId\": \"sb-p1\"}]', now(), ledger_schema => 'rc_env_old')");
    assert_eq!(l.reconcile(&sandboxes(&["sb-p1"]), false, "")["status"], "applied");
    assert_eq!(
        text("SELECT status FROM runtime_sandbox.reconcile_daytona_latest(ledger_schema => 'rc_env_old')").as_deref(),
        Some("applied")
    );
    assert_eq!(int("SELECT count(*) FROM rc_env_old.reconciliation_runs"), 2);
    // Another environment: refused with the DDL that adds the column, nothing written.
    run(r#"CREATE FUNCTION pg_temp.try_env(sql text) RETURNS text LANGUAGE plpgsql AS $f$
           BEGIN EXECUTE sql; RETURN 'ok';
           EXCEPTION WHEN others THEN RETURN SQLSTATE || ' ' || SQLERRM; END $f$"#);
    let before = l.checksum();
    for call in [
        "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now(), ledger_schema => 'rc_env_old', environment => 'staging')",
        "SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, ledger_schema => 'rc_env_old', environment => 'staging')",
        "SELECT runtime_sandbox.reconcile_daytona_latest(true, ledger_schema => 'rc_env_old', environment => 'staging')",
    ] {
        let got = text(&format!("SELECT pg_temp.try_env($q${call}$q$)")).unwrap();
        assert!(got.starts_with("55000 runtime_sandbox: ledger_schema \"rc_env_old\" cannot be used by"), "{call}: {got}");
        assert!(got.contains("has no environment column"), "{got}");
    }
    assert_eq!(l.checksum(), before);
    // A dry run of reconcile_daytona writes no history: it works for any environment.
    assert_eq!(l.reconcile(&sandboxes(&[]), true, ", environment => 'staging'")["status"], "planned");
    // install_ledger adds the columns (old rows are production's) and the view.
    run("SELECT runtime_sandbox.install_ledger('rc_env_old')");
    assert_eq!(
        rows("SELECT DISTINCT environment FROM rc_env_old.reconciliation_runs"),
        json!([{"environment": "production"}])
    );
    assert_eq!(l.reconcile(&sandboxes(&[]), false, ", environment => 'staging'")["status"], "applied");
}

/// An enum `environment` on the operations compares as the application's literal does there (a value of the
/// enum): each environment reconciles its own operations; a name the enum lacks is a 22023 naming the type.
#[pg_test]
fn reconcile_an_enum_environment_compares_as_the_applications_literal() {
    let l = Ledger::new("rc_env_enum");
    run("CREATE TYPE rc_env_enum.runtime_environment AS ENUM ('production', 'staging');
         DROP INDEX rc_env_enum.runtime_sandbox_operations_current_idx, rc_env_enum.runtime_sandbox_operations_reserved_idx;
         ALTER TABLE rc_env_enum.runtime_sandbox_operations ALTER COLUMN environment DROP DEFAULT,
             ALTER COLUMN environment TYPE rc_env_enum.runtime_environment USING environment::text::rc_env_enum.runtime_environment,
             ALTER COLUMN environment SET DEFAULT 'production'");
    l.op("prod-1", "live", Some("sb-1"), None, None, "2 hours");
    l.op("prod-2", "live", Some("sb-2"), None, None, "2 hours");
    l.op("stage-1", "live", Some("sb-3"), None, None, "2 hours");
    run("UPDATE rc_env_enum.runtime_sandbox_operations SET environment = 'staging' WHERE operation_key = 'stage-1'");
    let breaks = text("SELECT string_agg(f, ',' ORDER BY f) FROM runtime_sandbox.check_ledger('rc_env_enum'), unnest(breaks) AS f");
    assert_eq!(
        breaks.as_deref(),
        Some("advance_sandbox_operation_backfill (apply),backfill_sandbox_operations,complete_sandbox_operation_backfill,run_sandbox_operation_backfill,schedule_sandbox_operation_backfill")
    );
    // The application's own count of production's live operations.
    assert_eq!(int("SELECT count(*) FROM rc_env_enum.runtime_sandbox_operations WHERE environment = 'production' AND state = 'live'"), 2);
    let listing = json!([{"sandboxId": "sb-1"}]);
    let production = l.reconcile(&listing, false, ", max_absent_ratio => 1");
    assert_eq!((production["live_operations"].as_i64(), production["marked_deleted"].as_i64()), (Some(2), Some(1)), "{production}");
    assert_eq!(l.state("prod-2"), "deleted");
    assert_eq!(l.state("stage-1"), "live");
    let staging = l.reconcile(&json!([{"sandboxId": "sb-3"}]), false, ", max_absent_ratio => 1, environment => 'staging'");
    assert_eq!((staging["live_operations"].as_i64(), staging["matched_live_sandboxes"].as_i64(), staging["status"].as_str()), (Some(1), Some(1), Some("applied")), "{staging}");
    // sb-1 is production's: unowned in staging, and said so.
    let other = l.reconcile(&json!([{"sandboxId": "sb-1"}, {"sandboxId": "sb-3"}]), true, ", environment => 'staging'");
    assert_eq!(other["status"], "blocked_unowned_sandboxes", "{other}");
    assert_eq!(other["unowned_in_other_environments"], json!({"production": 1}), "{other}");
    let error = error_of(
        "SELECT * FROM runtime_sandbox.reconcile_daytona('[]', now(), true, ledger_schema => 'rc_env_enum', environment => 'qa')",
    );
    assert_eq!(
        error.as_deref(),
        Some("22023 runtime_sandbox: invalid argument environment: \"qa\" is not a value of \"rc_env_enum\".\"runtime_environment\", the type of the operations' environment (its values: production, staging)")
    );
}
