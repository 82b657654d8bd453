//! The one reader of jsonb's binary format (pure Rust, no server calls).
//!
//! A `jsonb` argument or column arrives as its binary container; reading it
//! here skips `jsonb_out` and a text parse. Every capability reads through
//! `Container`, in place (a few members of a large document, nothing built):
//! the reconcile inventory and the backfill's resources. On top of it:
//! - `decode`: the whole value as a `Value` tree, numbers as exact decimal
//!   text (the stock hashes, which round each number to a double once, as
//!   `JSON.parse` does);
//! - `numeric_out`, `container_text`: a number or container printed as the
//!   server prints it (`numeric_out`, `JsonbToCString`), what `->>` gives.
//!
//! Layout: src/include/utils/jsonb.h and src/backend/utils/adt/numeric.c.

mod container;
mod numeric;
mod text;
mod value;

#[cfg(test)]
pub mod encode;

pub use container::{Container, Item, Kind};
pub use numeric::{exact_text, numeric_out};
pub use text::container_text;
pub use value::{decode, Value, MAX_DEPTH};

use std::fmt;

/// Why a value could not be read (its `Display` is the reason a DETAIL shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl DecodeError {
    /// A string that is not UTF-8 (a database whose encoding is not UTF8).
    pub const NOT_UTF8: DecodeError = DecodeError("string is not UTF-8");
    /// Containers nested more than `MAX_DEPTH` levels (`decode` only).
    pub const TOO_DEEP: DecodeError = DecodeError("nesting too deep");
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed jsonb: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}
