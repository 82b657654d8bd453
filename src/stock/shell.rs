//! The pgrx shell of the stock hashes: thin SQL wrappers over the pure core.

use super::{canonical, jsonb_binary};
use crate::pg_types::JsonbBytes;
use pgrx::prelude::*;

fn canonical_text(doc: &JsonbBytes) -> String {
    match jsonb_binary::decode(doc.as_bytes()) {
        Ok(value) => canonical::stable_json_value(&value, doc.as_bytes().len() + 64),
        Err(e) => error!("runtime_sandbox: {e} (is the database encoding UTF8?)"),
    }
}

/// The application's `stableJson(value)`: keys sorted by ICU `localeCompare`,
/// numbers and strings as `JSON.stringify` prints them, no whitespace.
#[pg_extern(immutable, strict, parallel_safe)]
fn stable_json(value: JsonbBytes) -> String {
    canonical_text(&value)
}

/// The application's `stockHash(value)`: `sha256:` + hex of `stable_json(value)`.
#[pg_extern(immutable, strict, parallel_safe)]
fn stock_hash(value: JsonbBytes) -> String {
    canonical::hash_canonical(&canonical_text(&value))
}
