//! Across majors: a cluster of the previous major (15) holding the extension, two ledgers with data, a role
//! with grants and a pg_cron job is `pg_upgrade`d to this major; the data, the grants and the job come back,
//! the extension's catalog is the one a fresh install on this major has, and a reconcile and a backfill page
//! run. A `pg_dump` of the old database (this major's pg_dump, as the PostgreSQL docs advise) restored into
//! a fresh database of the new cluster gives the same state and the same reconcile.
//!
//! Needs both majors' builds installed: `make test-pg-upgrade PG_MAJOR=17` installs them and sets
//! RUNTIME_SANDBOX_UPGRADE_FROM (the old major's pg_config); without it (the ordinary integration run) the
//! test says so and does nothing.

mod common;

use postgres::{Client, NoTls};
use std::path::{Path, PathBuf};
use std::process::Command;

const APP: &str = "upgrade_app";
const OPERATOR: &str = "rs_upgrade_operator";
const OWNER: &str = "rs_upgrade_owner";

/// A server program run as the postgres user, from a folder it may enter.
fn as_postgres(program: &Path, args: &[&str], cwd: &Path) {
    common::as_postgres(program, args, cwd).unwrap_or_else(|e| panic!("{e}"));
}

fn connect(port: u16, db: &str) -> Client {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname(db)
        .connect(NoTls)
        .unwrap_or_else(|e| panic!("connect to {db} on {port}: {e}"))
}

fn init_cluster(bin: &Path, base: &Path, name: &str, port: u16) -> PathBuf {
    let data = base.join(name);
    as_postgres(
        &bin.join("initdb"),
        &["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
        base,
    );
    let conf = format!(
        "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
         shared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\nfsync = off\n",
        base.display()
    );
    let path = data.join("postgresql.conf");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&conf);
    std::fs::write(&path, text).unwrap();
    data
}

fn pg_ctl(bin: &Path, data: &Path, action: &str, base: &Path) {
    let log = base.join(format!("{}.log", data.file_name().unwrap().to_str().unwrap()));
    match action {
        "start" => as_postgres(
            &bin.join("pg_ctl"),
            &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-w", "start"],
            base,
        ),
        _ => as_postgres(&bin.join("pg_ctl"), &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"], base),
    }
}

const SETUP: &str = "
CREATE SCHEMA runtime_scheduler AUTHORIZATION rs_upgrade_owner;
CREATE SCHEMA tenant_b AUTHORIZATION rs_upgrade_owner;
SELECT runtime_sandbox.install_ledger();
SELECT runtime_sandbox.install_ledger('tenant_b');
INSERT INTO runtime_scheduler.runs VALUES ('run-a', 'org-a');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, resource_json)
SELECT 'run-a', g, jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'a-' || g))
FROM generate_series(1, 30) g;
INSERT INTO tenant_b.runs VALUES ('run-b', 'org-b');
INSERT INTO tenant_b.attempts (run_id, attempt, resource_json)
SELECT 'run-b', g, jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'b-' || g))
FROM generate_series(1, 12) g;
-- tenant_b's backfill complete, runtime_scheduler's one page in (the rest after the upgrade).
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 100, 10, 'tenant_b');
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'runtime_scheduler');
SELECT * FROM runtime_sandbox.reconcile_daytona(
    (SELECT jsonb_agg(jsonb_build_object('sandboxId', 'b-' || g)) FROM generate_series(1, 10) g),
    '2026-06-01', false, ledger_schema => 'tenant_b');
SELECT * FROM runtime_sandbox.record_inventory_snapshot('daytona', '[{\"sandboxId\": \"a-1\"}]', now());
GRANT rs_upgrade_owner TO rs_upgrade_operator;
GRANT EXECUTE ON FUNCTION runtime_sandbox.reconcile_daytona TO rs_upgrade_operator;
CREATE TABLE public.saved_runs (id integer PRIMARY KEY, summary runtime_sandbox.reconciliation_summary);
INSERT INTO public.saved_runs
SELECT 1, r FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"b-1\"}]', now(), dry_run => true,
                                                   ledger_schema => 'tenant_b') r;
CREATE VIEW public.saved_status AS SELECT id, (summary).status, (summary).provider_sandbox_count FROM public.saved_runs;
";

/// Every ledger table's rows, the user objects, the grants and check_ledger's findings.
fn state(c: &mut Client) -> Vec<String> {
    let mut out = Vec::new();
    for schema in ["runtime_scheduler", "tenant_b"] {
        for (table, sum) in common::schema_checksums(c, schema) {
            out.push(format!("{schema}.{table}: {sum}"));
        }
        let problems: i64 =
            c.query_one("SELECT count(*) FROM runtime_sandbox.check_ledger($1)", &[&schema]).unwrap().get(0);
        out.push(format!("check_ledger({schema}): {problems} rows"));
    }
    for sql in [
        "SELECT string_agg(id || ' ' || status || ' ' || provider_sandbox_count, ',') FROM public.saved_status",
        "SELECT has_function_privilege('rs_upgrade_operator', 'runtime_sandbox.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text)', 'EXECUTE')::text",
        "SELECT pg_has_role('rs_upgrade_operator', 'rs_upgrade_owner', 'MEMBER')::text",
        "SELECT extversion FROM pg_extension WHERE extname = 'runtime_sandbox'",
    ] {
        out.push(format!("{sql}: {:?}", c.query_one(sql, &[]).unwrap().get::<_, Option<String>>(0)));
    }
    out
}

/// The extension's objects outside pgrx's test schema, each with what a user relies on: its comment, and for
/// functions their security, settings and privileges (without the operator's grant, which is the user's own and
/// checked by `state`).
fn catalog(c: &mut Client) -> Vec<String> {
    c.query(
        "SELECT pg_describe_object(d.classid, d.objid, 0)
                || ' | ' || coalesce(obj_description(d.objid, d.classid::regclass::name), '-')
                || ' | ' || coalesce((SELECT p.prosecdef || ' ' || coalesce(p.proconfig::text, '') || ' '
                                             || coalesce(ARRAY(SELECT a::text FROM unnest(p.proacl) a
                                                                WHERE a::text NOT LIKE 'rs_upgrade_operator=%')::text, '')
                                             || ' ' || p.provolatile::text
                                      FROM pg_proc p WHERE d.classid = 'pg_proc'::regclass AND p.oid = d.objid), '')
         FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
         WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'runtime_sandbox'
           AND pg_describe_object(d.classid, d.objid, 0) !~ '^[a-z ]+ tests[.]'
           AND pg_describe_object(d.classid, d.objid, 0) <> 'schema tests'
         ORDER BY 1",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// One apply and the rest of a backfill, as the operator would run them: the summaries, then each table's size.
fn exercise(port: u16, db: &str) -> Vec<String> {
    let mut c = connect(port, db);
    let mut out: Vec<String> = Vec::new();
    for sql in [
        "SELECT (to_jsonb(r) - 'diagnostics')::text FROM runtime_sandbox.reconcile_daytona(
             (SELECT jsonb_agg(jsonb_build_object('sandboxId', 'b-' || g)) FROM generate_series(1, 11) g),
             '2026-06-02', false, ledger_schema => 'tenant_b') r",
        "SELECT (to_jsonb(r) - 'diagnostics' - 'elapsed_ms')::text
         FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 100, 'runtime_scheduler') r",
    ] {
        out.push(c.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", common::db_message(&e))).get(0));
    }
    // The rows each table holds then (the clock columns these calls write differ between the two databases).
    out.extend(state(&mut c).into_iter().map(|line| match line.split_once(": ") {
        Some((table, sum)) if sum.contains(':') => format!("{table}: {} rows", sum.split(':').next().unwrap()),
        _ => line,
    }));
    out
}

#[test]
fn a_cluster_of_the_previous_major_upgrades_with_its_ledgers_grants_and_jobs() {
    let Ok(old_config) = std::env::var("RUNTIME_SANDBOX_UPGRADE_FROM") else {
        eprintln!("pg_upgrade: RUNTIME_SANDBOX_UPGRADE_FROM is unset; make test-pg-upgrade PG_MAJOR=17 runs this");
        return;
    };
    let new_config =
        std::env::var("PG_CONFIG").expect("PG_CONFIG: the pg_config of the major to upgrade to");
    let (old_bin, new_bin) = (common::pg_config_dir(&old_config, "--bindir"), common::pg_config_dir(&new_config, "--bindir"));
    // Clear of every scratch port of any major (IT_PORT + 2 is the standby test's, the next major's start at +10).
    let (old_port, new_port) = (common::port() + 3, common::port() + 4);
    let base = PathBuf::from(format!("/tmp/runtime_sandbox-upgrade-{}", common::port()));
    if base.exists() {
        // A run interrupted before its end may have left servers up.
        for name in ["old", "new"] {
            let data = base.join(name);
            let bin = if name == "old" { &old_bin } else { &new_bin };
            let _ = Command::new("sudo")
                .args(["-u", "postgres"])
                .arg(bin.join("pg_ctl"))
                .args(["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"])
                .current_dir("/")
                .output();
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
    std::fs::create_dir_all(&base).unwrap();
    Command::new("chown").args(["postgres:postgres", base.to_str().unwrap()]).status().unwrap();

    // The old major: the extension, two ledgers, grants, a user view over its type, and a pg_cron job from
    // the cron database for the application's.
    let old = init_cluster(&old_bin, &base, "old", old_port);
    pg_ctl(&old_bin, &old, "start", &base);
    let mut admin = connect(old_port, "postgres");
    for statement in [
        format!("CREATE ROLE {OWNER}"),
        format!("CREATE ROLE {OPERATOR} LOGIN"),
        format!("CREATE DATABASE {APP}"),
        "CREATE EXTENSION pg_cron".into(),
        "CREATE EXTENSION runtime_sandbox".into(),
    ] {
        admin.batch_execute(&statement).unwrap_or_else(|e| panic!("{statement}: {}", common::db_message(&e)));
    }
    let mut app = connect(old_port, APP);
    app.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    app.batch_execute(SETUP).unwrap_or_else(|e| panic!("setup: {}", common::db_message(&e)));
    let job: i64 = admin
        .query_one(
            &format!("SELECT runtime_sandbox.schedule_reconciliation('@daily', ledger_schema => 'tenant_b', database => '{APP}')"),
            &[],
        )
        .unwrap()
        .get(0);
    let jobs = |c: &mut Client| -> Vec<String> {
        c.query("SELECT concat_ws(' | ', jobid, jobname, schedule, command, database, username, active) FROM cron.job ORDER BY jobid", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let jobs_before = jobs(&mut admin);
    assert_eq!(jobs_before.len(), 1, "{jobs_before:?}");
    assert!(jobs_before[0].starts_with(&format!("{job} | reconcile_daytona:{APP}.tenant_b")), "{jobs_before:?}");
    let before = state(&mut app);
    drop(app);
    drop(admin);

    // A dump of the old database with this major's pg_dump, for the restore onto the new cluster.
    let dump = base.join("upgrade_app.dump");
    as_postgres(
        &new_bin.join("pg_dump"),
        &["-h", "127.0.0.1", "-p", &old_port.to_string(), "-U", "postgres", "-Fc", "-f", dump.to_str().unwrap(), APP],
        &base,
    );
    pg_ctl(&old_bin, &old, "stop", &base);

    // pg_upgrade to the new major.
    let new = init_cluster(&new_bin, &base, "new", new_port);
    as_postgres(
        &new_bin.join("pg_upgrade"),
        &[
            "-b", old_bin.to_str().unwrap(), "-B", new_bin.to_str().unwrap(),
            "-d", old.to_str().unwrap(), "-D", new.to_str().unwrap(),
            "-p", &old_port.to_string(), "-P", &new_port.to_string(), "-s", base.to_str().unwrap(),
        ],
        &base,
    );
    pg_ctl(&new_bin, &new, "start", &base);

    let mut admin = connect(new_port, "postgres");
    let mut app = connect(new_port, APP);
    assert_eq!(state(&mut app), before, "the upgraded database differs from the old one");
    assert_eq!(jobs(&mut admin), jobs_before, "the pg_cron job did not come through the upgrade");

    // The catalog pg_upgrade carried over is the one a fresh install on this major has.
    admin.batch_execute("CREATE DATABASE upgrade_fresh").unwrap();
    let mut fresh = connect(new_port, "upgrade_fresh");
    fresh.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    let (carried, installed) = (catalog(&mut app), catalog(&mut fresh));
    assert!(installed.len() > 40, "{installed:?}");
    let only_carried: Vec<_> = carried.iter().filter(|o| !installed.contains(o)).collect();
    let only_fresh: Vec<_> = installed.iter().filter(|o| !carried.contains(o)).collect();
    assert!(only_carried.is_empty() && only_fresh.is_empty(), "upgraded: {only_carried:#?}\nfresh: {only_fresh:#?}");
    drop(app);

    // The old database's dump restored into a fresh database of the new cluster.
    admin.batch_execute("CREATE DATABASE upgrade_restored").unwrap();
    as_postgres(
        &new_bin.join("pg_restore"),
        &["-h", "127.0.0.1", "-p", &new_port.to_string(), "-U", "postgres", "--exit-on-error", "-d", "upgrade_restored", dump.to_str().unwrap()],
        &base,
    );
    let mut restored = connect(new_port, "upgrade_restored");
    assert_eq!(state(&mut restored), before, "the restored database differs from the old one");
    drop(restored);

    // Both work, alike: a reconcile that applies and the rest of a backfill.
    let upgraded = exercise(new_port, APP);
    let from_dump = exercise(new_port, "upgrade_restored");
    assert!(upgraded[0].contains("\"status\": \"applied\""), "the reconcile did not apply: {upgraded:?}");
    assert!(upgraded[1].contains("\"phase\": \"complete\""), "the backfill did not complete: {upgraded:?}");
    assert_eq!(upgraded, from_dump);

    drop(fresh);
    drop(admin);
    pg_ctl(&new_bin, &new, "stop", &base);
    let _ = std::fs::remove_dir_all(&base);
}
