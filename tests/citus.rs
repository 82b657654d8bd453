//! Citus: ledgers in distributed schemas (schema-based sharding) on a real cluster of a coordinator and two
//! workers on localhost (Citus built by scripts/citus.sh into the system's PostgreSQL 15). Every function
//! but the applying reconciles gives the same answers and leaves the same rows on a distributed ledger as on a
//! plain schema, and those two are refused cleanly (0A000, nothing written); install_ledger distributes a
//! ledger when schema-based sharding is on; check_ledger reports a ledger Citus only partly holds.
//!
//! `make test-citus` (part of `make test` on 15) builds Citus and sets RUNTIME_SANDBOX_CITUS=1; without it
//! (the ordinary integration run) the tests say so and do nothing.

mod common;

use common::calls::{contents, run_calls_where, sql, CALLS, SEED};
use postgres::{Client, NoTls};
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
    postgres::Config::new()
        .host("127.0.0.1")
        .port(ports()[node])
        .user("postgres")
        .dbname(db)
        .connect(NoTls)
        .unwrap_or_else(|e| panic!("connect to {db} on node {node}: {e}"))
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
            if pg_ctl(node, "status").is_err() {
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
        assert_eq!(distributed_tables(&mut c, schema), 10, "{schema}: every ledger table distributed");
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

    // Every call but the applying reconciles (refused on Citus, below) answers as on the plain schema and
    // leaves the same rows.
    let applies = |call: &str| call.contains("now(), false, ledger_schema") || call.contains("reconcile_daytona_latest(false");
    let want = run_calls_where(&mut c, "citus_plain", |call, _| !applies(call));
    let want_rows = contents(&mut c, "citus_plain");
    assert!(want.iter().all(|a| !a.starts_with("ERROR")), "on the plain schema: {want:#?}");
    for schema in ["tenant_a", "tenant_b"] {
        let got = run_calls_where(&mut c, schema, |call, _| !applies(call));
        for (((call, _), want), got) in CALLS.iter().zip(&want).zip(&got) {
            assert_eq!(got, want, "{schema}: {call}");
        }
        assert_eq!(contents(&mut c, schema), want_rows, "{schema}: the rows differ from the plain schema's");
        assert_eq!(distributed_tables(&mut c, schema), 10, "{schema}: still distributed after every call");
    }

    // The applying reconciles are refused before any work, with what works instead.
    for schema in ["tenant_a", "tenant_b"] {
        let before = contents(&mut c, schema);
        let answers = run_calls_where(&mut c, schema, |call, _| applies(call));
        let refused: Vec<&String> = answers.iter().filter(|a| *a != "skipped").collect();
        assert_eq!(refused.len(), 2, "{answers:?}");
        for answer in refused {
            assert!(
                answer.starts_with(&format!("ERROR 0A000 runtime_sandbox: reconcile_daytona")) && answer.contains("distributed by Citus"),
                "{schema}: {answer}"
            );
        }
        assert_eq!(contents(&mut c, schema), before, "{schema}: a refused call changed the ledger");
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
