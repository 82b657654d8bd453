//! Catalog look-ups the shells run before their own statements.

use super::raise::{check, Raise};
use crate::args::{self, ArgError, SchemaName};
use crate::error::Error;
use pgrx::prelude::*;

/// Whether a schema of this name exists (`false` when the look-up fails).
pub fn schema_exists(name: &str) -> bool {
    get_one_with_args::<bool>(include_str!("../../sql/queries/shell/schema_exists.sql"), &[name.into()])
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

/// The clock as `clock_timestamp()` reads it, for a statement that writes it: a parameter computed as the
/// statement is run rather than a volatile call in it, which Citus refuses in UPDATEs on distributed tables.
pub fn clock() -> pgrx::datum::DatumWithOid<'static> {
    pgrx::datum::clock_timestamp().into()
}

/// Run one statement read-write (a fresh snapshot that sees the transaction's
/// earlier writes), without asking for a transaction id first. pgrx's
/// `update`, `run` and `get_one` assign one up front; a call that writes
/// nothing (a dry run, a status read) must not need one: it would fail on a
/// standby ("cannot assign TransactionIds during recovery") and spend an id
/// per call on a primary. A statement that writes takes its id as it writes.
pub fn execute<'conn>(
    client: &pgrx::spi::SpiClient<'conn>,
    sql: &str,
    limit: Option<i64>,
    args: &[pgrx::datum::DatumWithOid<'_>],
) -> pgrx::spi::Result<pgrx::spi::SpiTupleTable<'conn>> {
    use pgrx::spi::Query;
    let types: Vec<PgOid> = args.iter().map(|a| PgOid::from(a.oid())).collect();
    let statement = client.prepare_mut(sql, &types)?;
    (&statement).execute(client, limit.map(|l| l as _), args)
}

/// [`execute`], the first column of the first row.
pub fn get_one_with_args<A: FromDatum + IntoDatum>(
    sql: &str,
    args: &[pgrx::datum::DatumWithOid<'_>],
) -> pgrx::spi::Result<Option<A>> {
    Spi::connect(|client| execute(client, sql, Some(1), args)?.first().get_one())
}

/// [`execute`] for its effect.
pub fn run_with_args(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> pgrx::spi::Result<()> {
    Spi::connect(|client| execute(client, sql, None, args).map(|_| ()))
}
