//! SQL surface of the stock hashes: thin wrappers over the pure core.

use super::canonical;
use crate::pg_types::JsonbText;
use pgrx::prelude::*;

fn canonical_or_error(doc: &JsonbText) -> String {
    canonical::stable_json(&doc.0).unwrap_or_else(|e| error!("runtime_sandbox: jsonb text did not parse: {e}"))
}

/// The application's `stableJson(value)`: keys sorted by ICU `localeCompare`,
/// numbers and strings as `JSON.stringify` prints them, no whitespace.
#[pg_extern(immutable, strict, parallel_safe)]
fn stable_json(doc: JsonbText) -> String {
    canonical_or_error(&doc)
}

/// The application's `stockHash(value)`: `sha256:` + hex of `stable_json(value)`.
#[pg_extern(immutable, strict, parallel_safe)]
fn stock_hash(doc: JsonbText) -> String {
    canonical::hash_canonical(&canonical_or_error(&doc))
}
