//! SQL surface of the ledger schema.

use crate::args::{schema_name, SchemaName};
use crate::shell::types::Name;
use crate::shell::check;
use crate::shell::spi::ledger_missing;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

/// Create (idempotently) the ledger schema, enum and tables the application's SQL uses.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn install_ledger(ledger_schema: default!(Name, "'runtime_scheduler'")) {
    let schema = check(schema_name("ledger_schema", ledger_schema.as_str()));
    Spi::run(&super::install_script(&schema.quoted))
        .unwrap_or_else(|e| error!("runtime_sandbox: install_ledger({}) failed: {e}", schema.name));
}

/// What the ledger schema lacks (no rows means ready). Read-only.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn check_ledger(
    ledger_schema: default!(Name, "'runtime_scheduler'"),
) -> TableIterator<'static, (name!(object, String), name!(problem, String))> {
    let schema = check(schema_name("ledger_schema", ledger_schema.as_str()));
    let (kinds, objects, details) = super::requirements::as_columns();
    let rows: Vec<(String, String)> = Spi::connect(|client| {
        client
            .select(
                include_str!("../../sql/queries/ledger/check.sql"),
                None,
                &[schema.name.as_str().into(), kinds.into(), objects.into(), details.into()],
            )
            .unwrap_or_else(|e| error!("runtime_sandbox: check_ledger({}) failed: {e}", schema.name))
            .map(|row| {
                (
                    row.get::<String>(1).ok().flatten().unwrap_or_default(),
                    row.get::<String>(2).ok().flatten().unwrap_or_default(),
                )
            })
            .collect()
    });
    TableIterator::new(rows)
}

/// Fail before any work when the ledger lacks what `function` needs
/// (`needs`: tables, or `table.column`, in the order named), as the backfill
/// does: 42P01 naming what is missing, with a hint to run install_ledger
/// (idempotent: it adds what a ledger of an earlier version lacks).
pub(crate) fn require(client: &mut SpiClient, ledger: &SchemaName, needs: &[&str], function: &'static str) {
    let missing = client
        .select(include_str!("../../sql/queries/ledger/missing.sql"), None, &[ledger.name.as_str().into(), needs.to_vec().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function} could not read the catalog: {e}"))
        .first()
        .get::<Vec<String>>(1)
        .ok()
        .flatten()
        .unwrap_or_default();
    if !missing.is_empty() {
        ledger_missing(
            "ledger_schema",
            ledger,
            &missing.join(", "),
            &format!(
                "{function} uses {}; install_ledger is idempotent and adds what a ledger of an earlier version lacks.",
                needs.join(", ")
            ),
        );
    }
}
