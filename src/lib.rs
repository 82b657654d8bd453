//! runtime_sandbox: an agent-sandbox platform's ledger jobs, inside PostgreSQL.
//!
//! Each capability has a folder: a pure Rust core (no pgrx types, plain
//! `cargo test`) and a thin SPI shell that validates arguments, runs the SQL in
//! `sql/` and builds the composite result row.

use pgrx::prelude::*;

::pgrx::pg_module_magic!();

pub mod args;
pub mod fast_hash;
pub mod pg_types;
pub mod error;
mod shell;

pub mod backfill;
pub mod ledger;
pub mod managed;
pub mod operations;
pub mod reconcile;
pub mod stock;

extension_sql_file!("../sql/schema.sql", name = "schema", bootstrap);
extension_sql_file!("../sql/stock_status.sql", name = "stock_status", requires = ["schema"]);
extension_sql_file!("../sql/comments_stock.sql", name = "comments_stock", requires = [stable_json, stock_hash, managed_resource_status, "stock_status"]);
extension_sql_file!("../sql/ledger/api.sql", name = "ledger_api", requires = [install_ledger]);

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'pg_cron'", "cron.database_name = 'pgrx_tests'"]
    }
}
