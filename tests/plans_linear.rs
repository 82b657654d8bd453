//! Every statement of a reconcile stays linear whatever the statistics (never
//! analyzed, as right after a bulk load, or analyzed), counted in rows, not
//! seconds.
//!
//! The calls: reconcile_daytona (apply and dry run), and the scheduled path
//! (record_inventory_snapshot, then reconcile_daytona_latest confirming
//! absence over three snapshots). The ledgers are the benchmark's (`Ledger`:
//! the unshaped one, bench/reconcile/unshaped.sql: md5 ids, history, repeated
//! identities; and the steady one, bench/reconcile/ledger.sql, little
//! history), autovacuum off, at n and 4n sandboxes. auto_explain hands back the plan of
//! every statement the call runs, with its actual rows; a statement's work is
//! the rows its scans read (returned or filtered out) and its joins rejected,
//! times their loops. That counts what the tables' own row counters miss: a nested loop that rescans a CTE (rows no
//! table hands out) once per row of an index walk, as the marking of absent
//! rows once did (8,696 x 223 rows at 10k sandboxes). At 4n every statement
//! must do about 4x the work, not 16x, and none more than 10 rows per sandbox
//! (some far fewer, `LIMITS`). Each call is measured twice: never analyzed,
//! and analyzed (a planner with statistics has its own bad choices: the whole
//! table, history included, for the rows a partial index holds).
//!
//! `RUNTIME_SANDBOX_PLAN_WORK=1` prints every statement's work at both sizes.

mod common;

use serde_json::Value;
use std::collections::BTreeMap;

const UNSHAPED: &str = include_str!("../bench/reconcile/unshaped.sql");
const STEADY: &str = include_str!("../bench/reconcile/ledger.sql");

/// The ledger a call runs on: the benchmark's unshaped one (history twice the
/// fleet, so the run probes history: `reach.rs`), or its steady one (little
/// history: the lease table read whole, the few deleted cleanups driving the
/// first release pass), its steady mix, its VACUUM left to the test.
#[derive(Clone, Copy, Debug)]
enum Ledger {
    Unshaped,
    Steady,
}

impl Ledger {
    fn script(self, n: u64) -> String {
        match self {
            Ledger::Unshaped => UNSHAPED.replace(" :n", &format!(" {n}")),
            Ledger::Steady => {
                let vacuum = STEADY.find("VACUUM ANALYZE").expect("ledger.sql ends with its VACUUM");
                let install = "SELECT runtime_sandbox.install_ledger('bench');";
                let quiet = "DO $$ DECLARE t text; BEGIN
                               FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'bench' LOOP
                                   EXECUTE format('ALTER TABLE bench.%I SET (autovacuum_enabled = off)', t);
                               END LOOP;
                             END $$;";
                let mut script = STEADY[..vacuum].replace(install, &format!("{install}\n{quiet}"));
                for (name, value) in [(" :n", format!(" {n}")), (":reserved", "1".into()), (":unleased", "2".into()),
                                      (":absent", "2".into()), (":terminal", "2".into()), (":deleting", "10".into())]
                {
                    script = script.replace(name, &value);
                }
                script
            }
        }
    }
}

/// Rows a plan's scans read (returned or filtered out) and its joins
/// rejected, over all loops. Scans, not every node: a Hash or a Sort repeats
/// its child's rows. A bitmap scan counts the entries its index scans
/// visited (a BitmapAnd that walks a whole index for a few keys shows) and
/// the rows its heap scan then filtered out, so that a plan moving from an
/// index scan to a bitmap scan between sizes counts its rows once.
fn work(node: &Value) -> f64 {
    const SCANS: &[&str] = &[
        "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan", "CTE Scan", "Function Scan",
        "Values Scan", "Tid Scan", "Tid Range Scan", "WorkTable Scan", "Sample Scan", "Named Tuplestore Scan",
    ];
    let number = |key: &str| node.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let removed = number("Rows Removed by Filter") + number("Rows Removed by Index Recheck");
    let read = match node["Node Type"].as_str().unwrap_or_default() {
        "Bitmap Heap Scan" => removed,
        kind if SCANS.contains(&kind) => number("Actual Rows") + removed,
        _ => 0.0,
    };
    let own = (read + number("Rows Removed by Join Filter")) * number("Actual Loops");
    let children: f64 = node.get("Plans").and_then(Value::as_array).map_or(0.0, |plans| plans.iter().map(work).sum());
    own + children
}

/// Scans that test many rows against an array parameter (`x = ANY ($n)` in a
/// Filter): PostgreSQL hashes such an array only when it is a constant, so
/// each row costs one comparison per element, which row counts do not show
/// (a never-analyzed ledger once walked 22k index entries against 10k keys:
/// 2.2 s). Where such a filter meets more rows than `most`.
fn array_filters(node: &Value, most: f64, found: &mut Vec<String>) {
    let number = |key: &str| node.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let filter = node.get("Filter").and_then(Value::as_str).unwrap_or_default();
    let rows = (number("Actual Rows") + number("Rows Removed by Filter")) * number("Actual Loops");
    if filter.contains("ANY ($") && rows > most {
        found.push(format!("{} ({rows} rows): {filter}", node["Node Type"].as_str().unwrap_or_default()));
    }
    for child in node.get("Plans").and_then(Value::as_array).into_iter().flatten() {
        array_filters(child, most, found);
    }
}

/// What is measured: one call of reconcile_daytona, or a snapshot recorded
/// and reconciled by the scheduled path (two older snapshots recorded
/// before, unmeasured, so that absence needs three listings).
#[derive(Clone, Copy, Debug)]
enum Call {
    Reconcile { dry_run: bool },
    Latest,
}

const SNAPSHOT: &str = "SELECT runtime_sandbox.record_inventory_snapshot('daytona', inventory, now() - $1::text::interval,
                                                                        ledger_schema => 'bench', environment => $2)
                        FROM bench_inventory";

const RECONCILE: &str = "SELECT status FROM bench_inventory,
                                runtime_sandbox.reconcile_daytona(inventory, now(), $1, ledger_schema => 'bench',
                                                                  environment => $2)";

const LATEST: &str = "SELECT status FROM runtime_sandbox.reconcile_daytona_latest(false, absent_confirmations => 3,
                                                                              ledger_schema => 'bench', environment => $1)";

/// The environment the ledger's operations are in and the calls reconcile:
/// the application's 'production' (partial indexes of its own), or another
/// one (the environment-keyed indexes install_ledger adds).
const OTHER_ENVIRONMENT: &str = "staging";

/// The work of every statement the call ran, by the statement's first line
/// (its file's opening comment), summed over repeated statements.
fn statement_work(n: u64, call: Call, ledger: Ledger, statistics: Statistics, environment: &str) -> BTreeMap<String, f64> {
    let name = match call {
        Call::Reconcile { dry_run } => format!("plans_linear_{n}_{dry_run}_{ledger:?}_{statistics:?}_{environment}"),
        Call::Latest => format!("plans_linear_{n}_latest_{ledger:?}_{statistics:?}_{environment}"),
    }
    .to_lowercase();
    let db = common::fresh_database(&name);
    let (mut c, notices) = common::connect_with_notices(&db);
    let script = ledger.script(n);
    // The same ledger with every operation in `environment` (the scripts write 'production').
    let script = script.replace(", 'production',", &format!(", '{environment}',"));
    c.batch_execute(&script).unwrap();
    let unanalyzed: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_stat_user_tables
             WHERE schemaname = 'bench' AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(unanalyzed, 0, "the ledger must not have statistics yet");
    let analyze = |c: &mut postgres::Client| {
        if let Statistics::Analyzed = statistics {
            c.batch_execute("ANALYZE").unwrap();
        }
    };
    analyze(&mut c);
    c.batch_execute(
        "LOAD 'auto_explain';
         SET auto_explain.log_min_duration = 0;
         SET auto_explain.log_analyze = on;
         SET auto_explain.log_timing = off;
         SET auto_explain.log_nested_statements = on;
         SET auto_explain.log_format = json;
         SET auto_explain.log_level = notice;
         SET client_min_messages = notice; -- unshaped.sql quiets the session",
    )
    .unwrap();
    if let Call::Latest = call {
        for age in ["2 minutes", "1 minute"] {
            c.execute(SNAPSHOT, &[&age, &environment]).unwrap();
        }
        analyze(&mut c);
    }
    notices.lock().unwrap().clear();
    let mut tx = c.transaction().unwrap();
    let (status, expected) = match call {
        Call::Reconcile { dry_run } => {
            (tx.query_one(RECONCILE, &[&dry_run, &environment]), if dry_run { "planned" } else { "applied" })
        }
        Call::Latest => {
            tx.execute(SNAPSHOT, &[&"0 seconds", &environment]).unwrap();
            (tx.query_one(LATEST, &[&environment]), "applied")
        }
    };
    let status: String = status.unwrap().get(0);
    tx.rollback().unwrap();
    assert_eq!(status, expected);

    let own = [SNAPSHOT, RECONCILE, LATEST];
    let mut by_statement = BTreeMap::new();
    for notice in notices.lock().unwrap().iter() {
        let Some(start) = notice.find('{') else { continue };
        let plan: Value = serde_json::from_str(&notice[start..]).unwrap_or_else(|e| panic!("{e}: {notice}"));
        let text = plan["Query Text"].as_str().unwrap_or_default();
        if own.iter().any(|sent| text.trim() == sent.trim()) {
            continue; // the test's own calls: their plans are one function scan
        }
        if CATALOG_ONLY.iter().any(|start| text.trim_start().starts_with(start)) {
            continue; // reads only the catalogs: the same at every fleet size
        }
        let name = text.lines().next().unwrap_or_default().trim().to_string();
        let mut filters = Vec::new();
        // A quarter of the fleet: a few keys against a small table pass (the steady ledger's cleanups).
        array_filters(&plan["Plan"], n as f64 / 4.0, &mut filters);
        assert!(filters.is_empty(), "{name} tests rows against an array parameter one key at a time: {filters:?}");
        *by_statement.entry(name).or_insert(0.0) += work(&plan["Plan"]);
    }
    assert!(by_statement.len() > 5, "auto_explain reported too few statements: {by_statement:?}");
    // Each ledger is some 170 MB: leave none behind (the standby test copies the whole cluster).
    drop(c);
    common::drop_database(&db);
    by_statement
}

/// Statements that read only the catalogs (the ledger check every call runs
/// first, cached per session): their work depends on the catalog, not on the fleet.
const CATALOG_ONLY: &[&str] = &["-- What the catalog says about the ledger schema", "SELECT pg_catalog.set_config($1, $2, true)"];

/// Statements held to fewer rows per sandbox than the general 10:
/// - those handed the keys of the few rows they change (a few per cent of the
///   fleet) read about their keys, not every open lease or live operation (a
///   planner without statistics believes those partial indexes small and
///   walks them whole if it may);
/// - the reads of the current operations and the open leases read what their
///   partial index holds, about a row per sandbox, not the whole table with
///   its history (2 more rows per sandbox in the unshaped ledger), which a
///   planner with statistics prefers if it may.
const LIMITS: &[(&str, f64)] = &[
    ("-- Complete the absent operations", 0.5),
    ("-- Release the terminal leases among", 0.5),
    ("-- Leases whose sandbox cleanup is durably deleted", 0.5),
    ("-- Recovery, step 3: bind the lease", 0.5),
    ("-- The live and deleting Daytona operations", 1.5),
    ("-- The open Daytona leases bound to a sandbox", 1.5),
    ("-- (sandbox, routing domain) of the open Daytona leases", 1.5),
];

/// Whether the ledger is analyzed before the call (after loading, and after
/// the older snapshots), or never.
#[derive(Clone, Copy, Debug)]
enum Statistics {
    None,
    Analyzed,
}

/// Exceptions on the steady ledger, before `LIMITS`. Accepted
/// (docs/reconcile.md, "Plans on a ledger with little history"): recovery's
/// bind finds its ~1 % of leases by one pass over a lease table without
/// history, the cost model's choice for a percent of a small table: a row per
/// sandbox.
const STEADY_LIMITS: &[(&str, f64)] = &[("-- Recovery, step 3: bind the lease", 1.5)];

/// The rows per sandbox a statement may read on this ledger.
fn limit(statement: &str, ledger: Ledger) -> f64 {
    let exceptions = match ledger {
        Ledger::Steady => STEADY_LIMITS,
        Ledger::Unshaped => &[],
    };
    exceptions.iter().chain(LIMITS).find(|(start, _)| statement.starts_with(start)).map_or(10.0, |&(_, limit)| limit)
}

/// Whether the server has auto_explain (contrib): PostgreSQL 16 from PyPI's wheel (scripts/pg_server.sh) does not.
fn server_has_auto_explain() -> bool {
    common::pg_config_dir(&common::pg_config(), "--pkglibdir").join("auto_explain.so").exists()
}

fn assert_linear(call: Call, ledger: Ledger, statistics: Statistics) {
    assert_linear_in(call, ledger, statistics, "production");
}

fn assert_linear_in(call: Call, ledger: Ledger, statistics: Statistics, environment: &str) {
    if !server_has_auto_explain() {
        eprintln!("plans_linear: this server has no auto_explain (contrib): the plans are not read here");
        return;
    }
    // Sizes with more than 64 lost creates (1 % of the fleet): up to 64,
    // recovery is one statement in the application's shape, whose CTE joins
    // are quadratic in the items it recovers and bounded by that cap.
    let (n, big) = (8000, 32000);
    let small = statement_work(n, call, ledger, statistics, environment);
    let large = statement_work(big, call, ledger, statistics, environment);
    let mut report = Vec::new();
    let mut quadratic = Vec::new();
    for (statement, &rows) in &large {
        let before = small.get(statement).copied().unwrap_or(0.0);
        let growth = rows / before.max(1.0);
        report.push(format!("{growth:5.1}x  {before:>9.0} -> {rows:>9.0}  {statement}"));
        // Statements that touch a handful of rows at either size say nothing
        // of growth; none may read more than a few rows per sandbox (a
        // quadratic plan capped by batch_size can grow less than 6x between
        // the sizes, yet reads hundreds of rows per sandbox at both).
        let per_sandbox = (before / n as f64).max(rows / big as f64);
        if (rows > 2_000.0 && growth > 6.0) || per_sandbox > limit(statement, ledger) {
            quadratic.push(format!("{statement} ({growth:.1}x, {per_sandbox:.1} rows per sandbox)"));
        }
    }
    if std::env::var_os("RUNTIME_SANDBOX_PLAN_WORK").is_some() {
        println!(
            "work of each statement, {n} -> {big} sandboxes ({call:?}, {ledger:?}, {statistics:?}, {environment}):\n{}",
            report.join("\n")
        );
    }
    assert!(
        quadratic.is_empty(),
        "{ledger:?}, {statistics:?}, {environment}: 4x the sandboxes, more than 6x the rows, or more rows per sandbox than allowed, in {quadratic:?}:\n{}",
        report.join("\n")
    );
}

#[test]
fn apply_statements_stay_linear_without_statistics() {
    assert_linear(Call::Reconcile { dry_run: false }, Ledger::Unshaped, Statistics::None);
}

#[test]
fn apply_statements_stay_linear_with_statistics() {
    assert_linear(Call::Reconcile { dry_run: false }, Ledger::Unshaped, Statistics::Analyzed);
}

#[test]
fn dry_run_statements_stay_linear_without_statistics() {
    assert_linear(Call::Reconcile { dry_run: true }, Ledger::Unshaped, Statistics::None);
}

#[test]
fn dry_run_statements_stay_linear_with_statistics() {
    assert_linear(Call::Reconcile { dry_run: true }, Ledger::Unshaped, Statistics::Analyzed);
}

// record_inventory_snapshot, then reconcile_daytona_latest confirming absence
// over three snapshots of the fleet.
#[test]
fn scheduled_path_statements_stay_linear_without_statistics() {
    assert_linear(Call::Latest, Ledger::Unshaped, Statistics::None);
}

#[test]
fn scheduled_path_statements_stay_linear_with_statistics() {
    assert_linear(Call::Latest, Ledger::Unshaped, Statistics::Analyzed);
}

// The steady ledger: the paths a ledger with little history takes.
#[test]
fn steady_ledger_statements_stay_linear_without_statistics() {
    assert_linear(Call::Reconcile { dry_run: false }, Ledger::Steady, Statistics::None);
    assert_linear(Call::Reconcile { dry_run: true }, Ledger::Steady, Statistics::None);
}

#[test]
fn steady_ledger_statements_stay_linear_with_statistics() {
    assert_linear(Call::Reconcile { dry_run: false }, Ledger::Steady, Statistics::Analyzed);
    assert_linear(Call::Reconcile { dry_run: true }, Ledger::Steady, Statistics::Analyzed);
}

// Another environment than the application's 'production': the same calls
// read as little (the environment-keyed indexes), never the whole history.
#[test]
fn another_environment_stays_linear_without_statistics() {
    assert_linear_in(Call::Reconcile { dry_run: false }, Ledger::Unshaped, Statistics::None, OTHER_ENVIRONMENT);
    assert_linear_in(Call::Latest, Ledger::Unshaped, Statistics::None, OTHER_ENVIRONMENT);
}

#[test]
fn another_environment_stays_linear_with_statistics() {
    assert_linear_in(Call::Reconcile { dry_run: true }, Ledger::Unshaped, Statistics::Analyzed, OTHER_ENVIRONMENT);
    assert_linear_in(Call::Reconcile { dry_run: false }, Ledger::Steady, Statistics::Analyzed, OTHER_ENVIRONMENT);
}
