//! Argument types pgrx does not map the way this extension needs.
//!
//! - `JsonbBytes`: a `jsonb` argument as its binary payload (what the stock
//!   hash reads; no `jsonb_out`, no serde).
//! - `JsonbText`: a `jsonb` argument as the text `jsonb_out` prints (the text
//!   node-postgres hands the application).
//! - `Name`: a `name` argument (schema names are `name`, as in the catalogs).
//!
//! pgrx's own `JsonB` goes text → `serde_json::Value`, which forgets jsonb's
//! key order and rounds some numbers differently from `JSON.parse`.

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::nullable::Nullable;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable,
};
use pgrx::prelude::*;
use pgrx::{direct_function_call, FromDatum};

/// Implement pgrx's argument plumbing for a `FromDatum` type mapped to one SQL type.
macro_rules! sql_argument {
    ($ty:ident, $sql:literal) => {
        unsafe impl<'fcx> ArgAbi<'fcx> for $ty {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                unsafe { arg.unbox_arg_using_from_datum() }
                    .unwrap_or_else(|| panic!("argument {index} must not be null"))
            }

            unsafe fn unbox_nullable_arg(arg: Arg<'_, 'fcx>) -> Nullable<Self> {
                unsafe { arg.unbox_arg_using_from_datum() }.into()
            }
        }

        unsafe impl SqlTranslatable for $ty {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($ty);
            const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
                pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
            const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
                Ok(ReturnsRef::One(SqlMappingRef::literal($sql)));
        }
    };
}

/// Borrowed for the duration of the call: the detoasted copy (if any) lives in
/// the call's memory context, the original datum in the caller's.
#[derive(Debug, Clone, Copy)]
pub struct JsonbBytes {
    ptr: *const u8,
    len: usize,
}

impl JsonbBytes {
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: see the type's comment; the value never outlives the call that received it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl FromDatum for JsonbBytes {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        unsafe {
            let detoasted = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr::<pg_sys::varlena>());
            Some(JsonbBytes {
                ptr: pgrx::vardata_any(detoasted) as *const u8,
                len: pgrx::varsize_any_exhdr(detoasted),
            })
        }
    }
}
sql_argument!(JsonbBytes, "jsonb");

#[derive(Debug, Clone)]
pub struct JsonbText(pub String);

impl FromDatum for JsonbText {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        unsafe {
            let cstr = direct_function_call::<&core::ffi::CStr>(pg_sys::jsonb_out, &[Some(datum)])
                .expect("jsonb_out returned NULL for a non-NULL jsonb");
            let text = cstr.to_str().expect("jsonb text is UTF-8").to_owned();
            pg_sys::pfree(cstr.as_ptr() as *mut core::ffi::c_void);
            Some(JsonbText(text))
        }
    }
}
sql_argument!(JsonbText, "jsonb");

#[derive(Debug, Clone)]
pub struct Name(pub String);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromDatum for Name {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        let name = unsafe { core::ffi::CStr::from_ptr(datum.cast_mut_ptr::<core::ffi::c_char>()) };
        Some(Name(name.to_string_lossy().into_owned()))
    }
}
sql_argument!(Name, "name");
