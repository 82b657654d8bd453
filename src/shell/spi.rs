//! Catalog look-ups the shells run before their own statements.

use super::raise::{check, Raise};
use crate::args::{self, ArgError, SchemaName};
use crate::error::Error;
use pgrx::prelude::*;

/// Whether a schema of this name exists (`false` when the look-up fails).
pub fn schema_exists(name: &str) -> bool {
    Spi::get_one_with_args::<bool>(include_str!("../../sql/queries/shell/schema_exists.sql"), &[name.into()])
    .unwrap_or(Some(false))
    .unwrap_or(false)
}

/// Validate a schema argument and require that the schema exists.
pub fn existing_schema(argument: &'static str, value: &str) -> SchemaName {
    let schema = check(args::schema_name(argument, value));
    if !schema_exists(&schema.name) {
        Error::from(ArgError::new(argument, format!("schema {:?} does not exist", schema.name))).raise();
    }
    schema
}

/// A ledger schema argument that lacks tables the call uses (`missing`, as
/// named in the error): 22023 when the schema itself does not exist, else
/// 42P01; both say how to install the ledger. `uses` is the DETAIL.
pub fn ledger_missing(argument: &'static str, schema: &SchemaName, missing: &str, uses: &str) -> ! {
    if !schema_exists(&schema.name) {
        Error::ledger_schema_missing(argument, &schema.name).raise();
    }
    Error::ledger_not_installed(argument, &schema.name, missing, uses).raise()
}

/// A result column read as the type the code expects. The statements cast
/// what they read from the ledger, so a type that does not match is a bug:
/// raised as an error, never read as NULL (or misread).
pub trait ReadValue<T> {
    fn read_value(self) -> Option<T>;
}

impl<T> ReadValue<T> for Result<Option<T>, pgrx::spi::SpiError> {
    fn read_value(self) -> Option<T> {
        self.unwrap_or_else(|e| error!("runtime_sandbox: a statement's result could not be read: {e}"))
    }
}
