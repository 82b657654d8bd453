//! Hardening, over real connections, with the same jobs every time (reconcile, inventory snapshots and the
//! reconciliation of the latest, the backfill function and procedure, managed reconcile, archive and drift,
//! the stock hashes) and the same answers:
//! - as a non-superuser operator holding only the grants docs/privileges.md lists;
//! - in a session with temporary tables named like the ledger's and the application's;
//! - in a session whose search_path puts public before pg_catalog, with public holding a raising clone of
//!   every pg_catalog function the extension's SQL and Rust name, of the usual operators on the usual types,
//!   and of the aggregates it uses.
//! (The pg_regress suite runs the tour and the docs' examples with search_path = '' and with look-alikes a
//! hostile user can make win under the default search_path: scripts/regress.sh.)

mod common;

use postgres::Client;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A ledger and an application schema with a little of everything the jobs touch.
const SEED: &str = r#"
DO $$ BEGIN CREATE ROLE runtime_sandbox_ledger NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
CREATE SCHEMA runtime_scheduler AUTHORIZATION runtime_sandbox_ledger;
SELECT runtime_sandbox.install_ledger();
SELECT runtime_sandbox.install_environment_tables();
ALTER TABLE public.environments OWNER TO runtime_sandbox_ledger;
ALTER TABLE public.built_in_managed_resources OWNER TO runtime_sandbox_ledger;
ALTER TABLE public.companies OWNER TO runtime_sandbox_ledger;
INSERT INTO runtime_scheduler.runs VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1'), ('run-a', 'org-1');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-3', 1, '2026-01-02', NULL),
  ('run-a', 1, '2026-01-01', '[{"kind": "daytona_sandbox", "sandboxId": "dt-1"}, {"kind": "modal_sandbox", "sandboxId": "mo-1"}]');
INSERT INTO runtime_scheduler.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, 'reserved', 'label-3', NULL);
INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('op-3', 'org-1', 'run-3');
INSERT INTO public.companies (id, name) VALUES ('00000000-0000-0000-0000-0000000000c1', 'Acme');
"#;

/// The jobs, written as a careful caller writes them (every name qualified, no operator, no aggregate),
/// each with the answer it must give on the seeded database.
const JOBS: &[(&str, &str)] = &[
    (
        r#"SELECT status, recovered_reserved_operations::pg_catalog.text, seeded_leases::pg_catalog.text,
                  marked_deleted::pg_catalog.text
             FROM runtime_sandbox.reconcile_daytona(
                  inventory => '[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]',
                  inventory_captured_at => pg_catalog.now(), dry_run => false)"#,
        "applied 1 1 1",
    ),
    // The recorder's job: two listings, the second pruning the first (keep_last => 1).
    (
        r#"SELECT runtime_sandbox.record_inventory_snapshot('daytona',
               '[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]',
               pg_catalog.now())::pg_catalog.text"#,
        "1",
    ),
    (
        r#"SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona',
               items => '[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]',
               captured_at => pg_catalog.now(), keep_last => 1)::pg_catalog.text"#,
        "2",
    ),
    // The scheduled job: the newest snapshot, as pg_cron runs it (no absence to confirm: sb-2 was marked above).
    (
        "SELECT status, snapshot_id::pg_catalog.text, confirming_snapshots::pg_catalog.text,
                absent_candidates::pg_catalog.text, live_operations::pg_catalog.text, marked_deleted::pg_catalog.text
           FROM runtime_sandbox.reconcile_daytona_latest(absent_confirmations => 1)",
        "applied 2 1 0 1 0",
    ),
    (
        "SELECT phase, inserted_operations::pg_catalog.text
           FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => false, batch_size => 1, max_batches => 1)",
        "pending 1",
    ),
    ("CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 1)", ""),
    ("SELECT phase, attempts_remaining::pg_catalog.text FROM runtime_sandbox.backfill_status()", "complete 0"),
    // A migration tool's call (docs/privileges.md grants it): the rest of a completed backfill is nothing.
    ("SELECT phase FROM runtime_sandbox.complete_sandbox_operation_backfill()", "complete"),
    ("SELECT object, problem FROM runtime_sandbox.check_ledger()", ""),
    (
        r#"SELECT action FROM runtime_sandbox.reconcile_managed_environment(
               name => 'Daytona', provider => 'daytona', config => '{"target": "us"}')"#,
        "added",
    ),
    ("SELECT archived::pg_catalog.text FROM runtime_sandbox.archive_managed_environment(provider => 'daytona')", "true"),
    (
        r#"SELECT action, provider_reactivated::pg_catalog.text FROM runtime_sandbox.reconcile_managed_environment(
               name => 'Daytona', provider => 'daytona', config => '{"target": "us"}')"#,
        "updated false",
    ),
    ("SELECT stock_status::pg_catalog.text FROM runtime_sandbox.managed_environment_drift()", "stock_current"),
    (
        r#"SELECT runtime_sandbox.stock_hash('{"a":1,"b":{"c":2}}')"#,
        "sha256:007f2c1c104514608c3cdf42ec59d710d0888592c1d1f72437d9b075093617b8",
    ),
    (
        "SELECT runtime_sandbox.managed_resource_status('env-1', 'sha256:aa', 'sha256:aa', 'sha256:bb')::pg_catalog.text",
        "stock_update_available",
    ),
];

/// Runs every job; the rows' text columns joined by spaces (rows by newlines), errors as `ERROR: ...`.
fn run_jobs(c: &mut Client) -> Vec<String> {
    JOBS.iter()
        .map(|(sql, _)| match c.simple_query(sql) {
            Ok(messages) => messages
                .iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(row) => {
                        Some((0..row.len()).map(|i| row.get(i).unwrap_or("NULL")).collect::<Vec<_>>().join(" "))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("ERROR: {}", common::db_message(&e)),
        })
        .collect()
}

fn assert_jobs_answer(answers: &[String], context: &str) {
    for ((sql, want), got) in JOBS.iter().zip(answers) {
        assert_eq!(got, want, "{context}: {sql}");
    }
}

/// What the jobs leave in the real tables, seen from a plain session.
fn assert_real_tables_written(db: &str) {
    let mut admin = common::connect(db);
    let counts: String = admin
        .query_one(
            "SELECT concat_ws(' ',
                    (SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations),
                    (SELECT count(*) FROM runtime_scheduler.sandbox_cleanup_jobs_v2),
                    (SELECT count(*) FROM runtime_scheduler.reconciliation_runs),
                    (SELECT string_agg(snapshot_id || ':' || reconciled_run_id, ',')
                       FROM runtime_scheduler.provider_inventory_snapshots),
                    (SELECT count(*) FROM runtime_scheduler.provider_inventory_items),
                    (SELECT value->>'phase' FROM runtime_scheduler.control),
                    (SELECT count(*) FROM public.environments),
                    (SELECT count(*) FROM public.built_in_managed_resources))",
            &[],
        )
        .unwrap()
        .get(0);
    // op-1..3 and the backfill's dt-1 and mo-1 (sb-9's late fact is op-3's identity); sb-9 pending and sb-2
    // deleted; two reconciliation runs (reconcile_daytona, then reconcile_daytona_latest); snapshot 2 with its
    // two items, reconciled by run 2 (snapshot 1 pruned); a complete checkpoint; one managed environment with
    // one binding.
    assert_eq!(
        counts, "5 2 2 2:2 2 complete 1 1",
        "operations, cleanups, runs, snapshots:run, items, checkpoint, environments, bindings"
    );
}

fn seeded(name: &str) -> String {
    let db = common::fresh_database(name);
    common::connect(&db).batch_execute(SEED).unwrap_or_else(|e| panic!("seed: {}", common::db_message(&e)));
    db
}

/// The first ```sql block under `## Operator role` in docs/privileges.md.
fn documented_operator_grants() -> String {
    let text = std::fs::read_to_string(repo().join("docs/privileges.md")).unwrap();
    let section = text.split("\n## Operator role").nth(1).expect("docs/privileges.md has ## Operator role");
    let block = section.split("```sql\n").nth(1).expect("an ```sql block under ## Operator role");
    block.split("```").next().unwrap().to_string()
}

/// The ```sql block under `## Alerting` in docs/operations.md: the monitoring role's grants.
fn documented_monitoring_grants() -> String {
    let text = std::fs::read_to_string(repo().join("docs/operations.md")).unwrap();
    let section = text.split("\n## Alerting").nth(1).expect("docs/operations.md has ## Alerting");
    let block = section.split("```sql\n").nth(1).expect("an ```sql block under ## Alerting");
    block.split("```").next().unwrap().to_string()
}

#[test]
fn monitor_with_only_the_documented_grants_reads_the_health_view_and_nothing_else() {
    let db = seeded("it_hardening_monitor");
    let mut admin = common::connect(&db);
    admin.batch_execute("DROP ROLE IF EXISTS monitoring; CREATE ROLE monitoring LOGIN").unwrap();
    admin
        .batch_execute(&documented_monitoring_grants())
        .unwrap_or_else(|e| panic!("docs/operations.md's grants: {}", common::db_message(&e)));
    let mut monitor = common::connect_as("monitoring", &db);
    let rows = monitor
        .query("SELECT environment, last_status FROM runtime_scheduler.reconciliation_health", &[])
        .unwrap_or_else(|e| panic!("the monitor reads the view: {}", common::db_message(&e)));
    assert!(rows.iter().any(|r| r.get::<_, String>(0) == "production"));
    for sql in ["SELECT count(*) FROM runtime_scheduler.reconciliation_runs", "SELECT * FROM runtime_sandbox.reconcile_daytona('[]', now(), true)"] {
        let err = monitor.batch_execute(sql).expect_err(sql);
        assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("42501"), "{sql}: {}", common::db_message(&err));
    }
    drop(monitor);
    admin.batch_execute("DROP OWNED BY monitoring; DROP ROLE monitoring").unwrap();
}

#[test]
fn operator_with_only_the_documented_grants_runs_every_job() {
    const OPERATOR: &str = "runtime_sandbox_operator";
    let db = seeded("it_hardening_operator");
    let mut admin = common::connect(&db);
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {OPERATOR}; CREATE ROLE {OPERATOR} LOGIN"))
        .unwrap();
    let grants = documented_operator_grants();
    assert!(grants.contains(OPERATOR), "the documented grants name {OPERATOR}");
    admin.batch_execute(&grants).unwrap_or_else(|e| panic!("docs/privileges.md's grants: {}", common::db_message(&e)));

    let mut operator = common::connect_as(OPERATOR, &db);
    assert_jobs_answer(&run_jobs(&mut operator), "as the operator with docs/privileges.md's grants");
    // Nothing more than that: the DDL and the pg_cron jobs stay with the owner.
    for sql in [
        "SELECT runtime_sandbox.install_ledger()",
        "SELECT runtime_sandbox.install_environment_tables()",
        "SELECT runtime_sandbox.schedule_reconciliation()",
        "SELECT runtime_sandbox.unschedule_sandbox_operation_backfill()",
    ] {
        let err = operator.batch_execute(sql).unwrap_err();
        assert!(common::db_message(&err).contains("permission denied"), "{sql}: {err}");
    }
    drop(operator);
    assert_real_tables_written(&db);
    drop(admin);
    common::drop_database(&db);
    common::connect("postgres").batch_execute(&format!("DROP ROLE {OPERATOR}")).unwrap();
}

/// The ```sql block of docs/privileges.md that grants install_ledger to the application's migration role.
fn documented_installer_grant() -> String {
    let text = std::fs::read_to_string(repo().join("docs/privileges.md")).unwrap();
    let section = text.split("\n## Installing").nth(1).expect("docs/privileges.md has ## Installing");
    let section = section.split("\n## ").next().unwrap();
    let block = section.split("```sql\n").find(|b| b.contains("install_ledger(name)")).expect("a GRANT on install_ledger");
    block.split("```").next().unwrap().to_string()
}

#[test]
fn the_schemas_owner_runs_install_ledger_with_the_documented_grant() {
    let db = common::fresh_database("it_hardening_installer");
    let mut admin = common::connect(&db);
    admin
        .batch_execute(
            "DROP ROLE IF EXISTS app_migrations; DROP ROLE IF EXISTS app_owner;
             CREATE ROLE app_owner NOLOGIN; CREATE ROLE app_migrations LOGIN IN ROLE app_owner;
             CREATE SCHEMA app_ledger AUTHORIZATION app_owner;",
        )
        .unwrap();
    let mut migrations = common::connect_as("app_migrations", &db);
    let err = migrations.batch_execute("SELECT runtime_sandbox.install_ledger('app_ledger')").unwrap_err();
    assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("42501"), "{}", common::db_message(&err));
    admin.batch_execute(&documented_installer_grant()).unwrap_or_else(|e| panic!("{}", common::db_message(&e)));
    migrations
        .batch_execute("SELECT runtime_sandbox.install_ledger('app_ledger')")
        .unwrap_or_else(|e| panic!("install_ledger as the owner's member: {}", common::db_message(&e)));
    // Everything it made belongs to the schema's owner; a schema of another owner is still refused.
    let owners: Vec<String> = admin
        .query("SELECT DISTINCT tableowner::text FROM pg_tables WHERE schemaname = 'app_ledger'", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(owners, ["app_owner"]);
    admin.batch_execute("CREATE SCHEMA other_ledger").unwrap();
    let err = migrations.batch_execute("SELECT runtime_sandbox.install_ledger('other_ledger')").unwrap_err();
    assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("42501"), "{}", common::db_message(&err));
    drop((admin, migrations));
    common::drop_database(&db);
    common::connect("postgres").batch_execute("DROP ROLE app_migrations; DROP ROLE app_owner").unwrap();
}

const LOOK_ALIKE_TABLES: &[&str] = &[
    "runtime_scheduler.runs",
    "runtime_scheduler.attempts",
    "runtime_scheduler.runtime_sandbox_operations",
    "runtime_scheduler.runtime_sandbox_capacity_leases",
    "runtime_scheduler.sandbox_cleanup_jobs_v2",
    "runtime_scheduler.sandbox_cleanup_events_v2",
    "runtime_scheduler.control",
    "runtime_scheduler.reconciliation_runs",
    "runtime_scheduler.provider_inventory_snapshots",
    "runtime_scheduler.provider_inventory_items",
    "public.companies",
    "public.environments",
    "public.built_in_managed_resources",
];

#[test]
fn temporary_look_alike_tables_in_the_callers_session_are_ignored() {
    let db = seeded("it_hardening_temp");
    let mut victim = common::connect(&db);
    // Exact copies, so a query that reached them would work and write there instead of failing.
    for table in LOOK_ALIKE_TABLES {
        let name = table.split('.').nth(1).unwrap();
        victim.batch_execute(&format!("CREATE TEMP TABLE {name} (LIKE {table} INCLUDING ALL)")).unwrap();
    }
    victim.batch_execute("INSERT INTO pg_temp.companies SELECT * FROM public.companies").unwrap();
    victim.batch_execute("SET search_path = pg_temp, public").unwrap();
    assert_jobs_answer(&run_jobs(&mut victim), "with temporary look-alike tables");
    for table in LOOK_ALIKE_TABLES {
        let name = table.split('.').nth(1).unwrap();
        let rows: i64 = victim.query_one(&format!("SELECT count(*) FROM pg_temp.{name}"), &[]).unwrap().get(0);
        let seeded_rows = i64::from(name == "companies");
        assert_eq!(rows, seeded_rows, "the jobs wrote into the temporary {name}");
    }
    drop(victim);
    assert_real_tables_written(&db);
    common::drop_database(&db);
}

/// Lower-case identifiers followed by `(` in the extension's SQL and Rust: the functions it may call.
fn called_names() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "sql" || e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo().join("sql"), &mut files);
    walk(&repo().join("src"), &mut files);
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_lowercase() || bytes[i] == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_lowercase() || bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                    i += 1;
                }
                let mut j = i;
                while j < bytes.len() && bytes[j] == b' ' {
                    j += 1;
                }
                let preceded = start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
                if !preceded && j < bytes.len() && bytes[j] == b'(' {
                    names.insert(text[start..i].to_string());
                }
            } else {
                i += 1;
            }
        }
    }
    names.into_iter().collect()
}

const CLONE_FUNCTIONS: &str = r#"
SELECT format('CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
              p.proname, pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid),
              format('BEGIN RAISE EXCEPTION %L; END',
                     'hijacked by public.' || p.proname || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')'))
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'f' AND p.proname::text = ANY($1::text[])
"#;

const CLONE_OPERATORS: &str = r#"
SELECT format('CREATE FUNCTION public.hijacked_operator_%s(%s, %s) RETURNS %s LANGUAGE plpgsql AS %L;
               CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.hijacked_operator_%s)',
              o.oid, l, r, pg_catalog.format_type(o.oprresult, NULL),
              format('BEGIN RAISE EXCEPTION %L; END', format('hijacked by public.%s(%s, %s)', o.oprname, l, r)),
              o.oprname, l, r, o.oid)
  FROM pg_catalog.pg_operator o
 CROSS JOIN LATERAL (SELECT pg_catalog.format_type(o.oprleft, NULL) AS l, pg_catalog.format_type(o.oprright, NULL) AS r) t
 WHERE o.oprnamespace = 'pg_catalog'::regnamespace AND o.oprkind = 'b'
   AND o.oprname IN ('=', '<>', '<', '>', '<=', '>=', '||', '->', '->>', '?', '@>', '+', '-')
   AND o.oprleft IN ('text'::regtype, 'name'::regtype, 'jsonb'::regtype, 'bigint'::regtype, 'integer'::regtype,
                     'boolean'::regtype, 'uuid'::regtype, 'timestamptz'::regtype, 'interval'::regtype, 'text[]'::regtype)
   AND o.oprright IN ('text'::regtype, 'name'::regtype, 'jsonb'::regtype, 'bigint'::regtype, 'integer'::regtype,
                      'boolean'::regtype, 'uuid'::regtype, 'timestamptz'::regtype, 'interval'::regtype, 'text[]'::regtype)
"#;

const CLONE_AGGREGATES: &str = r#"
CREATE FUNCTION public.hijacked_step(bigint) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.count(*)'; END$$;
CREATE AGGREGATE public.count(*) (SFUNC = public.hijacked_step, STYPE = bigint);
CREATE FUNCTION public.hijacked_step(text, text, text) RETURNS text LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.string_agg'; END$$;
CREATE AGGREGATE public.string_agg(text, text) (SFUNC = public.hijacked_step, STYPE = text);
CREATE FUNCTION public.hijacked_step(anyarray, anynonarray) RETURNS anyarray LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.array_agg'; END$$;
CREATE AGGREGATE public.array_agg(anynonarray) (SFUNC = public.hijacked_step, STYPE = anyarray);
CREATE FUNCTION public.hijacked_step(jsonb, anyelement) RETURNS jsonb LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.jsonb_agg'; END$$;
CREATE AGGREGATE public.jsonb_agg(anyelement) (SFUNC = public.hijacked_step, STYPE = jsonb);
CREATE FUNCTION public.hijacked_step(timestamptz, timestamptz) RETURNS timestamptz LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.max'; END$$;
CREATE AGGREGATE public.max(timestamptz) (SFUNC = public.hijacked_step, STYPE = timestamptz);
CREATE FUNCTION public.hijacked_step(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.sum'; END$$;
CREATE AGGREGATE public.sum(bigint) (SFUNC = public.hijacked_step, STYPE = bigint);
CREATE FUNCTION public.hijacked_step(boolean, boolean) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked by public.bool_or'; END$$;
CREATE AGGREGATE public.bool_or(boolean) (SFUNC = public.hijacked_step, STYPE = boolean);
"#;

/// Public filled with raising clones by a role that can create there; returns how many were made.
fn plant_clones(db: &str, mallory: &str) -> usize {
    let mut admin = common::connect(db);
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {mallory}; CREATE ROLE {mallory}; GRANT CREATE ON SCHEMA public TO {mallory};"
        ))
        .unwrap();
    let names = called_names();
    assert!(names.iter().any(|n| n == "clock_timestamp") && names.len() > 50, "names from the code: {names:?}");
    let mut statements: Vec<String> =
        admin.query(CLONE_FUNCTIONS, &[&names]).unwrap().iter().map(|r| r.get(0)).collect();
    statements.extend(admin.query(CLONE_OPERATORS, &[]).unwrap().iter().map(|r| r.get::<_, String>(0)));
    admin.batch_execute(&format!("SET ROLE {mallory}")).unwrap();
    admin.batch_execute(CLONE_AGGREGATES).unwrap();
    // Clones PostgreSQL refuses (pseudo-type arguments such as "any" or internal) are skipped.
    let made = statements.iter().filter(|sql| admin.batch_execute(sql).is_ok()).count();
    admin.batch_execute("RESET ROLE").unwrap();
    made
}

#[test]
fn public_clones_ahead_of_pg_catalog_do_not_reach_the_functions() {
    const MALLORY: &str = "rs_hardening_mallory";
    let db = seeded("it_hardening_public_first");
    let made = plant_clones(&db, MALLORY);
    assert!(made > 100, "only {made} clones were made");
    println!("{made} raising clones of pg_catalog functions and operators in public");
    let mut victim = common::connect(&db);
    victim.batch_execute("SET search_path = public, pg_catalog").unwrap();
    // The clones are live for anything that does not pin its search_path.
    let err = victim.batch_execute("SELECT now()").unwrap_err();
    assert!(common::db_message(&err).contains("hijacked by public.now()"), "{err}");
    let err = victim.batch_execute("SELECT 'a'::text = 'b'::text").unwrap_err();
    assert!(common::db_message(&err).contains("hijacked by public.=(text, text)"), "{err}");
    assert_jobs_answer(&run_jobs(&mut victim), "with public's clones ahead of pg_catalog");
    drop(victim);
    assert_real_tables_written(&db);
    common::drop_database(&db);
    common::connect("postgres").batch_execute(&format!("DROP ROLE {MALLORY}")).unwrap();
}

/// The procedure has no SET clause (it COMMITs); its variables' types resolve through the caller's
/// search_path when PL/pgSQL compiles it, so `timestamptz` from a public placed before pg_catalog wins.
/// With PostgreSQL's default search_path (pg_catalog first) it cannot; the DECLARE of
/// sql/extension/backfill_procedure.sql names `pg_catalog.timestamptz` so that it cannot either way.
#[test]
fn procedure_variables_ignore_a_public_timestamptz_ahead_of_pg_catalog() {
    let db = seeded("it_hardening_procedure_types");
    let mut victim = common::connect(&db);
    victim
        .batch_execute("CREATE DOMAIN public.timestamptz AS integer; SET search_path = public, pg_catalog")
        .unwrap();
    victim
        .batch_execute("CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 1)")
        .unwrap_or_else(|e| panic!("{}", common::db_message(&e)));
    drop(victim);
    common::drop_database(&db);
}
