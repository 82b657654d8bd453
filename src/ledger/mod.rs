//! The sandbox ledger: the application's tables, created or checked on request.
//!
//! The tables are ordinary user tables in a schema the caller names (not
//! extension members), so pg_dump keeps their data and the application's own
//! SQL runs against them unchanged.

pub mod check;
pub mod install;
pub mod requirements;
mod shell;

pub(crate) use shell::{in_citus, padded_run_id, require, require_to_read, require_with, typed_org_id, Access, EnvironmentColumn};

use pgrx::prelude::*;

extension_sql_file!(
    "../../sql/extension/ledger_api.sql",
    name = "ledger_api",
    requires = [install_ledger_checked, install_ledger_ddl]
);
extension_sql_file!("../../sql/extension/ledger_check_api.sql", name = "ledger_check_api", requires = [check_ledger_with_breaks, ledger_readiness]);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
