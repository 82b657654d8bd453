//! `pg_dump` of a database that uses the extension (two ledgers with data, a role with grants on the
//! extension's functions and membership in the ledger's owner, a user table and view over the summary type),
//! restored with `pg_restore` into a fresh database of the same server: the data, the grants and the
//! dependent objects come back, `check_ledger` finds nothing, and the same reconcile gives the same summary and
//! the same rows on both (docs/upgrading.md says what to re-run after a restore).

mod common;

use std::process::Command;

const OPERATOR: &str = "rs_dump_operator";
const OWNER: &str = "rs_dump_ledger";

fn run(program: &str, args: &[&str]) {
    let out = Command::new(common::bindir().join(program)).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

const SETUP: &str = "
CREATE SCHEMA runtime_scheduler AUTHORIZATION rs_dump_ledger;
CREATE SCHEMA tenant_b AUTHORIZATION rs_dump_ledger;
SELECT runtime_sandbox.install_ledger();
SELECT runtime_sandbox.install_ledger('tenant_b');
INSERT INTO tenant_b.runs VALUES ('run-b', 'org-b');
INSERT INTO tenant_b.attempts (run_id, attempt, resource_json)
VALUES ('run-b', 1, '[{\"kind\": \"daytona_sandbox\", \"sandboxId\": \"b-1\"}]');
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 10, 'tenant_b');
SELECT * FROM runtime_sandbox.record_inventory_snapshot('daytona', '[{\"sandboxId\": \"sb-1\"}]', now(), ledger_schema => 'tenant_b');
GRANT rs_dump_ledger TO rs_dump_operator;
GRANT EXECUTE ON FUNCTION runtime_sandbox.reconcile_daytona TO rs_dump_operator;
-- The summary type in a user table and a view over it.
CREATE TABLE public.saved_runs (id integer PRIMARY KEY, summary runtime_sandbox.reconciliation_summary);
INSERT INTO public.saved_runs
SELECT 1, r FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\"}]', now(), dry_run => true) r;
CREATE VIEW public.saved_status AS SELECT id, (summary).status, (summary).provider_sandbox_count FROM public.saved_runs;
";

/// The rows of every ledger table, the user objects, the operator's privileges and check_ledger's findings.
fn state(db: &str) -> Vec<String> {
    let mut c = common::connect(db);
    let mut out: Vec<String> = Vec::new();
    for schema in ["runtime_scheduler", "tenant_b"] {
        for (table, sum) in common::schema_checksums(&mut c, schema) {
            out.push(format!("{schema}.{table}: {sum}"));
        }
        let problems: i64 = c
            .query_one("SELECT count(*) FROM runtime_sandbox.check_ledger($1)", &[&schema])
            .unwrap()
            .get(0);
        out.push(format!("check_ledger({schema}): {problems} rows"));
    }
    for sql in [
        "SELECT string_agg(id || ' ' || status || ' ' || provider_sandbox_count, ',') FROM public.saved_status",
        "SELECT has_function_privilege('rs_dump_operator', 'runtime_sandbox.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text)', 'EXECUTE')::text",
        "SELECT has_function_privilege('public', 'runtime_sandbox.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text)', 'EXECUTE')::text",
        "SELECT pg_has_role('rs_dump_operator', 'rs_dump_ledger', 'MEMBER')::text",
        "SELECT extversion FROM pg_extension WHERE extname = 'runtime_sandbox'",
    ] {
        out.push(format!("{sql}: {:?}", c.query_one(sql, &[]).unwrap().get::<_, Option<String>>(0)));
    }
    out
}

/// The same apply on a ledger, as the operator: its summary without timings, then the ledger's rows.
fn reconcile_as_operator(db: &str) -> (String, Vec<String>) {
    let mut op = postgres::Config::new()
        .host("127.0.0.1")
        .port(common::port())
        .user(OPERATOR)
        .dbname(db)
        .connect(postgres::NoTls)
        .unwrap();
    let summary: String = op
        .query_one(
            "SELECT (to_jsonb(r) - 'diagnostics')::text FROM runtime_sandbox.reconcile_daytona(
                 '[{\"sandboxId\": \"b-1\"}]', '2026-06-01', false, ledger_schema => 'tenant_b') r",
            &[],
        )
        .unwrap_or_else(|e| panic!("reconcile in {db}: {}", common::db_message(&e)))
        .get(0);
    // The rows it leaves, without the clock's timestamps.
    let mut c = common::connect(db);
    let rows = c
        .query(
            "SELECT concat_ws('|', 'lease', lease_id, sandbox_id, routing_domain, run_id, released_at IS NULL)
             FROM tenant_b.runtime_sandbox_capacity_leases
             UNION ALL
             SELECT concat_ws('|', 'operation', operation_key, sandbox_id, state) FROM tenant_b.runtime_sandbox_operations
             UNION ALL
             SELECT concat_ws('|', 'cleanup', sandbox_id, status) FROM tenant_b.sandbox_cleanup_jobs_v2
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    (summary, rows)
}

#[test]
fn dump_and_restore_bring_back_ledgers_grants_and_dependent_objects() {
    let mut admin = common::connect("postgres");
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {OPERATOR}; CREATE ROLE {OPERATOR} LOGIN;
             DROP ROLE IF EXISTS {OWNER}; CREATE ROLE {OWNER};"
        ))
        .unwrap_or_else(|_| ());
    admin.batch_execute("DROP DATABASE IF EXISTS dump_restored WITH (FORCE)").unwrap();
    let source = common::fresh_database("dump_source");
    common::connect(&source).batch_execute(SETUP).unwrap_or_else(|e| panic!("setup: {}", common::db_message(&e)));
    let before = state(&source);

    let dump = std::env::temp_dir().join("runtime_sandbox_dump_source.dump");
    let port = common::port().to_string();
    run("pg_dump", &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-Fc", "-f", dump.to_str().unwrap(), &source]);
    admin.batch_execute("CREATE DATABASE dump_restored").unwrap();
    run(
        "pg_restore",
        &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "--exit-on-error", "-d", "dump_restored", dump.to_str().unwrap()],
    );
    let after = state("dump_restored");
    assert_eq!(after, before, "the restored database differs from the dumped one");
    assert!(before.iter().any(|l| l.contains("rs_dump_operator") && l.ends_with("Some(\"true\")")));

    // The restored database works as the source does.
    let (on_source, rows_source) = reconcile_as_operator(&source);
    let (on_restored, rows_restored) = reconcile_as_operator("dump_restored");
    assert_eq!(on_restored, on_source);
    assert_eq!(rows_restored, rows_source);

    let _ = std::fs::remove_file(&dump);
    for statement in ["DROP DATABASE dump_source WITH (FORCE)", "DROP DATABASE dump_restored WITH (FORCE)"] {
        admin.batch_execute(statement).unwrap();
    }
    admin.batch_execute(&format!("DROP ROLE {OPERATOR}; DROP ROLE {OWNER};")).unwrap();
}
