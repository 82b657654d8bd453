//! The few JavaScript value semantics the application's reconciler relies on,
//! over `serde_json::Value` (pure Rust, no pgrx types).
//!
//! Every JSON value enters through [`parse`], which first runs the text
//! through the foundation's `stable_json`: that is `JSON.parse(jsonb_out(x))`
//! as node-postgres hands it to the application (numbers become doubles,
//! duplicate keys resolve as JavaScript does). What we then write back is what
//! the application's `JSON.stringify` would have written, up to key order,
//! which jsonb does not keep anyway.

use crate::stock::canonical;
use serde_json::{Map, Value};

pub type Object = Map<String, Value>;

/// `JSON.parse(text)` as the application sees a jsonb value.
pub fn parse(text: &str) -> Result<Value, String> {
    let normalized = canonical::stable_json(text).map_err(|e| e.to_string())?;
    serde_json::from_str(&normalized).map_err(|e| e.to_string())
}

/// The JSON text to store (`JSON.stringify`).
pub fn to_text(value: &Value) -> String {
    serde_json::to_string(value).expect("serde_json::Value always serializes")
}

/// `stockHash(value)`: the foundation's hash of the value's JSON text.
pub fn stock_hash(value: &Value) -> String {
    canonical::stock_hash(&to_text(value)).expect("serde_json output is valid JSON")
}

/// `{ ...value }`: an object's own members; an array's or a string's indexes;
/// nothing for other primitives and null.
pub fn spread(value: &Value) -> Object {
    match value {
        Value::Object(members) => members.clone(),
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect(),
        Value::String(s) => s
            .encode_utf16()
            .enumerate()
            .map(|(i, unit)| (i.to_string(), Value::String(String::from_utf16_lossy(&[unit]))))
            .collect(),
        _ => Object::new(),
    }
}

/// `value?.[key]` for the named (never index-like) keys the reconciler reads.
pub fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object()?.get(key)
}

/// `member(value, key) === text`.
pub fn member_is(value: &Value, key: &str, text: &str) -> bool {
    member(value, key).and_then(Value::as_str) == Some(text)
}

/// `!value`.
pub fn falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64().is_none_or(|f| f == 0.0 || f.is_nan()),
        Value::String(s) => s.is_empty(),
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// `cloneRecord(value)`: a plain object's members, else `None` (null).
pub fn clone_record(value: Option<&Value>) -> Option<Object> {
    match value {
        Some(Value::Object(members)) => Some(members.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_applies_javascript_number_rules() {
        assert_eq!(parse(r#"{"a":1.0,"b":9007199254740993,"c":1e400}"#).unwrap(), json!({"a":1,"b":9007199254740992u64,"c":null}));
        assert_eq!(parse("-0").unwrap(), json!(0));
    }

    #[test]
    fn spread_matches_object_spread() {
        assert_eq!(spread(&json!({"a":1})), json!({"a":1}).as_object().unwrap().clone());
        assert_eq!(Value::Object(spread(&json!([true, "x"]))), json!({"0":true,"1":"x"}));
        assert_eq!(Value::Object(spread(&json!("ab"))), json!({"0":"a","1":"b"}));
        assert!(spread(&json!(5)).is_empty() && spread(&Value::Null).is_empty() && spread(&json!(true)).is_empty());
    }

    #[test]
    fn falsy_values() {
        for v in [json!(null), json!(false), json!(0), json!(0.0), json!("")] {
            assert!(falsy(&v), "{v}");
        }
        for v in [json!(true), json!(1), json!("0"), json!([]), json!({})] {
            assert!(!falsy(&v), "{v}");
        }
    }

    #[test]
    fn clone_record_takes_only_plain_objects() {
        assert_eq!(clone_record(Some(&json!({"k":1}))).unwrap().len(), 1);
        assert!(clone_record(Some(&json!([1]))).is_none());
        assert!(clone_record(None).is_none());
    }
}
