//! The application role owns the ledger and attacks whoever runs the extension's functions on it.
//!
//! `rs_attacker` (LOGIN, not a superuser) owns the ledger schema. For every kind of code PostgreSQL lets a
//! table's owner attach — BEFORE row triggers, AFTER statement triggers, rules, column defaults, generated
//! columns over an IMMUTABLE wrapper, CHECK constraints, domain CHECKs, index expressions, row level
//! security policies, an assignment cast after retyping a column, a view in place of a table, a deferred
//! constraint trigger — a ledger is built with that code on every one of its ten tables. Every piece of code
//! records `current_user` and `is_superuser` in `spy.log` and, finding itself superuser, makes the attacker
//! one. Then a superuser runs every function of the extension on that ledger (each call in its own
//! transaction; a call may fail, the test records how), and a member of the attacker's role does too.
//!
//! Asserted: no recorded run was as anyone but the attacker, or as a superuser; the attacker is not a
//! superuser at the end; the code did run (so the test could see an escalation); a role that is not a
//! member of the owner's role is refused (42501) before any of it runs. The scheduled path (a superuser's
//! pg_cron job) is checked the same way in tests/reconcile_cron.rs.

mod common;

use postgres::Client;
use std::collections::BTreeMap;

const ATTACKER: &str = "rs_attacker";
const MEMBER: &str = "rs_attacker_member";
const OUTSIDER: &str = "rs_outsider";
const DB: &str = "it_attack";

const TABLES: &[&str] = &[
    "runs",
    "attempts",
    "runtime_sandbox_operations",
    "sandbox_cleanup_jobs_v2",
    "sandbox_cleanup_events_v2",
    "runtime_sandbox_capacity_leases",
    "control",
    "reconciliation_runs",
    "provider_inventory_snapshots",
    "provider_inventory_items",
];

/// A text column of each table that the functions write or compare (a domain or a retyped column goes there).
fn text_column(table: &str) -> &'static str {
    match table {
        "runs" | "attempts" => "run_id",
        "runtime_sandbox_operations" | "sandbox_cleanup_jobs_v2" | "sandbox_cleanup_events_v2" => "sandbox_id",
        "runtime_sandbox_capacity_leases" => "lease_id",
        "control" => "key",
        "reconciliation_runs" => "status",
        "provider_inventory_snapshots" => "provider",
        _ => "sandbox_id",
    }
}

/// A text column of each table in no index or index predicate (a column retyped to a composite type goes there).
fn free_column(table: &str) -> &'static str {
    match table {
        "runs" => "org_id",
        "attempts" => "run_id",
        "runtime_sandbox_operations" | "runtime_sandbox_capacity_leases" => "org_id",
        "sandbox_cleanup_jobs_v2" => "last_error",
        "sandbox_cleanup_events_v2" => "event_type",
        "control" => "key",
        "reconciliation_runs" => "status",
        "provider_inventory_snapshots" => "provider",
        _ => "operation_key",
    }
}

/// The attacker's tools, created once: the log anyone may write, the spy that records and escalates.
const TOOLS: &str = r#"
CREATE SCHEMA spy;
CREATE TABLE spy.log (tag text, who text, superuser text);
GRANT USAGE ON SCHEMA spy TO PUBLIC;
GRANT INSERT, SELECT ON spy.log TO PUBLIC;
-- Records who runs it and whether that role is a superuser (pg_roles: the is_superuser setting follows
-- the session's role, not the user a security-restricted operation switched to), then tries what an
-- attacker tries when the session looks like a superuser's; a refusal does not fail the caller's statement.
CREATE FUNCTION spy.note(tag text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO spy.log
    SELECT tag, current_user, CASE WHEN r.rolsuper THEN 'on' ELSE 'off' END FROM pg_roles r WHERE r.rolname = current_user;
    IF current_setting('is_superuser') = 'on' THEN
        BEGIN
            EXECUTE 'ALTER ROLE rs_attacker SUPERUSER';
        EXCEPTION WHEN insufficient_privilege THEN
            INSERT INTO spy.log VALUES (tag || ' (escalation refused)', current_user, 'off');
        END;
    END IF;
    RETURN true;
END $$;
CREATE FUNCTION spy.text(tag text) RETURNS text LANGUAGE sql AS $$ SELECT CASE WHEN spy.note(tag) THEN 'x' END $$;
-- An IMMUTABLE lie, so it may sit in generated columns, CHECKs and index expressions.
CREATE FUNCTION spy.imm(tag text, value text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM spy.note(tag); RETURN value; END $$;
CREATE FUNCTION spy.ok(tag text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN spy.note(tag); END $$;
CREATE FUNCTION spy.trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM spy.note(TG_ARGV[0]);
    IF TG_LEVEL = 'ROW' AND TG_WHEN = 'BEFORE' THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    RETURN NULL;
END $$;
CREATE DOMAIN spy.checked_text AS text CHECK (spy.ok('domain'));
CREATE TYPE spy.evil AS (value text);
CREATE FUNCTION spy.to_evil(text) RETURNS spy.evil LANGUAGE plpgsql AS $$
BEGIN PERFORM spy.note('cast'); RETURN ROW($1)::spy.evil; END $$;
CREATE CAST (text AS spy.evil) WITH FUNCTION spy.to_evil(text) AS ASSIGNMENT;
"#;

/// The kinds of code, each as the DDL that puts it on `table` (in schema `l`), run as the attacker.
fn plant(kind: &str, table: &str) -> String {
    let tag = format!("{kind}:{table}");
    let column = text_column(table);
    match kind {
        "before_trigger" => format!(
            "CREATE TRIGGER spy_b BEFORE INSERT OR UPDATE OR DELETE ON l.{table} FOR EACH ROW EXECUTE FUNCTION spy.trg('{tag}')"
        ),
        "statement_trigger" => format!(
            "CREATE TRIGGER spy_s AFTER INSERT OR UPDATE OR DELETE ON l.{table} FOR EACH STATEMENT EXECUTE FUNCTION spy.trg('{tag}')"
        ),
        "rule" => format!("CREATE RULE spy_r AS ON UPDATE TO l.{table} DO ALSO SELECT spy.note('{tag}')"),
        "default" => format!("ALTER TABLE l.{table} ADD COLUMN spy_default text DEFAULT spy.text('{tag}')"),
        "generated" => format!(
            "ALTER TABLE l.{table} ADD COLUMN spy_generated text GENERATED ALWAYS AS (spy.imm('{tag}', {column}::text)) STORED"
        ),
        "check" => format!("ALTER TABLE l.{table} ADD CONSTRAINT spy_check CHECK (spy.ok('{tag}'))"),
        // (The health view reads these tables' columns: it goes first, install_ledger makes it again.)
        "domain" => format!("DROP VIEW IF EXISTS l.reconciliation_health; ALTER TABLE l.{table} ALTER COLUMN {column} TYPE spy.checked_text"),
        "index" => format!("CREATE INDEX spy_index_{table} ON l.{table} (spy.imm('{tag}', {column}::text))"),
        "policy" => format!(
            "ALTER TABLE l.{table} ENABLE ROW LEVEL SECURITY; ALTER TABLE l.{table} FORCE ROW LEVEL SECURITY;
             CREATE POLICY spy_policy ON l.{table} USING (spy.ok('{tag}')) WITH CHECK (spy.ok('{tag}'))"
        ),
        "cast" => {
            let column = free_column(table);
            format!(
                "DROP VIEW IF EXISTS l.reconciliation_health;
                 ALTER TABLE l.{table} ALTER COLUMN {column} TYPE spy.evil USING ROW({column})::spy.evil"
            )
        }
        "view" => format!(
            "ALTER TABLE l.{table} RENAME TO {table}_real;
             CREATE VIEW l.{table} AS SELECT * FROM l.{table}_real WHERE spy.note('{tag}')"
        ),
        "deferred_trigger" => format!(
            "CREATE CONSTRAINT TRIGGER spy_deferred AFTER INSERT OR UPDATE ON l.{table}
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION spy.trg('{tag}')"
        ),
        other => panic!("unknown kind {other}"),
    }
}

const KINDS: &[&str] = &[
    "before_trigger",
    "statement_trigger",
    "rule",
    "default",
    "generated",
    "check",
    "domain",
    "index",
    "policy",
    "cast",
    "view",
    "deferred_trigger",
];

/// A ledger with a little of everything every function touches.
const SEED: &str = r#"
INSERT INTO l.runs (run_id, org_id) VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1'), ('run-a', 'org-1');
INSERT INTO l.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-3', 1, '2026-01-02', NULL),
  ('run-a', 1, '2026-01-01', '[{"kind": "daytona_sandbox", "sandboxId": "dt-1"}, {"kind": "modal_sandbox", "sandboxId": "mo-1"}]');
INSERT INTO l.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, 'reserved', 'label-3', NULL);
INSERT INTO l.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('op-3', 'org-1', 'run-3');
INSERT INTO l.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt) VALUES ('daytona', 'sb-7', 'run-1', 1);
"#;

/// Every function of the extension that touches a ledger, as its callers write them.
const CALLS: &[&str] = &[
    "SELECT * FROM runtime_sandbox.check_ledger('l')",
    "SELECT * FROM runtime_sandbox.install_ledger_ddl('l')",
    "SELECT runtime_sandbox.install_ledger('l')",
    r#"SELECT status FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]', now(), true, ledger_schema => 'l')"#,
    r#"SELECT status FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]', now(), false, ledger_schema => 'l')"#,
    r#"SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false, ledger_schema => 'l')"#,
    r#"SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{"sandboxId": "sb-1"}]', now() - interval '1 minute', ledger_schema => 'l')"#,
    r#"SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{"sandboxId": "sb-1"}]', now(), keep_last => 1, ledger_schema => 'l')"#,
    "SELECT status FROM runtime_sandbox.reconcile_daytona_latest(true, absent_confirmations => 1, ledger_schema => 'l')",
    "SELECT status FROM runtime_sandbox.reconcile_daytona_latest(false, absent_confirmations => 1, ledger_schema => 'l')",
    "SELECT targets FROM runtime_sandbox.preview_sandbox_operation_backfill(10, NULL, 'l')",
    "SELECT inserted_operations FROM runtime_sandbox.backfill_sandbox_operations(1, NULL, 'l')",
    "SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 10, 1, 'l')",
    "SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'l')",
    "CALL runtime_sandbox.run_sandbox_operation_backfill(1, ledger_schema => 'l')",
    "SELECT phase FROM runtime_sandbox.backfill_status('l')",
];

fn connect_as(role: &str) -> Client {
    common::connect_as(role, DB)
}

/// Run every call as `role`; the outcome of each (`ok` or the SQLSTATE and message).
fn run_calls(role: &str) -> Vec<String> {
    let mut c = connect_as(role);
    CALLS
        .iter()
        .map(|sql| match c.batch_execute(sql) {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                let db = e.as_db_error().expect("a server error, not a lost connection (a crash?)");
                format!("{} {}", db.code().code(), db.message())
            }
        })
        .collect()
}

/// Who the attacker's code ran as, for each (tag, who, superuser).
fn spied(c: &mut Client) -> Vec<(String, String, String)> {
    c.query("SELECT tag, who, superuser FROM spy.log ORDER BY tag", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

fn attacker_is_superuser(c: &mut Client) -> bool {
    c.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = $1", &[&ATTACKER]).unwrap().get(0)
}

#[test]
fn the_ledger_owners_code_never_runs_with_the_callers_privileges() {
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")).unwrap();
    for role in [MEMBER, OUTSIDER, ATTACKER] {
        admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}")).unwrap();
    }
    admin
        .batch_execute(&format!(
            "CREATE ROLE {ATTACKER} LOGIN; CREATE ROLE {MEMBER} LOGIN IN ROLE {ATTACKER}; CREATE ROLE {OUTSIDER} LOGIN"
        ))
        .unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {DB}")).unwrap();
    let mut su = common::connect(DB);
    su.batch_execute(&format!(
        "CREATE EXTENSION runtime_sandbox;
         GRANT CREATE ON DATABASE {DB} TO {ATTACKER};
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA runtime_sandbox TO {MEMBER}, {OUTSIDER};
         GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA runtime_sandbox TO {MEMBER}, {OUTSIDER};"
    ))
    .unwrap();
    connect_as(ATTACKER).batch_execute(TOOLS).unwrap_or_else(|e| panic!("the attacker's tools: {}", common::db_message(&e)));

    let mut fired: BTreeMap<String, usize> = BTreeMap::new();
    let mut outcomes: Vec<String> = Vec::new();
    for kind in KINDS {
        su.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS l CASCADE;
             CREATE SCHEMA l AUTHORIZATION {ATTACKER};
             SELECT runtime_sandbox.install_ledger('l');
             {SEED}
             -- The outsider has the grants the functions needed before 0.3.0 (table privileges, no membership).
             GRANT USAGE ON SCHEMA l TO {OUTSIDER};
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA l TO {OUTSIDER};
             TRUNCATE spy.log;"
        ))
        .unwrap_or_else(|e| panic!("{kind}: ledger: {}", common::db_message(&e)));
        let mut attacker = connect_as(ATTACKER);
        for table in TABLES {
            attacker.batch_execute(&plant(kind, table)).unwrap_or_else(|e| panic!("{kind} on {table}: {}", common::db_message(&e)));
        }
        drop(attacker);
        su.batch_execute("TRUNCATE spy.log").unwrap();

        // Someone without the owner's role is refused before anything runs.
        for outcome in run_calls(OUTSIDER).iter().skip(2) {
            assert!(outcome.starts_with("42501 "), "{kind}: the outsider was not refused: {outcome}");
        }
        assert_eq!(spied(&mut su), vec![], "{kind}: the outsider's calls ran the attacker's code");

        for caller in ["postgres", MEMBER] {
            let results = run_calls(caller);
            for (sql, result) in CALLS.iter().zip(&results) {
                // A crash would have lost the connection (run_calls panics); an internal error is a bug.
                assert!(!result.starts_with("XX"), "{kind}, {caller}: {sql}\n  {result}");
                outcomes.push(format!("{kind} {caller}: {result} <- {sql}"));
            }
        }
        for (tag, who, superuser) in spied(&mut su) {
            assert_eq!((who.as_str(), superuser.as_str()), (ATTACKER, "off"), "{kind}: {tag} ran as {who}");
            *fired.entry(kind.to_string()).or_default() += 1;
        }
        assert!(!attacker_is_superuser(&mut su), "{kind}: the attacker became a superuser");
    }
    if std::env::var_os("RUNTIME_SANDBOX_ATTACK_REPORT").is_some() {
        println!("{}", outcomes.join("\n"));
    }
    // The code ran (as the attacker) for every kind the functions can use a ledger with; the kinds that make
    // a ledger unusable (a view or a composite type in place of a table or column) are refused by the check.
    // A deferred trigger fires at the end of each statement of the call, inside the restricted operation.
    for kind in ["before_trigger", "statement_trigger", "default", "generated", "check", "domain", "index", "policy", "deferred_trigger"] {
        assert!(fired.get(kind).copied().unwrap_or(0) > 0, "{kind}: the attacker's code never ran: {fired:?}");
    }
    drop(su);
    admin.batch_execute(&format!("DROP DATABASE {DB} WITH (FORCE)")).unwrap();
    for role in [MEMBER, OUTSIDER, ATTACKER] {
        admin.batch_execute(&format!("DROP ROLE {role}")).unwrap();
    }
}
