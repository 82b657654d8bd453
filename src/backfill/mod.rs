//! Backfill paging: builds runtime_sandbox_operations from attempt JSON, one keyset page at a time.
//!
//! The pure core (`cursor`, `checkpoint`, `progress`, `resources`) holds the
//! rules; `sql` is the thin SPI shell and `applied_page` the orchestrator's
//! applied page (resources read in Rust); the page SQL lives in `sql/backfill/`, and the
//! migration procedure (a PL/pgSQL loop that COMMITs per batch) in
//! `sql/backfill/procedure.sql`.

pub mod checkpoint;
pub mod cursor;
pub mod progress;
pub mod resources;

mod applied_page;
mod sql;

use pgrx::prelude::*;

extension_sql_file!("../../sql/backfill/types.sql", name = "backfill_types", requires = ["schema"]);
extension_sql_file!(
    "../../sql/backfill/procedure.sql",
    name = "backfill_procedure",
    requires = [
        "backfill_types",
        backfill_sandbox_operations,
        preview_sandbox_operation_backfill,
        advance_sandbox_operation_backfill,
        backfill_status,
        backfill_run_lock_key
    ]
);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
