//! What every capability's pgrx shell shares (the cores never import it):
//! - `raise`: `crate::error::Error` raised as a PostgreSQL ERROR with its
//!   SQLSTATE, DETAIL and HINT (`Raise`, `OrRaise`; `raise_arg` and `check` for
//!   argument errors);
//! - `spi`: catalog look-ups the shells run before their own statements;
//! - `owner`: running statements as the owner of the tables they touch;
//! - `types`: argument types pgrx does not map the way the extension needs.

pub mod datum;
pub mod owner;
pub mod raise;
pub mod spi;
pub mod statement;
pub mod standby;
pub mod types;

pub use raise::{check, raise_arg, raise_with_hint, OrRaise, Raise};
pub use spi::existing_schema;

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
pub(crate) mod tests {
    include!("pg_tests.rs");
}
