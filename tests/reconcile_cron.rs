//! The scheduled jobs under a real pg_cron (1.4: minute schedules, so each
//! wait is up to ~75 s): schedule_reconciliation's job reconciles the latest
//! snapshot and a tick meeting a long run skips; schedule_sandbox_operation_
//! backfill's job runs the COMMITting procedure as its single statement.
//!
//! The reconciliation's ledger belongs to a role of its own, which planted a
//! trigger on the operations recording who runs it: the superuser's job runs
//! it as that owner, never as the superuser.
//!
//! pg_cron schedules only from the database cron.database_name names
//! ('postgres' on the scratch cluster, scripts/cluster.sh), so this test
//! creates the extension there, in ledger schemas of its own, and drops it
//! again at the end.

mod common;

use postgres::Client;
use std::time::{Duration, Instant};

const LEDGER: &str = "cron_ledger";
const BACKFILL_LEDGER: &str = "cron_backfill";
/// The tests share the cron database and its extension: one at a time.
static CRON_DATABASE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The reconciliation ledger's owner (not a superuser).
const OWNER: &str = "rs_cron_ledger_owner";

/// The owner's trigger on the operations: it records who runs it.
fn plant_spy(db: &mut Client) {
    db.batch_execute(&format!(
        "SET ROLE {OWNER};
         CREATE TABLE {LEDGER}.spy_log (who text, superuser text);
         CREATE FUNCTION {LEDGER}.spy() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             -- (pg_roles: the is_superuser setting follows the session's role, not the user a
             -- security-restricted operation switched to.)
             INSERT INTO {LEDGER}.spy_log
             SELECT current_user, CASE WHEN rolsuper THEN 'on' ELSE 'off' END FROM pg_roles WHERE rolname = current_user;
             RETURN NULL;
         END $$;
         CREATE TRIGGER spy AFTER INSERT OR UPDATE ON {LEDGER}.runtime_sandbox_operations
             FOR EACH STATEMENT EXECUTE FUNCTION {LEDGER}.spy();
         -- A trigger with a search_path of its own, naming its table without a schema; a table of the same
         -- name sits in public, on the owner's own path.
         CREATE TABLE {LEDGER}_audit.audit_trail (tab text);
         CREATE FUNCTION {LEDGER}.audit() RETURNS trigger LANGUAGE plpgsql SET search_path = {LEDGER}_audit, pg_temp AS $$
         BEGIN INSERT INTO audit_trail VALUES (TG_TABLE_NAME); RETURN NULL; END $$;
         CREATE TRIGGER audit AFTER INSERT OR UPDATE ON {LEDGER}.runtime_sandbox_operations
             FOR EACH ROW EXECUTE FUNCTION {LEDGER}.audit();
         CREATE TRIGGER audit AFTER INSERT OR UPDATE ON {LEDGER}.runtime_sandbox_capacity_leases
             FOR EACH ROW EXECUTE FUNCTION {LEDGER}.audit();
         RESET ROLE;"
    ))
    .unwrap();
}

fn setup(db: &mut Client) {
    db.batch_execute(&format!(
        "SET client_min_messages = warning;
         CREATE EXTENSION IF NOT EXISTS pg_cron;
         SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname LIKE '%:{LEDGER}' OR jobname LIKE '%:{BACKFILL_LEDGER}'
             OR jobname LIKE '%:it_cron_app.%';
         DELETE FROM cron.job_run_details;
         DROP SCHEMA IF EXISTS {LEDGER} CASCADE;
         DROP SCHEMA IF EXISTS {LEDGER}_audit CASCADE;
         DROP TABLE IF EXISTS public.audit_trail;
         DROP SCHEMA IF EXISTS {BACKFILL_LEDGER} CASCADE;
         -- An earlier run's build may have left an older catalog here.
         DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;
         CREATE EXTENSION runtime_sandbox;
         DO $$ BEGIN CREATE ROLE {OWNER}; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
         CREATE SCHEMA {LEDGER} AUTHORIZATION {OWNER};
         CREATE SCHEMA {LEDGER}_audit AUTHORIZATION {OWNER};
         CREATE TABLE public.audit_trail (tab text);
         GRANT ALL ON public.audit_trail TO PUBLIC;
         SELECT runtime_sandbox.install_ledger('{LEDGER}');
         SELECT runtime_sandbox.install_ledger('{BACKFILL_LEDGER}');"
    ))
    .unwrap();
}

fn teardown(db: &mut Client) {
    db.batch_execute(&format!(
        "SET client_min_messages = warning;
         SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname LIKE '%:{LEDGER}' OR jobname LIKE '%:{BACKFILL_LEDGER}';
         DROP SCHEMA IF EXISTS {LEDGER} CASCADE;
         DROP SCHEMA IF EXISTS {LEDGER}_audit CASCADE;
         DROP TABLE IF EXISTS public.audit_trail;
         DROP SCHEMA IF EXISTS {BACKFILL_LEDGER} CASCADE;
         DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;"
    ))
    .unwrap();
}

/// Poll `sql` (one boolean) until true, for at most 75 s.
fn wait_for(db: &mut Client, what: &str, sql: &str) {
    let started = Instant::now();
    while !db.query_one(sql, &[]).unwrap().get::<_, bool>(0) {
        assert!(started.elapsed() < Duration::from_secs(75), "no {what} within 75 s");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn statuses(db: &mut Client) -> Vec<String> {
    db.query(&format!("SELECT status FROM {LEDGER}.reconciliation_runs ORDER BY id"), &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn reconcile_cron_jobs_reconcile_the_latest_snapshot_and_a_tick_meeting_a_long_run_skips() {
    let _one_at_a_time = CRON_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut db = common::connect("postgres");
    setup(&mut db);
    // sb1 is listed by two snapshots, sb2 by neither: sb1 gets a lease, sb2
    // is confirmed absent (the job runs with absent_confirmations = 2).
    db.batch_execute(&format!(
        "INSERT INTO {LEDGER}.runtime_sandbox_operations
             (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
         VALUES ('k1', 'daytona', 'run-1', 1, 'org', 'sb1', 'live', now() - interval '2 hours'),
                ('k2', 'daytona', 'run-2', 1, 'org', 'sb2', 'live', now() - interval '2 hours');
         SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now() - interval '2 minutes',
                                                          ledger_schema => '{LEDGER}');
         INSERT INTO {BACKFILL_LEDGER}.runs (run_id, org_id) VALUES ('run-a', 'org-1');
         INSERT INTO {BACKFILL_LEDGER}.attempts (run_id, attempt, resource_json) VALUES
             ('run-a', 1, '[{{\"kind\": \"daytona_sandbox\", \"sandboxId\": \"dt-1\"}}, {{\"kind\": \"modal_sandbox\", \"sandboxId\": \"mo-1\"}}]');"
    ))
    .unwrap();
    let newest: i64 = db
        .query_one(
            &format!(
                "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now() - interval '1 minute',
                                                                 ledger_schema => '{LEDGER}')"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    plant_spy(&mut db);
    let reconcile_job: i64 = db
        .query_one(&format!("SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => '{LEDGER}')"), &[])
        .unwrap()
        .get(0);
    let backfill_job: i64 = db
        .query_one(
            &format!("SELECT runtime_sandbox.schedule_sandbox_operation_backfill('* * * * *', ledger_schema => '{BACKFILL_LEDGER}')"),
            &[],
        )
        .unwrap()
        .get(0);

    // The next tick: the job reconciles the newest snapshot; the history and
    // the ledger change as its summary says.
    wait_for(&mut db, "reconciliation run", &format!("SELECT EXISTS (SELECT 1 FROM {LEDGER}.reconciliation_runs)"));
    let run = db
        .query_one(
            &format!(
                "SELECT id, status, snapshot_id, (summary->>'marked_deleted')::int, (summary->>'seeded_leases')::int,
                        (summary->>'confirming_snapshots')::int
                 FROM {LEDGER}.reconciliation_runs"
            ),
            &[],
        )
        .unwrap();
    let run_id: i64 = run.get(0);
    assert_eq!(
        (run.get::<_, String>(1), run.get::<_, Option<i64>>(2), run.get::<_, i32>(3), run.get::<_, i32>(4), run.get::<_, i32>(5)),
        ("applied".to_string(), Some(newest), 1, 1, 2)
    );
    let ledger = db
        .query_one(
            &format!(
                "SELECT (SELECT string_agg(operation_key || '=' || state, ',' ORDER BY operation_key) FROM {LEDGER}.runtime_sandbox_operations),
                        (SELECT string_agg(lease_id, ',') FROM {LEDGER}.runtime_sandbox_capacity_leases),
                        (SELECT string_agg(sandbox_id || '=' || status, ',') FROM {LEDGER}.sandbox_cleanup_jobs_v2),
                        (SELECT count(*) FROM {LEDGER}.sandbox_cleanup_events_v2),
                        (SELECT reconciled_run_id FROM {LEDGER}.provider_inventory_snapshots WHERE snapshot_id = {newest})"
            ),
            &[],
        )
        .unwrap();
    assert_eq!(
        (ledger.get::<_, String>(0), ledger.get::<_, String>(1), ledger.get::<_, String>(2), ledger.get::<_, i64>(3)),
        ("k1=live,k2=deleted".to_string(), "k1".to_string(), "sb2=deleted".to_string(), 1)
    );
    assert_eq!(ledger.get::<_, Option<i64>>(4), Some(run_id));
    // The superuser's job ran the owner's trigger as the owner.
    let ran_as: Vec<(String, String)> = db
        .query(&format!("SELECT DISTINCT who, superuser FROM {LEDGER}.spy_log"), &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(ran_as, [(OWNER.to_string(), "off".to_string())]);
    // ... and the trigger with its own search_path wrote to its own schema's table, never to public's.
    let audited: Vec<String> =
        db.query(&format!("SELECT DISTINCT tab FROM {LEDGER}_audit.audit_trail ORDER BY 1"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(audited, ["runtime_sandbox_capacity_leases", "runtime_sandbox_operations"]);
    assert_eq!(common::count(&mut db, "SELECT count(*) FROM public.audit_trail"), 0);

    // A long run (an apply held open here) meets the next tick: the tick skips.
    let mut long = common::connect("postgres");
    let mut tx = long.transaction().unwrap();
    let held: String = tx
        .query_one(&format!("SELECT status FROM runtime_sandbox.reconcile_daytona_latest(ledger_schema => '{LEDGER}')"), &[])
        .unwrap()
        .get(0);
    assert_eq!(held, "applied");
    wait_for(
        &mut db,
        "skipped tick",
        &format!("SELECT EXISTS (SELECT 1 FROM {LEDGER}.reconciliation_runs WHERE status = 'skipped_concurrent')"),
    );
    tx.commit().unwrap();
    assert!(db.query_one(&format!("SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => '{LEDGER}')"), &[])
        .unwrap()
        .get::<_, bool>(0));
    let mut after: Vec<String> = statuses(&mut db).into_iter().skip(1).collect();
    after.sort();
    assert_eq!(after, ["applied", "skipped_concurrent"], "the long run and the tick: one applied, one skipped");

    // pg_cron ran both jobs and they succeeded; the backfill job's CALL
    // committed its pages (it was the job's only statement).
    wait_for(
        &mut db,
        "completed backfill",
        &format!("SELECT phase = 'complete' FROM runtime_sandbox.backfill_status('{BACKFILL_LEDGER}')"),
    );
    let operations: i64 = db
        .query_one(&format!("SELECT count(*) FROM {BACKFILL_LEDGER}.runtime_sandbox_operations"), &[])
        .unwrap()
        .get(0);
    assert_eq!(operations, 2);
    let failed: i64 = db
        .query_one(
            "SELECT count(*) FROM cron.job_run_details WHERE jobid = ANY($1) AND status NOT IN ('succeeded', 'running', 'starting')",
            &[&vec![reconcile_job, backfill_job]],
        )
        .unwrap()
        .get(0);
    assert_eq!(failed, 0);
    let succeeded: i64 = db
        .query_one(
            "SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE jobid = ANY($1) AND status = 'succeeded'",
            &[&vec![reconcile_job, backfill_job]],
        )
        .unwrap()
        .get(0);
    assert_eq!(succeeded, 2);
    assert!(db
        .query_one(
            &format!("SELECT runtime_sandbox.unschedule_sandbox_operation_backfill(ledger_schema => '{BACKFILL_LEDGER}')"),
            &[]
        )
        .unwrap()
        .get::<_, bool>(0));
    teardown(&mut db);
}

/// pg_cron runs in database `postgres` (cron.database_name), the ledger lives in another: scheduling from the
/// application database says where to go and what to run there; from the cron database, `database =>` makes
/// jobs that run in the application's. A blocked run fails its job (the reason in job_run_details, logged
/// once, the history row kept); after DROP EXTENSION in the application database the jobs fail saying how
/// to remove them; unscheduling with `database =>` finds them.
#[test]
fn jobs_for_a_ledger_in_another_database_than_pg_cron() {
    const APP: &str = "it_cron_app";
    const L: &str = "cron_app_ledger";
    let _one_at_a_time = CRON_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut cron = common::connect("postgres");
    setup(&mut cron);
    common::fresh_database(APP);
    let mut app = common::connect(APP);
    app.batch_execute(&format!(
        "SELECT runtime_sandbox.install_ledger('{L}');
         INSERT INTO {L}.runtime_sandbox_operations
             (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
         SELECT 'k' || g, 'daytona', 'run-' || g, 1, 'org', 'sb' || g, 'live', now() - interval '2 hours'
         FROM generate_series(1, 20) g;
         -- An empty listing against 20 live operations: the mass-absence valve blocks.
         SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now(), ledger_schema => '{L}');
         INSERT INTO {L}.runs VALUES ('run-a', 'org');
         INSERT INTO {L}.attempts (run_id, attempt, resource_json) VALUES ('run-a', 1, '[{{\"kind\": \"daytona_sandbox\", \"sandboxId\": \"dt-1\"}}]');"
    ))
    .unwrap();

    // From the application database: refused, with where to go and what to run.
    let err = app.query_one(&format!("SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => '{L}')"), &[]).unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(db.code().code(), "55000", "{err:?}");
    let hint = db.hint().unwrap_or_default();
    assert!(hint.contains("pg_cron runs in database \"postgres\"") && hint.contains(&format!("database => '{APP}'")), "{hint}");
    assert!(hint.contains("SELECT cron.schedule_in_database('reconcile_daytona:cron_app_ledger'"), "{hint}");

    // From the cron database, for the application's.
    let reconcile: i64 = cron
        .query_one(
            &format!("SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => '{L}', absent_confirmations => 1, database => '{APP}')"),
            &[],
        )
        .unwrap()
        .get(0);
    let backfill: i64 = cron
        .query_one(&format!("SELECT runtime_sandbox.schedule_sandbox_operation_backfill(ledger_schema => '{L}', database => '{APP}')"), &[])
        .unwrap()
        .get(0);
    let jobs: Vec<(String, String)> = cron
        .query("SELECT jobname, database FROM cron.job WHERE jobid = ANY($1) ORDER BY jobid", &[&vec![reconcile, backfill]])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        jobs,
        [(format!("reconcile_daytona:{APP}.{L}"), APP.to_string()), (format!("sandbox_operation_backfill:{APP}.{L}"), APP.to_string())]
    );

    // The next tick: the blocked run fails its job, its history row kept; the backfill completes.
    let failed = |db: &mut Client, job: i64, like: &str| -> bool {
        db.query_one(
            "SELECT EXISTS (SELECT 1 FROM cron.job_run_details WHERE jobid = $1 AND status = 'failed' AND return_message LIKE $2)",
            &[&job, &like],
        )
        .unwrap()
        .get(0)
    };
    wait_for(&mut cron, "failed reconciliation job", &format!(
        "SELECT EXISTS (SELECT 1 FROM cron.job_run_details WHERE jobid = {reconcile} AND status = 'failed')"
    ));
    // Both jobs fire on the same minute: the backfill's new operation (dt-1, live) may count as the 21st.
    assert!(failed(&mut cron, reconcile, "%scheduled reconciliation of ledger cron_app_ledger was blocked_mass_absence: 20 absent candidates among 2_ live operations%"));
    let status: String = app.query_one(&format!("SELECT status FROM {L}.reconciliation_runs"), &[]).unwrap().get(0);
    assert_eq!(status, "blocked_mass_absence");
    wait_for(&mut app, "completed backfill", &format!("SELECT phase = 'complete' FROM runtime_sandbox.backfill_status('{L}')"));
    // Logged once: the job's error, not also the reconcile's WARNING.
    let log = std::fs::read_to_string(common::cluster_dir().join("server.log")).unwrap_or_default();
    let warnings = log.lines().filter(|l| l.contains("reconciliation of ledger \"cron_app_ledger\" blocked_mass_absence")).count();
    let errors = log.lines().filter(|l| l.contains("ERROR:  runtime_sandbox: scheduled reconciliation of ledger cron_app_ledger")).count();
    assert_eq!((warnings, errors >= 1), (0, true), "the blocked run's message in the server log");

    // Without the extension, the jobs fail saying how to remove them.
    app.batch_execute("DROP EXTENSION runtime_sandbox").unwrap();
    wait_for(&mut cron, "jobs failing without the extension", &format!(
        "SELECT count(DISTINCT jobid) = 2 FROM cron.job_run_details WHERE jobid IN ({reconcile}, {backfill})
           AND return_message LIKE '%runtime_sandbox is not installed in database {APP}%'"
    ));
    for (function, job) in [("unschedule_reconciliation", reconcile), ("unschedule_sandbox_operation_backfill", backfill)] {
        let removed: bool = cron
            .query_one(&format!("SELECT runtime_sandbox.{function}(ledger_schema => '{L}', database => '{APP}')"), &[])
            .unwrap()
            .get(0);
        assert!(removed, "{function}");
        let left: i64 = cron.query_one("SELECT count(*) FROM cron.job WHERE jobid = $1", &[&job]).unwrap().get(0);
        assert_eq!(left, 0);
    }
    drop(app);
    common::connect("postgres").batch_execute(&format!("DROP DATABASE {APP} WITH (FORCE)")).unwrap();
    teardown(&mut cron);
}

/// A job is scheduled only when the role it will run as (the one scheduling it) may execute what it calls: a
/// ledger's owner with EXECUTE on the schedule functions but not on the jobs' procedures is refused (42501, nothing
/// scheduled) with the GRANTs that fix it; with them, both jobs are scheduled, as that role.
#[test]
fn a_job_its_role_could_not_run_is_refused_with_the_grants() {
    const SCHEDULER: &str = "rs_cron_scheduler";
    let _one_at_a_time = CRON_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut db = common::connect("postgres");
    setup(&mut db);
    db.batch_execute(&format!(
        "DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{SCHEDULER}') THEN
             DROP OWNED BY {SCHEDULER}; DROP ROLE {SCHEDULER}; END IF; END $$;
         CREATE ROLE {SCHEDULER} LOGIN IN ROLE {OWNER};
         GRANT USAGE ON SCHEMA cron TO {SCHEDULER};
         GRANT EXECUTE ON FUNCTION runtime_sandbox.schedule_reconciliation, runtime_sandbox.unschedule_reconciliation,
               runtime_sandbox.schedule_sandbox_operation_backfill, runtime_sandbox.unschedule_sandbox_operation_backfill
               TO {SCHEDULER};
         DROP SCHEMA {BACKFILL_LEDGER} CASCADE; CREATE SCHEMA {BACKFILL_LEDGER} AUTHORIZATION {OWNER};
         SELECT runtime_sandbox.install_ledger('{BACKFILL_LEDGER}');"
    ))
    .unwrap();
    let mut scheduler = common::connect_as(SCHEDULER, "postgres");
    let jobs = |db: &mut Client| -> i64 {
        db.query_one(&format!("SELECT count(*) FROM cron.job WHERE jobname LIKE '%:{LEDGER}' OR jobname LIKE '%:{BACKFILL_LEDGER}'"), &[])
            .unwrap()
            .get(0)
    };
    let calls = [
        format!("SELECT runtime_sandbox.schedule_reconciliation('*/5 * * * *', ledger_schema => '{LEDGER}')"),
        format!("SELECT runtime_sandbox.schedule_sandbox_operation_backfill('*/5 * * * *', ledger_schema => '{BACKFILL_LEDGER}')"),
    ];
    for call in &calls {
        let before = jobs(&mut db);
        let err = scheduler.batch_execute(call).expect_err("a job its role could not run");
        let db_error = err.as_db_error().unwrap_or_else(|| panic!("{err}"));
        assert_eq!(db_error.code().code(), "42501", "{}", db_error.message());
        assert!(db_error.message().contains(&format!("the job would run as role \"{SCHEDULER}\", which may not execute")), "{}", db_error.message());
        let hint = db_error.hint().unwrap_or_default().to_string();
        assert!(hint.starts_with("GRANT EXECUTE ON ROUTINE runtime_sandbox."), "{hint}");
        assert_eq!(jobs(&mut db), before, "nothing scheduled");
        // The HINT's GRANTs, run by the extension's owner, make the job runnable.
        db.batch_execute(&hint).unwrap_or_else(|e| panic!("the hint's grants: {}", common::db_message(&e)));
        scheduler.batch_execute(call).unwrap_or_else(|e| panic!("{call}: {}", common::db_message(&e)));
    }
    assert_eq!(jobs(&mut db), 2);
    let owners: Vec<String> = db
        .query(&format!("SELECT DISTINCT username::text FROM cron.job WHERE jobname LIKE '%:{LEDGER}' OR jobname LIKE '%:{BACKFILL_LEDGER}'"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(owners, [SCHEDULER]);
    drop(scheduler);
    teardown(&mut db);
    db.batch_execute(&format!("DROP OWNED BY {SCHEDULER}; DROP ROLE {SCHEDULER}")).unwrap();
}

/// docs/privileges.md's operator role, both its blocks (the jobs' grants and the scheduling ones), with a NOLOGIN
/// ledger owner: the operator schedules both jobs, and each job's run succeeds as that role (read from
/// cron.job_run_details).
#[test]
fn the_documented_operator_schedules_jobs_that_run() {
    const OPERATOR: &str = "rs_cron_operator";
    let _one_at_a_time = CRON_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut db = common::connect("postgres");
    setup(&mut db);
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/privileges.md")).unwrap();
    let section = text.split("\n## Operator role").nth(1).unwrap().split("\n## ").next().unwrap();
    let blocks: Vec<&str> = section.split("```sql\n").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    assert_eq!(blocks.len(), 2, "the operator's grants and the scheduling ones");
    db.batch_execute(&format!(
        "DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{OPERATOR}') THEN
             DROP OWNED BY {OPERATOR}; DROP ROLE {OPERATOR}; END IF; END $$;
         CREATE ROLE {OPERATOR} LOGIN;
         DROP SCHEMA {BACKFILL_LEDGER} CASCADE; CREATE SCHEMA {BACKFILL_LEDGER} AUTHORIZATION {OWNER};
         SELECT runtime_sandbox.install_ledger('{BACKFILL_LEDGER}');
         INSERT INTO {BACKFILL_LEDGER}.runs (run_id, org_id) VALUES ('run-a', 'org-1');
         INSERT INTO {BACKFILL_LEDGER}.attempts (run_id, attempt, resource_json)
             VALUES ('run-a', 1, '[{{\"kind\": \"daytona_sandbox\", \"sandboxId\": \"dt-1\"}}]');
         INSERT INTO {LEDGER}.runtime_sandbox_operations
             (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
         VALUES ('k1', 'daytona', 'run-1', 1, 'org', 'sb1', 'live', now() - interval '2 hours');
         SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now() - interval '1 minute',
                                                          ledger_schema => '{LEDGER}');
         SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now(), ledger_schema => '{LEDGER}');"
    ))
    .unwrap();
    for block in &blocks {
        let grants = block.replace("runtime_sandbox_operator", OPERATOR).replace("runtime_sandbox_ledger", OWNER);
        db.batch_execute(&grants).unwrap_or_else(|e| panic!("docs/privileges.md's grants: {}", common::db_message(&e)));
    }
    let mut operator = common::connect_as(OPERATOR, "postgres");
    let reconcile: i64 = operator
        .query_one(&format!("SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => '{LEDGER}')"), &[])
        .unwrap_or_else(|e| panic!("schedule_reconciliation as the operator: {}", common::db_message(&e)))
        .get(0);
    let backfill: i64 = operator
        .query_one(&format!("SELECT runtime_sandbox.schedule_sandbox_operation_backfill('* * * * *', ledger_schema => '{BACKFILL_LEDGER}')"), &[])
        .unwrap_or_else(|e| panic!("schedule_sandbox_operation_backfill as the operator: {}", common::db_message(&e)))
        .get(0);
    let (owner_job, owner) = login_owner_schedules(&mut db);
    wait_for(
        &mut db,
        "the three jobs' runs",
        &format!("SELECT count(DISTINCT jobid) = 3 FROM cron.job_run_details WHERE jobid IN ({reconcile}, {backfill}, {owner_job}) AND status IN ('succeeded', 'failed')"),
    );
    login_owner_ran(&mut db, owner_job, owner);
    let runs: Vec<(String, String, String)> = db
        .query(
            &format!("SELECT DISTINCT username::text, status, coalesce(return_message, '') FROM cron.job_run_details WHERE jobid IN ({reconcile}, {backfill}) AND status IN ('succeeded', 'failed')"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert!(runs.iter().all(|(user, status, _)| user == OPERATOR && status == "succeeded"), "{runs:?}");
    let applied: i64 = db.query_one(&format!("SELECT count(*) FROM {LEDGER}.reconciliation_runs WHERE status = 'applied'"), &[]).unwrap().get(0);
    assert!(applied >= 1);
    for call in ["unschedule_reconciliation", "unschedule_sandbox_operation_backfill"] {
        let ledger = if call.contains("backfill") { BACKFILL_LEDGER } else { LEDGER };
        let removed: bool = operator.query_one(&format!("SELECT runtime_sandbox.{call}(ledger_schema => '{ledger}')"), &[]).unwrap().get(0);
        assert!(removed, "{call}");
    }
    drop(operator);
    teardown(&mut db);
    db.batch_execute(&format!("DROP OWNED BY {OPERATOR}; DROP ROLE {OPERATOR}")).unwrap();
}

/// docs/privileges.md's "Ledger owner that logs in": a fresh LOGIN role owning its schema, granted that block and
/// nothing more, installs its ledger, records, reconciles, runs the backfill, and schedules a reconciliation (its
/// pg_cron run is awaited with the operator's, in the_documented_operator_schedules_jobs_that_run, to share a tick).
const APP: &str = "rs_cron_app_owner";
const APP_LEDGER: &str = "rs_cron_app_ledger";

/// The owner's steps up to its scheduled job; returns the job and the owner's session.
fn login_owner_schedules(db: &mut Client) -> (i64, Client) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/privileges.md")).unwrap();
    let section = text.split("\n## Ledger owner that logs in").nth(1).unwrap().split("\n## ").next().unwrap();
    let block = section.split("```sql\n").nth(1).unwrap().split("```").next().unwrap();
    assert!(block.contains(" TO app;"), "{block}");
    db.batch_execute(&format!(
        "SET client_min_messages = warning;
         SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname LIKE '%:{APP_LEDGER}';
         DROP SCHEMA IF EXISTS {APP_LEDGER} CASCADE;
         DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP}') THEN
             DROP OWNED BY {APP}; DROP ROLE {APP}; END IF; END $$;
         CREATE ROLE {APP} LOGIN;
         CREATE SCHEMA {APP_LEDGER} AUTHORIZATION {APP};"
    ))
    .unwrap();
    let mut app = common::connect_as(APP, "postgres");
    let refused = app.batch_execute(&format!("SELECT runtime_sandbox.install_ledger('{APP_LEDGER}')")).unwrap_err();
    assert_eq!(refused.as_db_error().map(|e| e.code().code()), Some("42501"), "{}", common::db_message(&refused));
    db.batch_execute(&block.replace(" TO app;", &format!(" TO {APP};")))
        .unwrap_or_else(|e| panic!("docs/privileges.md's grants: {}", common::db_message(&e)));

    let step = |app: &mut Client, what: &str, sql: &str| {
        app.batch_execute(sql).unwrap_or_else(|e| panic!("{what} as the owner: {}", common::db_message(&e)));
    };
    step(&mut app, "install_ledger", &format!("SELECT runtime_sandbox.install_ledger('{APP_LEDGER}')"));
    step(
        &mut app,
        "the application's rows",
        &format!(
            "INSERT INTO {APP_LEDGER}.runs (run_id, org_id) VALUES ('run-a', 'org-1');
             INSERT INTO {APP_LEDGER}.attempts (run_id, attempt, resource_json)
                 VALUES ('run-a', 1, '[{{\"kind\": \"daytona_sandbox\", \"sandboxId\": \"sb-a\"}}]');
             INSERT INTO {APP_LEDGER}.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             VALUES ('k1', 'daytona', 'run-1', 1, 'org', 'sb1', 'live', now() - interval '2 hours');"
        ),
    );
    step(
        &mut app,
        "record_inventory_snapshot",
        &format!(
            "SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now() - interval '1 minute',
                                                              ledger_schema => '{APP_LEDGER}');
             SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{{\"sandboxId\": \"sb1\"}}]', now(), ledger_schema => '{APP_LEDGER}');"
        ),
    );
    step(&mut app, "reconcile_daytona", &format!("SELECT runtime_sandbox.reconcile_daytona('[{{\"sandboxId\": \"sb1\"}}]', now(), false, ledger_schema => '{APP_LEDGER}')"));
    step(&mut app, "the backfill", &format!("CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => '{APP_LEDGER}')"));
    let job: i64 = app
        .query_one(&format!("SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => '{APP_LEDGER}')"), &[])
        .unwrap_or_else(|e| panic!("schedule_reconciliation as the owner: {}", common::db_message(&e)))
        .get(0);
    (job, app)
}

/// After its job ran: the run succeeded as the owner, and everything it did is there.
fn login_owner_ran(db: &mut Client, job: i64, mut app: Client) {
    let run: (String, String, String) = db
        .query_one(
            &format!("SELECT username::text, status, coalesce(return_message, '') FROM cron.job_run_details WHERE jobid = {job} AND status IN ('succeeded', 'failed') LIMIT 1"),
            &[],
        )
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .unwrap();
    assert_eq!((run.0.as_str(), run.1.as_str()), (APP, "succeeded"), "{run:?}");
    let applied = common::count(db, &format!("SELECT count(*) FROM {APP_LEDGER}.reconciliation_runs WHERE status = 'applied'"));
    assert!(applied >= 2, "the owner's apply and the job's: {applied}");
    let backfilled = common::count(db, &format!("SELECT count(*) FROM {APP_LEDGER}.runtime_sandbox_operations WHERE run_id = 'run-a'"));
    assert_eq!(backfilled, 1);
    let removed: bool = app.query_one(&format!("SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => '{APP_LEDGER}')"), &[]).unwrap().get(0);
    assert!(removed);
    drop(app);
    db.batch_execute(&format!("DROP SCHEMA {APP_LEDGER} CASCADE; DROP OWNED BY {APP}; DROP ROLE {APP}")).unwrap();
}
