//! SQL surface of the backfill: validate, run the page SQL, persist the
//! checkpoint, return the composite rows (built by the SQL itself).

use super::applied_page;
use super::checkpoint::{self, Checkpoint, Phase};
use super::cursor::{after_argument, Cursor};
use super::progress::{clamp_max_batches, phase_after_page, run_lock_key, run_max_batches, Totals};
use crate::args::{self, ArgError, SchemaName};
use crate::fast_hash::FastMap;
use crate::pg_types::Name;
use crate::shell::{check, existing_schema, raise_arg};
use pgrx::datum::{DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiResult, SpiTupleTable};
use pgrx::{AllocatedByRust, PgOid, PgSqlErrorCode};
use std::cell::RefCell;

type Row = PgHeapTuple<'static, AllocatedByRust>;

const PAGE_RESOURCES: &str = include_str!("../../sql/backfill/page_resources.sql");
const UNWRITTEN_RESOURCES: &str = include_str!("../../sql/backfill/unwritten_resources.sql");
const PAGE_SUMMARY: &str = include_str!("../../sql/backfill/page_summary.sql");
const PAGE_TALLY: &str = include_str!("../../sql/backfill/page_tally.sql");
const APPLY_PAGE: &str = include_str!("../../sql/backfill/apply_page.sql");
const PREVIEW_PAGE: &str = include_str!("../../sql/backfill/preview_page.sql");
const DRY_RUN_PAGE: &str = include_str!("../../sql/backfill/dry_run_page.sql");
const AFTER_CURSOR: &str = include_str!("../../sql/backfill/after_cursor.sql");
const READ_CHECKPOINT: &str = include_str!("../../sql/backfill/read_checkpoint.sql");
const WRITE_CHECKPOINT: &str = include_str!("../../sql/backfill/write_checkpoint.sql");
const PROGRESS: &str = include_str!("../../sql/backfill/progress.sql");
const STATUS: &str = include_str!("../../sql/backfill/status.sql");
const LEDGER_TABLES: &str = include_str!("../../sql/backfill/ledger_tables.sql");

/// A cursor the page SQL takes as parameters.
pub(super) type Position = Cursor<TimestampWithTimeZone>;

#[derive(Clone, Copy)]
enum PageKind {
    Apply,
    Preview,
}

thread_local! {
    /// The orchestrator's small per-page statements, planned once per backend
    /// (keyed by their SQL text, which names the ledger).
    static KEPT: RefCell<FastMap<String, OwnedPreparedStatement>> = RefCell::new(FastMap::default());
}

/// Run `sql` with its plan kept per backend; `read` takes the result.
fn kept<R>(
    client: &mut SpiClient<'_>,
    sql: &str,
    args: &[DatumWithOid<'_>],
    read: impl for<'t> FnOnce(SpiTupleTable<'t>) -> SpiResult<R>,
) -> SpiResult<R> {
    KEPT.with_borrow_mut(|plans| {
        if !plans.contains_key(sql) {
            if plans.len() >= 64 {
                plans.clear();
            }
            let types: Vec<PgOid> = args.iter().map(|a| PgOid::from(a.oid())).collect();
            let plan = client.prepare_mut(sql, &types)?.keep();
            plans.insert(sql.to_owned(), plan);
        }
        read(client.update(&plans[sql], None, args)?)
    })
}

/// The first column of the first row of `sql` (None: no row or NULL), its plan kept.
fn kept_one<T: FromDatum + IntoDatum>(sql: &str, args: &[DatumWithOid<'_>]) -> SpiResult<Option<T>> {
    Spi::connect_mut(|client| {
        kept(client, sql, args, |table| if table.is_empty() { Ok(None) } else { table.first().get_one::<T>() })
    })
}

fn required<T>(argument: &'static str, value: Option<T>) -> T {
    value.unwrap_or_else(|| raise_arg(ArgError::new(argument, "must not be NULL")))
}

/// The ledger schema must exist and hold the tables the backfill uses.
fn ledger(ledger_schema: Option<Name>) -> SchemaName {
    let name = required("ledger_schema", ledger_schema);
    let schema = existing_schema("ledger_schema", name.as_str());
    let missing = kept_one::<String>(LEDGER_TABLES, &[schema.name.as_str().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: checking ledger tables failed: {e}"));
    if let Some(missing) = missing {
        raise_arg(ArgError::new(
            "ledger_schema",
            format!("schema {:?} has no {missing} table (run runtime_sandbox.install_ledger first)", schema.name),
        ));
    }
    schema
}

fn page_limit(batch_size: Option<i32>) -> i32 {
    check(args::batch_size(required("batch_size", batch_size)))
}

fn cursor_args(after: Option<&Position>, limit: i32) -> [DatumWithOid<'static>; 5] {
    [
        after.map(|c| c.updated_at).into(),
        after.map(|c| c.run_id.clone()).into(),
        after.map(|c| c.attempt).into(),
        after.map(|c| c.resource_ordinal).into(),
        limit.into(),
    ]
}

fn with_cursor(sql: &str, ledger: &SchemaName, after: Option<&Position>) -> String {
    sql.replace("@after@", if after.is_some() { AFTER_CURSOR.trim() } else { "" })
        .replace("@ledger@", &ledger.quoted)
}

/// Expand the shared page fragments. The applied page (and its preview) takes
/// only attempts with a run and exactly `$5` resources; the application's own
/// dry-run preview takes every attempt and one resource more.
fn with_page_resources(template: &str, applied_page: bool) -> String {
    let (runs_join, page_limit) = if applied_page { ("JOIN", "$5") } else { ("LEFT JOIN", "$5 + 1") };
    template
        .replace("@page_resources@", PAGE_RESOURCES)
        .replace("@unwritten_resources@", UNWRITTEN_RESOURCES)
        .replace("@runs_join@", runs_join)
        .replace("@page_limit@", page_limit)
}

/// One page as its backfill_page row, with targets (the single-page functions).
fn run_page(client: &mut SpiClient<'_>, kind: PageKind, ledger: &SchemaName, after: Option<&Position>, limit: i32) -> Row {
    let (template, inserted) = match kind {
        PageKind::Apply => (APPLY_PAGE, "(SELECT count(*) FROM inserted)"),
        PageKind::Preview => (PREVIEW_PAGE, "0::bigint"),
    };
    let sql = with_page_resources(template, true).replace("@page_summary@", PAGE_SUMMARY)
        .replace("@page_tally@", PAGE_TALLY)
        .replace("@inserted@", inserted);
    let sql = with_cursor(&sql, ledger, after);
    let fail = |e| -> ! { error!("runtime_sandbox: backfill page on {} failed: {e}", ledger.name) };
    let table = client.update(sql.as_str(), None, &cursor_args(after, limit)).unwrap_or_else(|e| fail(e));
    table.first().get::<Row>(1).unwrap_or_else(|e| fail(e)).expect("the page row is never NULL")
}

/// `after` as the page SQL takes it.
fn after_position(after: Option<PgHeapTuple<'_, AllocatedByRust>>) -> Option<Position> {
    let after = after?;
    let field_error = |e| -> ! { raise_arg(ArgError::new("after", format!("is not a backfill_cursor: {e}"))) };
    let updated_at = after.get_by_name::<TimestampWithTimeZone>("updated_at").unwrap_or_else(|e| field_error(e));
    let run_id = after.get_by_name::<String>("run_id").unwrap_or_else(|e| field_error(e));
    let attempt = after.get_by_name::<i32>("attempt").unwrap_or_else(|e| field_error(e));
    let ordinal = after.get_by_name::<i32>("resource_ordinal").unwrap_or_else(|e| field_error(e));
    Some(check(after_argument(updated_at, run_id, attempt, ordinal)))
}

fn page_function(
    kind: PageKind,
    batch_size: Option<i32>,
    after: Option<PgHeapTuple<'_, AllocatedByRust>>,
    ledger_schema: Option<Name>,
) -> Row {
    let limit = page_limit(batch_size);
    let after = after_position(after);
    let ledger = ledger(ledger_schema);
    Spi::connect_mut(|client| run_page(client, kind, &ledger, after.as_ref(), limit))
}

/// One bounded page of the operation backfill, applied: the application's
/// `backfillRuntimeSandboxOperationsFromAttemptResources`.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn backfill_sandbox_operations(
    batch_size: default!(Option<i32>, 500),
    after: default!(Option<pgrx::composite_type!("runtime_sandbox.backfill_cursor")>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_page") {
    page_function(PageKind::Apply, batch_size, after, ledger_schema)
}

/// The same page as `backfill_sandbox_operations`, without writing.
#[pg_extern(stable, parallel_restricted, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn preview_sandbox_operation_backfill(
    batch_size: default!(Option<i32>, 500),
    after: default!(Option<pgrx::composite_type!("runtime_sandbox.backfill_cursor")>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_page") {
    page_function(PageKind::Preview, batch_size, after, ledger_schema)
}

fn read_checkpoint(ledger: &SchemaName) -> Checkpoint {
    let sql = READ_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    let value = kept_one::<String>(&sql, &[checkpoint::CONTROL_KEY.into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: reading the backfill checkpoint failed: {e}"));
    checkpoint::read(value.as_deref()).unwrap_or_else(|e| checkpoint_error(ledger, e))
}

fn checkpoint_error(ledger: &SchemaName, reason: String) -> ! {
    ereport!(
        PgLogLevel::ERROR,
        PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
        format!(
            "runtime_sandbox: the backfill checkpoint in {}.control (key {}) is unusable: {reason}",
            ledger.quoted,
            checkpoint::CONTROL_KEY
        ),
        "Fix the value, or delete the row to restart the backfill from the oldest attempt."
    );
    unreachable!("ereport(ERROR) does not return")
}

/// A stored cursor's timestamp text, parsed by PostgreSQL as the application's SQL does.
fn position(cursor: Cursor<String>) -> Position {
    let at = kept_one::<TimestampWithTimeZone>("SELECT $1::timestamptz", &[cursor.updated_at.as_str().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: backfill checkpoint cursor.updatedAt: {e}"))
        .expect("a non-NULL text casts to a non-NULL timestamptz");
    Cursor { updated_at: at, run_id: cursor.run_id, attempt: cursor.attempt, resource_ordinal: cursor.resource_ordinal }
}

fn write_checkpoint(client: &mut SpiClient<'_>, ledger: &SchemaName, value: &str) {
    let sql = WRITE_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    kept(client, &sql, &[checkpoint::CONTROL_KEY.into(), value.into()], |_| Ok(()))
        .unwrap_or_else(|e| error!("runtime_sandbox: writing the backfill checkpoint failed: {e}"));
}

fn progress_row(phase: Phase, dry_run: bool, totals: Totals, projected: i64, next: Option<&Position>) -> Row {
    let args: [DatumWithOid; 10] = [
        phase.as_str().into(),
        dry_run.into(),
        totals.batches.into(),
        totals.scanned.into(),
        totals.inserted.into(),
        projected.into(),
        next.map(|c| c.updated_at).into(),
        next.map(|c| c.run_id.clone()).into(),
        next.map(|c| c.attempt).into(),
        next.map(|c| c.resource_ordinal).into(),
    ];
    kept_one::<Row>(PROGRESS, &args)
        .unwrap_or_else(|e| error!("runtime_sandbox: building backfill progress failed: {e}"))
        .expect("a row")
}

/// The persisted, resumable orchestrator: the application's
/// `advanceRuntimeSandboxOperationBackfill`.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn advance_sandbox_operation_backfill(
    dry_run: Option<bool>,
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, 1),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_progress") {
    let dry_run = required("dry_run", dry_run);
    let limit = page_limit(batch_size);
    let ledger = ledger(ledger_schema);
    let stored = read_checkpoint(&ledger);
    if stored.phase == Phase::Complete {
        return progress_row(Phase::Complete, dry_run, Totals::default(), 0, None);
    }
    if dry_run {
        let after = stored.cursor.map(|c| position(c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
        let sql = with_page_resources(DRY_RUN_PAGE, false).replace("@page_tally@", PAGE_TALLY);
        let sql = with_cursor(&sql, &ledger, after.as_ref());
        return Spi::get_one_with_args::<Row>(&sql, &cursor_args(after.as_ref(), limit))
            .unwrap_or_else(|e| error!("runtime_sandbox: backfill dry run on {} failed: {e}", ledger.name))
            .expect("a row");
    }
    let mut after = stored.cursor.map(|c| position(c.to_resume().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
    let mut totals = Totals::default();
    for _ in 0..clamp_max_batches(max_batches) {
        let page = Spi::connect_mut(|client| {
            let page = applied_page::apply_page(client, &ledger, after.as_ref(), limit);
            let phase = phase_after_page(page.has_more);
            let stored_next = page.next.as_ref().map(|(c, text)| Cursor {
                updated_at: text.clone(),
                run_id: c.run_id.clone(),
                attempt: c.attempt,
                resource_ordinal: c.resource_ordinal,
            });
            write_checkpoint(client, &ledger, &checkpoint::write(phase, stored_next.as_ref()));
            page
        });
        totals.add_page(page.scanned, page.inserted);
        after = page.next.map(|(c, _)| c);
        if phase_after_page(page.has_more) == Phase::Complete {
            return progress_row(Phase::Complete, false, totals, totals.projected(), None);
        }
    }
    progress_row(Phase::Pending, false, totals, totals.projected(), after.as_ref())
}

/// How far the backfill has come and what is left.
#[pg_extern(stable, parallel_restricted, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn backfill_status(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> TableIterator<
    'static,
    (
        name!(phase, String),
        name!(cursor, Option<pgrx::composite_type!('static, "runtime_sandbox.backfill_cursor")>),
        name!(attempts_remaining, i64),
    ),
> {
    let ledger = ledger(ledger_schema);
    let stored = read_checkpoint(&ledger);
    if stored.phase == Phase::Complete {
        return TableIterator::once((Phase::Complete.as_str().to_owned(), None, 0));
    }
    // A cursor the next page could not resume from is shown as it is stored;
    // only the numbers must be integers to show it at all.
    let after = stored.cursor.map(|c| position(c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
    let condition = if after.is_some() { "AND (attempt.updated_at, attempt.run_id, attempt.attempt) > ($1, $2, $3)" } else { "" };
    let sql = STATUS.replace("@after_attempt@", condition).replace("@ledger@", &ledger.quoted);
    let args = cursor_args(after.as_ref(), 0);
    let (cursor, remaining) = Spi::get_two_with_args::<Row, i64>(&sql, &args[..4])
        .unwrap_or_else(|e| error!("runtime_sandbox: backfill status on {} failed: {e}", ledger.name));
    TableIterator::once((Phase::Pending.as_str().to_owned(), cursor, remaining.unwrap_or(0)))
}

/// Checks `run_sandbox_operation_backfill`'s arguments before it takes its
/// lock or writes anything, and returns the advisory-lock key of the ledger's run.
#[pg_extern(stable, parallel_restricted)]
#[search_path(pg_catalog, pg_temp)]
fn backfill_run_lock_key(
    batch_size: Option<i32>,
    max_batches: Option<i32>,
    pause: Option<Interval>,
    ledger_schema: Option<Name>,
) -> i64 {
    page_limit(batch_size);
    check(run_max_batches(max_batches));
    let pause = required("pause", pause);
    if pause.is_negative() {
        raise_arg(ArgError::new("pause", "must not be negative"));
    }
    let ledger = ledger(ledger_schema);
    run_lock_key(&ledger.name)
}
