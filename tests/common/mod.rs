//! Shared by the integration tests: one scratch cluster (scripts/cluster.sh)
//! and a fresh database per test, with the installed extension created in it.
//! `make test-integration` installs the extension and restarts the cluster first.
#![allow(dead_code)]

use postgres::{Client, Config, NoTls};
use std::sync::{Arc, Mutex};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Once;

pub mod calls;

/// The scratch cluster's port (`RUNTIME_SANDBOX_IT_PORT`, default 28816).
pub fn port() -> u16 {
    std::env::var("RUNTIME_SANDBOX_IT_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(28816)
}

pub fn cluster_dir() -> PathBuf {
    PathBuf::from(std::env::var("RUNTIME_SANDBOX_IT_DIR").unwrap_or_else(|_| "/tmp/runtime_sandbox-it".into()))
}

/// What `pg_config <arg>` prints (a folder) for `config`, a pg_config path.
pub fn pg_config_dir(config: &str, arg: &str) -> PathBuf {
    let out = Command::new(config).arg(arg).output().unwrap_or_else(|e| panic!("{config} {arg}: {e}"));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// The pg_config of the server the tests run against (`PG_CONFIG`; Debian 12's 15 when unset).
pub fn pg_config() -> String {
    std::env::var("PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into())
}

/// That server's programs.
pub fn bindir() -> PathBuf {
    pg_config_dir(&pg_config(), "--bindir")
}

/// Run a server program as the postgres user (initdb and the server refuse root), from `cwd`, a folder it
/// may enter; its output when it fails.
pub fn as_postgres(program: &std::path::Path, args: &[&str], cwd: &std::path::Path) -> Result<(), String> {
    let is_postgres = std::env::var("USER").is_ok_and(|u| u == "postgres");
    let mut command = if is_postgres {
        Command::new(program)
    } else {
        let mut c = Command::new("sudo");
        c.args(["-u", "postgres"]).arg(program);
        c
    };
    let out = command.args(args).current_dir(cwd).output().map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {args:?}:\n{}{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Start the shared cluster once per test binary (idempotent across binaries).
pub fn ensure_cluster() {
    static START: Once = Once::new();
    START.call_once(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh");
        let status = Command::new(script)
            .args(["start", cluster_dir().to_str().unwrap(), &port().to_string()])
            .status()
            .expect("run scripts/cluster.sh");
        assert!(status.success(), "scratch cluster did not start");
    });
}

/// Where every test connects: the scratch cluster, as postgres, database `db`.
fn config(db: &str) -> Config {
    ensure_cluster();
    config_at(port(), db)
}

/// A server of the tests' own on localhost (`port`), as postgres, database `db`.
fn config_at(port: u16, db: &str) -> Config {
    let mut config = Config::new();
    config.host("127.0.0.1").port(port).user("postgres").dbname(db);
    config
}

pub fn connect(db: &str) -> Client {
    config(db).connect(NoTls).unwrap_or_else(|e| panic!("connect to {db}: {e}"))
}

/// A connection to database `db` of the scratch cluster as `role` (a LOGIN role the test made).
pub fn connect_as(role: &str, db: &str) -> Client {
    let mut config = config(db);
    config.user(role);
    config.connect(NoTls).unwrap_or_else(|e| panic!("connect to {db} as {role}: {e}"))
}

/// A connection to another server the tests run (the Citus nodes), not the scratch cluster.
pub fn connect_at(port: u16, db: &str) -> Client {
    config_at(port, db).connect(NoTls).unwrap_or_else(|e| panic!("connect to {db} on port {port}: {e}"))
}

/// Poll `cond` until it holds; fail the test after `timeout`.
pub fn wait_until(what: &str, timeout: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A connection that collects the NOTICEs it receives (progress lines,
/// auto_explain's plans).
pub fn connect_with_notices(db: &str) -> (Client, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let client = config(db)
        .notice_callback(move |n| sink.lock().unwrap().push(n.message().to_string()))
        .connect(NoTls)
        .unwrap_or_else(|e| panic!("connect to {db}: {e}"));
    (client, notices)
}

/// A new, empty database named `name` with `CREATE EXTENSION runtime_sandbox`.
pub fn fresh_database(name: &str) -> String {
    drop_database(name);
    connect("postgres").batch_execute(&format!("CREATE DATABASE \"{name}\"")).unwrap();
    let mut db = connect(name);
    db.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    name.to_string()
}

/// Drop a test's database, its sessions too (a large one left behind fills the cluster the standby test copies).
pub fn drop_database(name: &str) {
    connect("postgres").batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).unwrap();
}

/// The server's message for an error (postgres::Error's Display is just "db error").
pub fn db_message(err: &postgres::Error) -> String {
    err.as_db_error().map(|e| e.message().to_string()).unwrap_or_else(|| err.to_string())
}

/// A number from the environment (`name`), or `default` when unset or not a number:
/// the fault tests run longer with e.g. `RUNTIME_SANDBOX_CHAOS_ROUNDS=100`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small seeded generator (SplitMix64): the fault tests' random choices
/// repeat for one seed, and a failure prints the seed it ran with.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The ordinary tables of `schema`, by name.
pub fn user_tables(c: &mut Client, schema: &str) -> Vec<String> {
    c.query(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1",
        &[&schema],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// One checksum per table of `schema`, every column included: `md5` of the
/// rows' text in text order (a set of rows; tables have primary keys).
pub fn schema_checksums(c: &mut Client, schema: &str) -> std::collections::BTreeMap<String, String> {
    user_tables(c, schema)
        .into_iter()
        .map(|t| {
            let sum: String = c
                .query_one(
                    &format!(
                        "SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))
                         FROM \"{schema}\".\"{t}\" t"
                    ),
                    &[],
                )
                .unwrap()
                .get(0);
            (format!("{schema}.{t}"), sum)
        })
        .collect()
}

/// `schema_checksums` of every schema of the database that is not PostgreSQL's own.
pub fn database_checksums(c: &mut Client) -> std::collections::BTreeMap<String, String> {
    let schemas: Vec<String> = c
        .query(
            "SELECT nspname::text FROM pg_namespace
             WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\\_%' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    schemas.iter().flat_map(|s| schema_checksums(c, s)).collect()
}

/// `CREATE DATABASE name TEMPLATE template` (no session may be connected to
/// `template`): a twin with the same rows, down to their timestamps.
pub fn copy_database(template: &str, name: &str) -> String {
    let mut admin = connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"")).unwrap();
    name.to_string()
}

/// A Daytona ledger of `n` sandboxes in `runtime_scheduler`, as a deployment
/// has it after the backfill (one run and attempt per sandbox, its resource
/// in resource_json): operation `op-<i>` is sandbox `sb-<i>` with label
/// `label-<i>`, a third have routing domain `eu`, created a day ago or more.
/// - i % 20 = 7: a reserved create whose response was lost (no sandbox yet,
///   an open unbound lease, none in the attempt);
/// - i % 50 = 11: deleting, its cleanup durably deleted but its lease still open;
/// - i % 25 = 4 (live): a pending cleanup the application asked for;
/// - live ones ending in 3 have no lease yet; every other operation has one.
///
/// Every 10th attempt also lists a Modal sandbox `m-<i>`, every 50th a Daytona
/// sandbox `bf-<i>` the ledger does not have (the backfill inserts both).
pub fn sandbox_ledger_sql(n: u64) -> String {
    format!(
        "SELECT runtime_sandbox.install_ledger();
         INSERT INTO runtime_scheduler.runs (run_id, org_id)
         SELECT 'run-' || i, 'org-' || (i % 7) FROM generate_series(1, {n}) i;
         INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'run-' || i, 1, now() - interval '2 days' + i * interval '1 ms',
                CASE WHEN i % 20 = 7 THEN '[]'::jsonb
                     ELSE jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'sb-' || i,
                                                               'daytonaOrganizationId', CASE WHEN i % 3 = 0 THEN 'eu' END)) END
                || CASE WHEN i % 10 = 0 THEN jsonb_build_array(jsonb_build_object('kind', 'modal_sandbox', 'sandboxId', 'm-' || i)) ELSE '[]' END
                || CASE WHEN i % 50 = 0 THEN jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'bf-' || i)) ELSE '[]' END
         FROM generate_series(1, {n}) i;
         INSERT INTO runtime_scheduler.runtime_sandbox_operations
             (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_operation_token, provider_created_at)
         SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org-' || (i % 7),
                CASE WHEN i % 20 = 7 THEN NULL ELSE 'sb-' || i END,
                CASE WHEN i % 3 = 0 THEN 'eu' END,
                (CASE WHEN i % 20 = 7 THEN 'reserved' WHEN i % 50 = 11 THEN 'deleting' ELSE 'live' END)::runtime_scheduler.runtime_sandbox_operation_state,
                'label-' || i,
                CASE WHEN i % 20 = 7 THEN NULL ELSE now() - interval '1 day' - i * interval '1 second' END
         FROM generate_series(1, {n}) i;
         INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at)
         SELECT operation_key, org_id, run_id, CASE WHEN state = 'reserved' THEN NULL ELSE 'daytona' END, sandbox_id, routing_domain, now()
         FROM runtime_scheduler.runtime_sandbox_operations WHERE NOT (state = 'live' AND right(operation_key, 1) = '3');
         INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status)
         SELECT 'daytona', sandbox_id, run_id, attempt, routing_domain, 'pending'
         FROM runtime_scheduler.runtime_sandbox_operations WHERE state = 'live' AND substr(operation_key, 4)::int % 25 = 4;
         INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
         SELECT 'daytona', sandbox_id, run_id, attempt, routing_domain, 'deleted', now() - interval '1 hour'
         FROM runtime_scheduler.runtime_sandbox_operations WHERE state = 'deleting';
         ANALYZE;"
    )
}

/// The backfill's input in the default ledger: `runs` runs of two attempts
/// each, 1-3 sandbox resources per attempt (Modal and Daytona), sandbox ids
/// repeating across attempts, and ties on updated_at (`per_second` attempts
/// share each timestamp).
pub fn backfill_attempts_sql(runs: i32, per_second: i32) -> String {
    format!(
        "SELECT runtime_sandbox.install_ledger();
         INSERT INTO runtime_scheduler.runs (run_id, org_id)
         SELECT 'run-' || g, 'org-' || (g % 5) FROM generate_series(1, {runs}) g;
         INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'run-' || g, a, '2026-01-01'::timestamptz + (g / {per_second}) * interval '1.000001 second',
                (SELECT jsonb_agg(jsonb_build_object(
                     'kind', CASE WHEN i % 2 = 0 THEN 'modal_sandbox' ELSE 'daytona_sandbox' END,
                     'sandboxId', 'sb-' || ((g * 3 + i + a) % ({runs} * 2)),
                     'modalAppId', 'app-' || (g % 3),
                     'daytonaOrganizationId', 'dorg-' || (g % 2)))
                 FROM generate_series(1, 1 + (g + a) % 3) i)
         FROM generate_series(1, {runs}) g, generate_series(1, 2) a;"
    )
}

/// Every backfilled operation of the default ledger, one line each, in key order (for comparing end states).
pub fn backfill_operations(c: &mut Client) -> String {
    c.query_one(
        "SELECT coalesce(string_agg(concat_ws('|', operation_key, provider, run_id, attempt, org_id, environment,
                   sandbox_id, routing_domain, state, provider_created_at), E'\\n' ORDER BY operation_key), '')
         FROM runtime_scheduler.runtime_sandbox_operations",
        &[],
    )
    .unwrap()
    .get(0)
}

/// A single count.
pub fn count(c: &mut Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
}

/// The backfill checkpoint's phase in the default ledger (None before the first page).
pub fn backfill_phase(c: &mut Client) -> Option<String> {
    c.query_opt(
        "SELECT value->>'phase' FROM runtime_scheduler.control WHERE key = 'runtime_sandbox_operation_backfill_v1'",
        &[],
    )
    .unwrap()
    .and_then(|r| r.get(0))
}
