//! On a hot standby (a real one: `pg_basebackup -R` of the scratch cluster, streaming from it): the
//! read-only functions and the dry runs answer as they do on the primary, and every function that writes
//! fails at once with SQLSTATE 25006 and the hint to run it on the primary (docs/standby.md).

mod common;

use postgres::{Client, Config, NoTls};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn standby_port() -> u16 {
    common::port() + 2
}

fn standby_dir() -> PathBuf {
    PathBuf::from(format!("{}-standby", common::cluster_dir().display()))
}

/// Run a server binary as postgres (initdb and the server refuse root), from / (postgres may not enter cwd);
/// a failure carries the program's output.
fn as_postgres(program: &str, args: &[&str]) -> Result<(), String> {
    common::as_postgres(&common::bindir().join(program), args, Path::new("/"))
}

/// The standby: stopped and removed when dropped.
struct Standby {
    dir: PathBuf,
}

impl Standby {
    fn start() -> Standby {
        let dir = standby_dir();
        let data = dir.join("data");
        let _ = as_postgres("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(Command::new("chown").args(["postgres:postgres", dir.to_str().unwrap()]).status().unwrap().success());
        let port = common::port().to_string();
        as_postgres(
            "pg_basebackup",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-D", data.to_str().unwrap(), "-R", "-X", "stream"],
        )
        .unwrap_or_else(|e| panic!("pg_basebackup of the scratch cluster failed: {e}"));
        let options = format!(
            "-p {} -k {} -c shared_buffers=128MB -c hot_standby=on -c cron.database_name=postgres",
            standby_port(),
            dir.display()
        );
        let log = dir.join("server.log");
        as_postgres("pg_ctl", &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-o", &options, "-w", "start"])
            .unwrap_or_else(|e| panic!("the standby did not start (see {}): {e}", log.display()));
        Standby { dir }
    }

    fn connect(&self, db: &str) -> Client {
        let mut config = Config::new();
        config.host("127.0.0.1").port(standby_port()).user("postgres").dbname(db);
        config.connect(NoTls).unwrap_or_else(|e| panic!("connect to the standby's {db}: {e}"))
    }

    /// Wait until the standby has replayed everything the primary wrote so far.
    fn catch_up(&self, primary: &mut Client, standby: &mut Client) {
        let target: String = primary.query_one("SELECT pg_current_wal_lsn()::text", &[]).unwrap().get(0);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let done: bool = standby
                .query_one("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn", &[&target])
                .unwrap()
                .get(0);
            if done {
                return;
            }
            assert!(Instant::now() < deadline, "the standby did not replay up to {target} within a minute");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = as_postgres("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const INVENTORY: &str = "(SELECT jsonb_agg(jsonb_build_object('sandboxId', 'sb-' || i, 'operationKey', 'label-' || i))
                          FROM generate_series(1, 300) i)";

/// Read-only calls: each must give the same text on the standby as on the primary.
fn reads() -> Vec<(&'static str, String)> {
    vec![
        ("stock_hash", "SELECT runtime_sandbox.stock_hash('{\"b\": [1, 2.50], \"a\": null}')".into()),
        ("check_ledger", "SELECT string_agg(concat_ws('|', object, problem, severity), E'\\n' ORDER BY object, problem) FROM runtime_sandbox.check_ledger()".into()),
        ("ledger_readiness", "SELECT string_agg(concat_ws('|', function, ready, refused_for), E'\\n' ORDER BY function) FROM runtime_sandbox.ledger_readiness()".into()),
        ("install_ledger_ddl", "SELECT count(*)::text FROM runtime_sandbox.install_ledger_ddl()".into()),
        ("backfill_status", "SELECT s::text FROM runtime_sandbox.backfill_status() s".into()),
        ("preview_sandbox_operation_backfill", "SELECT p::text FROM runtime_sandbox.preview_sandbox_operation_backfill(50) p".into()),
        ("advance_sandbox_operation_backfill dry run", "SELECT p::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 50, 3) p".into()),
        (
            "reconcile_daytona dry run",
            format!(
                "SELECT (to_jsonb(r) - 'diagnostics')::text FROM runtime_sandbox.reconcile_daytona({INVENTORY}, now(), dry_run => true) r"
            ),
        ),
        (
            "reconcile_daytona_latest dry run",
            "SELECT (to_jsonb(r) - 'diagnostics')::text FROM runtime_sandbox.reconcile_daytona_latest(dry_run => true) r".into(),
        ),
        ("managed_environment_drift", "SELECT count(*)::text FROM runtime_sandbox.managed_environment_drift()".into()),
        ("reconciliation_health", "SELECT (to_jsonb(h) - 'last_run_age' - 'last_applied_age' - 'newest_snapshot_age')::text FROM runtime_scheduler.reconciliation_health h".into()),
    ]
}

/// Calls that write, with the function the error names.
fn writes() -> Vec<(&'static str, String)> {
    vec![
        ("reconcile_daytona", format!("SELECT * FROM runtime_sandbox.reconcile_daytona({INVENTORY}, now(), false)")),
        ("reconcile_daytona_latest", "SELECT * FROM runtime_sandbox.reconcile_daytona_latest()".into()),
        ("record_inventory_snapshot", format!("SELECT * FROM runtime_sandbox.record_inventory_snapshot('daytona', {INVENTORY}, now())")),
        ("advance_sandbox_operation_backfill", "SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false)".into()),
        ("backfill_sandbox_operations", "SELECT * FROM runtime_sandbox.backfill_sandbox_operations()".into()),
        ("complete_sandbox_operation_backfill", "SELECT * FROM runtime_sandbox.complete_sandbox_operation_backfill()".into()),
        ("run_sandbox_operation_backfill", "CALL runtime_sandbox.run_sandbox_operation_backfill()".into()),
        ("install_ledger", "SELECT runtime_sandbox.install_ledger()".into()),
        ("install_environment_tables", "SELECT runtime_sandbox.install_environment_tables()".into()),
        ("reconcile_managed_environment", "SELECT * FROM runtime_sandbox.reconcile_managed_environment('sandbox', 'daytona')".into()),
        ("archive_managed_environment", "SELECT * FROM runtime_sandbox.archive_managed_environment('daytona')".into()),
    ]
}

fn answer(c: &mut impl postgres::GenericClient, sql: &str) -> Result<String, String> {
    match c.query_one(sql, &[]) {
        Ok(row) => Ok(row.try_get::<_, Option<String>>(0).map(Option::unwrap_or_default).unwrap_or_else(|_| "(a row)".into())),
        Err(e) => Err(format!(
            "{} {}",
            e.code().map(|c| c.code().to_string()).unwrap_or_default(),
            common::db_message(&e)
        )),
    }
}

#[test]
fn on_a_standby_reads_answer_as_on_the_primary_and_writes_fail_with_25006() {
    let db = common::fresh_database("standby_ledger");
    let mut primary = common::connect(&db);
    primary.batch_execute(&common::sandbox_ledger_sql(400)).unwrap();
    primary.batch_execute("SELECT runtime_sandbox.install_environment_tables()").unwrap();
    primary
        .batch_execute(&format!(
            "SELECT * FROM runtime_sandbox.record_inventory_snapshot('daytona', {INVENTORY}, now() - interval '1 minute');
             SELECT * FROM runtime_sandbox.reconcile_managed_environment('sandbox', 'daytona', '{{\"image\": \"node:20\"}}');
             CHECKPOINT;"
        ))
        .unwrap();

    let node = Standby::start();
    let mut standby = node.connect(&db);
    node.catch_up(&mut primary, &mut standby);
    let recovering: bool = standby.query_one("SELECT pg_is_in_recovery()", &[]).unwrap().get(0);
    assert!(recovering, "the second server is a standby");

    for (what, sql) in reads() {
        let on_primary = answer(&mut primary, &sql).unwrap_or_else(|e| panic!("{what} on the primary: {e}"));
        let on_standby = answer(&mut standby, &sql).unwrap_or_else(|e| panic!("{what} on the standby: {e}"));
        assert_eq!(on_standby, on_primary, "{what}: the standby answers as the primary");
    }
    // A read takes no transaction id on the primary either (none is spent per monitoring call).
    let mut tx = primary.transaction().unwrap();
    for (what, sql) in reads() {
        answer(&mut tx, &sql).unwrap_or_else(|e| panic!("{what}: {e}"));
        let xid: Option<String> = tx.query_one("SELECT pg_current_xact_id_if_assigned()::text", &[]).unwrap().get(0);
        assert_eq!(xid, None, "{what} assigned a transaction id");
    }
    tx.rollback().unwrap();

    for (function, sql) in writes() {
        let err = answer(&mut standby, &sql).expect_err(function);
        assert!(
            err.starts_with("25006 runtime_sandbox: ") && err.contains(&format!("{function} writes and cannot run on a standby")),
            "{function} on the standby: {err}"
        );
    }
    // The hint says where to go.
    let e = standby.batch_execute("SELECT runtime_sandbox.install_ledger()").unwrap_err();
    let hint = e.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
    assert!(hint.contains("Run it on the primary"), "{hint}");
}
