//! Stock hashes: the application's `stableJson` / `stockHash` and the
//! managed-resource status rules (pure core: `json`, the text reader;
//! `canonical`; `status`), plus the SQL functions built on them (`shell`, which
//! reads a jsonb argument with `crate::jsonb`).

pub mod canonical;
mod han;
pub mod json;
pub mod status;

mod shell;

use pgrx::prelude::*;

extension_sql_file!("../../sql/extension/stock_types.sql", name = "stock_status", requires = ["schema"]);
extension_sql_file!(
    "../../sql/extension/stock_api.sql",
    name = "comments_stock",
    requires = [stable_json, stock_hash, managed_resource_status, "stock_status"]
);

#[cfg(feature = "pg_test")]
#[pg_schema]
mod tests {
    include!("pg_tests.rs");
}
