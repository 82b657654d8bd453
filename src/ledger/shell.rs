//! SQL surface of the ledger schema, and the gate every function that works
//! on a ledger goes through (`require`): the catalog check, the caller's
//! right to act as the ledger's owner, and the switch to that owner.

use super::check::{self, CitusFacts, Facts, Problem, Severity};
use super::install::{self, CitusAction};
use crate::args::{schema_name, SchemaName};
use crate::error::{Error, Kind};
use crate::shell::owner;
use crate::shell::types::Name;
use crate::shell::{check as check_arg, Raise};
use pgrx::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

const FACTS: &str = include_str!("../../sql/queries/ledger/facts.sql");
const CITUS_FACTS: &str = include_str!("../../sql/queries/ledger/citus_facts.sql");
const CITUS_INSTALLED: &str = include_str!("../../sql/queries/ledger/citus_installed.sql");
const SCHEMA_BASED_SHARDING: &str = include_str!("../../sql/queries/ledger/schema_based_sharding.sql");
const CITUS_SCHEMA_DISTRIBUTE: &str = include_str!("../../sql/queries/ledger/citus_schema_distribute.sql");
const CITUS_SCHEMA_UNDISTRIBUTE: &str = include_str!("../../sql/queries/ledger/citus_schema_undistribute.sql");

/// A ledger schema argument: NULL is an error (22023), as is a name that is
/// not a plain identifier.
fn ledger_argument(ledger_schema: Option<Name>) -> SchemaName {
    let Some(name) = ledger_schema else {
        Error::argument("ledger_schema", "must not be NULL").raise()
    };
    check_arg(schema_name("ledger_schema", name.as_str()))
}

/// The catalog's facts about `schema` (None: no such schema). Reads only catalogs.
fn read_facts(schema: &SchemaName) -> Option<Facts> {
    // The catalog query's estimated cost would have JIT compile it (50 ms for a 5 ms read).
    let text: Option<String> = owner::with_setting("jit", "off", || Spi::connect(|client| {
        let table = client
            .select(FACTS, None, &[schema.name.as_str().into(), check::checked_tables().into()])
            .unwrap_or_else(|e| error!("runtime_sandbox: reading the catalog of ledger {:?} failed: {e}", schema.name));
        if table.is_empty() {
            return None;
        }
        table.first().get::<String>(1).unwrap_or_else(|e| error!("runtime_sandbox: reading the catalog of ledger {:?} failed: {e}", schema.name))
    }));
    text.map(|text| {
        let mut facts: Facts = serde_json::from_str(&text)
            .unwrap_or_else(|e| error!("runtime_sandbox: the catalog facts of ledger {:?} did not parse: {e}", schema.name));
        facts.citus = read_citus_facts(schema);
        facts
    })
}

/// Citus's metadata of `schema`, when Citus (12 or later: schema-based sharding) is installed here.
fn read_citus_facts(schema: &SchemaName) -> Option<CitusFacts> {
    Spi::connect(|client| {
        let installed = crate::shell::spi::execute(client, CITUS_INSTALLED, None, &[])
            .ok()
            .and_then(|t| t.first().get::<bool>(1).ok().flatten())
            .unwrap_or(false);
        if !installed {
            return None;
        }
        let table = crate::shell::spi::execute(client, CITUS_FACTS, None, &[schema.name.as_str().into()])
            .unwrap_or_else(|e| error!("runtime_sandbox: reading Citus's metadata of ledger {:?} failed: {e}", schema.name));
        let row = table.first();
        Some(CitusFacts {
            schema_distributed: row.get::<bool>(1).ok().flatten().unwrap_or(false),
            tables: row.get::<Vec<String>>(2).ok().flatten().unwrap_or_default(),
        })
    })
}

/// A schema's check, as cached for this backend.
struct Checked {
    facts: Option<Facts>,
    problems: Vec<Problem>,
}

thread_local! {
    /// Checks by schema name, until the next catalog invalidation.
    static CHECKED: RefCell<HashMap<String, Rc<Checked>>> = RefCell::new(HashMap::new());
}

static CALLBACKS: AtomicBool = AtomicBool::new(false);

/// Any change of a relation (its columns, indexes, triggers, rules, policies,
/// owner), of a schema, type, enum label, constraint, cast or database owner
/// invalidates every cached check: such changes are rare, a check is a
/// millisecond.
unsafe extern "C-unwind" fn forget_relcache(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    CHECKED.with_borrow_mut(HashMap::clear);
}

unsafe extern "C-unwind" fn forget_syscache(_arg: pg_sys::Datum, _cache: core::ffi::c_int, _hash: u32) {
    CHECKED.with_borrow_mut(HashMap::clear);
}

fn register_callbacks() {
    if CALLBACKS.swap(true, Ordering::Relaxed) {
        return;
    }
    use pg_sys::SysCacheIdentifier as Cache;
    // SAFETY: registered once per backend; the callbacks only clear a cache.
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(forget_relcache), pg_sys::Datum::from(0));
        for cache in [
            Cache::NAMESPACEOID,
            Cache::TYPEOID,
            Cache::ENUMOID,
            Cache::CONSTROID,
            Cache::CASTSOURCETARGET,
            Cache::DATABASEOID,
        ] {
            pg_sys::CacheRegisterSyscacheCallback(cache as _, Some(forget_syscache), pg_sys::Datum::from(0));
        }
    }
}

/// The check of `schema`: cached per backend until the catalog changes
/// (invalidations from other sessions are taken in first).
fn checked(schema: &SchemaName) -> Rc<Checked> {
    register_callbacks();
    // SAFETY: what every lock acquisition does: apply pending invalidations.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    if let Some(found) = CHECKED.with_borrow(|c| c.get(&schema.name).cloned()) {
        return found;
    }
    let facts = read_facts(schema);
    let problems = check::check(&schema.name, &schema.quoted, facts.as_ref());
    let checked = Rc::new(Checked { facts, problems });
    CHECKED.with_borrow_mut(|c| c.insert(schema.name.clone(), Rc::clone(&checked)));
    checked
}

/// Whether any of the ledger's tables is in Citus's metadata (cached with the ledger's check).
pub(crate) fn in_citus(ledger: &SchemaName) -> bool {
    checked(ledger).facts.as_ref().and_then(|f| f.citus.as_ref()).is_some_and(|c| !c.tables.is_empty())
}

/// Whether the ledger's operations keep `org_id` in another type than text
/// (the type of `runs.org_id`): the backfill's inserts then convert it.
pub(crate) fn typed_org_id(ledger: &SchemaName) -> bool {
    checked(ledger).facts.as_ref().is_some_and(Facts::typed_org_id)
}

/// Whether the attempts keep `run_id` as char(n): the backfill reads it with
/// its blanks (its cursor and targets, as the application's), and inserts it
/// into the operations without them (as the application's insert converts it).
pub(crate) fn padded_run_id(ledger: &SchemaName) -> bool {
    checked(ledger).facts.as_ref().is_some_and(Facts::padded_run_id)
}

/// What the ledger is for a call that passed the gate.
pub(crate) struct Access {
    owner: pg_sys::Oid,
    checked: Rc<Checked>,
}

impl Access {
    /// Whether `table` (reconciliation_runs, provider_inventory_snapshots) has
    /// its `environment` column; a ledger installed before 0.4.0 lacks it and
    /// can then serve only 'production': any other environment is refused
    /// (55000) with the DDL that adds it.
    pub fn environment_column(&self, ledger: &SchemaName, table: &str, environment: &crate::args::Environment, function: &str) -> bool {
        let present = self.has_column(table, "environment");
        if !present && !environment.is_default() {
            Error::new(
                Kind::UnusableLedger,
                format!(
                    "ledger_schema {:?} cannot be used by {function} for environment {:?}: {}.{table} has no environment column",
                    ledger.name, environment.name, ledger.quoted
                ),
            )
            .detail("A ledger installed before runtime_sandbox 0.4.0 holds only 'production' runs and snapshots.")
            .hint(format!(
                "ALTER TABLE {}.{table} ADD COLUMN environment text NOT NULL DEFAULT 'production'; \
                 (or SELECT runtime_sandbox.install_ledger('{}'); which adds every missing column)",
                ledger.quoted, ledger.name
            ))
            .raise();
        }
        present
    }

    /// How the environment argument is compared with the operations'
    /// `environment` (Facts::citext_environment, Facts::enum_environment).
    pub fn operations_environment(&self) -> EnvironmentColumn {
        let facts = self.checked.facts.as_ref();
        if let Some((oid, operator)) = facts.and_then(Facts::citext_environment) {
            EnvironmentColumn::Citext { oid: pg_sys::Oid::from(oid), operator }
        } else if let Some((oid, name)) = facts.and_then(Facts::enum_environment) {
            EnvironmentColumn::Enum { oid: pg_sys::Oid::from(oid), name }
        } else {
            EnvironmentColumn::Text
        }
    }

    /// Whether the ledger's `table` has `column` (as the gate's check read it).
    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.checked.facts.as_ref().is_some_and(|facts| facts.column(table, column).is_some())
    }

    /// Run the call's statements as the ledger's owner (shell::owner).
    pub fn run<R>(&self, work: impl FnOnce() -> R) -> R {
        owner::as_owner(self.owner, work)
    }
}

/// The type of the operations' `environment`, as the statements compare the
/// environment argument with it.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvironmentColumn {
    /// text or varchar: passed as text, compared with `=`.
    Text,
    /// citext: passed as citext (`oid`), compared with citext's own `=`
    /// (`operator`, named with its schema).
    Citext { oid: pg_sys::Oid, operator: String },
    /// An enum, or a domain over one: passed as the enum's value (the label's
    /// pg_enum oid, typed `oid`), compared with the enum's `=`; `name` is the
    /// type's qualified name, for messages.
    Enum { oid: pg_sys::Oid, name: String },
}

/// The gate: fail before any work when the ledger cannot serve `function`,
/// which works on `needs` (tables, in the order an error names them; a
/// `table.column` entry counts as its table):
/// - no such schema: 22023 with the command that creates it;
/// - tables or columns missing: 42P01 naming them, with install_ledger's hint;
/// - anything else check_ledger calls an error on those tables (a type the
///   statements cannot use, a NOT NULL nobody fills, a missing unique key or
///   enum label, an object owned by another role than the schema's): 55000
///   naming the first, every one in the DETAIL, their fixes in the HINT;
/// - a caller who is not the owner, a member of its role or a superuser: 42501.
pub(crate) fn require(ledger: &SchemaName, needs: &[&str], function: &'static str) -> Access {
    require_for(ledger, needs, function, false)
}

/// `require` for a call that only reads (a dry run, a preview, a status): a
/// problem only writing statements have (check::Problem::writes_only) does
/// not refuse it.
pub(crate) fn require_to_read(ledger: &SchemaName, needs: &[&str], function: &'static str) -> Access {
    require_for(ledger, needs, function, true)
}

fn require_for(ledger: &SchemaName, needs: &[&str], function: &'static str, reading: bool) -> Access {
    let detail = format!(
        "{function} uses {}; install_ledger is idempotent and adds what a ledger of an earlier version lacks.",
        needs.iter().map(|n| n.split('.').next().unwrap_or(n)).collect::<Vec<_>>().join(", ")
    );
    require_with(ledger, needs, function, &detail, reading)
}

/// `require`, with the DETAIL a missing table's error gives; `reading`: the
/// call only reads.
pub(crate) fn require_with(ledger: &SchemaName, needs: &[&str], function: &'static str, detail: &str, reading: bool) -> Access {
    let mut tables: Vec<&str> = Vec::new();
    for table in needs.iter().map(|n| n.split('.').next().unwrap_or(n)) {
        if !tables.contains(&table) {
            tables.push(table);
        }
    }
    let checked = checked(ledger);
    let Some(facts) = &checked.facts else {
        Error::ledger_schema_missing("ledger_schema", &ledger.name).raise()
    };
    let owner = pg_sys::Oid::from(facts.owner_oid);
    if !owner::may_act_as(owner) {
        Error::not_owner(function, &ledger.name, &facts.owner, &owner::role_name(owner::current_user())).raise();
    }
    let blocking: Vec<&Problem> = checked.problems.iter().filter(|p| p.blocks(&tables, reading)).collect();
    let mut missing: Vec<String> = Vec::new();
    for table in &tables {
        for problem in blocking.iter().filter(|p| p.table == Some(*table)) {
            match problem.problem.as_str() {
                "missing table" => missing.push(table.to_string()),
                "missing column" => {
                    missing.push(format!("{table}.{}", problem.object.rsplit('.').next().unwrap_or_default()))
                }
                _ => {}
            }
        }
    }
    if !missing.is_empty() {
        Error::ledger_not_installed(
            "ledger_schema",
            &ledger.name,
            &missing.join(", "),
            detail,
        )
        .raise();
    }
    if let Some(first) = blocking.first() {
        Error::new(
            Kind::UnusableLedger,
            format!(
                "ledger_schema {:?} cannot be used by {function}: {}: {}{}",
                ledger.name,
                first.object,
                short(&first.problem),
                if blocking.len() > 1 { format!(" (and {} more)", blocking.len() - 1) } else { String::new() }
            ),
        )
        .detail(blocking.iter().map(|p| format!("{}: {}", p.object, p.problem)).collect::<Vec<_>>().join("; "))
        .hint(format!(
            "{} (SELECT * FROM runtime_sandbox.check_ledger('{}') lists every problem and its fix.)",
            blocking.iter().filter_map(|p| p.fix.as_deref()).collect::<Vec<_>>().join(" "),
            ledger.name
        ))
        .raise();
    }
    Access { owner, checked: Rc::clone(&checked) }
}

/// At most the first 200 characters of a message part.
fn short(text: &str) -> String {
    crate::args::prefix(text, 200)
}

/// Create (idempotently) what the ledger schema lacks: the schema, the enum
/// and its labels, tables, columns, unique keys, indexes and the health view.
/// Reads the catalog first and runs only what is missing, as the schema's
/// owner; then checks the ledger and fails listing what it could not fix.
#[pg_extern(name = "install_ledger", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn install_ledger_checked(ledger_schema: default!(Option<Name>, "'runtime_scheduler'")) {
    let schema = ledger_argument(ledger_schema);
    run_install(&schema);
}

/// The 0.2.0 symbol (strict `name` argument), kept so a 0.2.0 catalog works
/// until `ALTER EXTENSION runtime_sandbox UPDATE`.
#[pg_extern(sql = false)]
fn install_ledger(ledger_schema: Name) {
    let schema = check_arg(schema_name("ledger_schema", ledger_schema.as_str()));
    run_install(&schema);
}

fn run_install(schema: &SchemaName) {
    crate::shell::standby::refuse_writes("install_ledger");
    // SAFETY: see `checked`.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    let mut facts = read_facts(schema);
    if facts.is_none() {
        // A new schema belongs to the caller, as CREATE SCHEMA makes it.
        Spi::run(&format!("CREATE SCHEMA {}", schema.quoted))
            .unwrap_or_else(|e| error!("runtime_sandbox: install_ledger({}) could not create the schema: {e}", schema.name));
        facts = read_facts(schema);
    }
    let found = facts.as_ref().expect("the schema exists");
    let owner = pg_sys::Oid::from(found.owner_oid);
    if !owner::may_act_as(owner) {
        Error::not_owner("install_ledger", &schema.name, &found.owner, &owner::role_name(owner::current_user())).raise();
    }
    // Objects of the ledger's names that are not what it expects, or that
    // another role owns, are refused before anything is created.
    let foreign: Vec<Problem> = check::check(&schema.name, &schema.quoted, facts.as_ref())
        .into_iter()
        .filter(|p| p.severity == Severity::Error && (p.problem.starts_with("owned by") || p.problem.contains(", not a")))
        .collect();
    if !foreign.is_empty() {
        Error::new(
            Kind::UnusableLedger,
            format!(
                "install_ledger refuses ledger_schema {:?}: {}: {}",
                schema.name, foreign[0].object, foreign[0].problem
            ),
        )
        .detail(foreign.iter().map(|p| format!("{}: {}", p.object, p.problem)).collect::<Vec<_>>().join("; "))
        .hint(foreign.iter().filter_map(|p| p.fix.as_deref()).collect::<Vec<_>>().join(" "))
        .raise();
    }
    // Keys and indexes over a column of a type the statements cannot use are not
    // built (they may not even be buildable): the check after the run names the column.
    let mistyped: Vec<&'static str> = check::check(&schema.name, &schema.quoted, facts.as_ref())
        .into_iter()
        .filter(|p| p.severity == Severity::Error && p.problem.starts_with("is "))
        .filter_map(|p| p.table)
        .collect();
    let mut steps = install::plan(&schema.quoted, facts.as_ref());
    steps.retain(|step| step.table.is_none_or(|t| !mistyped.contains(&t) || step.object.starts_with("column ")));
    let sharding = found.citus.is_some() && schema_based_sharding();
    let citus = install::citus_action(found.citus.as_ref(), &steps, sharding);
    if !steps.is_empty() || matches!(citus, CitusAction::Distribute | CitusAction::Redistribute) {
        owner::as_owner(owner, || {
            if citus == CitusAction::Redistribute {
                citus_call(schema, CITUS_SCHEMA_UNDISTRIBUTE);
            }
            for step in &steps {
                Spi::run(&step.sql).unwrap_or_else(|e| {
                    error!("runtime_sandbox: install_ledger({}) could not create {}: {e}", schema.name, step.object)
                });
            }
            if matches!(citus, CitusAction::Distribute | CitusAction::Redistribute) {
                citus_call(schema, CITUS_SCHEMA_DISTRIBUTE);
            }
        });
    } else if citus == CitusAction::Suggest {
        notice!(
            "runtime_sandbox: ledger {} stays on the Citus coordinator; SELECT citus_schema_distribute('{}') \
             distributes it (or run install_ledger with citus.enable_schema_based_sharding on)",
            schema.quoted,
            schema.quoted.replace('\'', "''")
        );
    }
    if install::adds_labels(&steps) {
        notice!(
            "runtime_sandbox: install_ledger added labels to {}.runtime_sandbox_operation_state; the indexes that name \
             them are created by the next install_ledger (a new label is usable once this transaction commits)",
            schema.quoted
        );
    }
    let problems: Vec<Problem> = check::check(&schema.name, &schema.quoted, read_facts(schema).as_ref())
        .into_iter()
        .filter(|p| p.severity == Severity::Error)
        .collect();
    if let Some(first) = problems.first() {
        Error::new(
            Kind::UnusableLedger,
            format!(
                "install_ledger could not make ledger_schema {:?} usable: {}: {}{}",
                schema.name,
                first.object,
                first.problem,
                if problems.len() > 1 { format!(" (and {} more)", problems.len() - 1) } else { String::new() }
            ),
        )
        .detail(problems.iter().map(|p| format!("{}: {}", p.object, p.problem)).collect::<Vec<_>>().join("; "))
        .hint(format!(
            "These are the application's data; change them with: {}",
            problems.iter().filter_map(|p| p.fix.as_deref()).collect::<Vec<_>>().join(" ")
        ))
        .raise();
    }
}

/// Whether Citus's schema-based sharding is on in this session (new schemas become distributed schemas).
fn schema_based_sharding() -> bool {
    crate::shell::spi::get_one_with_args::<bool>(SCHEMA_BASED_SHARDING, &[]).ok().flatten().unwrap_or(false)
}

/// A Citus function install_ledger calls on the ledger schema (the statement's $1); its failure names the
/// ledger and the call.
fn citus_call(schema: &SchemaName, sql: &str) {
    crate::shell::spi::run_with_args(sql, &[schema.quoted.as_str().into()]).unwrap_or_else(|e| {
        error!("runtime_sandbox: install_ledger({}): {} failed: {e}", schema.name, sql.lines().last().unwrap_or(sql))
    });
}

/// The DDL install_ledger would run on the ledger schema now, one statement
/// per row, for a migration tool: indexes on tables that exist already are
/// built CONCURRENTLY (run them outside a transaction block). Read-only.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn install_ledger_ddl(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    concurrently: default!(Option<bool>, true),
) -> TableIterator<'static, (name!(step, i32), name!(object, String), name!(statement, String))> {
    let schema = ledger_argument(ledger_schema);
    let Some(concurrently) = concurrently else { Error::argument("concurrently", "must not be NULL").raise() };
    let facts = read_facts(&schema);
    let mut rows = Vec::new();
    if facts.is_none() {
        rows.push(("schema".to_string(), format!("CREATE SCHEMA IF NOT EXISTS {};", schema.quoted)));
    }
    for step in install::plan(&schema.quoted, facts.as_ref()) {
        let sql = if concurrently { install::concurrently(&step) } else { step.sql.clone() };
        rows.push((step.object, format!("{};", sql.trim_end_matches(';'))));
    }
    TableIterator::new(rows.into_iter().enumerate().map(|(i, (object, sql))| (i as i32 + 1, object, sql)))
}

/// What keeps the ledger schema from serving the functions, with the DDL that
/// fixes each problem and the functions it refuses (no rows means ready).
/// Read-only; reads only catalogs.
#[allow(clippy::type_complexity)]
#[pg_extern(name = "check_ledger", stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn check_ledger_with_breaks(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> TableIterator<
    'static,
    (
        name!(object, String),
        name!(problem, String),
        name!(fix, Option<String>),
        name!(severity, String),
        name!(breaks, Vec<String>),
    ),
> {
    TableIterator::new(check_rows(&ledger_argument(ledger_schema)))
}

/// check_ledger's rows (every signature's columns are a prefix of these).
fn check_rows(schema: &SchemaName) -> impl Iterator<Item = (String, String, Option<String>, String, Vec<String>)> {
    checked(schema).problems.clone().into_iter().map(|p| {
        let breaks = p.breaks().into_iter().map(String::from).collect();
        (p.object, p.problem, p.fix, p.severity.as_str().to_string(), breaks)
    })
}

/// Per capability (each function as check_ledger's `breaks` names it):
/// whether it can run on the ledger, and the errors that refuse it.
/// Read-only; reads only catalogs.
#[allow(clippy::type_complexity)]
#[pg_extern(name = "ledger_readiness", stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn ledger_readiness(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> TableIterator<'static, (name!(function, String), name!(ready, bool), name!(refused_for, Vec<String>))> {
    let schema = ledger_argument(ledger_schema);
    let problems = checked(&schema).problems.clone();
    let rows: Vec<_> = check::readiness(&problems)
        .into_iter()
        .map(|(function, refusing)| (function.to_string(), refusing.is_empty(), refusing))
        .collect();
    TableIterator::new(rows)
}

/// The 0.3.0 signature (four columns), kept so a 0.3.0 catalog works until
/// `ALTER EXTENSION runtime_sandbox UPDATE`.
#[pg_extern(sql = false)]
fn check_ledger_with_fixes(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> TableIterator<
    'static,
    (name!(object, String), name!(problem, String), name!(fix, Option<String>), name!(severity, String)),
> {
    TableIterator::new(check_rows(&ledger_argument(ledger_schema)).map(|(object, problem, fix, severity, _)| (object, problem, fix, severity)))
}

/// The 0.2.0 symbol (two columns), kept so a 0.2.0 catalog works until
/// `ALTER EXTENSION runtime_sandbox UPDATE`.
#[pg_extern(sql = false)]
fn check_ledger(ledger_schema: Name) -> TableIterator<'static, (name!(object, String), name!(problem, String))> {
    let schema = check_arg(schema_name("ledger_schema", ledger_schema.as_str()));
    TableIterator::new(check_rows(&schema).map(|(object, problem, ..)| (object, problem)))
}
