//! The sandbox ledger: the application's tables, created or checked on request.
//!
//! The tables are ordinary user tables in a schema the caller names (not
//! extension members), so pg_dump keeps their data and the application's own
//! SQL runs against them unchanged.

pub mod requirements;
mod shell;

pub(crate) use shell::require;

use pgrx::prelude::*;

extension_sql_file!("../../sql/extension/ledger_api.sql", name = "ledger_api", requires = [install_ledger]);
extension_sql_file!("../../sql/extension/ledger_check_api.sql", name = "ledger_check_api", requires = [check_ledger]);

/// The DDL with the (already quoted) schema name substituted.
pub fn install_script(quoted_schema: &str) -> String {
    include_str!("../../sql/ddl/ledger_tables.sql").replace("@ledger@", quoted_schema)
}

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
