//! The owner's code runs exactly as PostgreSQL runs it for the application, whoever calls: a function's own
//! SET clause wins, and the owner's time zone holds while the ledger is read and written.
//!
//! An application role owns a ledger whose every table the extension writes carries three triggers:
//! - `audit`, with `SET search_path = <s>_audit, pg_temp`, writing to an unqualified `audit_trail` (and
//!   calling a helper without a SET clause): a same-named `public.audit_trail` beside it must stay empty;
//! - `record`, SECURITY DEFINER, owned by a third role, with `SET search_path = pg_catalog, audit`;
//! - `tuned`, with `SET work_mem` only: it keeps that, and gets the owner's search path.
//! The owner, an operator holding docs/privileges.md's grants, and a superuser each run every call on it and on
//! a plain twin: the same answers and rows, and every trigger wrote where the application's INSERT would have.
//! (A superuser's pg_cron job: tests/reconcile_cron.rs.)
//!
//! The owner's `ALTER ROLE ... SET timezone` and a ledger of `timestamp without time zone` clocks: a superuser
//! in UTC gets the application's counts, and the rows written carry the owner's wall clock.

mod common;

use common::calls::{contents, run_calls, sql, ALL, SEED};
use postgres::Client;

const TABLES: &[&str] = &[
    "attempts",
    "control",
    "provider_inventory_items",
    "provider_inventory_snapshots",
    "reconciliation_runs",
    "runtime_sandbox_capacity_leases",
    "runtime_sandbox_operations",
    "sandbox_cleanup_events_v2",
    "sandbox_cleanup_jobs_v2",
];

/// The application's triggers on ledger `@s@` (the audit role's function and the schema `@s@_audit` exist
/// already); run as the owner.
const TRIGGERS: &str = r#"
CREATE TABLE @s@_audit.audit_trail (tab text, path text, helper text);
CREATE FUNCTION @s@_audit.whereami() RETURNS text LANGUAGE plpgsql AS $$BEGIN RETURN current_setting('search_path'); END$$;
CREATE FUNCTION @s@.audit() RETURNS trigger LANGUAGE plpgsql SET search_path = @s@_audit, pg_temp AS $$
BEGIN INSERT INTO audit_trail VALUES (TG_TABLE_NAME, current_setting('search_path'), whereami()); RETURN NULL; END $$;
CREATE TABLE @s@.tuned_log (tab text, path text, work_mem text);
CREATE FUNCTION @s@.tuned() RETURNS trigger LANGUAGE plpgsql SET work_mem = '64MB' AS $$
BEGIN INSERT INTO tuned_log VALUES (TG_TABLE_NAME, current_setting('search_path'), current_setting('work_mem')); RETURN NULL; END $$;
"#;

fn db_error(e: &postgres::Error) -> String {
    common::db_message(e)
}

struct Cluster {
    db: &'static str,
    app: &'static str,
}

impl Cluster {
    fn connect(&self, role: Option<&str>) -> Client {
        match role {
            None => common::connect(self.db),
            Some(role) => common::connect_as(role, self.db),
        }
    }
}

fn build(su: &mut Client, c: &Cluster, schema: &str, triggers: bool) {
    su.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS {schema}_audit CASCADE;
         CREATE SCHEMA {schema} AUTHORIZATION {app}; SELECT runtime_sandbox.install_ledger('{schema}');
         CREATE SCHEMA {schema}_audit AUTHORIZATION {app};",
        app = c.app
    ))
    .unwrap();
    let mut owner = c.connect(Some(c.app));
    owner.batch_execute(&sql(SEED, schema)).unwrap_or_else(|e| panic!("seed {schema}: {}", db_error(&e)));
    if triggers {
        owner.batch_execute(&sql(TRIGGERS, schema)).unwrap_or_else(|e| panic!("triggers: {}", db_error(&e)));
        for table in TABLES {
            owner
                .batch_execute(&format!(
                    "CREATE TRIGGER audit AFTER INSERT OR UPDATE ON {schema}.{table} FOR EACH ROW EXECUTE FUNCTION {schema}.audit();
                     CREATE TRIGGER record AFTER INSERT OR UPDATE ON {schema}.{table} FOR EACH ROW EXECUTE FUNCTION audit.record();
                     CREATE TRIGGER tuned AFTER INSERT OR UPDATE ON {schema}.{table} FOR EACH ROW EXECUTE FUNCTION {schema}.tuned();"
                ))
                .unwrap_or_else(|e| panic!("trigger on {table}: {}", db_error(&e)));
        }
    }
}

/// The tests of this file one at a time: one of them changes the server's own TimeZone (ALTER SYSTEM), which the
/// others' owners (without a TimeZone of their own) would otherwise run with halfway through.
static SERVER_FILES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SERVER_FILES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn distinct(c: &mut Client, sql: &str) -> Vec<String> {
    c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", db_error(&e))).iter().map(|r| r.get(0)).collect()
}

#[test]
fn set_clauses_of_the_owners_triggers_win_for_the_owner_an_operator_and_a_superuser() {
    let _one = one_at_a_time();
    const OPERATOR: &str = "rs_settings_operator";
    const AUDITOR: &str = "rs_settings_auditor";
    let c = Cluster { db: "it_owner_settings", app: "rs_settings_app" };
    let app = c.app;
    common::drop_database(c.db);
    let mut admin = common::connect("postgres");
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {OPERATOR}; DROP ROLE IF EXISTS {AUDITOR}; DROP ROLE IF EXISTS {app};
             CREATE ROLE {app} LOGIN; CREATE ROLE {OPERATOR} LOGIN; CREATE ROLE {AUDITOR};"
        ))
        .unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {}", c.db)).unwrap();
    let mut su = c.connect(None);
    su.batch_execute(&format!(
        "CREATE EXTENSION runtime_sandbox; SET client_min_messages = warning;
         ALTER ROLE {app} IN DATABASE {db} SET search_path = app, public;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA runtime_sandbox TO {app};
         GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA runtime_sandbox TO {app};
         -- The older same-named table the application's path never reaches.
         CREATE TABLE public.audit_trail (tab text, path text, helper text);
         GRANT ALL ON public.audit_trail TO PUBLIC;
         -- The third role's SECURITY DEFINER trigger function, with its own path.
         CREATE SCHEMA audit AUTHORIZATION {AUDITOR};
         SET ROLE {AUDITOR};
         CREATE TABLE audit.events (tab text, who text, path text);
         CREATE FUNCTION audit.record() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, audit AS $$
         BEGIN INSERT INTO events VALUES (TG_TABLE_NAME, current_user, current_setting('search_path')); RETURN NULL; END $$;
         RESET ROLE;
         GRANT USAGE ON SCHEMA audit TO {app};",
        db = c.db
    ))
    .unwrap();
    let grants = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/privileges.md")).unwrap();
    let grants = grants.split("\n## Operator role").nth(1).unwrap().split("```sql\n").nth(1).unwrap().split("```").next().unwrap();
    su.batch_execute(&grants.replace("runtime_sandbox_operator", OPERATOR).replace("runtime_sandbox_ledger", app))
        .unwrap_or_else(|e| panic!("docs/privileges.md's grants: {}", db_error(&e)));

    for caller in [None, Some(app), Some(OPERATOR)] {
        let who = caller.unwrap_or("a superuser");
        build(&mut su, &c, "plain", false);
        build(&mut su, &c, "app", true);
        su.batch_execute("TRUNCATE public.audit_trail, audit.events").unwrap();
        let mut conn = c.connect(caller);
        conn.batch_execute("SET client_min_messages = warning; SET search_path = public; SET work_mem = '4MB'").unwrap();
        let want = run_calls(&mut conn, "plain", |_| true);
        let got = run_calls(&mut conn, "app", |_| true);
        assert_eq!(got, want, "{who}: the answers differ on the ledger with the triggers");
        assert!(got.iter().filter(|a| !a.starts_with("ERROR")).count() >= 10, "{who}: {got:?}");
        assert_eq!(contents(&mut su, "app"), contents(&mut su, "plain"), "{who}: the rows differ");

        let written: Vec<String> = distinct(&mut su, "SELECT DISTINCT tab FROM app_audit.audit_trail ORDER BY 1");
        if caller != Some(OPERATOR) {
            assert_eq!(written, TABLES, "{who}: the tables the calls wrote");
        } else {
            // The operator may not install the ledger, nor call the 0.3.0 backfill symbols.
            assert!(written.len() >= 7, "{who}: {written:?}");
        }
        assert_eq!(
            distinct(&mut su, "SELECT DISTINCT path || ' / ' || helper FROM app_audit.audit_trail"),
            ["app_audit, pg_temp / app_audit, pg_temp"],
            "{who}: the audit trigger's own path, and its helper's"
        );
        assert_eq!(common::count(&mut su, "SELECT count(*) FROM public.audit_trail"), 0, "{who}: the same-named table was written");
        assert_eq!(
            distinct(&mut su, "SELECT DISTINCT tab FROM audit.events ORDER BY 1"),
            written,
            "{who}: the SECURITY DEFINER trigger ran on every table written"
        );
        assert_eq!(
            distinct(&mut su, "SELECT DISTINCT who || ' / ' || path FROM audit.events"),
            [format!("{AUDITOR} / pg_catalog, audit")]
        );
        assert_eq!(distinct(&mut su, "SELECT DISTINCT tab FROM app.tuned_log ORDER BY 1"), written);
        assert_eq!(
            distinct(&mut su, "SELECT DISTINCT path || ' / ' || work_mem FROM app.tuned_log"),
            ["pg_catalog, app, public, pg_temp / 64MB"],
            "{who}: the work_mem trigger keeps its setting and gets the owner's path"
        );
        // And the caller's session is as it was.
        assert_eq!(distinct(&mut conn, "SELECT current_setting('search_path') || ' / ' || current_setting('work_mem')"), ["public / 4MB"]);
    }
    assert!(ALL.len() > TABLES.len());

    drop(su);
    common::drop_database(c.db);
    admin.batch_execute(&format!("DROP ROLE {OPERATOR}; DROP OWNED BY {AUDITOR}; DROP ROLE {AUDITOR}; DROP ROLE {app}")).unwrap();
}

/// Operations of ledger `@s@` whose clocks are the owner's wall clock (`timestamp without time zone`), written
/// by the owner's session: four created two hours ago, four two minutes ago, one in the listing.
const WALL_CLOCK: &str = r#"
ALTER TABLE @s@.runtime_sandbox_operations
    ALTER COLUMN provider_created_at TYPE timestamp, ALTER COLUMN delete_confirmed_at TYPE timestamp,
    ALTER COLUMN created_at TYPE timestamp, ALTER COLUMN updated_at TYPE timestamp,
    ALTER COLUMN created_at SET DEFAULT localtimestamp, ALTER COLUMN updated_at SET DEFAULT localtimestamp;
INSERT INTO @s@.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
SELECT 'op-' || age || '-' || i, 'daytona', 'run-' || age || '-' || i, 1, 'org-1', 'sb-' || age || '-' || i, 'live', NULL,
       localtimestamp - CASE age WHEN 'old' THEN interval '2 hours' ELSE interval '2 minutes' END
FROM unnest(ARRAY['old', 'new']) AS age, generate_series(1, 4) AS i;
INSERT INTO @s@.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
VALUES ('op-kept', 'daytona', 'run-kept', 1, 'org-1', 'sb-kept', 'live', localtimestamp - interval '3 hours');
"#;

#[test]
fn the_owners_time_zone_holds_while_the_ledger_is_read_and_written() {
    let _one = one_at_a_time();
    let c = Cluster { db: "it_owner_time_zone", app: "rs_time_zone_app" };
    let app = c.app;
    common::drop_database(c.db);
    let mut admin = common::connect("postgres");
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {app}; CREATE ROLE {app} LOGIN; ALTER ROLE {app} SET timezone = 'America/New_York';"
        ))
        .unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {}", c.db)).unwrap();
    let mut su = c.connect(None);
    su.batch_execute(&format!(
        "CREATE EXTENSION runtime_sandbox; SET client_min_messages = warning;
         GRANT EXECUTE ON FUNCTION runtime_sandbox.reconcile_daytona TO {app};"
    ))
    .unwrap();
    let call = r#"SELECT (absent_candidates, absent_ledger_rows, marked_deleted, status)::text
                  FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-kept"}]', now(), @dry@, ledger_schema => '@s@',
                                                         max_absent_ratio => 1)"#;
    let mut answers = Vec::new();
    for (schema, caller) in [("by_owner", Some(app)), ("by_superuser", None)] {
        su.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema} AUTHORIZATION {app};
             SELECT runtime_sandbox.install_ledger('{schema}');"
        ))
        .unwrap();
        c.connect(Some(app)).batch_execute(&sql(WALL_CLOCK, schema)).unwrap_or_else(|e| panic!("{}", db_error(&e)));
        let mut conn = c.connect(caller);
        conn.batch_execute("SET TIME ZONE 'UTC'").unwrap();
        for dry in ["true", "false"] {
            let q = sql(call, schema).replace("@dry@", dry);
            let row = conn.query_one(&q, &[]).unwrap_or_else(|e| panic!("{schema}: {}", db_error(&e)));
            answers.push((schema, dry, row.get::<_, String>(0)));
        }
        // The session's own time zone is as it was.
        assert_eq!(distinct(&mut conn, "SELECT current_setting('TimeZone')"), ["UTC"]);
        // The rows written carry the owner's wall clock.
        let marked = distinct(
            &mut su,
            &format!(
                "SELECT operation_key || ' ' || (abs(extract(epoch FROM delete_confirmed_at - (now() AT TIME ZONE 'America/New_York'))) < 600)
                 FROM {schema}.runtime_sandbox_operations WHERE delete_confirmed_at IS NOT NULL ORDER BY 1"
            ),
        );
        assert_eq!(marked, ["op-old-1 true", "op-old-2 true", "op-old-3 true", "op-old-4 true"], "{schema}");
    }
    // The application's answer: the four operations two hours old are absent, the four two minutes old are not.
    for (schema, dry, answer) in &answers {
        let want = if *dry == "true" { "(4,4,0,planned)" } else { "(4,4,4,applied)" };
        assert_eq!(answer, want, "{schema}, dry run {dry}");
    }

    drop(su);
    common::drop_database(c.db);
    admin.batch_execute(&format!("DROP ROLE {app}")).unwrap();
}

/// An owner without a TimeZone of its own runs with the server's (its files'), which the extension reads once per
/// configuration load: after ALTER SYSTEM and a reload, the same session's next call writes the new wall clock.
#[test]
fn the_servers_time_zone_is_read_again_after_a_reload() {
    let _one = one_at_a_time();
    let c = Cluster { db: "it_owner_file_zone", app: "rs_file_zone_app" };
    let app = c.app;
    common::drop_database(c.db);
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {app}; CREATE ROLE {app} LOGIN;")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {}", c.db)).unwrap();
    /// The server's TimeZone put back however the test ends.
    struct Reset(Client);
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = self.0.batch_execute("ALTER SYSTEM RESET timezone");
            let _ = self.0.batch_execute("SELECT pg_reload_conf()");
        }
    }
    let mut admin = Reset(admin);
    let mut su = c.connect(None);
    su.batch_execute("CREATE EXTENSION runtime_sandbox; SET client_min_messages = warning;").unwrap();
    let call = r#"SELECT (absent_candidates, marked_deleted, status)::text
                  FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-kept"}]', now(), false, ledger_schema => '@s@',
                                                         max_absent_ratio => 1)"#;
    // One session for both calls, in UTC.
    let mut conn = c.connect(None);
    conn.batch_execute("SET TIME ZONE 'UTC'").unwrap();
    for (schema, zone) in [("in_tokyo", "Asia/Tokyo"), ("in_new_york", "America/New_York")] {
        let loaded: String = conn.query_one("SELECT pg_conf_load_time()::text", &[]).unwrap().get(0);
        // (ALTER SYSTEM runs outside a transaction block: a statement of its own.)
        admin.0.batch_execute(&format!("ALTER SYSTEM SET timezone = '{zone}'")).unwrap();
        admin.0.batch_execute("SELECT pg_reload_conf()").unwrap();
        // The session takes the reload before its next statement once the signal has reached it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while conn.query_one("SELECT pg_conf_load_time()::text", &[]).unwrap().get::<_, String>(0) == loaded {
            assert!(std::time::Instant::now() < deadline, "the session did not reload its configuration");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        su.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema} AUTHORIZATION {app};
             SELECT runtime_sandbox.install_ledger('{schema}');"
        ))
        .unwrap();
        // The owner's session starts in the server's new TimeZone: its wall clock is that zone's.
        c.connect(Some(app)).batch_execute(&sql(WALL_CLOCK, schema)).unwrap_or_else(|e| panic!("{}", db_error(&e)));
        let row = conn.query_one(&sql(call, schema), &[]).unwrap_or_else(|e| panic!("{schema}: {}", db_error(&e)));
        assert_eq!(row.get::<_, String>(0), "(4,4,applied)", "{zone}");
        let marked = distinct(
            &mut su,
            &format!(
                "SELECT operation_key || ' ' || (abs(extract(epoch FROM delete_confirmed_at - (now() AT TIME ZONE '{zone}'))) < 600)
                 FROM {schema}.runtime_sandbox_operations WHERE delete_confirmed_at IS NOT NULL ORDER BY 1"
            ),
        );
        assert_eq!(marked, ["op-old-1 true", "op-old-2 true", "op-old-3 true", "op-old-4 true"], "{zone}");
    }
    assert_eq!(distinct(&mut conn, "SELECT current_setting('TimeZone')"), ["UTC"]);
    drop((su, conn));
    common::drop_database(c.db);
    admin.0.batch_execute(&format!("DROP ROLE {app}")).unwrap();
}
