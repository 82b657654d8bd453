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

mod advance;
mod page;
mod run_lock;

use super::checkpoint::{self, Checkpoint, Phase};
use super::cursor::{after_argument, Cursor};
use super::js_date::date_parse_accepts;
use super::page::{After, Attempt, AttemptKey, FetchFrom, Page, Rules, Scan};
use super::progress::{clamp_max_batches, phase_after_page, run_lock_key, run_max_batches, Totals, MAX_BATCHES};
use super::resources::{self, Field, InsertMode, Resource};
use crate::args::{self, SchemaName};
use crate::error::{Error, Kind};
use crate::fast_hash::FastSet;
use crate::ledger::Access;
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{OrRaise, Raise};
use pgrx::datum::{DatumWithOid, Interval};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::{AllocatedByRust, FromDatum, PgSqlErrorCode, PgTryBuilder};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::panic::AssertUnwindSafe;
use crate::shell::datum::*;
use crate::shell::statement::{raise, run_kept};
use self::advance::*;
use self::page::*;
use self::run_lock::*;

type Row = PgHeapTuple<'static, AllocatedByRust>;

/// The tuple table of the SPI statement just run, read by position (valid
/// until SPI_finish, whatever runs after it).
pub(super) struct Rows {
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
pub(super) unsafe fn varlena_bytes<'a>(datum: pg_sys::Datum) -> &'a [u8] {
    unsafe {
        let detoasted = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr::<pg_sys::varlena>());
        std::slice::from_raw_parts(pgrx::vardata_any(detoasted) as *const u8, pgrx::varsize_any_exhdr(detoasted))
    }
}

// ---------------------------------------------------------------------------
// Arguments

pub(super) fn required<T>(argument: &'static str, value: Option<T>) -> T {
    value.unwrap_or_else(|| Error::argument(argument, "must not be NULL").raise())
}

/// What the backfill does with the ledger's tables (the DETAIL when they are missing).
pub(super) const LEDGER_USE: &str = "The backfill reads attempts and runs, inserts into runtime_sandbox_operations and keeps its \
                          checkpoint in control.";


/// The ledger schema must exist, hold the tables the backfill uses as it
/// needs them, and the caller must be able to act as its owner (the
/// statements run as the owner: `Access::run`).
/// `reading`: the call only reads (a preview, the status).
pub(super) fn ledger(ledger_schema: Option<Name>, reading: bool) -> (SchemaName, Access) {
    let name = required("ledger_schema", ledger_schema);
    let schema = args::schema_name("ledger_schema", name.as_str()).or_raise();
    let access = crate::ledger::require_with(&schema, crate::ledger::requirements::uses::BACKFILL, "the backfill", LEDGER_USE, reading);
    (schema, access)
}

pub(super) fn page_limit(batch_size: Option<i32>) -> usize {
    args::batch_size(required("batch_size", batch_size)).or_raise() as usize
}

/// The `after` argument of the single-page functions: every field set, and a
/// cursor the application accepts (its `Date.parse` of the timestamp's text).
pub(super) fn after_position(after: Option<PgHeapTuple<'_, AllocatedByRust>>) -> Option<After> {
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

pub(super) fn position(cursor: &Cursor<i64>) -> After {
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
pub(super) fn in_application_datestyle<R>(f: impl FnOnce() -> R) -> R {
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
pub(super) fn iso_timestamp(at: i64) -> String {
    in_application_datestyle(|| {
        // SAFETY: timestamptz_out of a timestamptz.
        unsafe { pgrx::direct_function_call::<&CStr>(pg_sys::timestamptz_out, &[Some(pg_sys::Datum::from(at))]) }
            .expect("timestamptz_out returns text")
            .to_string_lossy()
            .into_owned()
    })
}

/// A stored cursor's text read as the application's `$1::timestamptz` reads it.
pub(super) fn read_timestamp(ledger: &SchemaName, text: &str) -> i64 {
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
