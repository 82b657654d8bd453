//! The provider inventory argument: parsed once, validated element by element
//! and normalized exactly as the application does (trim, blank optionals
//! become NULL, duplicates of one identity collapse in first-seen order).

use crate::args::ArgError;
use crate::fast_hash::{hash_of, RowIndex};
use crate::jsonb::{Container, DecodeError, Item, Kind};

/// One physical Daytona sandbox as the provider lists it, borrowed from the
/// argument it was read from (100k items: no allocation per id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InventoryItem<'a> {
    pub sandbox_id: &'a str,
    pub routing_domain: Option<&'a str>,
    pub operation_key: Option<&'a str>,
}

impl<'a> InventoryItem<'a> {
    pub fn new(sandbox_id: &'a str, routing_domain: Option<&'a str>, operation_key: Option<&'a str>) -> Self {
        Self { sandbox_id, routing_domain, operation_key }
    }
}

/// ECMAScript `String.prototype.trim` whitespace (WhiteSpace + LineTerminator).
/// Rust's `char::is_whitespace` differs: it includes U+0085 and lacks U+FEFF,
/// and the application trims with JavaScript's rules. Also the set a streamed
/// listing is trimmed with in SQL (`btrim(value, JS_WHITESPACE)`).
pub const JS_WHITESPACE: &str = "\u{0009}\u{000A}\u{000B}\u{000C}\u{000D}\u{0020}\u{00A0}\u{1680}\u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2005}\u{2006}\u{2007}\u{2008}\u{2009}\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}";

/// Whether `c` is in [`JS_WHITESPACE`] (a match, not a search of that string: it runs for both ends of
/// every id of the listing).
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

pub fn js_trim(value: &str) -> &str {
    value.trim_matches(is_js_whitespace)
}

/// The longest id (sandboxId, routingDomain, operationKey) accepted, in
/// bytes: the ledger's keys are B-tree index entries, which hold at most a
/// third of a page, and an identity key holds two of them.
pub const MAX_ID_BYTES: usize = 1000;

fn bounded<'v>(index: usize, key: &str, value: &'v str) -> Result<&'v str, ArgError> {
    if value.len() > MAX_ID_BYTES {
        return Err(item_error(index, id_problem(key, Some(value.len()))));
    }
    Ok(value)
}

/// What is wrong with an id member `key` of an element, from its length after
/// trimming (None: absent; 0: blank; else too long): the words both the JSON
/// inventory and a streamed listing use.
fn id_problem(key: &str, trimmed_bytes: Option<usize>) -> String {
    match trimmed_bytes {
        None => format!("{key} is required"),
        Some(0) => format!("{key} is blank"),
        Some(bytes) => format!("{key} is {bytes} bytes long; at most {MAX_ID_BYTES} bytes fit the ledger's index keys"),
    }
}

fn item_error(index: usize, reason: impl std::fmt::Display) -> ArgError {
    ArgError::new("inventory", format!("element {index}: {reason}"))
}

/// What is wrong with element `index` of a streamed listing (a row of
/// provider_inventory_stream), as the SQL that checks it found it: `key` the
/// member, `trimmed_bytes` its length after trimming (None: NULL). The same
/// words as the JSON inventory's errors, under `argument`.
pub fn streamed_problem(argument: &'static str, index: usize, key: &str, trimmed_bytes: Option<usize>) -> ArgError {
    ArgError::new(argument, format!("element {index}: {}", id_problem(key, trimmed_bytes)))
}

/// Read the `inventory` argument from jsonb's binary form, in place (no
/// `jsonb_out`, no text parse, no value tree). Validate element by element
/// (the first bad element is named) and normalize: trim, blank optionals
/// become NULL, duplicates of one identity collapse in first-seen order (a
/// JavaScript Map's).
pub fn parse_inventory_jsonb(payload: &[u8]) -> Result<Vec<InventoryItem<'_>>, ArgError> {
    fn unreadable(e: DecodeError) -> ArgError {
        ArgError::new("inventory", format!("could not be read: {e}"))
    }
    fn text(bytes: &[u8]) -> Result<&str, ArgError> {
        std::str::from_utf8(bytes).map_err(|_| unreadable(DecodeError("a string is not UTF-8")))
    }
    fn optional<'v>(index: usize, value: Option<Item<'v>>, key: &str) -> Result<Option<&'v str>, ArgError> {
        match value {
            None | Some(Item::Null) => Ok(None),
            Some(Item::String(s)) => blank_is_null(Some(text(s)?)).map(|v| bounded(index, key, v)).transpose(),
            Some(other) => Err(item_error(index, format!("{key} must be a string or null, got {}", other.kind()))),
        }
    }
    let root = Container::read(payload).map_err(unreadable)?;
    if root.kind != Kind::Array {
        let got = match root.kind {
            Kind::Scalar => root.elements().next().transpose().map_err(unreadable)?.map_or("null", |v| v.kind()),
            _ => "an object",
        };
        return Err(ArgError::new("inventory", format!("must be a JSON array, got {got}")));
    }
    let mut items = Vec::with_capacity(root.len());
    for (index, element) in root.elements().enumerate() {
        let object = match element.map_err(unreadable)? {
            Item::Container(object) if object.kind == Kind::Object => object,
            other => return Err(item_error(index, format!("must be an object, got {}", other.kind()))),
        };
        // One pass over the members (jsonb keys are unique) rather than a lookup per key.
        let (mut sandbox_id, mut routing_domain, mut operation_key) = (None, None, None);
        object
            .for_each_member(|name, value| {
                match name {
                    b"sandboxId" => sandbox_id = Some(value),
                    b"routingDomain" => routing_domain = Some(value),
                    b"operationKey" => operation_key = Some(value),
                    _ => {}
                }
                Ok(())
            })
            .map_err(unreadable)?;
        let sandbox_id = match sandbox_id {
            Some(Item::String(s)) => js_trim(text(s)?),
            None => return Err(item_error(index, id_problem("sandboxId", None))),
            Some(other) => return Err(item_error(index, format!("sandboxId must be a string, got {}", other.kind()))),
        };
        if sandbox_id.is_empty() {
            return Err(item_error(index, id_problem("sandboxId", Some(0))));
        }
        let sandbox_id = bounded(index, "sandboxId", sandbox_id)?;
        let item = InventoryItem::new(
            sandbox_id,
            optional(index, routing_domain, "routingDomain")?,
            optional(index, operation_key, "operationKey")?,
        );
        items.push(item);
    }
    Ok(first_seen(items))
}

/// The items with duplicates collapsed, the first of each kept where it was. Hashed in a pass of their own
/// before the table is probed (pairing.rs, `identity_hashes`, says why).
fn first_seen(items: Vec<InventoryItem<'_>>) -> Vec<InventoryItem<'_>> {
    let hashes: Vec<u64> = items.iter().map(hash_of).collect();
    let mut seen = RowIndex::with_capacity(items.len());
    let mut kept = Vec::with_capacity(items.len());
    for (row, item) in items.iter().enumerate() {
        if !seen.rows(hashes[row]).any(|earlier| items[earlier] == *item) {
            seen.insert(hashes[row], row);
            kept.push(*item);
        }
    }
    kept
}

fn blank_is_null(value: Option<&str>) -> Option<&str> {
    value.map(js_trim).filter(|t| !t.is_empty())
}

/// The inventory as parallel columns, the shape the SQL unnests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InventoryColumns {
    pub sandbox_ids: Vec<Option<String>>,
    pub routing_domains: Vec<Option<String>>,
    pub operation_keys: Vec<Option<String>>,
}

impl InventoryColumns {
    pub fn from_items<'a, 'i: 'a>(items: impl IntoIterator<Item = &'a InventoryItem<'i>>) -> Self {
        let mut columns = Self::default();
        for item in items {
            columns.sandbox_ids.push(Some(item.sandbox_id.to_owned()));
            columns.routing_domains.push(item.routing_domain.map(str::to_owned));
            columns.operation_keys.push(item.operation_key.map(str::to_owned));
        }
        columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_whitespace_match_is_the_whitespace_list() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(is_js_whitespace(c), JS_WHITESPACE.contains(c), "U+{:04X}", c as u32);
        }
    }

    /// An item as the tests compare it (owned: the parsed ones borrow from bytes the helper drops).
    type Owned = (String, Option<String>, Option<String>);

    /// The inventory from JSON text, through its jsonb binary form.
    fn parse_inventory(text: &str) -> Result<Vec<Owned>, ArgError> {
        let value: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        let bytes = crate::jsonb::encode::encode(&value);
        Ok(parse_inventory_jsonb(&bytes)?.iter().map(|i| item(i.sandbox_id, i.routing_domain, i.operation_key)).collect())
    }

    fn item(sandbox: &str, domain: Option<&str>, key: Option<&str>) -> Owned {
        (sandbox.to_owned(), domain.map(str::to_owned), key.map(str::to_owned))
    }

    #[test]
    fn trims_and_blanks_become_null() {
        let items = parse_inventory(
            r#"[{"sandboxId":"  sb-1\t","routingDomain":"  ","operationKey":" op-1 ","extra":1},
                {"sandboxId":"sb-2","routingDomain":null}]"#,
        )
        .unwrap();
        assert_eq!(items, vec![item("sb-1", None, Some("op-1")), item("sb-2", None, None)]);
    }

    #[test]
    fn duplicates_collapse_in_first_seen_order() {
        let items = parse_inventory(
            r#"[{"sandboxId":"b"},{"sandboxId":"a","operationKey":"k"},{"sandboxId":" b "},
                {"sandboxId":"a","operationKey":"k2"},{"sandboxId":"a","operationKey":"k"}]"#,
        )
        .unwrap();
        assert_eq!(items, vec![item("b", None, None), item("a", None, Some("k")), item("a", None, Some("k2"))]);
    }

    #[test]
    fn javascript_whitespace_rules() {
        assert_eq!(js_trim("\u{FEFF}x\u{3000}"), "x");
        // NEL is whitespace to Rust but not to JavaScript.
        assert_eq!(js_trim("\u{0085}x"), "\u{0085}x");
    }

    #[test]
    fn errors_name_the_argument_and_element() {
        let cases = [
            ("null", "must be a JSON array, got null"),
            (r#"{"sandboxId":"a"}"#, "must be a JSON array, got an object"),
            (r#"[{"sandboxId":"a"}, 3]"#, "element 1: must be an object, got a number"),
            (r#"[{"routingDomain":"x"}]"#, "element 0: sandboxId is required"),
            (r#"[{"sandboxId":7}]"#, "element 0: sandboxId must be a string, got a number"),
            (r#"[{"sandboxId":null}]"#, "element 0: sandboxId must be a string, got null"),
            (r#"[{"sandboxId":"a"},{"sandboxId":"  "}]"#, "element 1: sandboxId is blank"),
            (r#"[{"sandboxId":"a","operationKey":1}]"#, "element 0: operationKey must be a string or null"),
            (r#"[{"sandboxId":"a","routingDomain":[]}]"#, "element 0: routingDomain must be a string or null"),
        ];
        for (json, expected) in cases {
            let err = parse_inventory(json).unwrap_err();
            assert_eq!(err.argument, "inventory");
            assert!(err.reason.contains(expected), "{json}: {err}");
        }
    }

    #[test]
    fn arrays_escapes_and_odd_shapes() {
        assert_eq!(parse_inventory(r#"[["sb", null, null]]"#).unwrap_err().reason, "element 0: must be an object, got an array");
        assert_eq!(
            parse_inventory(r#"[{"sandboxId":"s\u00e9 \n","extra":{"a":[1]},"operationKey":"k\"q"}]"#).unwrap(),
            vec![item("s\u{e9}", None, Some("k\"q"))]
        );
        assert_eq!(parse_inventory("[]").unwrap(), vec![]);
    }

    /// The rules restated naively, over serde_json's reading of the text.
    fn naive(text: &str) -> Result<Vec<Owned>, ArgError> {
        use crate::args::json_kind;
        use serde_json::Value;
        let elements: Vec<Value> = serde_json::from_str(text).unwrap();
        let mut items: Vec<Owned> = Vec::new();
        for (index, element) in elements.iter().enumerate() {
            let Value::Object(object) = element else {
                return Err(item_error(index, format!("must be an object, got {}", json_kind(element))));
            };
            let sandbox_id = match object.get("sandboxId") {
                None => return Err(item_error(index, id_problem("sandboxId", None))),
                Some(Value::String(s)) if js_trim(s).is_empty() => return Err(item_error(index, "sandboxId is blank")),
                Some(Value::String(s)) => js_trim(s),
                Some(other) => return Err(item_error(index, format!("sandboxId must be a string, got {}", json_kind(other)))),
            };
            let optional = |key: &str| match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(js_trim(s)).filter(|t| !t.is_empty())),
                Some(other) => Err(item_error(index, format!("{key} must be a string or null, got {}", json_kind(other)))),
            };
            let item = item(sandbox_id, optional("routingDomain")?, optional("operationKey")?);
            if !items.contains(&item) {
                items.push(item);
            }
        }
        Ok(items)
    }

    proptest! {
        /// Items (trimmed, blanks NULL, duplicates collapsed in first-seen
        /// order) and errors (the first bad element) as the naive restatement.
        #[test]
        fn agrees_with_the_naive_rules(
            raw in proptest::collection::vec((
                prop_oneof![Just(serde_json::json!(null)), Just(serde_json::json!(3)), "[ a-c\\t]{0,3}".prop_map(serde_json::Value::from)],
                prop_oneof![Just(serde_json::json!(null)), Just(serde_json::json!([])), "[ a-b\"]{0,2}".prop_map(serde_json::Value::from)],
                proptest::option::of("[ k]{0,2}"),
                0u8..10,
            ), 0..30)
        ) {
            let elements: Vec<serde_json::Value> = raw.iter().map(|(s, d, k, shape)| match shape {
                0 => serde_json::json!([s]),
                1 => serde_json::json!({"routingDomain": d}),
                _ => serde_json::json!({"sandboxId": s, "routingDomain": d, "operationKey": k, "n": 1.5, "sandboxId2": [s]}),
            }).collect();
            let text = serde_json::to_string(&elements).unwrap();
            prop_assert_eq!(parse_inventory(&text), naive(&text));
        }
    }

    #[test]
    fn ids_longer_than_an_index_key_are_refused() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let ok = "y".repeat(MAX_ID_BYTES);
        assert!(parse_inventory(&format!(r#"[{{"sandboxId": "{ok}", "operationKey": "{ok}", "routingDomain": "{ok}"}}]"#)).is_ok());
        for (field, json) in [
            ("sandboxId", format!(r#"[{{"sandboxId": "{long}"}}]"#)),
            ("routingDomain", format!(r#"[{{"sandboxId": "a", "routingDomain": "{long}"}}]"#)),
            ("operationKey", format!(r#"[{{"sandboxId": "a", "operationKey": "{long}"}}]"#)),
        ] {
            let err = parse_inventory(&json).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("invalid argument inventory: element 0: {field} is 1001 bytes long; at most 1000 bytes fit the ledger's index keys")
            );
        }
    }
}
