//! Helpers for the thin SPI shells: turning core errors into PostgreSQL errors.

use crate::args::{ArgError, SchemaName};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// Raise a bad-argument error (SQLSTATE 22023). Nothing has been written yet.
pub fn raise_arg(err: ArgError) -> ! {
    ereport!(
        PgLogLevel::ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("runtime_sandbox: {err}")
    );
    unreachable!("ereport(ERROR) does not return")
}

/// Unwrap a core result or raise its argument error.
pub fn check<T>(result: Result<T, ArgError>) -> T {
    result.unwrap_or_else(|e| raise_arg(e))
}

/// Validate a schema argument and require that the schema exists.
pub fn existing_schema(argument: &'static str, value: &str) -> SchemaName {
    let schema = check(crate::args::schema_name(argument, value));
    let exists = Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
        &[schema.name.as_str().into()],
    )
    .unwrap_or(Some(false))
    .unwrap_or(false);
    if !exists {
        raise_arg(ArgError::new(argument, format!("schema {:?} does not exist", schema.name)));
    }
    schema
}

/// Raise an error with a hint (what to do about it). Nothing is written after it.
pub fn raise_with_hint(code: PgSqlErrorCode, message: String, hint: String, function: &'static str) -> ! {
    pgrx::pg_sys::panic::ErrorReport::new(code, message, function).set_hint(hint).report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) does not return")
}
