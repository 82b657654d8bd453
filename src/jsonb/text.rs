//! A container printed as the server prints it (`JsonbToCString`): the text
//! `->>` gives for a member that is an array or object.

use super::{numeric_out, Container, DecodeError, Item, Kind};

/// `JsonbToCString` of a container.
pub fn container_text(container: Container<'_>) -> Result<String, DecodeError> {
    let mut out = String::new();
    write_container(&mut out, container)?;
    Ok(out)
}

fn write_container(out: &mut String, container: Container<'_>) -> Result<(), DecodeError> {
    match container.kind {
        Kind::Scalar => {
            for element in container.elements() {
                write_value(out, element?)?;
            }
        }
        Kind::Array => {
            out.push('[');
            for (i, element) in container.elements().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, element?)?;
            }
            out.push(']');
        }
        Kind::Object => {
            out.push('{');
            for (i, member) in container.members().enumerate() {
                let (key, value) = member?;
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key)?;
                out.push_str(": ");
                write_value(out, value)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_value(out: &mut String, item: Item<'_>) -> Result<(), DecodeError> {
    match item {
        Item::Null => out.push_str("null"),
        Item::Bool(true) => out.push_str("true"),
        Item::Bool(false) => out.push_str("false"),
        Item::String(text) => write_string(out, text)?,
        Item::Number(numeric) => out.push_str(&numeric_out(numeric)?),
        Item::Container(child) => write_container(out, child)?,
    }
    Ok(())
}

/// `escape_json`: quotes, backslashes and control characters escaped; nothing else.
fn write_string(out: &mut String, text: &[u8]) -> Result<(), DecodeError> {
    let text = std::str::from_utf8(text).map_err(|_| DecodeError::NOT_UTF8)?;
    out.push('"');
    for c in text.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonb::encode::encode;
    use serde_json::json;

    fn text(value: serde_json::Value) -> String {
        container_text(Container::read(&encode(&value)).unwrap()).unwrap()
    }

    #[test]
    fn containers_print_like_jsonb_out() {
        assert_eq!(text(json!([1, "a\"b", [], {}])), r#"[1, "a\"b", [], {}]"#);
        // Keys in jsonb's order (shorter first, then bytewise), one space after ':' and ','.
        assert_eq!(text(json!({"bb": null, "a": {"c": true}, "B": 1.50})), r#"{"B": 1.5, "a": {"c": true}, "bb": null}"#);
        assert_eq!(text(json!("\u{1}\n\t/é")), r#""\u0001\n\t/é""#);
        assert_eq!(text(json!(-0.000123)), "-0.000123");
    }
}
