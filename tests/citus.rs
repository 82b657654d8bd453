//! Citus: ledgers in distributed schemas (schema-based sharding) on a real cluster of a coordinator and two
//! workers on localhost (Citus built by scripts/citus.sh into the system's PostgreSQL 15). Every function,
//! the applying reconciles included, gives the same answers and leaves the same rows on a distributed ledger
//! as on a plain schema; install_ledger distributes a ledger when schema-based sharding is on; check_ledger
//! reports a ledger Citus only partly holds; a worker stopped under a reconcile fails the call and leaves the
//! ledger unchanged, the next call succeeding once it is back; a reconcile runs beside another ledger's move.
//! pg_cron on the coordinator (jobs database postgres) reconciles a distributed ledger as a direct call does.
//!
//! `make test-citus` (part of `make test` on 15) builds Citus and sets RUNTIME_SANDBOX_CITUS=1; without it
//! (the ordinary integration run) the tests say so and do nothing.

mod common;

use common::calls::{contents, run_calls_where, sql, CALLS, SEED};
use postgres::Client;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Once;

const DB: &str = "citus_app";

fn enabled() -> bool {
    let on = std::env::var("RUNTIME_SANDBOX_CITUS").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("citus: RUNTIME_SANDBOX_CITUS is unset; make test-citus runs these tests");
    }
    on
}

fn ports() -> [u16; 3] {
    let base = common::port() + 20;
    [base, base + 1, base + 2]
}

fn base() -> PathBuf {
    PathBuf::from(format!("/tmp/runtime_sandbox-citus-{}", common::port()))
}

fn as_postgres(program: &str, args: &[&str]) -> Result<(), String> {
    common::as_postgres(&common::bindir().join(program), args, std::path::Path::new("/"))
}

fn data(node: usize) -> PathBuf {
    base().join(format!("node{node}")).join("data")
}

fn pg_ctl(node: usize, action: &str) -> Result<(), String> {
    let dir = data(node);
    let log = base().join(format!("node{node}.log"));
    match action {
        "start" => as_postgres("pg_ctl", &["-D", dir.to_str().unwrap(), "-l", log.to_str().unwrap(), "-w", "start"]),
        "stop" => as_postgres("pg_ctl", &["-D", dir.to_str().unwrap(), "-m", "fast", "-w", "stop"]),
        _ => as_postgres("pg_ctl", &["-D", dir.to_str().unwrap(), "status"]),
    }
}

pub fn connect(node: usize, db: &str) -> Client {
    common::connect_at(ports()[node], db)
}

/// The three nodes, started once per test binary; the database `DB` with Citus on each, the workers added
/// to the coordinator, runtime_sandbox created on the coordinator (Citus creates it on the workers).
fn cluster() {
    static START: Once = Once::new();
    START.call_once(|| {
        let base = base();
        if !base.exists() {
            std::fs::create_dir_all(&base).unwrap();
            Command::new("chown").args(["postgres:postgres", base.to_str().unwrap()]).status().unwrap();
        }
        for node in 0..3 {
            let dir = data(node);
            if !dir.exists() {
                let parent = dir.parent().unwrap();
                std::fs::create_dir_all(parent).unwrap();
                Command::new("chown").args(["postgres:postgres", parent.to_str().unwrap()]).status().unwrap();
                as_postgres("initdb", &["-D", dir.to_str().unwrap(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
                    .unwrap();
                let conf = dir.join("postgresql.conf");
                let mut text = std::fs::read_to_string(&conf).unwrap();
                text.push_str(&format!(
                    "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
                     shared_preload_libraries = 'citus'\ncitus.node_conninfo = 'sslmode=disable'\n\
                     wal_level = logical\nfsync = off\nsynchronous_commit = off\nmax_connections = 200\n",
                    ports()[node],
                    base.display()
                ));
                std::fs::write(&conf, text).unwrap();
            }
            // The coordinator runs pg_cron (its jobs database: postgres, where Citus is not), jobs in background
            // workers (the nodes listen on 127.0.0.1 only). Added to a cluster an earlier build made.
            let conf = dir.join("postgresql.conf");
            let text = std::fs::read_to_string(&conf).unwrap();
            let cron = node == 0 && !text.contains("pg_cron");
            if cron {
                std::fs::write(
                    &conf,
                    format!(
                        "{text}shared_preload_libraries = 'citus,pg_cron'\ncron.database_name = 'postgres'\n\
                         cron.use_background_workers = on\nmax_worker_processes = 32\n"
                    ),
                )
                .unwrap();
            }
            let running = pg_ctl(node, "status").is_ok();
            if running && cron {
                pg_ctl(node, "stop").unwrap();
            }
            if !running || cron {
                pg_ctl(node, "start").unwrap();
            }
        }
        for node in 0..3 {
            let mut c = connect(node, "postgres");
            if c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DB]).unwrap().is_none() {
                c.batch_execute(&format!("CREATE DATABASE {DB}")).unwrap();
            }
            connect(node, DB).batch_execute("CREATE EXTENSION IF NOT EXISTS citus").unwrap();
        }
        let mut coordinator = connect(0, DB);
        coordinator
            .batch_execute(&format!("SELECT citus_set_coordinator_host('127.0.0.1', {})", ports()[0]))
            .unwrap();
        for worker in 1..3 {
            coordinator
                .query_one(
                    "SELECT citus_add_node('127.0.0.1', $1) WHERE NOT EXISTS
                         (SELECT 1 FROM pg_dist_node WHERE nodeport = $1 AND isactive)",
                    &[&(ports()[worker] as i32)],
                )
                .ok();
        }
        // An earlier run's build may have left an older catalog here.
        coordinator
            .batch_execute(
                "DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;
                 CREATE EXTENSION runtime_sandbox;",
            )
            .unwrap_or_else(|e| panic!("CREATE EXTENSION on the coordinator: {}", common::db_message(&e)));
    });
}

/// The worker (its port) holding `schema`'s shards.
fn placement(c: &mut Client, schema: &str) -> Vec<i32> {
    c.query(
        "SELECT DISTINCT nodeport FROM citus_shards WHERE citus_table_type = 'schema' AND table_name::text LIKE $1 || '.%'
         ORDER BY 1",
        &[&schema],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn distributed_tables(c: &mut Client, schema: &str) -> i64 {
    c.query_one(
        "SELECT count(*) FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
         WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)",
        &[&schema],
    )
    .unwrap()
    .get(0)
}

fn errors(c: &mut Client, schema: &str) -> Vec<String> {
    c.query(
        "SELECT object || ': ' || problem FROM runtime_sandbox.check_ledger($1) WHERE severity = 'error'",
        &[&schema],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// A fresh ledger in `schema`: with schema-based sharding on (`sharding`), or installed and then distributed
/// with `citus_schema_distribute` (`then_distribute`), or plain (neither).
fn ledger(c: &mut Client, schema: &str, sharding: bool, then_distribute: bool) {
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
    let setting = if sharding { "on" } else { "off" };
    c.batch_execute(&format!(
        "SET citus.enable_schema_based_sharding = {setting};
         SELECT runtime_sandbox.install_ledger('{schema}');
         RESET citus.enable_schema_based_sharding;"
    ))
    .unwrap_or_else(|e| panic!("install_ledger({schema}): {}", common::db_message(&e)));
    if then_distribute {
        c.batch_execute(&format!("SELECT citus_schema_distribute('{schema}')")).unwrap();
    }
    c.batch_execute(&sql(SEED, schema)).unwrap_or_else(|e| panic!("seeding {schema}: {}", common::db_message(&e)));
}

#[test]
fn every_function_on_a_distributed_ledger_answers_and_writes_as_on_a_plain_schema() {
    if !enabled() {
        return;
    }
    cluster();
    let mut c = connect(0, DB);
    ledger(&mut c, "citus_plain", false, false);
    ledger(&mut c, "tenant_a", true, false);
    ledger(&mut c, "tenant_b", false, true);
    assert_eq!(distributed_tables(&mut c, "citus_plain"), 0);
    for schema in ["tenant_a", "tenant_b"] {
        assert_eq!(distributed_tables(&mut c, schema), 11, "{schema}: every ledger table distributed");
        assert_eq!(errors(&mut c, schema), Vec::<String>::new(), "{schema}");
    }
    // Two ledgers on different workers.
    let (a, b) = (placement(&mut c, "tenant_a"), placement(&mut c, "tenant_b"));
    assert_eq!((a.len(), b.len()), (1, 1), "one worker each: {a:?} {b:?}");
    if a == b {
        let other = if a[0] == ports()[1] as i32 { ports()[2] } else { ports()[1] };
        c.batch_execute(&format!("SELECT citus_schema_move('tenant_b', '127.0.0.1', {other}, shard_transfer_mode => 'block_writes')"))
            .unwrap();
    }
    assert_ne!(placement(&mut c, "tenant_a"), placement(&mut c, "tenant_b"));

    // Every call, the applying reconciles included, answers as on the plain schema and leaves the same rows.
    let want = run_calls_where(&mut c, "citus_plain", |_, _| true);
    let want_rows = contents(&mut c, "citus_plain");
    assert!(
        want.iter().all(|a| !a.starts_with("ERROR")),
        "on the plain schema: {want:#?}"
    );
    assert!(
        CALLS
            .iter()
            .any(|(call, _)| call.contains("now(), false, ledger_schema"))
            && CALLS
                .iter()
                .any(|(call, _)| call.contains("reconcile_daytona_latest(false")),
        "the calls include both applying reconciles"
    );
    for schema in ["tenant_a", "tenant_b"] {
        let got = run_calls_where(&mut c, schema, |_, _| true);
        for (((call, _), want), got) in CALLS.iter().zip(&want).zip(&got) {
            assert_eq!(got, want, "{schema}: {call}");
        }
        assert_eq!(
            contents(&mut c, schema),
            want_rows,
            "{schema}: the rows differ from the plain schema's"
        );
        assert_eq!(
            distributed_tables(&mut c, schema),
            11,
            "{schema}: still distributed after every call"
        );
    }

    // The read-only rest, after those calls: the latest snapshot's dry run, the DDL a complete ledger still
    // lacks (none), and the health view (its clock columns as set or not).
    let reads = [
        "SELECT (matched_live_sandboxes, absent_ledger_rows, status, confirming_snapshots)::text
           FROM runtime_sandbox.reconcile_daytona_latest(true, absent_confirmations => 1, minimum_age => '0',
                max_absent_ratio => 1, ledger_schema => '@s@')",
        "SELECT count(*)::text FROM runtime_sandbox.install_ledger_ddl('@s@')",
        "SELECT (last_status, last_started_at IS NULL, last_run_age IS NULL, consecutive_blocked_runs, marked_deleted,
                 seeded_leases, newest_snapshot_items, last_applied_at IS NULL)::text
           FROM @s@.reconciliation_health",
    ];
    let answer = |c: &mut Client, schema: &str, read: &str| -> String {
        c.query_one(&sql(read, schema), &[])
            .map(|r| r.get::<_, String>(0))
            .unwrap_or_else(|e| format!("ERROR {}", common::db_message(&e)))
    };
    for read in reads {
        let want = answer(&mut c, "citus_plain", read);
        assert!(!want.starts_with("ERROR"), "{want}");
        for schema in ["tenant_a", "tenant_b"] {
            assert_eq!(answer(&mut c, schema, read), want, "{schema}: {read}");
        }
    }
}

#[test]
fn a_ledger_only_partly_distributed_is_reported_and_refused() {
    if !enabled() {
        return;
    }
    cluster();
    let mut c = connect(0, DB);
    ledger(&mut c, "citus_partial", false, false);
    c.batch_execute("SELECT create_distributed_table('citus_partial.runs', 'run_id')").unwrap();
    let found = errors(&mut c, "citus_partial");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("citus_partial: partly distributed (Citus): runs distributed"), "{found:?}");
    let err = c
        .query_one("SELECT * FROM runtime_sandbox.backfill_status('citus_partial')", &[])
        .unwrap_err();
    assert_eq!(err.as_db_error().unwrap().code().code(), "55000", "{err:?}");
    c.batch_execute("DROP SCHEMA citus_partial CASCADE").unwrap();
}

/// The applying reconcile of the parity list.
fn is_apply(call: &str) -> bool {
    call.contains("now(), false, ledger_schema")
}

/// The node (index into `ports()`) of the worker holding `schema`.
fn worker_of(c: &mut Client, schema: &str) -> usize {
    let port = placement(c, schema);
    assert_eq!(port.len(), 1, "{schema} on one worker: {port:?}");
    ports()
        .iter()
        .position(|&p| p as i32 == port[0])
        .expect("a worker of this cluster")
}

/// Wait (up to `seconds`) until `probe` returns true.
fn wait_for(what: &str, seconds: u64, probe: impl FnMut() -> bool) {
    common::wait_until(what, std::time::Duration::from_secs(seconds), probe)
}

#[test]
fn a_worker_stopped_mid_reconcile_fails_the_call_and_the_next_one_succeeds() {
    if !enabled() {
        return;
    }
    cluster();
    let mut c = connect(0, DB);
    ledger(&mut c, "citus_plain_stop", false, false);
    ledger(&mut c, "tenant_stop", true, false);
    let want = run_calls_where(&mut c, "citus_plain_stop", |call, _| is_apply(call));
    let want_rows = contents(&mut c, "citus_plain_stop");
    assert!(want.iter().all(|a| !a.starts_with("ERROR")), "{want:?}");
    let before = contents(&mut c, "tenant_stop");
    let node = worker_of(&mut c, "tenant_stop");

    // The audit events' shard held on the worker: the call releases, recovers and seeds (uncommitted on the
    // worker), then waits at the marking's event insert; the worker is stopped under it.
    let shard: String = c
        .query_one(
            "SELECT shard_name::text FROM citus_shards
             WHERE table_name = 'tenant_stop.sandbox_cleanup_events_v2'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    let mut holder = connect(node, DB);
    holder
        .batch_execute(&format!(
            "BEGIN; SET LOCAL citus.enable_manual_changes_to_shards = on; LOCK TABLE {shard} IN ACCESS EXCLUSIVE MODE"
        ))
        .unwrap();
    let call = std::thread::spawn(|| {
        let mut c = connect(0, DB);
        run_calls_where(&mut c, "tenant_stop", |call, _| is_apply(call))
    });
    let mut watcher = connect(node, DB);
    wait_for("the reconcile to wait on the worker", 60, || {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
                &[&DB],
            )
            .unwrap()
            .get::<_, i64>(0)
            > 0
    });
    drop(watcher);
    pg_ctl(node, "stop").unwrap();
    let got = call.join().expect("the call's thread");
    pg_ctl(node, "start").unwrap();
    drop(holder);
    let failed: Vec<&String> = got.iter().filter(|a| a.starts_with("ERROR")).collect();
    assert_eq!(failed.len(), 1, "the call fails cleanly: {got:?}");
    eprintln!("citus: the call under the stopped worker: {}", failed[0]);

    let mut c = connect(0, DB);
    assert_eq!(
        contents(&mut c, "tenant_stop"),
        before,
        "nothing of the failed call is left"
    );
    let again = run_calls_where(&mut c, "tenant_stop", |call, _| is_apply(call));
    assert_eq!(again, want, "the next call, the worker back");
    assert_eq!(contents(&mut c, "tenant_stop"), want_rows);
}

#[test]
fn a_reconcile_runs_while_another_ledger_moves_between_workers() {
    if !enabled() {
        return;
    }
    cluster();
    let mut c = connect(0, DB);
    ledger(&mut c, "citus_plain_move", false, false);
    ledger(&mut c, "tenant_calm", true, false);
    ledger(&mut c, "tenant_moving", true, false);
    // Enough rows that the move takes a while.
    c.batch_execute(
        "INSERT INTO tenant_moving.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'run-1', g, now(), jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'bulk-' || g, 'pad', repeat('x', 400))
         FROM generate_series(2, 60000) AS g",
    )
    .unwrap();
    let want = run_calls_where(&mut c, "citus_plain_move", |call, _| is_apply(call));
    let want_rows = contents(&mut c, "citus_plain_move");
    let from = worker_of(&mut c, "tenant_moving");
    let to = if from == 1 { 2 } else { 1 };
    let mover = std::thread::spawn(move || {
        connect(0, DB)
            .batch_execute(&format!(
                "SELECT citus_schema_move('tenant_moving', '127.0.0.1', {}, shard_transfer_mode => 'block_writes')",
                ports()[to]
            ))
            .map_err(|e| common::db_message(&e))
    });
    let mut watcher = connect(0, DB);
    wait_for("the move to start", 60, || {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT citus_schema_move(%' AND state = 'active'",
                &[],
            )
            .unwrap()
            .get::<_, i64>(0)
            > 0
    });
    let got = run_calls_where(&mut c, "tenant_calm", |call, _| is_apply(call));
    let moving_during: i64 = watcher
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT citus_schema_move(%' AND state = 'active'",
            &[],
        )
        .unwrap()
        .get(0);
    mover
        .join()
        .expect("the mover's thread")
        .expect("citus_schema_move");
    assert_eq!(got, want, "the reconcile beside the move");
    assert_eq!(contents(&mut c, "tenant_calm"), want_rows);
    assert_eq!(
        worker_of(&mut c, "tenant_moving"),
        to,
        "the other ledger moved"
    );
    eprintln!(
        "citus: the move was {} when the reconcile ended",
        if moving_during > 0 {
            "still running"
        } else {
            "over"
        }
    );
    // The moved ledger answers as before.
    let moved = run_calls_where(&mut c, "tenant_moving", |call, _| is_apply(call));
    assert_eq!(moved, want, "the moved ledger's reconcile");
}

#[test]
fn pg_cron_on_the_coordinator_reconciles_a_ledger_on_a_worker() {
    if !enabled() {
        return;
    }
    cluster();
    let mut c = connect(0, DB);
    ledger(&mut c, "citus_plain_cron", false, false);
    ledger(&mut c, "tenant_cron", true, false);
    let latest = |call: &str| call.contains("reconcile_daytona_latest(false");
    // Two snapshots listing every sandbox an operation owns but sb-2: the run applies (sb-2 marked absent).
    let record = |c: &mut Client, schema: &str| {
        c.batch_execute(&format!(
            r#"SELECT runtime_sandbox.record_inventory_snapshot('daytona', listing, at, ledger_schema => '{schema}')
               FROM (VALUES (now() - interval '1 minute'), (now())) AS t(at),
                    (SELECT '[{{"sandboxId": "sb-1"}}, {{"sandboxId": "sb-4", "routingDomain": "eu"}}, {{"sandboxId": "sb-5"}},
                              {{"sandboxId": "sb-6", "routingDomain": "eu"}}]'::jsonb AS listing) AS l"#
        ))
        .unwrap_or_else(|e| panic!("{schema}: {}", common::db_message(&e)));
    };
    record(&mut c, "citus_plain_cron");
    let direct = run_calls_where(&mut c, "citus_plain_cron", |call, _| latest(call));
    assert!(direct.iter().all(|a| !a.starts_with("ERROR")), "{direct:?}");
    let status: String = c
        .query_one("SELECT status::text FROM citus_plain_cron.reconciliation_runs ORDER BY id DESC LIMIT 1", &[])
        .unwrap()
        .get(0);
    let want_rows = contents(&mut c, "citus_plain_cron");
    record(&mut c, "tenant_cron");

    // From pg_cron's database on the coordinator, the same options as the parity call.
    let mut cron = connect(0, "postgres");
    cron.batch_execute(
        "SET client_min_messages = warning;
         CREATE EXTENSION IF NOT EXISTS pg_cron;
         DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;
         CREATE EXTENSION runtime_sandbox;
         DELETE FROM cron.job_run_details;",
    )
    .unwrap();
    let job: i64 = cron
        .query_one(
            &format!(
                "SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => 'tenant_cron',
                     absent_confirmations => 2, minimum_age => '0', max_absent_ratio => 1, database => '{DB}')"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    wait_for(
        "the job's first run (pg_cron ticks each minute)",
        150,
        || {
            cron
                .query_one(
                    "SELECT count(*) FROM cron.job_run_details WHERE jobid = $1 AND status IN ('succeeded', 'failed')",
                    &[&job],
                )
                .unwrap()
                .get::<_, i64>(0)
                > 0
        },
    );
    let (job_status, message): (String, String) = cron
        .query_one(
            "SELECT status, coalesce(return_message, '') FROM cron.job_run_details WHERE jobid = $1 ORDER BY runid LIMIT 1",
            &[&job],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    cron.batch_execute(&format!(
        "SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => 'tenant_cron', database => '{DB}');
         DROP EXTENSION runtime_sandbox;"
    ))
    .unwrap();
    assert_eq!(status, "applied", "the direct call: {direct:?}");
    // The job succeeds when the run applied and fails, saying why, when it was blocked (as on one server).
    if status == "applied" {
        assert_eq!(job_status, "succeeded", "{message}");
    } else {
        assert_eq!(job_status, "failed", "{message}");
        assert!(
            message.contains(&format!(
                "scheduled reconciliation of ledger tenant_cron was {status}"
            )),
            "{message}"
        );
    }
    assert_eq!(
        contents(&mut c, "tenant_cron"),
        want_rows,
        "the job's run leaves the rows a direct call does"
    );
}
