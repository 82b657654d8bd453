//! The ledger owner's code runs as it does for the application, whoever calls.
//!
//! An application role owns two ledgers with the same rows. One is plain; the other carries what an
//! application's migrations commonly add:
//! - triggers whose functions name their audit table without a schema, relying on the database's
//!   `ALTER DATABASE ... SET search_path TO app, public`;
//! - Django-style foreign keys, `DEFERRABLE INITIALLY DEFERRED`.
//! A superuser (as a pg_cron job is), then the owner itself, run every call on both: the answers and every
//! table's rows are the same; the triggers wrote their audit rows with the owner's search path, never with
//! the caller's session one (the caller's look-alike audit table stays empty), while the extension's own
//! statements never reach the look-alikes of built-ins planted on that path. A foreign key a call would
//! break is still enforced (23503, nothing written), and after a call the caller's transaction has its
//! deferred constraints deferred again.

mod common;

use common::calls::{contents, run_calls, sql, SEED};
use postgres::Client;

const DB: &str = "it_owner_context";
const APP: &str = "rs_owner_app";

/// The application's additions to a ledger in `@s@` (run by the owner).
const ADDITIONS: &str = r#"
CREATE TABLE @s@.audit_log (tab text, op text, search_path text);
CREATE FUNCTION @s@.audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_log (tab, op, search_path) VALUES (TG_TABLE_NAME, TG_OP, current_setting('search_path'));
    RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER INSERT OR UPDATE ON @s@.runtime_sandbox_operations FOR EACH ROW EXECUTE FUNCTION @s@.audit();
CREATE TRIGGER audit AFTER INSERT OR UPDATE ON @s@.sandbox_cleanup_jobs_v2 FOR EACH ROW EXECUTE FUNCTION @s@.audit();
CREATE TRIGGER audit AFTER INSERT OR UPDATE ON @s@.runtime_sandbox_capacity_leases FOR EACH ROW EXECUTE FUNCTION @s@.audit();
CREATE TRIGGER audit AFTER INSERT ON @s@.sandbox_cleanup_events_v2 FOR EACH ROW EXECUTE FUNCTION @s@.audit();
ALTER TABLE @s@.runtime_sandbox_operations ADD CONSTRAINT operations_run_fk FOREIGN KEY (run_id) REFERENCES @s@.runs (run_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE @s@.runtime_sandbox_capacity_leases ADD CONSTRAINT leases_run_fk FOREIGN KEY (run_id) REFERENCES @s@.runs (run_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE @s@.sandbox_cleanup_jobs_v2 ADD CONSTRAINT cleanups_run_fk FOREIGN KEY (run_id) REFERENCES @s@.runs (run_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE @s@.sandbox_cleanup_events_v2 ADD CONSTRAINT events_run_fk FOREIGN KEY (run_id) REFERENCES @s@.runs (run_id)
    DEFERRABLE INITIALLY DEFERRED;
"#;

fn connect_as(role: &str) -> Client {
    common::connect_as(role, DB)
}

/// A ledger owned by the application role, seeded; with the application's additions when `app`.
fn build(su: &mut Client, schema: &str, app: bool) {
    su.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema} AUTHORIZATION {APP};
         SELECT runtime_sandbox.install_ledger('{schema}');"
    ))
    .unwrap();
    let mut owner = connect_as(APP);
    owner.batch_execute(&sql(SEED, schema)).unwrap_or_else(|e| panic!("seed {schema}: {}", common::db_message(&e)));
    if app {
        owner.batch_execute(&sql(ADDITIONS, schema)).unwrap_or_else(|e| panic!("additions: {}", common::db_message(&e)));
    }
}

fn audit_rows(c: &mut Client, schema: &str) -> Vec<(String, String)> {
    c.query(&format!("SELECT DISTINCT tab, search_path FROM {schema}.audit_log ORDER BY 1, 2"), &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
fn triggers_see_the_owners_search_path_and_deferred_keys_are_checked_for_any_caller() {
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {APP}; CREATE ROLE {APP} LOGIN")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {DB}")).unwrap();
    admin.batch_execute(&format!("ALTER DATABASE {DB} SET search_path TO app, public")).unwrap();
    let mut su = common::connect(DB);
    su.batch_execute(&format!(
        "CREATE EXTENSION runtime_sandbox; SET client_min_messages = warning;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA runtime_sandbox TO {APP};
         GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA runtime_sandbox TO {APP};
         -- The caller's own look-alike, first on its session's search_path.
         CREATE SCHEMA decoy; CREATE TABLE decoy.audit_log (tab text, op text, search_path text);
         GRANT ALL ON SCHEMA decoy TO PUBLIC; GRANT ALL ON decoy.audit_log TO PUBLIC;
         -- Look-alikes of built-ins the statements call, on the owner's path: the statements never reach them.
         CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE 'hijacked'; END$$;
         CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$BEGIN RAISE 'hijacked'; END$$;"
    ))
    .unwrap();

    // check_ledger: the deferred keys are a notice (checked per statement for another role), nothing breaks.
    build(&mut su, "app", true);
    let deferred: Vec<(String, Vec<String>)> = su
        .query("SELECT severity, breaks FROM runtime_sandbox.check_ledger('app') WHERE problem LIKE '%DEFERRABLE INITIALLY DEFERRED%'", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(deferred.len() >= 4, "{deferred:?}");
    assert!(deferred.iter().all(|(severity, breaks)| severity == "notice" && breaks.is_empty()), "{deferred:?}");

    for caller in ["postgres", APP] {
        build(&mut su, "plain", false);
        build(&mut su, "app", true);
        let mut c = if caller == "postgres" { common::connect(DB) } else { connect_as(APP) };
        c.batch_execute("SET client_min_messages = warning; SET search_path = decoy, public").unwrap();
        let want = run_calls(&mut c, "plain", |_| true);
        for answer in &want {
            assert!(!answer.starts_with("ERROR"), "{caller} on the plain ledger: {answer}");
        }
        let got = run_calls(&mut c, "app", |_| true);
        assert_eq!(got, want, "{caller}: the answers differ on the application's ledger");
        assert_eq!(contents(&mut su, "app"), contents(&mut su, "plain"), "{caller}: the rows differ");
        let audit = audit_rows(&mut su, "app");
        assert!(audit.len() >= 4, "{caller}: the triggers did not run: {audit:?}");
        for (tab, path) in &audit {
            assert_eq!(path, "pg_catalog, app, public, pg_temp", "{caller}: {tab}'s trigger ran with another search path");
        }
        assert_eq!(common::count(&mut su, "SELECT count(*) FROM decoy.audit_log"), 0, "{caller}: the caller's table was written");
    }

    // A key the apply would break is still enforced, for the superuser as for the owner: nothing is written.
    for caller in ["postgres", APP] {
        build(&mut su, "app", true);
        let mut owner = connect_as(APP);
        owner
            .batch_execute(
                "BEGIN;
                 INSERT INTO app.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, state,
                        provider_operation_token, provider_created_at)
                 VALUES ('op-9', 'daytona', 'run-9', 1, 'org-1', 'sb-9', 'live', 'label-9', now() - interval '2 hours');
                 INSERT INTO app.runs (run_id, org_id) VALUES ('run-9', 'org-1');
                 COMMIT;
                 ALTER TABLE app.runtime_sandbox_capacity_leases DROP CONSTRAINT leases_run_fk;
                 ALTER TABLE app.runtime_sandbox_capacity_leases ADD CONSTRAINT leases_run_fk FOREIGN KEY (run_id)
                     REFERENCES app.runs (run_id) DEFERRABLE INITIALLY DEFERRED NOT VALID;
                 ALTER TABLE app.runtime_sandbox_operations DROP CONSTRAINT operations_run_fk;
                 DELETE FROM app.runs WHERE run_id = 'run-9';",
            )
            .unwrap_or_else(|e| panic!("{}", common::db_message(&e)));
        let before = contents(&mut su, "app");
        let mut c = if caller == "postgres" { common::connect(DB) } else { connect_as(APP) };
        let err = c
            .batch_execute(
                r#"SELECT status FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1"}, {"sandboxId": "sb-2"}, {"sandboxId": "sb-9"}]',
                   now(), false, ledger_schema => 'app', max_absent_ratio => 1)"#,
            )
            .expect_err("a lease for a run that does not exist");
        assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("23503"), "{caller}: {}", common::db_message(&err));
        assert_eq!(contents(&mut su, "app"), before, "{caller}: a failed apply wrote rows");
    }

    // After a call by another role, the caller's transaction has its deferred keys deferred again.
    build(&mut su, "app", true);
    let mut c = common::connect(DB);
    c.batch_execute(
        "BEGIN;
         SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), false, ledger_schema => 'app', max_absent_ratio => 1);
         INSERT INTO app.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('lease-x', 'org-1', 'run-missing');",
    )
    .expect("the insert's key is checked at COMMIT, not at once");
    let err = c.batch_execute("COMMIT").expect_err("the key fails at COMMIT");
    assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("23503"), "{}", common::db_message(&err));

    drop((c, su));
    admin.batch_execute(&format!("DROP DATABASE {DB} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("DROP ROLE {APP}")).unwrap();
}
