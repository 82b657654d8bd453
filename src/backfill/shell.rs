//! The backfill's pgrx shell: the SQL functions, their SPI statements (one
//! kept plan each), and the conversions between datums and the pure core.
//!
//! Every entry point runs the same page (`page.rs`): the shell fetches the
//! attempts (`sql/queries/backfill/attempts_*.sql`), reads their resources in
//! place (`resources.rs`), and then, per entry point, inserts the winners
//! (`insert_new_operations.sql`, else `insert_operations*.sql`), or asks which
//! of them exist already (`existing_identities.sql`), and builds the result row.
//! The statements name the ledger by `@ledger@` (the validated, quoted schema);
//! the attempts' fetch size is the literal `@fetch@` (one kept plan per size).

use super::checkpoint::{self, Checkpoint, Phase};
use super::cursor::{after_argument, Cursor};
use super::js_date::date_parse_accepts;
use super::page::{After, Attempt, AttemptKey, FetchFrom, Page, Rules, Scan};
use super::progress::{clamp_max_batches, phase_after_page, run_lock_key, run_max_batches, Totals, MAX_BATCHES};
use super::resources::{self, Field, InsertMode, Resource};
use crate::args::{self, SchemaName};
use crate::error::{Error, Kind};
use crate::fast_hash::{FastMap, FastSet};
use crate::ledger::Access;
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{OrRaise, Raise};
use pgrx::datum::{DatumWithOid, Interval};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use pgrx::{AllocatedByRust, FromDatum, PgOid, PgSqlErrorCode, PgTryBuilder};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::panic::AssertUnwindSafe;

type Row = PgHeapTuple<'static, AllocatedByRust>;

const ATTEMPTS_FROM_START: &str = include_str!("../../sql/queries/backfill/attempts_from_start.sql");
const ATTEMPTS_FROM_CURSOR: &str = include_str!("../../sql/queries/backfill/attempts_from_cursor.sql");
const ATTEMPTS_AFTER: &str = include_str!("../../sql/queries/backfill/attempts_after.sql");
const RESOURCE_FIELDS: &str = include_str!("../../sql/queries/backfill/resource_fields.sql");
const INSERT_OPERATIONS: &str = include_str!("../../sql/queries/backfill/insert_operations.sql");
const INSERT_OPERATIONS_RETURNING_KEYS: &str =
    include_str!("../../sql/queries/backfill/insert_operations_returning_keys.sql");
const INSERT_NEW_OPERATIONS: &str = include_str!("../../sql/queries/backfill/insert_new_operations.sql");
const INSERT_OPERATIONS_TYPED_ORG_ID: &str = include_str!("../../sql/queries/backfill/insert_operations_typed_org_id.sql");
const INSERT_OPERATIONS_RETURNING_KEYS_TYPED_ORG_ID: &str =
    include_str!("../../sql/queries/backfill/insert_operations_returning_keys_typed_org_id.sql");
const INSERT_NEW_OPERATIONS_TYPED_ORG_ID: &str =
    include_str!("../../sql/queries/backfill/insert_new_operations_typed_org_id.sql");
const EXISTING_IDENTITIES: &str = include_str!("../../sql/queries/backfill/existing_identities.sql");
const PAGE_ROW: &str = include_str!("../../sql/queries/backfill/page_row.sql");
const PROGRESS_ROW: &str = include_str!("../../sql/queries/backfill/progress_row.sql");
const READ_CHECKPOINT: &str = include_str!("../../sql/queries/backfill/read_checkpoint.sql");
const WRITE_CHECKPOINT: &str = include_str!("../../sql/queries/backfill/write_checkpoint.sql");
const STATUS_WITHOUT_CURSOR: &str = include_str!("../../sql/queries/backfill/status_without_cursor.sql");
const STATUS_AFTER_CURSOR: &str = include_str!("../../sql/queries/backfill/status_after_cursor.sql");

// ---------------------------------------------------------------------------
// Statements and rows

thread_local! {
    /// Every statement the backfill runs, planned once per backend and kept
    /// (keyed by its SQL text, which names the ledger; PostgreSQL's plan cache
    /// replans it when the tables change).
    static KEPT: RefCell<FastMap<String, OwnedPreparedStatement>> = RefCell::new(FastMap::default());
    /// Whether the next applied page tries the optimistic insert.
    static INSERT_MODE: Cell<InsertMode> = const { Cell::new(InsertMode::new()) };
    /// Sandbox resources per attempt in this backend's last page: sizes the next fetch.
    static RESOURCES_PER_ATTEMPT: Cell<f64> = const { Cell::new(1.0) };
}

/// Run `sql` with its kept plan. The result is also the SPI tuple table `Rows` reads. Kept plans are
/// prepared as mutating, so every statement runs read-write: a fresh snapshot that sees the transaction's
/// earlier writes (a second call in the same statement reads the checkpoint the first one wrote).
fn run_kept<'conn>(
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
fn raise(fail: &dyn Fn(String), e: impl std::fmt::Display) -> ! {
    fail(e.to_string());
    unreachable!("the failure handler raises an ERROR")
}

/// The tuple table of the SPI statement just run, read by position (valid
/// until SPI_finish, whatever runs after it).
struct Rows {
    table: *mut pg_sys::SPITupleTable,
    count: usize,
}

impl Rows {
    /// The statement's rows, after checking that its columns are of the
    /// `expected` types (every value is read in binary form: a column of
    /// another type would be misread). The statements cast what they read,
    /// so a mismatch is a bug, raised as an error, never a misread.
    fn of_last_statement(expected: &[pg_sys::Oid]) -> Rows {
        // SAFETY: SPI globals, read right after the statement; the tuple
        // descriptor has natts attributes.
        let rows = unsafe {
            Rows {
                table: pg_sys::SPI_tuptable,
                count: if pg_sys::SPI_tuptable.is_null() { 0 } else { pg_sys::SPI_processed as usize },
            }
        };
        if !rows.table.is_null() {
            let found: Vec<pg_sys::Oid> = unsafe {
                let desc = (*rows.table).tupdesc;
                (1..=(*desc).natts).map(|column| pg_sys::SPI_gettypeid(desc, column)).collect()
            };
            if found.len() < expected.len() || found.iter().zip(expected).any(|(f, e)| f != e) {
                error!("runtime_sandbox: a backfill statement returned columns of types {found:?}, expected {expected:?}");
            }
        }
        rows
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

    fn int(&self, row: usize, column: i32) -> Option<i64> {
        self.datum(row, column).map(|d| d.value() as i64)
    }

    fn bool(&self, row: usize, column: i32) -> Option<bool> {
        self.datum(row, column).map(|d| d.value() != 0)
    }
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

fn text_datum(bytes: &[u8]) -> pg_sys::Datum {
    // SAFETY: copies `bytes` into a new text in the current memory context.
    unsafe { pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(bytes.as_ptr().cast(), bytes.len() as i32)) }
}

fn text_arg(bytes: Option<&[u8]>) -> DatumWithOid<'static> {
    match bytes {
        // SAFETY: a text datum, typed as text.
        Some(bytes) => unsafe { DatumWithOid::new(text_datum(bytes), pg_sys::TEXTOID) },
        None => DatumWithOid::null_oid(pg_sys::TEXTOID),
    }
}

fn timestamptz_arg(at: Option<i64>) -> DatumWithOid<'static> {
    match at {
        // SAFETY: a timestamptz is an int64 by value.
        Some(at) => unsafe { DatumWithOid::new(pg_sys::Datum::from(at), pg_sys::TIMESTAMPTZOID) },
        None => DatumWithOid::null_oid(pg_sys::TIMESTAMPTZOID),
    }
}

/// A one-dimensional array (NULL elements allowed) as an argument of type `array_oid`.
fn array_arg(values: Vec<Option<pg_sys::Datum>>, element: pg_sys::Oid, array_oid: pg_sys::Oid) -> DatumWithOid<'static> {
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

fn texts<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| v.map(text_datum)).collect(), pg_sys::TEXTOID, pg_sys::TEXTARRAYOID)
}

fn integers(values: impl Iterator<Item = i32>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::INT4OID, pg_sys::INT4ARRAYOID)
}

fn booleans(values: impl Iterator<Item = bool>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::BOOLOID, pg_sys::BOOLARRAYOID)
}

fn timestamps(values: impl Iterator<Item = i64>) -> DatumWithOid<'static> {
    array_arg(values.map(|v| Some(pg_sys::Datum::from(v))).collect(), pg_sys::TIMESTAMPTZOID, pg_sys::TIMESTAMPTZARRAYOID)
}

// ---------------------------------------------------------------------------
// Arguments

fn required<T>(argument: &'static str, value: Option<T>) -> T {
    value.unwrap_or_else(|| Error::argument(argument, "must not be NULL").raise())
}

/// What the backfill does with the ledger's tables (the DETAIL when they are missing).
const LEDGER_USE: &str = "The backfill reads attempts and runs, inserts into runtime_sandbox_operations and keeps its \
                          checkpoint in control.";


/// The ledger schema must exist, hold the tables the backfill uses as it
/// needs them, and the caller must be able to act as its owner (the
/// statements run as the owner: `Access::run`).
/// `reading`: the call only reads (a preview, the status).
fn ledger(ledger_schema: Option<Name>, reading: bool) -> (SchemaName, Access) {
    let name = required("ledger_schema", ledger_schema);
    let schema = args::schema_name("ledger_schema", name.as_str()).or_raise();
    let access = crate::ledger::require_with(&schema, crate::ledger::requirements::uses::BACKFILL, "the backfill", LEDGER_USE, reading);
    (schema, access)
}

fn page_limit(batch_size: Option<i32>) -> usize {
    args::batch_size(required("batch_size", batch_size)).or_raise() as usize
}

/// The `after` argument of the single-page functions: every field set, and a
/// cursor the application accepts (its `Date.parse` of the timestamp's text).
fn after_position(after: Option<PgHeapTuple<'_, AllocatedByRust>>) -> Option<After> {
    let after = after?;
    let field_error = |e| -> ! { Error::argument("after", format!("is not a backfill_cursor: {e}")).raise() };
    let updated_at = after.get_by_name::<pgrx::datum::TimestampWithTimeZone>("updated_at").unwrap_or_else(|e| field_error(e));
    let run_id = after.get_by_name::<String>("run_id").unwrap_or_else(|e| field_error(e));
    let attempt = after.get_by_name::<i32>("attempt").unwrap_or_else(|e| field_error(e));
    let ordinal = after.get_by_name::<i32>("resource_ordinal").unwrap_or_else(|e| field_error(e));
    let cursor = after_argument(updated_at.map(i64::from), run_id, attempt, ordinal).or_raise();
    let text = iso_timestamp(cursor.updated_at);
    if !date_parse_accepts(&text) {
        Error::argument("after", format!("updated_at {text} is not a timestamp the application accepts")).raise();
    }
    Some(position(&cursor))
}

fn position(cursor: &Cursor<i64>) -> After {
    After {
        attempt: AttemptKey {
            updated_at: cursor.updated_at,
            run_id: cursor.run_id.as_bytes().to_vec(),
            attempt: cursor.attempt,
        },
        ordinal: cursor.resource_ordinal,
    }
}

// ---------------------------------------------------------------------------
// Timestamps as the application's sessions print and read them

/// Runs `f` with DateStyle `ISO, MDY`, node-postgres's (the application's
/// sessions never change it), whatever this session's is.
fn in_application_datestyle<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(i32, i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: the GUC's own variables, put back as they were.
            unsafe {
                pg_sys::DateStyle = self.0;
                pg_sys::DateOrder = self.1;
            }
        }
    }
    // SAFETY: reading and setting the GUC's variables for the duration of `f` (restored on unwind too).
    let _restore = unsafe { Restore(pg_sys::DateStyle, pg_sys::DateOrder) };
    unsafe {
        pg_sys::DateStyle = pg_sys::USE_ISO_DATES as i32;
        pg_sys::DateOrder = pg_sys::DATEORDER_MDY as i32;
    }
    f()
}

/// `updated_at::text` as the application's session prints it: ISO style,
/// every microsecond, this session's TimeZone.
fn iso_timestamp(at: i64) -> String {
    in_application_datestyle(|| {
        // SAFETY: timestamptz_out of a timestamptz.
        unsafe { pgrx::direct_function_call::<&CStr>(pg_sys::timestamptz_out, &[Some(pg_sys::Datum::from(at))]) }
            .expect("timestamptz_out returns text")
            .to_string_lossy()
            .into_owned()
    })
}

/// A stored cursor's text read as the application's `$1::timestamptz` reads it.
fn read_timestamp(ledger: &SchemaName, text: &str) -> i64 {
    let Ok(cstring) = CString::new(text) else {
        checkpoint_error(ledger, format!("cursor.updatedAt {text:?} contains a NUL character"))
    };
    in_application_datestyle(|| {
        PgTryBuilder::new(|| {
            // SAFETY: timestamptz_in(cstring, typioparam, typmod).
            unsafe {
                pgrx::direct_function_call::<i64>(
                    pg_sys::timestamptz_in,
                    &[
                        Some(pg_sys::Datum::from(cstring.as_ptr())),
                        Some(pg_sys::Datum::from(pg_sys::InvalidOid)),
                        Some(pg_sys::Datum::from(-1i32)),
                    ],
                )
            }
            .expect("timestamptz_in returns a timestamp")
        })
        .catch_others(|e| match e {
            pg_sys::panic::CaughtError::PostgresError(report) => {
                checkpoint_error(ledger, format!("cursor.updatedAt {text:?}: {}", report.message()))
            }
            other => other.rethrow(),
        })
        .execute()
    })
}

// ---------------------------------------------------------------------------
// The page

/// Fetch the next attempts (the kept plan per ledger, keyset kind and fetch size).
fn fetch_attempts(client: &mut SpiClient<'_>, ledger: &SchemaName, from: &FetchFrom, fetch: i64) -> Rows {
    let (statement, key) = match from {
        FetchFrom::Start => (ATTEMPTS_FROM_START, None),
        FetchFrom::AtOrAfter(key) => (ATTEMPTS_FROM_CURSOR, Some(key)),
        FetchFrom::After(key) => (ATTEMPTS_AFTER, Some(key)),
    };
    let sql = statement.replace("@fetch@", &fetch.to_string()).replace("@ledger@", &ledger.quoted);
    // Within a page, the next fetch starts after the last attempt read: a
    // char(n) run_id compares with text without its blanks there. (A cursor
    // keeps them, as the application's does, and compares as its does.)
    let trimmed;
    let run_id = match (from, key) {
        (FetchFrom::After(_), Some(key)) if crate::ledger::padded_run_id(ledger) => {
            trimmed = without_trailing_blanks(&key.run_id);
            Some(trimmed)
        }
        (_, key) => key.map(|k| k.run_id.as_slice()),
    };
    let args: Vec<DatumWithOid<'static>> = match (key, run_id) {
        (Some(key), Some(run_id)) => vec![timestamptz_arg(Some(key.updated_at)), text_arg(Some(run_id)), key.attempt.into()],
        _ => Vec::new(),
    };
    run_kept(client, &sql, &args, &|e| page_failed(ledger, e));
    use pg_sys::{BOOLOID, INT4OID, JSONBOID, TEXTOID, TIMESTAMPTZOID};
    Rows::of_last_statement(&[TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, JSONBOID, BOOLOID])
}

/// A char(n) value as PostgreSQL converts it to text (bpchar's rtrim of blanks).
fn without_trailing_blanks(id: &[u8]) -> &[u8] {
    &id[..id.len() - id.iter().rev().take_while(|&&b| b == b' ').count()]
}

fn page_failed(ledger: &SchemaName, e: impl std::fmt::Display) -> ! {
    error!("runtime_sandbox: backfill page on {} failed: {e}", ledger.name)
}

type ToastKey = (pg_sys::Oid, pg_sys::Oid, i32, u32);

/// Values at least this large, stored out of line, are kept detoasted between pages.
const LARGE_VALUE_BYTES: usize = 1 << 20;

thread_local! {
    /// The last large resource_json a page read, detoasted, by its TOAST
    /// pointer (toast relation, value id, sizes and compression: the stored
    /// value itself, whatever row version points to it). The next page of
    /// the same attempt reads it from here instead of decompressing it again:
    /// a page's cost stays the page's, not the attempt's.
    static LARGE_VALUE: RefCell<Option<(ToastKey, Vec<u8>)>> = const { RefCell::new(None) };
}

/// `read` the payload of a non-NULL jsonb datum, from the cache when it is
/// the large value read last.
fn with_large_value<R>(json: pg_sys::Datum, read: impl FnOnce(&[u8]) -> R) -> R {
    let pointer = json.cast_mut_ptr::<pg_sys::varlena>();
    // SAFETY: a varlena datum; an on-disk TOAST pointer is the 2-byte header and a varatt_external.
    let stored = unsafe {
        (pgrx::varatt_is_1b_e(pointer) && pgrx::vartag_external(pointer) == pg_sys::vartag_external::VARTAG_ONDISK as u8)
            .then(|| {
                let external: pg_sys::varatt_external =
                    std::ptr::read_unaligned((pointer as *const u8).add(2) as *const pg_sys::varatt_external);
                (external.va_toastrelid, external.va_valueid, external.va_rawsize, external.va_extinfo)
            })
    };
    if let Some(key) = stored {
        let hit = LARGE_VALUE.with_borrow(|cached| cached.as_ref().is_some_and(|(k, _)| *k == key));
        if !hit {
            // SAFETY: a non-NULL jsonb datum of the current tuple table.
            let payload = unsafe { JsonbBytes::from_polymorphic_datum(json, false, pg_sys::JSONBOID) }.expect("not NULL");
            if payload.as_bytes().len() < LARGE_VALUE_BYTES {
                return read(payload.as_bytes());
            }
            LARGE_VALUE.with_borrow_mut(|cached| *cached = Some((key, payload.as_bytes().to_vec())));
        }
        return LARGE_VALUE.with_borrow(|cached| read(&cached.as_ref().expect("cached above").1));
    }
    // SAFETY: a non-NULL jsonb datum of the current tuple table.
    let payload = unsafe { JsonbBytes::from_polymorphic_datum(json, false, pg_sys::JSONBOID) }.expect("not NULL");
    read(payload.as_bytes())
}

/// The sandbox resources of one attempt's resource_json: read in place, or
/// (when jsonb's layout is not what the reader expects) from the server's `->>`.
fn attempt_resources(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    json: pg_sys::Datum,
    (after, room): (i32, usize),
) -> Vec<Resource> {
    let found = with_large_value(json, |payload| resources::window_of_jsonb(payload, after, room));
    if let Some(found) = found {
        if found.len() < room {
            // The attempt is read to its end: its cached copy is of no more use.
            LARGE_VALUE.with_borrow_mut(|cached| *cached = None);
        }
        return found;
    }
    // SAFETY: the jsonb datum, typed as jsonb.
    let arg = unsafe { DatumWithOid::new(json, pg_sys::JSONBOID) };
    run_kept(client, RESOURCE_FIELDS, &[arg], &|e| page_failed(ledger, e));
    let rows = Rows::of_last_statement(&[pg_sys::INT4OID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::TEXTOID]);
    let mut found = Vec::new();
    for row in 0..rows.count {
        let ordinal = rows.int(row, 1).expect("an ordinal") as i32;
        let column = |field: Field| 2 + Field::ALL.iter().position(|&f| f == field).expect("a field") as i32;
        let resource = resources::resource(ordinal, |field| Ok::<_, ()>(rows.bytes(row, column(field)).map(Cow::Borrowed)));
        found.extend(resource.expect("infallible"));
    }
    found
}

/// Assemble one page after `after` by the given rules.
fn scan_page(client: &mut SpiClient<'_>, ledger: &SchemaName, rules: Rules, after: Option<After>) -> Page {
    let mut scan = Scan::new(rules, after);
    let rate = RESOURCES_PER_ATTEMPT.with(Cell::get);
    while let Some((from, fetch)) = scan.next_fetch(rate) {
        let from = from.clone();
        let rows = fetch_attempts(client, ledger, &from, fetch);
        for row in 0..rows.count {
            if scan.is_full() {
                break;
            }
            let key = AttemptKey {
                updated_at: rows.int(row, 1).expect("updated_at is NOT NULL"),
                run_id: rows.bytes(row, 2).expect("run_id is NOT NULL").to_vec(),
                attempt: rows.int(row, 3).expect("attempt is NOT NULL") as i32,
            };
            let attempt = Attempt {
                key,
                org_id: rows.bytes(row, 4).map(<[u8]>::to_vec),
                has_run: rows.bool(row, 6).expect("has_run is NOT NULL"),
            };
            let found = if scan.reads(&attempt) {
                let window = scan.window(&attempt.key);
                attempt_resources(client, ledger, rows.datum(row, 5).expect("resource_json is NOT NULL here"), window)
            } else {
                Vec::new()
            };
            scan.push(attempt, found);
        }
        scan.end_fetch(rows.count, fetch);
    }
    let page = scan.finish();
    if let Some(rate) = page.resources_per_attempt() {
        RESOURCES_PER_ATTEMPT.with(|r| r.set(rate));
    }
    page
}

/// The two forms of the winners' INSERT.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Insert {
    /// `ON CONFLICT (identity) DO NOTHING`: the application's insert.
    SkipExisting,
    /// A plain INSERT: cheaper (no speculative pre-check of the identity
    /// index per row), and the same rows when no winner's identity exists yet.
    New,
}

/// What the winners' INSERT did: how many rows, and (when asked) their operation keys.
struct Inserted {
    count: i64,
    keys: Option<FastSet<Vec<u8>>>,
}

/// Insert the page's winners as live operations; existing operations are never changed.
fn insert_winners(client: &mut SpiClient<'_>, ledger: &SchemaName, page: &Page, winners: &[usize], with_keys: bool) -> Inserted {
    if winners.is_empty() {
        return Inserted { count: 0, keys: with_keys.then(FastSet::default) };
    }
    let items: Vec<_> = winners.iter().map(|&i| page.item(i)).collect();
    let keys: Vec<Vec<u8>> = items.iter().map(|item| item.resource.operation_key()).collect();
    // A char(n) run_id goes in as PostgreSQL converts it to text: without its trailing blanks.
    let padded = crate::ledger::padded_run_id(ledger);
    let run_ids: Vec<&[u8]> = items
        .iter()
        .map(|item| if padded { without_trailing_blanks(&item.attempt.key.run_id) } else { item.attempt.key.run_id.as_slice() })
        .collect();
    let args = [
        texts(keys.iter().map(|k| Some(k.as_slice()))),
        texts(items.iter().map(|item| Some(item.resource.provider.as_str().as_bytes()))),
        texts(run_ids.iter().map(|id| Some(*id))),
        integers(items.iter().map(|item| item.attempt.key.attempt)),
        texts(items.iter().map(|item| item.attempt.org_id.as_deref())),
        texts(items.iter().map(|item| Some(item.resource.environment.as_slice()))),
        texts(items.iter().map(|item| Some(item.resource.sandbox_id.as_slice()))),
        texts(items.iter().map(|item| item.resource.routing_domain.as_deref())),
        timestamps(items.iter().map(|item| item.attempt.key.updated_at)),
    ];
    let all = winners.len() as i64;
    // On Citus the plain INSERT runs as a COPY, whose unique violation comes back as XX000, and an INSERT ...
    // SELECT ... ON CONFLICT DO NOTHING reports the rows it sent, not those inserted: there the rows are
    // counted from RETURNING.
    if crate::ledger::in_citus(ledger) {
        let inserted = run_insert(client, ledger, Insert::SkipExisting, &args, &keys, true);
        let keys = inserted.keys.expect("asked for");
        return Inserted { count: keys.len() as i64, keys: with_keys.then_some(keys) };
    }
    if INSERT_MODE.with(Cell::get).optimistic() {
        if let Some(inserted) = insert_without_conflicts(client, ledger, &args, &keys, with_keys) {
            return inserted;
        }
        INSERT_MODE.with(|m| m.set(InsertMode::after_conflict()));
    }
    let inserted = run_insert(client, ledger, Insert::SkipExisting, &args, &keys, with_keys);
    INSERT_MODE.with(|m| m.set(m.get().after_page(inserted.count == all)));
    inserted
}

/// Run one form of the INSERT (`winner_keys`: the operation keys of the rows in `args`).
fn run_insert(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    insert: Insert,
    args: &[DatumWithOid<'static>],
    winner_keys: &[Vec<u8>],
    with_keys: bool,
) -> Inserted {
    let statement = match (insert, with_keys, crate::ledger::typed_org_id(ledger)) {
        (Insert::New, _, false) => INSERT_NEW_OPERATIONS,
        (Insert::SkipExisting, false, false) => INSERT_OPERATIONS,
        (Insert::SkipExisting, true, false) => INSERT_OPERATIONS_RETURNING_KEYS,
        (Insert::New, _, true) => INSERT_NEW_OPERATIONS_TYPED_ORG_ID,
        (Insert::SkipExisting, false, true) => INSERT_OPERATIONS_TYPED_ORG_ID,
        (Insert::SkipExisting, true, true) => INSERT_OPERATIONS_RETURNING_KEYS_TYPED_ORG_ID,
    };
    let sql = statement.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, args, &|e| page_failed(ledger, e));
    // SAFETY: SPI_processed of the INSERT just run.
    let count = unsafe { pg_sys::SPI_processed } as i64;
    let keys = with_keys.then(|| match insert {
        // A plain INSERT inserts every row or fails.
        Insert::New => winner_keys.iter().cloned().collect(),
        Insert::SkipExisting => {
            let rows = Rows::of_last_statement(&[pg_sys::TEXTOID]);
            (0..rows.count).map(|row| rows.bytes(row, 1).expect("operation_key is NOT NULL").to_vec()).collect()
        }
    });
    Inserted { count, keys }
}

/// The optimistic insert: a plain INSERT in a subtransaction. `None` (and
/// nothing written) when a winner's identity (or operation key) already
/// exists: the caller inserts with ON CONFLICT DO NOTHING instead, so the
/// rows written, the count and any error are the application's. Any other
/// error rolls the subtransaction back and is raised as it is.
fn insert_without_conflicts(
    client: &mut SpiClient<'_>,
    ledger: &SchemaName,
    args: &[DatumWithOid<'static>],
    winner_keys: &[Vec<u8>],
    with_keys: bool,
) -> Option<Inserted> {
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
    PgTryBuilder::new(AssertUnwindSafe(|| {
        let inserted = run_insert(client, ledger, Insert::New, args, winner_keys, with_keys);
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

/// Which of the winners' identities have an operation already.
fn existing(client: &mut SpiClient<'_>, ledger: &SchemaName, page: &Page, winners: &[usize]) -> FastSet<usize> {
    if winners.is_empty() {
        return FastSet::default();
    }
    let resources: Vec<&Resource> = winners.iter().map(|&i| page.item(i).resource).collect();
    let args = [
        texts(resources.iter().map(|r| Some(r.provider.as_str().as_bytes()))),
        texts(resources.iter().map(|r| Some(r.sandbox_id.as_slice()))),
        texts(resources.iter().map(|r| Some(r.routing_domain_key()))),
    ];
    let sql = EXISTING_IDENTITIES.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, &args, &|e| page_failed(ledger, e));
    let rows = Rows::of_last_statement(&[pg_sys::INT4OID]);
    (0..rows.count).map(|row| winners[rows.int(row, 1).expect("a position") as usize - 1]).collect()
}

/// A page's targets (keyset order) as the arrays page_row.sql and progress_row.sql take.
fn target_args(page: &Page, would_insert: &dyn Fn(usize) -> bool) -> [DatumWithOid<'static>; 6] {
    let items: Vec<_> = page.items().collect();
    [
        texts(items.iter().map(|item| Some(item.attempt.key.run_id.as_slice()))),
        integers(items.iter().map(|item| item.attempt.key.attempt)),
        integers(items.iter().map(|item| item.resource.ordinal)),
        texts(items.iter().map(|item| Some(item.resource.provider.as_str().as_bytes()))),
        texts(items.iter().map(|item| Some(item.resource.sandbox_id.as_slice()))),
        booleans((0..items.len()).map(would_insert)),
    ]
}

/// The page's last resource as the four cursor arguments (NULL on an empty page).
fn next_cursor_args(next: Option<&After>) -> [DatumWithOid<'static>; 4] {
    [
        timestamptz_arg(next.map(|n| n.attempt.updated_at)),
        text_arg(next.map(|n| n.attempt.run_id.as_slice())),
        next.map(|n| n.attempt.attempt).into(),
        next.map(|n| n.ordinal).into(),
    ]
}

fn next_of(page: &Page) -> Option<After> {
    page.last().map(|item| After { attempt: item.attempt.key.clone(), ordinal: item.resource.ordinal })
}

// ---------------------------------------------------------------------------
// The single-page functions

#[derive(Clone, Copy, PartialEq, Eq)]
enum PageKind {
    Apply,
    Preview,
}

fn page_function(
    kind: PageKind,
    batch_size: Option<i32>,
    after: Option<PgHeapTuple<'_, AllocatedByRust>>,
    ledger_schema: Option<Name>,
) -> Row {
    let limit = page_limit(batch_size);
    let after = after_position(after);
    let (ledger, access) = ledger(ledger_schema, kind == PageKind::Preview);
    if kind == PageKind::Apply {
        crate::shell::standby::refuse_writes("backfill_sandbox_operations");
    }
    access.run(|| Spi::connect_mut(|client| {
        let page = scan_page(client, &ledger, Rules::applied(limit), after);
        let winners = page.winners();
        let (inserted, would_insert): (i64, Box<dyn Fn(usize) -> bool>) = match kind {
            PageKind::Apply => {
                let inserted = insert_winners(client, &ledger, &page, &winners, true);
                let keys = inserted.keys.unwrap_or_default();
                let won: FastSet<usize> = winners.iter().copied().filter(|&i| keys.contains(&page.item(i).resource.operation_key())).collect();
                (inserted.count, Box::new(move |i| won.contains(&i)))
            }
            PageKind::Preview => {
                let present = existing(client, &ledger, &page, &winners);
                let won: FastSet<usize> = winners.iter().copied().filter(|i| !present.contains(i)).collect();
                (0, Box::new(move |i| won.contains(&i)))
            }
        };
        let next = next_of(&page);
        let mut args = vec![(page.scanned() as i64).into(), inserted.into(), page.has_more().into()];
        args.extend(next_cursor_args(next.as_ref()));
        args.extend(target_args(&page, &*would_insert));
        let table = run_kept(client, PAGE_ROW, &args, &|e| page_failed(&ledger, e));
        table.first().get_one::<Row>().ok().flatten().unwrap_or_else(|| error!("runtime_sandbox: building the backfill page row failed"))
    }))
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

// ---------------------------------------------------------------------------
// The orchestrator

fn read_checkpoint(ledger: &SchemaName) -> Checkpoint {
    let sql = READ_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    let value = Spi::connect_mut(|client| {
        let table = run_kept(client, &sql, &[checkpoint::CONTROL_KEY.into()], &|e| {
            error!("runtime_sandbox: reading the backfill checkpoint failed: {e}")
        });
        if table.is_empty() {
            return None;
        }
        table.first().get_one::<String>().unwrap_or_else(|e| error!("runtime_sandbox: reading the backfill checkpoint failed: {e}"))
    });
    checkpoint::read(value.as_deref()).unwrap_or_else(|e| checkpoint_error(ledger, e))
}

fn checkpoint_error(ledger: &SchemaName, reason: String) -> ! {
    Error::new(
        Kind::UnusableStoredValue,
        format!("the backfill checkpoint in {}.control (key {}) is unusable: {reason}", ledger.quoted, checkpoint::CONTROL_KEY),
    )
    .detail("The backfill resumes from its checkpoint as the application does, and stops where the application would.")
    .hint("Fix the value, or delete the row to restart the backfill from the oldest attempt.")
    .raise()
}

/// A stored cursor as a page position, its timestamp read as the application reads it.
fn stored_position(ledger: &SchemaName, cursor: Cursor<String>) -> After {
    let updated_at = read_timestamp(ledger, &cursor.updated_at);
    position(&Cursor { updated_at, run_id: cursor.run_id, attempt: cursor.attempt, resource_ordinal: cursor.resource_ordinal })
}

fn write_checkpoint(client: &mut SpiClient<'_>, ledger: &SchemaName, value: &str) {
    let sql = WRITE_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, &[checkpoint::CONTROL_KEY.into(), value.into()], &|e| {
        error!("runtime_sandbox: writing the backfill checkpoint failed: {e}")
    });
}

/// A backfill_progress row; `targets` only for the dry run.
fn progress_row(
    phase: Phase,
    dry_run: bool,
    totals: Totals,
    projected: i64,
    next: Option<&After>,
    targets: Option<(&Page, &dyn Fn(usize) -> bool)>,
) -> Row {
    let mut args: Vec<DatumWithOid<'static>> = vec![
        phase.as_str().into(),
        dry_run.into(),
        totals.batches.into(),
        totals.scanned.into(),
        totals.inserted.into(),
        projected.into(),
    ];
    args.extend(next_cursor_args(next));
    match targets {
        Some((page, would_insert)) => args.extend(target_args(page, would_insert)),
        None => args.extend([
            texts(std::iter::empty()),
            integers(std::iter::empty()),
            integers(std::iter::empty()),
            texts(std::iter::empty()),
            texts(std::iter::empty()),
            booleans(std::iter::empty()),
        ]),
    }
    Spi::connect_mut(|client| {
        let table = run_kept(client, PROGRESS_ROW, &args, &|e| {
            error!("runtime_sandbox: building backfill progress failed: {e}")
        });
        table.first().get_one::<Row>().ok().flatten().unwrap_or_else(|| error!("runtime_sandbox: building backfill progress failed"))
    })
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
    // A dry run only reads: a problem only writing statements have (a missing
    // ON CONFLICT key, a NOT NULL the inserts leave empty) does not refuse it.
    let (ledger, access) = ledger(ledger_schema, dry_run);
    if !dry_run {
        crate::shell::standby::refuse_writes("advance_sandbox_operation_backfill");
    }
    if let Some(requested) = max_batches.filter(|&n| n != clamp_max_batches(Some(n))) {
        // The application clamps without a word; a caller asking for more pages is told.
        warning!(
            "runtime_sandbox: max_batches {requested} is outside 1..{MAX_BATCHES}: this call applies at most {} page(s), as the \
             application does; call it again while phase is pending, or use complete_sandbox_operation_backfill()",
            clamp_max_batches(Some(requested))
        );
    }
    access.run(|| advance(&ledger, dry_run, limit, max_batches))
}

/// Apply the whole remaining backfill in the caller's transaction (no
/// COMMIT: for migration tools that wrap a migration in a transaction, and
/// drivers that send several statements at once). Waits for a backfill run
/// by another session (the procedure, a pg_cron job) to end, so it returns
/// `complete` only when the backfill is; `max_batches` bounds the pages.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
fn complete_sandbox_operation_backfill(
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_progress") {
    let limit = page_limit(batch_size);
    let pages = run_max_batches(max_batches).or_raise();
    let (ledger, access) = ledger(ledger_schema, false);
    crate::shell::standby::refuse_writes("complete_sandbox_operation_backfill");
    // The run lock, for this transaction: a running procedure holds it for its whole run.
    let tag = advisory_tag(run_lock_key(&ledger.name));
    // SAFETY: a transaction-level ExclusiveLock, waiting (lock_timeout and deadlock detection apply).
    unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as i32, false, false) };
    access.run(|| {
        let stored = read_checkpoint(&ledger);
        let started = std::time::Instant::now();
        let mut reported = started;
        let (phase, totals, next) = apply_pages(&ledger, &stored, limit, pages.map(i64::from), |totals, phase| {
            if reported.elapsed() >= PROGRESS_EVERY && phase != Phase::Complete {
                reported = std::time::Instant::now();
                notice!(
                    "runtime_sandbox backfill on ledger {}: {} pages, {} attempts scanned, {} operations inserted ({:.0} s)",
                    ledger.name,
                    totals.batches,
                    totals.scanned,
                    totals.inserted,
                    started.elapsed().as_secs_f64()
                );
            }
        });
        progress_row(phase, false, totals, totals.projected(), next.as_ref(), None)
    })
}

/// How often a long backfill reports its progress (a NOTICE: the client sees
/// it, the server log only if log_min_messages asks for notices).
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

fn advance(ledger: &SchemaName, dry_run: bool, limit: usize, max_batches: Option<i32>) -> Row {
    let ledger = ledger.clone();
    let stored = read_checkpoint(&ledger);
    if stored.phase == Phase::Complete {
        return progress_row(Phase::Complete, dry_run, Totals::default(), 0, None, None);
    }
    if dry_run {
        // The application's preview: no validation of the cursor beyond its types.
        let after = stored
            .cursor
            .map(|c| stored_position(&ledger, c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
        let (page, won) = Spi::connect_mut(|client| {
            let page = scan_page(client, &ledger, Rules::application_preview(limit), after);
            let winners = page.winners();
            let present = existing(client, &ledger, &page, &winners);
            let won: FastSet<usize> = winners.into_iter().filter(|i| !present.contains(i)).collect();
            (page, won)
        });
        // The application reports one batch when the page has rows, and its would_insert targets as projected.
        let totals = Totals { batches: i64::from(page.scanned() > 0), scanned: page.scanned() as i64, inserted: 0 };
        let next = next_of(&page);
        return progress_row(Phase::Pending, true, totals, won.len() as i64, next.as_ref(), Some((&page, &|i| won.contains(&i))));
    }
    let (phase, totals, next) = apply_pages(&ledger, &stored, limit, Some(clamp_max_batches(max_batches) as i64), |_, _| {});
    progress_row(phase, false, totals, totals.projected(), next.as_ref(), None)
}

/// Apply pages from the stored checkpoint until the backfill is complete or
/// `pages` pages were applied (None: until complete), writing the checkpoint
/// after every page; `each` sees the totals and phase after every page.
fn apply_pages(
    ledger: &SchemaName,
    stored: &Checkpoint,
    limit: usize,
    pages: Option<i64>,
    mut each: impl FnMut(&Totals, Phase),
) -> (Phase, Totals, Option<After>) {
    let ledger = ledger.clone();
    if stored.phase == Phase::Complete {
        return (Phase::Complete, Totals::default(), None);
    }
    let mut after = stored.cursor.clone().map(|c| {
        let cursor = c.to_resume().unwrap_or_else(|e| checkpoint_error(&ledger, e));
        stored_position(&ledger, cursor)
    });
    let mut totals = Totals::default();
    while pages.is_none_or(|pages| totals.batches < pages) {
        let (scanned, inserted, has_more, next) = Spi::connect_mut(|client| {
            let page = scan_page(client, &ledger, Rules::applied(limit), after.take());
            let inserted = insert_winners(client, &ledger, &page, &page.winners(), false).count;
            let next = next_of(&page);
            let phase = phase_after_page(page.has_more());
            let stored_next = next.as_ref().map(|n| Cursor {
                updated_at: iso_timestamp(n.attempt.updated_at),
                run_id: String::from_utf8_lossy(&n.attempt.run_id).into_owned(),
                attempt: n.attempt.attempt,
                resource_ordinal: n.ordinal,
            });
            write_checkpoint(client, &ledger, &checkpoint::write(phase, stored_next.as_ref()));
            (page.scanned() as i64, inserted, page.has_more(), next)
        });
        totals.add_page(scanned, inserted);
        after = next;
        let phase = phase_after_page(has_more);
        each(&totals, phase);
        if phase == Phase::Complete {
            return (Phase::Complete, totals, None);
        }
    }
    (Phase::Pending, totals, after)
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
    let (ledger, access) = ledger(ledger_schema, true);
    access.run(|| status(&ledger))
}

type StatusRow = (String, Option<Row>, i64);

fn status(ledger: &SchemaName) -> TableIterator<'static, StatusRow> {
    let stored = read_checkpoint(ledger);
    if stored.phase == Phase::Complete {
        return TableIterator::once((Phase::Complete.as_str().to_owned(), None, 0));
    }
    // A cursor the next page could not resume from is shown as it is stored;
    // only the numbers must be integers to show it at all.
    let after = stored
        .cursor
        .map(|c| stored_position(&ledger, c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
    let (statement, args) = match &after {
        Some(after) => (STATUS_AFTER_CURSOR, Vec::from(next_cursor_args(Some(after)))),
        None => (STATUS_WITHOUT_CURSOR, Vec::new()),
    };
    let sql = statement.replace("@ledger@", &ledger.quoted);
    let (cursor, remaining) = Spi::connect_mut(|client| {
        let fail = |e: String| error!("runtime_sandbox: backfill status on {} failed: {e}", ledger.name);
        let table = run_kept(client, &sql, &args, &fail);
        table.first().get_two::<Row, i64>().unwrap_or_else(|e| raise(&fail, e))
    });
    TableIterator::once((Phase::Pending.as_str().to_owned(), cursor, remaining.unwrap_or(0)))
}

// ---------------------------------------------------------------------------
// The migration procedure's run lock

/// Checks `run_sandbox_operation_backfill`'s arguments before it takes its
/// lock or writes anything, and returns the advisory-lock key of the ledger's run.
#[pg_extern(name = "_backfill_run_lock_key", stable, parallel_restricted)]
#[search_path(pg_catalog, pg_temp)]
fn backfill_run_lock_key(
    batch_size: Option<i32>,
    max_batches: Option<i32>,
    pause: Option<Interval>,
    ledger_schema: Option<Name>,
) -> i64 {
    page_limit(batch_size);
    run_max_batches(max_batches).or_raise();
    let pause = required("pause", pause);
    args::finite_interval("pause", pause.months(), pause.days(), pause.micros()).or_raise();
    if pause.is_negative() {
        Error::argument("pause", "must not be negative").raise();
    }
    let (ledger, _) = ledger(ledger_schema, false);
    crate::shell::standby::refuse_writes("run_sandbox_operation_backfill");
    // SAFETY: reads the transaction state.
    if unsafe { pg_sys::IsTransactionBlock() } {
        Error::new(
            Kind::InvalidTransactionTermination,
            "CALL run_sandbox_operation_backfill() COMMITs after every page and cannot run inside a transaction block",
        )
        .detail("A migration tool that wraps each migration in a transaction, or a driver that sends several statements in one request, runs it inside one.")
        .hint(
            "Run the CALL as a statement of its own, outside a transaction (your migration tool's non-transactional \
             mode), or complete the backfill inside this transaction with SELECT * FROM \
             runtime_sandbox.complete_sandbox_operation_backfill();",
        )
        .raise();
    }
    run_lock_key(&ledger.name)
}

thread_local! {
    /// The run lock this backend holds for the procedure, released if the transaction in progress aborts.
    static HELD_RUN_LOCK: Cell<Option<i64>> = const { Cell::new(None) };
    static ABORT_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// The session-level advisory lock of `key` (as `pg_try_advisory_lock(bigint)` takes it).
fn advisory_tag(key: i64) -> pg_sys::LOCKTAG {
    pg_sys::LOCKTAG {
        // SAFETY: the backend's database, set at connection.
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.into(),
        locktag_field2: (key >> 32) as u32,
        locktag_field3: key as u32,
        locktag_field4: 1,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    }
}

/// At the abort of a transaction (an error, a cancel, a COMMIT that failed)
/// the procedure stops: its session lock must not outlive it.
#[pg_guard]
unsafe extern "C-unwind" fn release_run_lock_on_abort(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    if event == pg_sys::XactEvent::XACT_EVENT_ABORT {
        if let Some(key) = HELD_RUN_LOCK.with(|h| h.take()) {
            let tag = advisory_tag(key);
            // SAFETY: releases the session lock this backend took in backfill_run_lock.
            unsafe { pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as i32, true) };
        }
    }
}

/// Takes the ledger's run lock for `run_sandbox_operation_backfill` (false:
/// another session holds it). A session lock, so it spans the procedure's
/// COMMITs; it is released by `_backfill_run_unlock`, or when a transaction of
/// the run aborts, wherever that happens (in a page, in the pause, in COMMIT).
#[pg_extern(name = "_backfill_run_lock", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn backfill_run_lock(lock_key: i64) -> bool {
    if !ABORT_CALLBACK.with(Cell::get) {
        // SAFETY: registered once per backend; the callback lives as long as the library.
        unsafe { pg_sys::RegisterXactCallback(Some(release_run_lock_on_abort), std::ptr::null_mut()) };
        ABORT_CALLBACK.with(|c| c.set(true));
    }
    if HELD_RUN_LOCK.with(Cell::get).is_some() {
        // A run of this session holds it (a procedure cannot run inside another that COMMITs).
        return false;
    }
    let tag = advisory_tag(lock_key);
    // SAFETY: a session-level ExclusiveLock without waiting, as pg_try_advisory_lock(bigint).
    let result = unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as i32, true, true) };
    let taken = result != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL;
    if taken {
        HELD_RUN_LOCK.with(|h| h.set(Some(lock_key)));
    }
    taken
}

/// Releases the run lock `_backfill_run_lock` took (false: it was not held).
#[pg_extern(name = "_backfill_run_unlock", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn backfill_run_unlock(lock_key: i64) -> bool {
    if HELD_RUN_LOCK.with(Cell::get) != Some(lock_key) {
        return false;
    }
    HELD_RUN_LOCK.with(|h| h.set(None));
    let tag = advisory_tag(lock_key);
    // SAFETY: releases the session lock taken by backfill_run_lock.
    unsafe { pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as i32, true) }
}
