//! The sandbox ledger: the application's tables, created or checked on request.
//!
//! The tables are ordinary user tables in a schema the caller names (not
//! extension members), so pg_dump keeps their data and the application's own
//! SQL runs against them unchanged.

pub mod requirements;
mod sql;

pub(crate) use sql::require;

/// The DDL with the (already quoted) schema name substituted.
pub fn install_script(quoted_schema: &str) -> String {
    include_str!("../../sql/ledger/install.sql").replace("@ledger@", quoted_schema)
}

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
