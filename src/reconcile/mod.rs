//! Reconciliation of a provider inventory (Daytona) against the sandbox ledger.
//!
//! `inventory` and `summary` are the pure core (parsing, normalization, the
//! argument rules, the result shape); `sql` is the thin SPI shell that runs
//! the phase statements in `sql/reconcile/`.

pub mod inventory;
pub mod pairing;
pub mod summary;

mod sql;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
