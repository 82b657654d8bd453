//! A JSON document as a tree, numbers kept as exact decimal text: what the
//! stock hashes canonicalize, decoded here from jsonb's binary format (and
//! built by the text reader, `stock::json`, from JSON text).

use super::{exact_text, Container, DecodeError, Item, Kind};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// The number as exact decimal text (as written, or rebuilt from a numeric).
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    /// Members in source order; duplicates are resolved later, as `JSON.parse` does.
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

/// How deep a document may nest, in both readers. Reading, writing and
/// dropping a value recurse once per level, so this bounds the stack a stock
/// hash uses: a debug build overflowed a backend's stack between 3,000 and
/// 3,500 levels (the backend died and the postmaster restarted every
/// session), while PostgreSQL's jsonb accepts far deeper documents. Stock
/// defaults are a few levels deep.
pub const MAX_DEPTH: usize = 1000;

/// Decode a jsonb value from its payload (the bytes after the varlena header).
pub fn decode(payload: &[u8]) -> Result<Value<'_>, DecodeError> {
    let root = Container::read(payload)?;
    if root.kind == Kind::Scalar {
        // A top-level scalar is stored as a one-element "raw scalar" array.
        let mut scalar = None;
        for element in root.elements() {
            scalar = Some(element?);
        }
        return value(scalar.ok_or(DecodeError("empty raw scalar"))?, 0);
    }
    // Measured first, without recursion: a document past the limit is refused
    // before any recursion (whose stack use depends on the build), so the
    // limit, not the stack check, is what a caller meets.
    if deeper_than(root, MAX_DEPTH)? {
        return Err(DecodeError::TOO_DEEP);
    }
    container(root, 0)
}

/// Whether containers nest more than `limit` levels under (and counting) `root`.
pub fn deeper_than(root: Container<'_>, limit: usize) -> Result<bool, DecodeError> {
    let mut open: Vec<Box<dyn Iterator<Item = Result<Item<'_>, DecodeError>> + '_>> = vec![children(root)];
    while let Some(top) = open.last_mut() {
        match top.next() {
            None => {
                open.pop();
            }
            Some(item) => {
                if let Item::Container(child) = item? {
                    if open.len() >= limit {
                        return Ok(true);
                    }
                    open.push(children(child));
                }
            }
        }
    }
    Ok(false)
}

/// An array's elements or an object's values.
fn children<'a>(container: Container<'a>) -> Box<dyn Iterator<Item = Result<Item<'a>, DecodeError>> + 'a> {
    if container.kind == Kind::Object {
        Box::new(container.values())
    } else {
        Box::new(container.elements())
    }
}

fn container(container: Container<'_>, depth: usize) -> Result<Value<'_>, DecodeError> {
    crate::stack::check();
    if depth >= MAX_DEPTH {
        return Err(DecodeError::TOO_DEEP);
    }
    if container.kind == Kind::Object {
        // Keys first, then values, in storage order (keys already in jsonb order).
        let mut members = Vec::with_capacity(container.len());
        let mut keys = container.object_keys();
        for key in &mut keys {
            match key? {
                Item::String(key) => members.push((Cow::Borrowed(utf8(key)?), Value::Null)),
                _ => return Err(DecodeError("object key is not a string")),
            }
        }
        for (member, item) in members.iter_mut().zip(keys.values()) {
            member.1 = value(item?, depth)?;
        }
        return Ok(Value::Object(members));
    }
    let mut items = Vec::with_capacity(container.len());
    for element in container.elements() {
        items.push(value(element?, depth)?);
    }
    Ok(Value::Array(items))
}

fn value(item: Item<'_>, depth: usize) -> Result<Value<'_>, DecodeError> {
    Ok(match item {
        Item::Null => Value::Null,
        Item::Bool(b) => Value::Bool(b),
        Item::String(bytes) => Value::String(Cow::Borrowed(utf8(bytes)?)),
        Item::Number(numeric) => Value::Number(Cow::Owned(exact_text(numeric)?)),
        Item::Container(child) => container(child, depth + 1)?,
    })
}

fn utf8(bytes: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(bytes).map_err(|_| DecodeError::NOT_UTF8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonb::encode::encode;
    use serde_json::json;

    #[test]
    fn documents_decode_in_jsonb_key_order_with_exact_numbers() {
        let bytes = encode(&json!({"bb": [1, 2.50, -3e-7], "a": {"x": null, "y": true}, "s": "é"}));
        let n = |t: &str| Value::Number(Cow::Owned(t.to_owned()));
        assert_eq!(
            decode(&bytes).unwrap(),
            Value::Object(vec![
                ("a".into(), Value::Object(vec![("x".into(), Value::Null), ("y".into(), Value::Bool(true))])),
                ("s".into(), Value::String("é".into())),
                ("bb".into(), Value::Array(vec![n("1"), n("25000e-4"), n("-30e-8")])),
            ])
        );
        assert_eq!(decode(&encode(&json!(null))).unwrap(), Value::Null);
        assert_eq!(decode(&encode(&json!("x"))).unwrap(), Value::String("x".into()));
    }

    #[test]
    fn nesting_is_bounded() {
        // A debug build's recursion (encoding, decoding, dropping) needs more than a test thread's stack.
        let checked = std::thread::Builder::new().stack_size(256 << 20).spawn(|| {
            let mut at_limit = json!(1);
            for _ in 0..MAX_DEPTH {
                at_limit = json!([at_limit]);
            }
            assert!(decode(&encode(&at_limit)).is_ok());
            assert_eq!(decode(&encode(&json!([at_limit]))), Err(DecodeError::TOO_DEEP));
        });
        checked.unwrap().join().unwrap();
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        for bytes in [&[][..], &[1, 0, 0][..], &[2, 0, 0, 0x20, 9, 9][..]] {
            assert!(decode(bytes).is_err());
        }
        let bytes = encode(&json!({"a": [1, "two", {"b": null}], "long key": 3.25}));
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_err(), "{len} bytes");
        }
    }
}
