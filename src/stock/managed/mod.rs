//! Managed sandbox environment reconciliation on the application's tables.
//!
//! `input` and `rules` are the pure core (the application's stock/drift rules,
//! no pgrx types); `shell` reads and locks the rows over SPI, asks the core,
//! and writes its answer with the SQL in `sql/managed/`.

pub mod input;
pub mod js;
pub mod rules;
