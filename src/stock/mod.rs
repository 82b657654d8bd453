//! Stock hashes: the application's `stableJson` / `stockHash` and the
//! managed-resource status rules (pure core), plus the SQL functions built on
//! them (`shell`).

pub mod canonical;
pub mod json;
pub mod status;

// moved to crate::jsonb; re-exported until reconcile imports it from there
pub mod jsonb_binary {
    pub use crate::jsonb::{Container, DecodeError, Item, Kind};
    #[cfg(test)]
    pub use crate::jsonb::encode::encode;
}

mod shell;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
