//! Reconciliation of a provider inventory (Daytona) against the sandbox ledger.
//!
//! `inventory`, `pairing`, `reach` and `summary` are the pure core (parsing
//! and normalization, reading the inventory with `crate::jsonb`; ownership by
//! label, the match, the lone live operations and the capacity inspection over
//! rows read from the ledger; which tables are read whole or probed, from
//! their sizes and plans, and the columns cut from what the reads return; the
//! argument rules and the result shape);
//! `shell` is the thin SPI shell that reads the ledger and runs the phase
//! statements in `sql/queries/reconcile/`.

pub mod inventory;
pub mod pairing;
pub mod reach;
pub mod summary;

pub(crate) mod shell;

use pgrx::prelude::*;

extension_sql_file!("../../sql/extension/reconcile_types.sql", name = "reconcile_types", requires = ["schema"]);
extension_sql_file!("../../sql/extension/reconcile_api.sql", name = "reconcile_api", requires = [reconcile_daytona_in]);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
pub(crate) mod tests {
    include!("pg_tests.rs");
}
