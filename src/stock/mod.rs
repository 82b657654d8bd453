//! Stock hashes: the application's `stableJson` / `stockHash` and the
//! managed-resource status rules, plus the SQL functions built on them.

pub mod canonical;
pub mod json;
pub mod jsonb_binary;
pub mod managed;
pub mod status;

mod sql;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
