//! Argument types pgrx does not map the way this extension needs.
//!
//! `JsonbText`: a `jsonb` argument received as the text `jsonb_out` prints.
//! pgrx's `JsonB` goes text → `serde_json::Value`, which rounds some numbers
//! differently from `JSON.parse` and forgets key order. The stock hash needs the
//! text itself, so this type stops at the text (the same text node-postgres
//! hands the application).

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::nullable::Nullable;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable,
};
use pgrx::prelude::*;
use pgrx::{direct_function_call, FromDatum};

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

unsafe impl<'fcx> ArgAbi<'fcx> for JsonbText {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }.unwrap_or_else(|| panic!("argument {index} must not be null"))
    }

    unsafe fn unbox_nullable_arg(arg: Arg<'_, 'fcx>) -> Nullable<Self> {
        unsafe { arg.unbox_arg_using_from_datum() }.into()
    }
}

unsafe impl SqlTranslatable for JsonbText {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(JsonbText);
    const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
        pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("jsonb"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("jsonb")));
}

/// A `name` argument (schema names are `name`, as in the catalogs).
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

unsafe impl<'fcx> ArgAbi<'fcx> for Name {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }.unwrap_or_else(|| panic!("argument {index} must not be null"))
    }

    unsafe fn unbox_nullable_arg(arg: Arg<'_, 'fcx>) -> Nullable<Self> {
        unsafe { arg.unbox_arg_using_from_datum() }.into()
    }
}

unsafe impl SqlTranslatable for Name {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(Name);
    const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
        pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("name"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("name")));
}
