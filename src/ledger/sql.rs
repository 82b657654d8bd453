//! SQL surface of the ledger schema.

use crate::args::schema_name;
use crate::pg_types::Name;
use crate::shell::check;
use pgrx::prelude::*;

/// Create (idempotently) the ledger schema, enum and tables the application's SQL uses.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn install_ledger(ledger_schema: default!(Name, "'runtime_scheduler'")) {
    let schema = check(schema_name("ledger_schema", ledger_schema.as_str()));
    Spi::run(&super::install_script(&schema.quoted))
        .unwrap_or_else(|e| error!("runtime_sandbox: install_ledger({}) failed: {e}", schema.name));
}
