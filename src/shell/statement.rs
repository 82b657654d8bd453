//! The statement plumbing every shell shares: a statement's SQL with the ledger (and the environment's comparison)
//! substituted, run over SPI read-write without a transaction id up front, timed, its failure an ERROR; the
//! environment-or-not variant of a statement; planner settings for one read; the call's clock; statements with a
//! plan kept for the backend (the backfill's, run page after page).

use super::spi::ReadValue;
use crate::fast_hash::FastMap;
use pgrx::datum::{DatumWithOid, TimestampWithTimeZone};
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use pgrx::PgOid;
use std::cell::RefCell;
use std::time::Instant;

const SETTING: &str = include_str!("../../sql/queries/shell/planner_setting.sql");

pub fn now() -> TimestampWithTimeZone {
    TimestampWithTimeZone::try_from(unsafe { pg_sys::GetCurrentTimestamp() })
        .unwrap_or_else(|_| error!("runtime_sandbox: the clock is out of range"))
}

/// One phase statement: the SQL with the ledger schema and the environment's
/// comparison operator substituted, timed.
pub struct Ledger<'a> {
    pub quoted: &'a str,
    pub environment_eq: &'a str,
}

impl Ledger<'_> {
    pub fn sql(&self, template: &str) -> String {
        template.replace("@ledger@", self.quoted).replace("@environment_eq@", self.environment_eq)
    }
}

pub fn execute<'conn>(
    client: &mut SpiClient<'conn>,
    sql: &str,
    params: &[DatumWithOid],
) -> (SpiTupleTable<'conn>, f64) {
    let started = Instant::now();
    let table = crate::shell::spi::execute(client, sql, None, params)
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona statement failed: {e}"));
    (table, started.elapsed().as_secs_f64() * 1000.0)
}

/// A statement on a table that may lack `environment` (a ledger installed
/// before 0.4.0 holds only 'production' rows there): `with` and the
/// environment as its last parameter when the column is there (`environment`
/// Some), else its `_without_environment` twin `without` and `params` alone.
pub fn execute_by_environment<'conn, 'p>(
    client: &mut SpiClient<'conn>,
    ledger: &Ledger,
    (with, without): (&str, &str),
    mut params: Vec<DatumWithOid<'p>>,
    environment: Option<&'p str>,
) -> (SpiTupleTable<'conn>, f64) {
    let statement = match environment {
        Some(environment) => {
            params.push(environment.into());
            with
        }
        None => without,
    };
    execute(client, &ledger.sql(statement), &params)
}

/// Set `jit` for this transaction; returns the value it replaces.
pub fn jit(client: &mut SpiClient, value: &str) -> String {
    setting(client, "jit", value)
}

/// Set a planner setting for this transaction; returns the value it replaces.
pub fn setting(client: &mut SpiClient, name: &str, value: &str) -> String {
    let (table, _) = execute(client, SETTING, &[name.into(), value.into()]);
    table.first().get::<String>(1).read_value().unwrap_or_else(|| "on".into())
}

/// Run `read` under these planner settings, then put the previous values
/// back (settings.sql says why each is used).
pub fn planned<'conn, R>(
    client: &mut SpiClient<'conn>,
    settings: &[(&str, &str)],
    read: impl FnOnce(&mut SpiClient<'conn>) -> R,
) -> R {
    let before: Vec<String> = settings.iter().map(|&(name, value)| setting(client, name, value)).collect();
    let result = read(client);
    for (&(name, _), value) in settings.iter().zip(&before) {
        setting(client, name, value);
    }
    result
}

pub fn count(table: &SpiTupleTable, column: usize) -> i64 {
    table.get::<i64>(column).read_value().unwrap_or(0)
}

/// A statement whose first column is a count.
pub fn run_count(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> i64 {
    let (table, _) = execute(client, sql, params);
    table.first().get::<i64>(1).read_value().unwrap_or(0)
}

pub fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

thread_local! {
    /// Every statement run by `run_kept`, planned once per backend and kept
    /// (keyed by its SQL text, which names the ledger; PostgreSQL's plan cache
    /// replans it when the tables change).
    static KEPT: RefCell<FastMap<String, OwnedPreparedStatement>> = RefCell::new(FastMap::default());
}

/// Run `sql` with its kept plan. Kept plans are prepared as mutating, so every statement runs read-write: a
/// fresh snapshot that sees the transaction's earlier writes (a second call in the same statement reads the
/// checkpoint the first one wrote). `fail` raises the ERROR a failure becomes.
pub fn run_kept<'conn>(
    client: &mut SpiClient<'conn>,
    sql: &str,
    args: &[DatumWithOid<'_>],
    fail: &dyn Fn(String),
) -> SpiTupleTable<'conn> {
    KEPT.with_borrow_mut(|plans| {
        if !plans.contains_key(sql) {
            if plans.len() >= 64 {
                plans.clear();
            }
            let types: Vec<PgOid> = args.iter().map(|a| PgOid::from(a.oid())).collect();
            let plan = client.prepare_mut(sql, &types).unwrap_or_else(|e| raise(fail, e)).keep();
            plans.insert(sql.to_owned(), plan);
        }
        pgrx::spi::Query::execute(&plans[sql], client, None, args).unwrap_or_else(|e| raise(fail, e))
    })
}

/// `fail` raises an ERROR (it never returns).
pub fn raise(fail: &dyn Fn(String), e: impl std::fmt::Display) -> ! {
    fail(e.to_string());
    unreachable!("the failure handler raises an ERROR")
}
