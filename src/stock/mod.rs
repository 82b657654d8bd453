//! Stock hashes: the application's `stableJson` / `stockHash` and the
//! managed-resource status rules (pure core), plus the SQL functions built on
//! them (`shell`).

pub mod canonical;
pub mod json;
pub mod jsonb_binary;
pub mod status;

mod shell;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
