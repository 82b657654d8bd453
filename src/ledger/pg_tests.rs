// SQL-level tests of install_ledger and check_ledger (run by `cargo pgrx test`).

use pgrx::prelude::*;

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn problems(schema: &str) -> Vec<String> {
    Spi::connect(|client| {
        client
            .select(&format!("SELECT object || ': ' || problem FROM runtime_sandbox.check_ledger('{schema}')"), None, &[])
            .unwrap()
            .map(|row| row.get::<String>(1).unwrap().unwrap())
            .collect()
    })
}

#[pg_test]
fn reconcile_check_ledger_is_empty_after_install_ledger_twice() {
    run("SELECT runtime_sandbox.install_ledger('rc_ledger_ok')");
    run("SELECT runtime_sandbox.install_ledger('rc_ledger_ok')");
    assert_eq!(problems("rc_ledger_ok"), Vec::<String>::new());
}

#[pg_test]
fn reconcile_check_ledger_reports_what_is_missing() {
    run("SELECT runtime_sandbox.install_ledger('rc_ledger_broken')");
    run("DROP INDEX rc_ledger_broken.runtime_sandbox_operations_token_idx, rc_ledger_broken.runtime_sandbox_operations_reserved_idx");
    run("ALTER TABLE rc_ledger_broken.sandbox_cleanup_jobs_v2 DROP COLUMN last_error");
    run("ALTER TABLE rc_ledger_broken.runtime_sandbox_operations DROP CONSTRAINT runtime_sandbox_operations_identity_key");
    run("ALTER TABLE rc_ledger_broken.runtime_sandbox_capacity_leases DROP COLUMN routing_domain");
    run("DROP TABLE rc_ledger_broken.control");
    assert_eq!(
        problems("rc_ledger_broken"),
        vec![
            "rc_ledger_broken.runtime_sandbox_operations (provider, sandbox_id, routing_domain_key): missing unique key",
            "rc_ledger_broken.runtime_sandbox_operations (provider_operation_token): missing index",
            "rc_ledger_broken.sandbox_cleanup_jobs_v2.last_error: missing column",
            "rc_ledger_broken.runtime_sandbox_capacity_leases.routing_domain: missing column",
            "rc_ledger_broken.control: missing table",
        ]
    );
}

#[pg_test]
fn reconcile_check_ledger_reports_a_hand_made_schema() {
    run("CREATE SCHEMA rc_ledger_hand");
    run("CREATE TYPE rc_ledger_hand.runtime_sandbox_operation_state AS ENUM ('reserved', 'live')");
    run("CREATE TABLE rc_ledger_hand.runtime_sandbox_operations (operation_key text PRIMARY KEY, provider text, \
         run_id text, attempt int, org_id text, environment text, sandbox_id text, routing_domain text, \
         routing_domain_key text, state text, provider_operation_token text, provider_created_at timestamptz, \
         delete_confirmed_at timestamptz, updated_at timestamptz, UNIQUE (sandbox_id, provider, routing_domain_key))");
    run("CREATE INDEX ON rc_ledger_hand.runtime_sandbox_operations (provider_operation_token, provider)");
    run("CREATE INDEX ON rc_ledger_hand.runtime_sandbox_operations (provider, provider_created_at)");
    let found = problems("rc_ledger_hand");
    assert_eq!(found[0], "rc_ledger_hand.runtime_sandbox_operation_state: missing enum labels: deleting, deleted");
    assert_eq!(found[1], "rc_ledger_hand.runs: missing table");
    assert!(found.contains(&"rc_ledger_hand.runtime_sandbox_operations.routing_domain_key: not GENERATED ALWAYS AS (coalesce(routing_domain, '')) STORED".to_string()), "{found:?}");
    // Unique keys match as a set; index columns match as a prefix, in order.
    assert!(!found.iter().any(|p| p.contains("(provider, sandbox_id, routing_domain_key)")), "{found:?}");
    assert!(!found.iter().any(|p| p.contains("(provider_operation_token)")), "{found:?}");
    assert!(found.contains(&"rc_ledger_hand.runtime_sandbox_operations (provider, provider_created_at, operation_key): missing index".to_string()), "{found:?}");
    assert!(found.contains(&"rc_ledger_hand.reconciliation_runs: missing table".to_string()));
    assert_eq!(problems("rc_ledger_nowhere"), vec!["rc_ledger_nowhere: missing schema"]);
}

#[pg_test(error = "runtime_sandbox: invalid argument ledger_schema: \"a;b\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)")]
fn reconcile_check_ledger_refuses_a_bad_schema_name() {
    problems("a;b");
}

#[pg_test]
fn reconcile_install_ledger_brings_an_earlier_ledger_up_to_date() {
    // A ledger as 0.1.0's install_ledger left it: no snapshots, no health
    // view, no snapshot column in the history.
    run("SELECT runtime_sandbox.install_ledger('rc_ledger_old')");
    run("DROP VIEW rc_ledger_old.reconciliation_health");
    run("DROP TABLE rc_ledger_old.provider_inventory_items, rc_ledger_old.provider_inventory_snapshots");
    run("ALTER TABLE rc_ledger_old.reconciliation_runs DROP COLUMN snapshot_id");
    run("INSERT INTO rc_ledger_old.reconciliation_runs (started_at, finished_at, dry_run, status, summary) \
         VALUES (now(), now(), false, 'applied', '{}')");
    assert_eq!(
        problems("rc_ledger_old"),
        vec![
            "rc_ledger_old.reconciliation_runs.snapshot_id: missing column",
            "rc_ledger_old.provider_inventory_snapshots: missing table",
            "rc_ledger_old.provider_inventory_items: missing table",
            "rc_ledger_old.reconciliation_health: missing view",
        ]
    );
    run("SELECT runtime_sandbox.install_ledger('rc_ledger_old')");
    assert_eq!(problems("rc_ledger_old"), Vec::<String>::new());
    assert_eq!(
        Spi::get_one::<String>("SELECT last_status FROM rc_ledger_old.reconciliation_health").unwrap().as_deref(),
        Some("applied"),
        "history kept"
    );
}
