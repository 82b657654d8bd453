//! A container printed as the server prints it (`JsonbToCString`): the text
//! `->>` gives for a member that is an array or object.

use super::{numeric_out, Container, DecodeError, Item, Kind};

/// `JsonbToCString` of a container. Iterative, as the server's printer is:
/// a value nested as deep as the jsonb reader allows (far deeper than a
/// recursive printer's stack) prints without growing the stack.
pub fn container_text(container: Container<'_>) -> Result<String, DecodeError> {
    /// An open array or object: its remaining members (key, value) and
    /// whether one has been printed.
    struct Open<'a> {
        members: Box<dyn Iterator<Item = Result<(Option<&'a [u8]>, Item<'a>), DecodeError>> + 'a>,
        close: char,
        printed: bool,
    }
    fn open<'a>(out: &mut String, container: Container<'a>) -> Open<'a> {
        match container.kind {
            Kind::Scalar => Open { members: Box::new(container.elements().map(|e| e.map(|v| (None, v)))), close: '\0', printed: false },
            Kind::Array => {
                out.push('[');
                Open { members: Box::new(container.elements().map(|e| e.map(|v| (None, v)))), close: ']', printed: false }
            }
            Kind::Object => {
                out.push('{');
                Open { members: Box::new(container.members().map(|m| m.map(|(k, v)| (Some(k), v)))), close: '}', printed: false }
            }
        }
    }

    let mut out = String::new();
    let mut stack = vec![open(&mut out, container)];
    while let Some(top) = stack.last_mut() {
        let Some(member) = top.members.next() else {
            if top.close != '\0' {
                out.push(top.close);
            }
            stack.pop();
            continue;
        };
        let (key, value) = member?;
        if std::mem::replace(&mut top.printed, true) {
            out.push_str(", ");
        }
        if let Some(key) = key {
            write_string(&mut out, key)?;
            out.push_str(": ");
        }
        match value {
            Item::Null => out.push_str("null"),
            Item::Bool(true) => out.push_str("true"),
            Item::Bool(false) => out.push_str("false"),
            Item::String(text) => write_string(&mut out, text)?,
            Item::Number(numeric) => out.push_str(&numeric_out(numeric)?),
            Item::Container(child) => {
                let child = open(&mut out, child);
                stack.push(child);
            }
        }
    }
    Ok(out)
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

    /// A value nested far deeper than any recursive printer's stack allows
    /// (PostgreSQL accepts jsonb nested until its own stack check, some
    /// 10,000s of levels) prints on a small stack.
    #[test]
    fn deep_nesting_prints_without_recursion() {
        let depth = 200_000;
        let bytes = deep_array(depth);
        let printed = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || container_text(Container::read(&bytes).unwrap()).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(printed.len(), 2 * depth + 1);
        assert_eq!(printed, format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
    }

    /// `[[[ ... [1] ... ]]]`, `depth` arrays, written directly in jsonb's
    /// binary format (the test encoder recurses): each outer array is a
    /// header and one JEntry (a container of its child's length), then the child.
    fn deep_array(depth: usize) -> Vec<u8> {
        let inner = encode(&json!([1]));
        let mut bytes = Vec::with_capacity(inner.len() + 8 * depth);
        for level in 1..depth {
            let child = inner.len() + 8 * (depth - 1 - level);
            bytes.extend_from_slice(&(0x4000_0000u32 | 1).to_le_bytes());
            bytes.extend_from_slice(&(0x5000_0000u32 | child as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&inner);
        bytes
    }
}
