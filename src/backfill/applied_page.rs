//! The orchestrator's applied page (advance_sandbox_operation_backfill and
//! the migration procedure): the same page as `apply_page.sql`, computed
//! with less work. The page SQL expands every resource with
//! jsonb_array_elements and eight `->>`, sorts, ranks with a window function,
//! materializes CTEs and joins RETURNING back to build targets the
//! orchestrator never reports. Here one keyset query fetches the attempts,
//! resources.rs reads their jsonb in place and picks the winners, and one
//! INSERT … SELECT FROM unnest(arrays) writes them (the rows inserted are the
//! statement's row count): first as a plain INSERT in a subtransaction, which
//! skips ON CONFLICT's per-row pre-check of the identity index, and on a
//! unique violation again with `ON CONFLICT … DO NOTHING`, so the rows, counts
//! and errors are the page SQL's. Every statement keeps its plan per backend.

use super::cursor::Cursor;
use super::resources::{self, Fields, InsertMode, Resource};
use super::sql::Position;
use crate::args::SchemaName;
use crate::fast_hash::FastMap;
use crate::pg_types::JsonbBytes;
use pgrx::datum::{DatumWithOid, TimestampWithTimeZone};
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient};
use pgrx::FromDatum;
use pgrx::PgOid;
use pgrx::{PgSqlErrorCode, PgTryBuilder};
use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;

const PAGE_ATTEMPTS: &str = include_str!("../../sql/backfill/page_attempts.sql");
const RESOURCE_FIELDS: &str = include_str!("../../sql/backfill/resource_fields.sql");
const INSERT_OPERATIONS: &str = include_str!("../../sql/backfill/insert_operations.sql");

/// What the orchestrator needs of an applied page.
pub(super) struct AppliedPage {
    pub scanned: i64,
    pub inserted: i64,
    pub has_more: bool,
    /// The last resource, with its timestamp and the timestamp's exact text.
    pub next: Option<(Position, String)>,
}

thread_local! {
    /// The INSERTs of the winners, planned once per backend, ledger schema and
    /// form (PostgreSQL's plan cache replans them when the tables change).
    static INSERT_PLANS: RefCell<FastMap<(String, Insert), OwnedPreparedStatement>> = RefCell::new(FastMap::default());
    /// Whether the next page tries the optimistic insert.
    static INSERT_MODE: Cell<InsertMode> = const { Cell::new(InsertMode::new()) };
    /// The attempts fetches, planned once per backend, ledger, keyset kind and fetch size.
    static FETCH_PLANS: RefCell<FastMap<(String, &'static str, i64), OwnedPreparedStatement>> =
        RefCell::new(FastMap::default());
    /// Sandbox resources per attempt in this backend's last page: sizes the next fetch.
    static RESOURCES_PER_ATTEMPT: Cell<f64> = const { Cell::new(1.0) };
}

struct Attempt {
    updated_at: TimestampWithTimeZone,
    run_id: Vec<u8>,
    attempt: i32,
    org_id: Option<Vec<u8>>,
}

/// Where a fetch starts: at the page's cursor (its attempt included, its
/// resources after its ordinal only), or after an attempt already fetched.
enum FetchFrom {
    Start,
    Cursor { updated_at: TimestampWithTimeZone, run_id: Vec<u8>, attempt: i32, ordinal: i32 },
    After { updated_at: TimestampWithTimeZone, run_id: Vec<u8>, attempt: i32 },
}

fn fail(ledger: &SchemaName, e: impl std::fmt::Display) -> ! {
    error!("runtime_sandbox: backfill page on {} failed: {e}", ledger.name)
}

/// The bytes of a non-NULL varlena datum (detoasted if needed; the copy, if
/// any, lives in the current memory context).
///
/// # Safety
/// `datum` must be a non-NULL varlena datum that outlives the slice.
unsafe fn varlena_bytes<'a>(datum: pg_sys::Datum) -> &'a [u8] {
    unsafe {
        let detoasted = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr::<pg_sys::varlena>());
        std::slice::from_raw_parts(pgrx::vardata_any(detoasted) as *const u8, pgrx::varsize_any_exhdr(detoasted))
    }
}

/// The tuple table of the SPI statement just run, read by position (the
/// table stays valid until SPI_finish, whatever runs after it).
struct Rows {
    table: *mut pg_sys::SPITupleTable,
    count: usize,
}

impl Rows {
    fn of_last_statement() -> Rows {
        // SAFETY: SPI globals, read right after the statement.
        unsafe {
            Rows {
                table: pg_sys::SPI_tuptable,
                count: if pg_sys::SPI_tuptable.is_null() { 0 } else { pg_sys::SPI_processed as usize },
            }
        }
    }

    /// Column `column` (1-based) of row `row`, `None` when NULL.
    fn datum(&self, row: usize, column: i32) -> Option<pg_sys::Datum> {
        assert!(row < self.count);
        let mut is_null = false;
        // SAFETY: row < count rows of a live tuple table; SPI_getbinval checks the column number.
        let datum = unsafe {
            let table = &*self.table;
            pg_sys::SPI_getbinval(*table.vals.add(row), table.tupdesc, column, &mut is_null)
        };
        (!is_null).then_some(datum)
    }

    fn bytes(&self, row: usize, column: i32) -> Option<&[u8]> {
        // SAFETY: a non-NULL text column of the live table.
        self.datum(row, column).map(|d| unsafe { varlena_bytes(d) })
    }
}

fn text_datum(bytes: &[u8]) -> pg_sys::Datum {
    // SAFETY: copies `bytes` into a new text in the current memory context.
    unsafe { pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(bytes.as_ptr().cast(), bytes.len() as i32)) }
}

fn text_arg(bytes: &[u8]) -> DatumWithOid<'static> {
    // SAFETY: a text datum, typed as text.
    unsafe { DatumWithOid::new(text_datum(bytes), pg_sys::TEXTOID) }
}

/// A one-dimensional array (NULL elements allowed) as an argument of type `array_oid`.
fn array_arg(
    values: Vec<Option<pg_sys::Datum>>,
    element: pg_sys::Oid,
    array_oid: pg_sys::Oid,
) -> DatumWithOid<'static> {
    let (mut datums, mut nulls): (Vec<pg_sys::Datum>, Vec<bool>) =
        values.into_iter().map(|v| (v.unwrap_or(pg_sys::Datum::from(0)), v.is_none())).unzip();
    let (mut length, mut by_value, mut align) = (0i16, false, 0 as std::ffi::c_char);
    let mut dims = [datums.len() as i32];
    let mut lower_bounds = [1i32];
    // SAFETY: the element arrays have `dims[0]` entries; construct_md_array copies them.
    unsafe {
        pg_sys::get_typlenbyvalalign(element, &mut length, &mut by_value, &mut align);
        let array = pg_sys::construct_md_array(
            datums.as_mut_ptr(),
            nulls.as_mut_ptr(),
            1,
            dims.as_mut_ptr(),
            lower_bounds.as_mut_ptr(),
            element,
            length.into(),
            by_value,
            align,
        );
        DatumWithOid::new(pg_sys::Datum::from(array), array_oid)
    }
}

/// The resources of one attempt's resource_json: read here, or by the server
/// when a field the page reads is a number or a container.
fn attempt_resources(client: &SpiClient<'_>, ledger: &SchemaName, json: pg_sys::Datum) -> Vec<Resource> {
    // SAFETY: a non-NULL jsonb datum of the current tuple table.
    let payload = unsafe { JsonbBytes::from_polymorphic_datum(json, false, pg_sys::JSONBOID) }.expect("not NULL");
    if let Some(found) = resources::from_jsonb(payload.as_bytes()) {
        return found;
    }
    // SAFETY: the jsonb datum, typed as jsonb.
    let arg = unsafe { DatumWithOid::new(json, pg_sys::JSONBOID) };
    client.select(RESOURCE_FIELDS, None, &[arg]).unwrap_or_else(|e| fail(ledger, e));
    let rows = Rows::of_last_statement();
    let mut found = Vec::new();
    for row in 0..rows.count {
        // SAFETY: resource.ordinal::integer is never NULL.
        let ordinal = unsafe { i32::from_datum(rows.datum(row, 1).expect("an ordinal"), false) }.expect("an ordinal");
        let fields = Fields {
            kind: rows.bytes(row, 2),
            sandbox_id: rows.bytes(row, 3),
            modal_app_id: rows.bytes(row, 4),
            daytona_organization_id: rows.bytes(row, 5),
            runtime_environment: rows.bytes(row, 6),
            daytona_environment: rows.bytes(row, 7),
        };
        found.extend(resources::resource(ordinal, &fields));
    }
    found
}

/// Run the attempts fetch (its plan kept per backend, ledger, keyset kind and fetch size).
fn fetch_attempts(client: &SpiClient<'_>, ledger: &SchemaName, from: &FetchFrom, fetch: i64) {
    let (keyset, args) = condition(from);
    FETCH_PLANS.with_borrow_mut(|plans| {
        let key = (ledger.quoted.clone(), keyset, fetch);
        if !plans.contains_key(&key) {
            if plans.len() >= 32 {
                plans.clear();
            }
            let sql = PAGE_ATTEMPTS
                .replace("@after@", keyset)
                .replace("@fetch@", &fetch.to_string())
                .replace("@ledger@", &ledger.quoted);
            let types = args.iter().map(|a| PgOid::from(a.oid())).collect::<Vec<_>>();
            let plan = client.prepare(sql.as_str(), &types).unwrap_or_else(|e| fail(ledger, e)).keep();
            plans.insert(key.clone(), plan);
        }
        client.select(&plans[&key], None, &args).unwrap_or_else(|e| fail(ledger, e));
    });
}

/// The keyset condition of a fetch and its arguments ($1..$3; none from the start).
fn condition(from: &FetchFrom) -> (&'static str, Vec<DatumWithOid<'static>>) {
    match from {
        FetchFrom::Start => ("", Vec::new()),
        FetchFrom::Cursor { updated_at, run_id, attempt, .. } => (
            "AND (attempt.updated_at, attempt.run_id, attempt.attempt) >= ($1, $2, $3)",
            vec![(*updated_at).into(), text_arg(run_id), (*attempt).into()],
        ),
        FetchFrom::After { updated_at, run_id, attempt } => (
            "AND (attempt.updated_at, attempt.run_id, attempt.attempt) > ($1, $2, $3)",
            vec![(*updated_at).into(), text_arg(run_id), (*attempt).into()],
        ),
    }
}

/// Apply one page of at most `limit` resources after `after` (NULL: from the oldest).
pub(super) fn apply_page(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    after: Option<&Position>,
    limit: i32,
) -> AppliedPage {
    let limit = usize::try_from(limit).expect("batch_size is positive");
    let mut from = match after {
        None => FetchFrom::Start,
        Some(c) => FetchFrom::Cursor {
            updated_at: c.updated_at,
            run_id: c.run_id.as_bytes().to_vec(),
            attempt: c.attempt,
            ordinal: c.resource_ordinal,
        },
    };
    let mut attempts: Vec<Attempt> = Vec::new();
    // The page's resources in keyset order, each with its attempt's index.
    let mut page: Vec<(usize, Resource)> = Vec::with_capacity(limit);
    let rate = RESOURCES_PER_ATTEMPT.with(Cell::get);
    loop {
        let wanted = limit - page.len();
        let fetch = resources::attempts_to_fetch(wanted, rate);
        fetch_attempts(client, ledger, &from, fetch);
        let rows = Rows::of_last_statement();
        let fetched = rows.count;
        for row in 0..rows.count {
            // SAFETY: updated_at, run_id, attempt and resource_json are NOT NULL here (the first three
            // by the table, the last by the query); the datums are of the columns' types.
            let (updated_at, attempt) = unsafe {
                (
                    TimestampWithTimeZone::from_datum(rows.datum(row, 1).expect("NOT NULL"), false).expect("NOT NULL"),
                    i32::from_datum(rows.datum(row, 3).expect("NOT NULL"), false).expect("NOT NULL"),
                )
            };
            let run_id = rows.bytes(row, 2).expect("NOT NULL").to_vec();
            let org_id = rows.bytes(row, 4).map(<[u8]>::to_vec);
            let json = rows.datum(row, 5).expect("NOT NULL");
            // SAFETY: has_run is a NOT NULL boolean.
            let has_run = unsafe { bool::from_datum(rows.datum(row, 6).expect("NOT NULL"), false) }.expect("NOT NULL");
            let skip_through = match &from {
                FetchFrom::Cursor { updated_at: u, run_id: r, attempt: a, ordinal }
                    if *u == updated_at && *r == run_id && *a == attempt =>
                {
                    *ordinal
                }
                _ => 0,
            };
            let index = attempts.len();
            // Attempts without a run are skipped (kept only as where the next fetch starts).
            let found = if has_run { attempt_resources(client, ledger, json) } else { Vec::new() };
            for resource in found {
                if resource.ordinal > skip_through && page.len() < limit {
                    page.push((index, resource));
                }
            }
            attempts.push(Attempt { updated_at, run_id, attempt, org_id });
            if page.len() == limit {
                break;
            }
        }
        if page.len() == limit || fetched < usize::try_from(fetch).unwrap_or(usize::MAX) {
            break;
        }
        let last = attempts.last().expect("a full fetch has attempts");
        from = FetchFrom::After { updated_at: last.updated_at, run_id: last.run_id.clone(), attempt: last.attempt };
    }
    if !attempts.is_empty() {
        RESOURCES_PER_ATTEMPT.with(|r| r.set(page.len() as f64 / attempts.len() as f64));
    }

    let inserted = insert_winners(client, ledger, &attempts, &page);
    let next = page.last().map(|(index, resource)| {
        let attempt = &attempts[*index];
        // SAFETY: timestamptz_out of a timestamptz: `updated_at::text` as the page SQL prints it.
        let text = unsafe {
            pgrx::direct_function_call::<&std::ffi::CStr>(pg_sys::timestamptz_out, &[attempt.updated_at.into_datum()])
        }
        .expect("timestamptz_out returns text")
        .to_string_lossy()
        .into_owned();
        let cursor = Cursor {
            updated_at: attempt.updated_at,
            run_id: String::from_utf8_lossy(&attempt.run_id).into_owned(),
            attempt: attempt.attempt,
            resource_ordinal: resource.ordinal,
        };
        (cursor, text)
    });
    AppliedPage { scanned: page.len() as i64, inserted, has_more: page.len() == limit, next }
}

/// Insert the page's winners; returns how many rows were inserted.
fn insert_winners(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    attempts: &[Attempt],
    page: &[(usize, Resource)],
) -> i64 {
    let resources: Vec<&Resource> = page.iter().map(|(_, r)| r).collect();
    let winners = resources::winners(&resources);
    if winners.is_empty() {
        return 0;
    }
    let column = |f: &dyn Fn(&Attempt, &Resource) -> Option<pg_sys::Datum>| -> Vec<Option<pg_sys::Datum>> {
        winners.iter().map(|&i| f(&attempts[page[i].0], &page[i].1)).collect()
    };
    let texts = |f: &dyn Fn(&Attempt, &Resource) -> Option<pg_sys::Datum>| {
        array_arg(column(f), pg_sys::TEXTOID, pg_sys::TEXTARRAYOID)
    };
    let args = [
        texts(&|_, r| Some(text_datum(&r.operation_key()))),
        texts(&|_, r| Some(text_datum(r.provider.as_str().as_bytes()))),
        texts(&|a, _| Some(text_datum(&a.run_id))),
        array_arg(column(&|a, _| Some(pg_sys::Datum::from(a.attempt))), pg_sys::INT4OID, pg_sys::INT4ARRAYOID),
        texts(&|a, _| a.org_id.as_deref().map(text_datum)),
        texts(&|_, r| Some(text_datum(&r.environment))),
        texts(&|_, r| Some(text_datum(&r.sandbox_id))),
        texts(&|_, r| r.routing_domain.as_deref().map(text_datum)),
        array_arg(column(&|a, _| a.updated_at.into_datum()), pg_sys::TIMESTAMPTZOID, pg_sys::TIMESTAMPTZARRAYOID),
    ];
    let count = winners.len() as i64;
    if INSERT_MODE.with(Cell::get).optimistic() {
        if let Some(inserted) = insert_without_conflicts(client, ledger, &args) {
            return inserted;
        }
        INSERT_MODE.with(|m| m.set(InsertMode::after_conflict()));
    }
    let inserted = run_insert(client, ledger, Insert::OnConflictDoNothing, &args);
    INSERT_MODE.with(|m| m.set(m.get().after_page(inserted == count)));
    inserted
}

/// The two forms of the winners' INSERT.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Insert {
    /// `ON CONFLICT (identity) DO NOTHING`: the page SQL's insert.
    OnConflictDoNothing,
    /// A plain INSERT: cheaper (no speculative pre-check of the identity
    /// index per row), and the same rows when no winner's identity exists yet.
    Plain,
}

/// Run one form of the INSERT (its plan kept per backend and ledger); the rows inserted.
fn run_insert(client: &mut SpiClient<'_>, ledger: &SchemaName, insert: Insert, args: &[DatumWithOid<'static>]) -> i64 {
    INSERT_PLANS.with_borrow_mut(|plans| {
        let key = (ledger.quoted.clone(), insert);
        if !plans.contains_key(&key) {
            let on_conflict = match insert {
                Insert::OnConflictDoNothing => "ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING",
                Insert::Plain => "",
            };
            let sql = INSERT_OPERATIONS.replace("@on_conflict@", on_conflict).replace("@ledger@", &ledger.quoted);
            let types = args.iter().map(|a| PgOid::from(a.oid())).collect::<Vec<_>>();
            let plan = client.prepare_mut(sql.as_str(), &types).unwrap_or_else(|e| fail(ledger, e)).keep();
            plans.insert(key.clone(), plan);
        }
        let table = client.update(&plans[&key], None, args).unwrap_or_else(|e| fail(ledger, e));
        table.len() as i64
    })
}

/// The optimistic insert: a plain INSERT in a subtransaction. `None` (and
/// nothing written) when a winner's identity (or operation key) already
/// exists: the caller inserts with ON CONFLICT DO NOTHING instead, so the
/// rows written, the count and any error are the page SQL's. Any other error
/// rolls the subtransaction back and is raised as it is.
fn insert_without_conflicts(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    args: &[DatumWithOid<'static>],
) -> Option<i64> {
    // As PL/pgSQL runs a block with an EXCEPTION clause (pl_exec.c).
    // SAFETY: the subtransaction is begun here and released or rolled back on every path below.
    let (context, owner) = unsafe {
        let saved = (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner);
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(saved.0);
        saved
    };
    let end = move |commit: bool| unsafe {
        if commit {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    };
    let client = std::cell::RefCell::new(client);
    PgTryBuilder::new(AssertUnwindSafe(|| {
        let inserted = run_insert(&mut client.borrow_mut(), ledger, Insert::Plain, args);
        end(true);
        Some(inserted)
    }))
    .catch_when(PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION, |_| {
        end(false);
        None
    })
    .catch_others(|error| {
        end(false);
        error.rethrow()
    })
    .execute()
}
