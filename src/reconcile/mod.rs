//! Reconciliation of a provider inventory (Daytona) against the sandbox ledger.
//!
//! `inventory`, `pairing` and `summary` are the pure core (parsing and
//! normalization; ownership by label, the match, the lone live operations and
//! the capacity inspection over rows read from the ledger; the argument rules
//! and the result shape); `sql` is the thin SPI shell that reads the ledger and
//! runs the phase statements in `sql/reconcile/`.

pub mod inventory;
pub mod pairing;
pub mod summary;

mod capacity;

pub(crate) mod sql;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
