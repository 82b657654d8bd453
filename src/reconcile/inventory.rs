//! The provider inventory argument: parsed once, validated element by element
//! and normalized exactly as the application does (trim, blank optionals
//! become NULL, duplicates of one identity collapse in first-seen order).

use crate::args::{json_kind, ArgError};
use crate::stock::json;
use serde::Deserialize;
use serde_json::Value;
use crate::fast_hash::{FastMap, FastSet};

/// One physical Daytona sandbox as the provider lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InventoryItem {
    pub sandbox_id: String,
    pub routing_domain: Option<String>,
    pub operation_key: Option<String>,
}

/// ECMAScript `String.prototype.trim` whitespace (WhiteSpace + LineTerminator).
/// Rust's `char::is_whitespace` differs: it includes U+0085 and lacks U+FEFF,
/// and the application trims with JavaScript's rules.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

pub fn js_trim(value: &str) -> &str {
    value.trim_matches(is_js_whitespace)
}

fn item_error(index: usize, reason: impl std::fmt::Display) -> ArgError {
    ArgError::new("inventory", format!("element {index}: {reason}"))
}

/// An optional string field: absent or JSON null is NULL, a blank string is NULL.
fn optional_string(
    index: usize,
    object: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<String>, ArgError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let trimmed = js_trim(s);
            Ok(if trimmed.is_empty() { None } else { Some(trimmed.to_owned()) })
        }
        Some(other) => Err(item_error(index, format!("{key} must be a string or null, got {}", json_kind(other)))),
    }
}

/// One well-formed element, its strings borrowed from the JSON text. Only an
/// object will do (serde's derived structs would also accept an array), and
/// a string with escapes does not borrow: both fall back to the checked parse.
struct WellFormed<'a> {
    sandbox_id: &'a str,
    routing_domain: Option<&'a str>,
    operation_key: Option<&'a str>,
}

impl<'de> Deserialize<'de> for WellFormed<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(WellFormedVisitor)
    }
}

struct WellFormedVisitor;

impl<'de> serde::de::Visitor<'de> for WellFormedVisitor {
    type Value = WellFormed<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an inventory object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let (mut sandbox_id, mut routing_domain, mut operation_key) = (None, None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "sandboxId" => sandbox_id = Some(map.next_value::<&'de str>()?),
                "routingDomain" => routing_domain = map.next_value::<Option<&'de str>>()?,
                "operationKey" => operation_key = map.next_value::<Option<&'de str>>()?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let sandbox_id = sandbox_id.ok_or_else(|| <M::Error as serde::de::Error>::missing_field("sandboxId"))?;
        Ok(WellFormed { sandbox_id, routing_domain, operation_key })
    }
}

/// Parse the `inventory` argument (jsonb text) and normalize it.
///
/// The common case (every element well formed) is one typed pass that
/// borrows the strings; anything it rejects is parsed again, slowly, only to
/// name the first bad element.
pub fn parse_inventory(json: &str) -> Result<Vec<InventoryItem>, ArgError> {
    match serde_json::from_str::<Vec<WellFormed>>(json) {
        Ok(elements) if elements.iter().all(|e| !js_trim(e.sandbox_id).is_empty()) => {
            let mut seen = FastSet::with_capacity_and_hasher(elements.len(), Default::default());
            let mut items = Vec::with_capacity(elements.len());
            for e in &elements {
                let key = (js_trim(e.sandbox_id), blank_is_null(e.routing_domain), blank_is_null(e.operation_key));
                if seen.insert(key) {
                    items.push(InventoryItem {
                        sandbox_id: key.0.to_owned(),
                        routing_domain: key.1.map(str::to_owned),
                        operation_key: key.2.map(str::to_owned),
                    });
                }
            }
            Ok(items)
        }
        _ => parse_inventory_checked(json),
    }
}

/// Read the `inventory` argument from jsonb's binary form (no `jsonb_out`, no
/// text parse): the same items and the same errors as [`parse_inventory`]
/// on the text PostgreSQL would print for it.
pub fn parse_inventory_jsonb(payload: &[u8]) -> Result<Vec<InventoryItem>, ArgError> {
    let value = crate::stock::jsonb_binary::decode(payload)
        .map_err(|e| ArgError::new("inventory", format!("could not be read: {e}")))?;
    inventory_from_value(&value)
}

/// The checked rules of [`parse_inventory_checked`] over a decoded document.
pub fn inventory_from_value(value: &json::Value) -> Result<Vec<InventoryItem>, ArgError> {
    let json::Value::Array(elements) = value else {
        return Err(ArgError::new("inventory", format!("must be a JSON array, got {}", value.kind())));
    };
    fn optional<'v>(index: usize, element: &'v json::Value, key: &str) -> Result<Option<&'v str>, ArgError> {
        match element.member(key) {
            None | Some(json::Value::Null) => Ok(None),
            Some(json::Value::String(s)) => Ok(blank_is_null(Some(s))),
            Some(other) => Err(item_error(index, format!("{key} must be a string or null, got {}", other.kind()))),
        }
    }
    let mut seen = FastSet::with_capacity_and_hasher(elements.len(), Default::default());
    let mut items = Vec::with_capacity(elements.len());
    for (index, element) in elements.iter().enumerate() {
        if !matches!(element, json::Value::Object(_)) {
            return Err(item_error(index, format!("must be an object, got {}", element.kind())));
        }
        let sandbox_id = match element.member("sandboxId") {
            Some(json::Value::String(s)) => js_trim(s),
            None => return Err(item_error(index, "sandboxId is required")),
            Some(other) => return Err(item_error(index, format!("sandboxId must be a string, got {}", other.kind()))),
        };
        if sandbox_id.is_empty() {
            return Err(item_error(index, "sandboxId is blank"));
        }
        let key = (sandbox_id, optional(index, element, "routingDomain")?, optional(index, element, "operationKey")?);
        if seen.insert(key) {
            items.push(InventoryItem {
                sandbox_id: key.0.to_owned(),
                routing_domain: key.1.map(str::to_owned),
                operation_key: key.2.map(str::to_owned),
            });
        }
    }
    Ok(items)
}

fn blank_is_null(value: Option<&str>) -> Option<&str> {
    value.map(js_trim).filter(|t| !t.is_empty())
}

/// Element-by-element parse that names the first bad element.
fn parse_inventory_checked(json: &str) -> Result<Vec<InventoryItem>, ArgError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| ArgError::new("inventory", format!("is not valid JSON: {e}")))?;
    let Value::Array(elements) = value else {
        return Err(ArgError::new("inventory", format!("must be a JSON array, got {}", json_kind(&value))));
    };
    let mut items = Vec::with_capacity(elements.len());
    for (index, element) in elements.iter().enumerate() {
        let Value::Object(object) = element else {
            return Err(item_error(index, format!("must be an object, got {}", json_kind(element))));
        };
        let sandbox_id = match object.get("sandboxId") {
            Some(Value::String(s)) => js_trim(s),
            None => return Err(item_error(index, "sandboxId is required")),
            Some(other) => {
                return Err(item_error(index, format!("sandboxId must be a string, got {}", json_kind(other))))
            }
        };
        if sandbox_id.is_empty() {
            return Err(item_error(index, "sandboxId is blank"));
        }
        items.push(InventoryItem {
            sandbox_id: sandbox_id.to_owned(),
            routing_domain: optional_string(index, object, "routingDomain")?,
            operation_key: optional_string(index, object, "operationKey")?,
        });
    }
    Ok(normalize(items))
}

/// Collapse duplicates of one (sandboxId, routingDomain, operationKey),
/// keeping the first occurrence's position (a JavaScript Map's order).
pub fn normalize(items: Vec<InventoryItem>) -> Vec<InventoryItem> {
    let mut seen = FastSet::with_capacity_and_hasher(items.len(), Default::default());
    items.into_iter().filter(|item| seen.insert(item.clone())).collect()
}

/// Operation labels carried by exactly one normalized item: only these may
/// recover a reserved create (a label seen twice proves nothing).
pub fn unique_operation_keys(items: &[InventoryItem]) -> FastSet<&str> {
    let mut counts: FastMap<&str, usize> = FastMap::default();
    for key in items.iter().filter_map(|i| i.operation_key.as_deref()) {
        *counts.entry(key).or_default() += 1;
    }
    counts.into_iter().filter(|&(_, n)| n == 1).map(|(k, _)| k).collect()
}

/// The inventory as parallel columns, the shape the SQL unnests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InventoryColumns {
    pub sandbox_ids: Vec<Option<String>>,
    pub routing_domains: Vec<Option<String>>,
    pub operation_keys: Vec<Option<String>>,
}

impl InventoryColumns {
    pub fn from_items<'a>(items: impl IntoIterator<Item = &'a InventoryItem>) -> Self {
        let mut columns = Self::default();
        for item in items {
            columns.sandbox_ids.push(Some(item.sandbox_id.clone()));
            columns.routing_domains.push(item.routing_domain.clone());
            columns.operation_keys.push(item.operation_key.clone());
        }
        columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn item(sandbox: &str, domain: Option<&str>, key: Option<&str>) -> InventoryItem {
        InventoryItem {
            sandbox_id: sandbox.into(),
            routing_domain: domain.map(Into::into),
            operation_key: key.map(Into::into),
        }
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
            let decoded = inventory_from_value(&json::parse(json).unwrap()).unwrap_err();
            let err = parse_inventory(json).unwrap_err();
            assert_eq!(decoded, err, "{json}");
            assert_eq!(err.argument, "inventory");
            assert!(err.reason.contains(expected), "{json}: {err}");
        }
    }

    #[test]
    fn arrays_escapes_and_odd_shapes_take_the_checked_path() {
        assert_eq!(parse_inventory(r#"[["sb", null, null]]"#).unwrap_err().reason, "element 0: must be an object, got an array");
        assert_eq!(
            parse_inventory(r#"[{"sandboxId":"s\u00e9 \n","extra":{"a":[1]},"operationKey":"k\"q"}]"#).unwrap(),
            vec![item("s\u{e9}", None, Some("k\"q"))]
        );
        assert_eq!(parse_inventory("[]").unwrap(), vec![]);
    }

    proptest! {
        /// The fast path and the checked path agree on any well-formed inventory.
        #[test]
        fn fast_and_checked_parses_agree(
            raw in proptest::collection::vec(("[ a-c\\t]{0,3}", proptest::option::of("[ a-b\"]{0,2}"), proptest::option::of("[ k]{0,2}")), 0..30)
        ) {
            let json = serde_json::to_string(&raw.iter().map(|(s, d, k)| serde_json::json!({
                "sandboxId": s, "routingDomain": d, "operationKey": k, "other": [s],
            })).collect::<Vec<_>>()).unwrap();
            prop_assert_eq!(parse_inventory(&json), parse_inventory_checked(&json));
        }


        /// The decoded-document path (what reads jsonb's binary form) agrees
        /// with the text path, items and errors alike.
        #[test]
        fn decoded_and_text_paths_agree(
            raw in proptest::collection::vec((
                prop_oneof![Just(serde_json::json!(null)), Just(serde_json::json!(3)), "[ a-c\\t]{0,3}".prop_map(serde_json::Value::from)],
                prop_oneof![Just(serde_json::json!(null)), Just(serde_json::json!([])), "[ a-b]{0,2}".prop_map(serde_json::Value::from)],
                proptest::option::of("[ k]{0,2}"),
                any::<bool>(),
            ), 0..20)
        ) {
            let elements: Vec<serde_json::Value> = raw.iter().map(|(s, d, k, object)| if *object {
                serde_json::json!({"sandboxId": s, "routingDomain": d, "operationKey": k, "n": 1.5})
            } else {
                serde_json::json!([s])
            }).collect();
            let text = serde_json::to_string(&elements).unwrap();
            let decoded = json::parse(&text).unwrap();
            prop_assert_eq!(inventory_from_value(&decoded), parse_inventory(&text));
        }

        #[test]
        fn normalization_is_idempotent_and_keeps_every_identity(
            raw in proptest::collection::vec((0u8..4, proptest::option::of(0u8..2), proptest::option::of(0u8..3)), 0..40)
        ) {
            let items: Vec<InventoryItem> = raw.iter().map(|(s, d, k)| InventoryItem {
                sandbox_id: format!("sb{s}"),
                routing_domain: d.map(|d| format!("d{d}")),
                operation_key: k.map(|k| format!("k{k}")),
            }).collect();
            let once = normalize(items.clone());
            prop_assert_eq!(normalize(once.clone()), once.clone());
            let set: std::collections::HashSet<_> = items.iter().collect();
            prop_assert_eq!(set.len(), once.len());
            // First-seen order.
            let mut expected = Vec::new();
            for i in &items { if !expected.contains(i) { expected.push(i.clone()); } }
            prop_assert_eq!(once, expected);
        }
    }
}
