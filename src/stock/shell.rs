//! The pgrx shell of the stock hashes: thin SQL wrappers over the pure core.

use super::canonical;
use super::status::{self, StockStatus};
use crate::error::{Error, Kind};
use crate::jsonb::{self, DecodeError, MAX_DEPTH};
use crate::shell::types::JsonbBytes;
use crate::shell::Raise;
use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable,
};
use pgrx::prelude::*;

fn canonical_text(doc: &JsonbBytes) -> String {
    match jsonb::decode(doc.as_bytes()) {
        Ok(value) => canonical::stable_json_value(&value, doc.as_bytes().len() + 64),
        Err(e) if e == DecodeError::NOT_UTF8 => Error::new(Kind::NotUtf8, "cannot hash a jsonb string that is not UTF-8")
            .detail(e.to_string())
            .hint("Stock hashes are the application's, over UTF-8 JSON: use a database with encoding UTF8.")
            .raise(),
        Err(e) if e == DecodeError::TOO_DEEP => {
            Error::new(Kind::LimitExceeded, format!("invalid argument value: nested more than {MAX_DEPTH} levels deep"))
                .hint("Stock documents are hashed by a recursive reader with a bounded stack.")
                .raise()
        }
        Err(e) => Error::new(Kind::DataCorrupted, "cannot read a jsonb value").detail(e.to_string()).raise(),
    }
}

/// The application's `stableJson(value)`: keys sorted by ICU `localeCompare`,
/// numbers and strings as `JSON.stringify` prints them, no whitespace.
#[pg_extern(immutable, strict, parallel_safe)]
fn stable_json(value: JsonbBytes) -> String {
    canonical_text(&value)
}

/// The application's `stockHash(value)`: `sha256:` + hex of `stable_json(value)`.
#[pg_extern(immutable, strict, parallel_safe)]
fn stock_hash(value: JsonbBytes) -> String {
    canonical::hash_canonical(&canonical_text(&value))
}

/// The application's `resourceStatus` rules (`status::resource_status`, the
/// one implementation). Not strict: a NULL resource or hash is an answer
/// (missing), not an unknown.
#[pg_extern(immutable, parallel_safe, requires = ["stock_status"])]
fn managed_resource_status(
    resource_id: Option<&str>,
    current_hash: Option<&str>,
    binding_stock_hash: Option<&str>,
    latest_stock_hash: Option<&str>,
) -> StatusLabel {
    StatusLabel(status::resource_status(resource_id, current_hash, binding_stock_hash, latest_stock_hash))
}

/// A `runtime_sandbox.managed_stock_status` result (the enum type is created in
/// `sql/extension/stock_types.sql`). An enum value is its label's OID, passed by value.
struct StatusLabel(StockStatus);

unsafe impl SqlTranslatable for StatusLabel {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(StatusLabel);
    const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
        pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
        Err(ArgumentError::NotValidAsArgument("StatusLabel"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("runtime_sandbox.managed_stock_status")));
}

unsafe impl BoxRet for StatusLabel {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // SAFETY: pgrx hands us the live call's fcinfo; the OID is a valid value of the result type.
        unsafe {
            let index = StockStatus::ALL.iter().position(|s| *s == self.0).expect("ALL lists every status");
            let oid = label_oids(fcinfo.as_mut_ptr())[index];
            fcinfo.return_raw_datum(pg_sys::Datum::from(oid))
        }
    }
}

type LabelOids = [pg_sys::Oid; StockStatus::ALL.len()];

/// The result type's label OIDs in `StockStatus` order, looked up once per
/// call site and kept in `fn_extra` (the FmgrInfo lives as long as the query).
///
/// # Safety
/// `fcinfo` is the current call's.
unsafe fn label_oids(fcinfo: pg_sys::FunctionCallInfo) -> LabelOids {
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        if !flinfo.is_null() && !(*flinfo).fn_extra.is_null() {
            return *((*flinfo).fn_extra as *const LabelOids);
        }
        let enum_type = if flinfo.is_null() {
            pgrx::regtypein("runtime_sandbox.managed_stock_status")
        } else {
            pg_sys::get_func_rettype((*flinfo).fn_oid)
        };
        let oids = StockStatus::ALL.map(|s| {
            let label = std::ffi::CString::new(s.as_str()).expect("labels have no NUL");
            let oid = pg_sys::GetSysCacheOid(
                pg_sys::SysCacheIdentifier::ENUMTYPOIDNAME as i32,
                pg_sys::Anum_pg_enum_oid as pg_sys::AttrNumber,
                pg_sys::Datum::from(enum_type),
                pg_sys::Datum::from(label.as_ptr()),
                pg_sys::Datum::from(0usize),
                pg_sys::Datum::from(0usize),
            );
            if oid == pg_sys::InvalidOid {
                Error::new(Kind::BrokenInstall, format!("type managed_stock_status has no label {:?}", s.as_str()))
                    .hint("Reinstall the extension, or run ALTER EXTENSION runtime_sandbox UPDATE.")
                    .raise();
            }
            oid
        });
        if !flinfo.is_null() {
            let slot = pg_sys::MemoryContextAlloc((*flinfo).fn_mcxt, size_of::<LabelOids>()) as *mut LabelOids;
            slot.write(oids);
            (*flinfo).fn_extra = slot.cast();
        }
        oids
    }
}
