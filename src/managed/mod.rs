//! Managed sandbox environment reconciliation on the application's tables.
//!
//! The pure core (no pgrx types): `vocabulary` (the application's fixed
//! names), `js` (the JavaScript value semantics it relies on), `input` (the
//! arguments → the desired state) and `rules` (the stock/drift decisions).
//! Imports run one way: vocabulary, js ← input ← rules. `shell` (pgrx) reads
//! and locks the rows over SPI, asks the core, and writes its answer with the
//! SQL in `sql/queries/managed/` (the tables it creates: `sql/ddl/`).

pub mod input;
pub mod js;
pub mod rules;
pub mod vocabulary;

mod shell;

use pgrx::prelude::*;

extension_sql_file!("../../sql/extension/managed_types.sql", name = "managed_types", requires = ["stock_status"]);
extension_sql_file!(
    "../../sql/extension/managed_api.sql",
    name = "managed_api",
    requires = [
        "managed_types",
        shell::install_environment_tables,
        shell::reconcile_managed_environment,
        shell::archive_managed_environment,
        shell::managed_environment_drift
    ]
);

#[cfg(feature = "pg_test")]
#[pg_schema]
mod tests {
    include!("pg_tests.rs");
}
