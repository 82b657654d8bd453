//! Backfill paging: builds runtime_sandbox_operations from attempt JSON, one keyset page at a time.
//!
//! The pure core holds the rules: `page` (which attempts and resources make
//! a page, which resources win), `resources` (what an attempt's JSON holds,
//! read in place with `crate::jsonb`), `cursor`, `checkpoint`, `js_date` (what the application
//! accepts), `progress`. `shell` is the only file with pgrx types: the SQL
//! functions and their SPI statements (`sql/queries/backfill/`). The migration
//! procedure is PL/pgSQL (`sql/extension/backfill_procedure.sql`): only a procedure can
//! COMMIT per page.

pub mod checkpoint;
pub mod cursor;
pub mod js_date;
pub mod page;
pub mod progress;
pub mod resources;

mod shell;

use pgrx::prelude::*;

extension_sql_file!("../../sql/extension/backfill_types.sql", name = "backfill_types", requires = ["schema"]);
extension_sql_file!(
    "../../sql/extension/backfill_api.sql",
    name = "backfill_api",
    requires = [
        backfill_sandbox_operations,
        preview_sandbox_operation_backfill,
        advance_sandbox_operation_backfill,
        complete_sandbox_operation_backfill,
        backfill_status,
        backfill_run_lock_key,
        backfill_run_lock,
        backfill_run_unlock
    ]
);
extension_sql_file!(
    "../../sql/extension/backfill_procedure.sql",
    name = "backfill_procedure",
    requires = ["backfill_types", advance_sandbox_operation_backfill, backfill_run_lock_key, backfill_run_lock, backfill_run_unlock]
);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
