//! `stableJson` and `stockHash`, bit for bit as the application computes them.
//!
//! The application reads a `jsonb` column through node-postgres, so what it
//! hashes is `JSON.parse(jsonb_out(value))`. Three JavaScript facts follow:
//! numbers are doubles printed by `Number#toString`, strings are escaped by
//! `JSON.stringify`, and `Object.keys` lists array-index keys first (ascending)
//! and then the other keys in the order jsonb printed them (shorter first, then
//! bytewise). `stableJson` then stable-sorts those keys with `localeCompare`
//! (ICU, en-US), so keys that collate equal keep that `Object.keys` order.

use super::json;
use crate::jsonb::Value;
use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::OnceLock;

pub use super::json::ParseError;

fn collator() -> &'static CollatorBorrowed<'static> {
    static COLLATOR: OnceLock<CollatorBorrowed<'static>> = OnceLock::new();
    COLLATOR.get_or_init(|| {
        // `localeCompare` with no arguments: the en-US tailoring (which is root),
        // tertiary strength, punctuation not ignored.
        Collator::try_new(icu_locale_core::locale!("en-US").into(), CollatorOptions::default())
            .expect("compiled ICU4X collation data for en-US")
    })
}

/// `String.prototype.localeCompare` in en-US, as a Rust ordering.
pub fn locale_compare(left: &str, right: &str) -> Ordering {
    collator().compare(left, right)
}

/// Distinct keys sorted as `Object.keys(x).sort((a, b) => a.localeCompare(b))` would.
pub fn sort_keys_like_javascript<K: AsRef<str> + Clone>(keys: &[K]) -> Vec<K> {
    member_order(keys).into_iter().map(|i| keys[i as usize].clone()).collect()
}

/// The canonical text of a JSON document (`stableJson(JSON.parse(text))`).
pub fn stable_json(text: &str) -> Result<String, ParseError> {
    Ok(stable_json_value(&json::parse(text)?, text.len()))
}

/// The canonical text of an already decoded value (from text or from jsonb's binary form).
pub fn stable_json_value(value: &Value<'_>, size_hint: usize) -> String {
    let mut out = String::with_capacity(size_hint);
    write_value(value, &mut out);
    out
}

/// `"sha256:" + hex(sha256(stableJson(JSON.parse(text))))`.
pub fn stock_hash(text: &str) -> Result<String, ParseError> {
    Ok(hash_canonical(&stable_json(text)?))
}

/// The stock hash of text that is already canonical.
pub fn hash_canonical(canonical: &str) -> String {
    let digest = Sha256::digest(canonical.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push(HEX[(byte >> 4) as usize] as char);
        out.push(HEX[(byte & 0xf) as usize] as char);
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A JavaScript array index: the canonical decimal text of an integer in 0..2^32-1.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

/// The order `Object.keys` reports for an object parsed from jsonb text.
fn object_keys_order(a: &str, b: &str) -> Ordering {
    match (array_index(a), array_index(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        // jsonb's own key order: length first, then bytes.
        (None, None) => a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes())),
    }
}

fn write_value(value: &Value<'_>, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(text) => write_number(text, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            with_member_order(members, |order| {
                for (i, &index) in order.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let (key, member) = &members[index as usize];
                    write_string(key, out);
                    out.push(':');
                    write_value(member, out);
                }
            });
            out.push('}');
        }
    }
}

/// The order stableJson prints an object's members in, as indices into the
/// members as they arrived: duplicates resolved to the last one (JSON.parse),
/// `Object.keys` order, then a stable `localeCompare` sort.
pub fn member_order<K: AsRef<str>>(keys: &[K]) -> Vec<u32> {
    let mut order: Vec<u32> = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        match order.iter_mut().find(|i| keys[**i as usize].as_ref() == key.as_ref()) {
            Some(slot) => *slot = index as u32,
            None => order.push(index as u32),
        }
    }
    order.sort_by(|a, b| object_keys_order(keys[*a as usize].as_ref(), keys[*b as usize].as_ref()));
    order.sort_by(|a, b| locale_compare(keys[*a as usize].as_ref(), keys[*b as usize].as_ref()));
    order
}

/// Documents in one table share a few shapes, and collation is most of the
/// cost, so each backend remembers the order for the key lists it has seen.
const ORDER_CACHE_ENTRIES: usize = 4096;

/// A multiply-rotate hash (as rustc's FxHash): the signatures are short and
/// not attacker-chosen in a way that matters (a collision costs a compare).
#[derive(Default)]
struct SignatureHasher(u64);

impl std::hash::Hasher for SignatureHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl SignatureHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type OrderCache = HashMap<Vec<u8>, Rc<[u32]>, std::hash::BuildHasherDefault<SignatureHasher>>;

/// Per backend: remembered orders, and the buffer a signature is built in
/// (reused, so a cache hit allocates nothing).
#[derive(Default)]
struct OrderMemo {
    orders: OrderCache,
    signature: Vec<u8>,
}

thread_local! {
    static ORDER_MEMO: RefCell<OrderMemo> = RefCell::new(OrderMemo::default());
}

fn with_member_order<R>(members: &[(Cow<'_, str>, Value<'_>)], f: impl FnOnce(&[u32]) -> R) -> R {
    let order = ORDER_MEMO.with(|memo| {
        let memo = &mut *memo.borrow_mut();
        // The key list, length-prefixed so no two lists share a signature.
        memo.signature.clear();
        for (key, _) in members {
            memo.signature.extend_from_slice(&(key.len() as u32).to_le_bytes());
            memo.signature.extend_from_slice(key.as_bytes());
        }
        if let Some(order) = memo.orders.get(memo.signature.as_slice()) {
            return order.clone();
        }
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
        let order: Rc<[u32]> = member_order(&keys).into();
        if memo.orders.len() >= ORDER_CACHE_ENTRIES {
            memo.orders.clear();
        }
        memo.orders.insert(memo.signature.clone(), order.clone());
        order
    });
    // The borrow is released: nested objects look their own order up.
    f(&order)
}

/// `JSON.stringify(Number(text))`.
pub fn write_number(text: &str, out: &mut String) {
    // Integers of at most 15 digits are exact doubles and print as themselves.
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    if !digits.is_empty() && digits.len() <= 15 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let significant = digits.trim_start_matches('0');
        if significant.is_empty() {
            out.push('0'); // -0 prints as 0
        } else {
            out.push_str(sign);
            out.push_str(significant);
        }
        return;
    }
    let parsed: f64 = text.parse().unwrap_or(f64::NAN);
    if !parsed.is_finite() {
        out.push_str("null"); // JSON.stringify(Infinity) === "null"
    } else if parsed == 0.0 {
        out.push('0');
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(parsed));
    }
}

/// Bytes `JSON.stringify` escapes: 1 for a short escape, 2 for `\u00xx`.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = 2;
        b += 1;
    }
    table[0x08] = 1;
    table[0x0c] = 1;
    table[b'\n' as usize] = 1;
    table[b'\r' as usize] = 1;
    table[b'\t' as usize] = 1;
    table[b'"' as usize] = 1;
    table[b'\\' as usize] = 1;
    table
};

/// `JSON.stringify(string)`.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let bytes = s.as_bytes();
    if bytes.iter().all(|&b| ESCAPE[b as usize] == 0) {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let kind = ESCAPE[b as usize];
        if kind == 0 {
            continue;
        }
        out.push_str(&s[run..i]);
        if kind == 2 {
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        } else {
            out.push('\\');
            out.push(match b {
                0x08 => 'b',
                0x0c => 'f',
                b'\n' => 'n',
                b'\r' => 'r',
                b'\t' => 't',
                other => other as char, // '"' and '\\' escape as themselves
            });
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        stable_json(text).unwrap()
    }

    #[test]
    fn application_vectors() {
        assert_eq!(
            stock_hash(r#"{"a":1,"b":{"c":2}}"#).unwrap(),
            "sha256:007f2c1c104514608c3cdf42ec59d710d0888592c1d1f72437d9b075093617b8"
        );
        assert_eq!(
            stock_hash(r#"{"image":"node:20","packages":["git"]}"#).unwrap(),
            "sha256:dfb71ca3591ef80c86fec970ecd38146d1d43794f0307c5dfb4a36478ac700b3"
        );
        assert_eq!(
            stock_hash(r#"{"name":"Daytona","description":"Managed Daytona sandbox environment.","config":{"target":"us","provider":"daytona"},"metadata":{"managedByPaperclip":true,"managedKubernetesSandbox":null,"managedSandboxProvider":"daytona"},"status":"active"}"#).unwrap(),
            "sha256:2c054730c82fd5f741172d425fada5832bea988ab8008a86088cc04f0d8fcc5f"
        );
    }

    #[test]
    fn keys_follow_icu_not_code_units() {
        let expected = [
            "_x", "$y", "1", "10", "9", "a", "A", "a_b", "a-b", "ab", "aB", "alpha", "b", "B", "e", "é", "f", "Zeta",
        ];
        let keys: Vec<&str> = expected.iter().rev().copied().collect();
        assert_eq!(sort_keys_like_javascript(&keys), expected);
    }

    #[test]
    fn numbers_print_like_javascript() {
        for (input, expected) in [
            ("1.0", "1"),
            ("1e21", "1e+21"),
            ("123456789012345678901234567890", "1.2345678901234568e+29"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1e400", "null"),
            ("12345678901234567890", "12345678901234567000"),
            ("0.1", "0.1"),
            ("100", "100"),
            ("1.5e300", "1.5e+300"),
            ("-2.50", "-2.5"),
            ("9007199254740993", "9007199254740992"),
            ("999999999999999", "999999999999999"),
            ("0007", "7"),
            ("-000", "0"),
            ("120000", "120000"),
            ("15000e-4", "1.5"),
        ] {
            assert_eq!(canon(input), expected, "number {input}");
        }
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        assert_eq!(canon(r#""a\"b\\c\/d""#), r#""a\"b\\c/d""#);
        assert_eq!(canon(r#""\b\f\n\r\t""#), r#""\b\f\n\r\t""#);
        assert_eq!(canon(r#""\u0001\u001f\u007f""#), "\"\\u0001\\u001f\u{7f}\"");
        assert_eq!(canon(r#""é ✓ \u2028""#), "\"é ✓ \u{2028}\"");
    }

    #[test]
    fn integer_keys_come_first_when_collation_ties() {
        // "1" and "1\u0001" collate equal (U+0001 is ignorable); JS lists the array index "1" first anyway.
        assert_eq!(canon("{\"1\\u0001\":1,\"1\":2}"), "{\"1\":2,\"1\\u0001\":1}");
        // Non-index keys that tie keep jsonb order: shorter first.
        assert_eq!(canon("{\"a\\u0001\":1,\"a\":2}"), "{\"a\":2,\"a\\u0001\":1}");
    }

    #[test]
    fn no_whitespace_and_arrays_in_order() {
        assert_eq!(canon(r#"{ "b" : [3, 1, {"y":1, "x":2}], "a" : null }"#), r#"{"a":null,"b":[3,1,{"x":2,"y":1}]}"#);
        assert_eq!(canon("[]"), "[]");
        assert_eq!(canon("{}"), "{}");
        assert_eq!(canon("true"), "true");
    }

    #[test]
    fn duplicate_keys_keep_the_last() {
        assert_eq!(canon(r#"{"a":1,"a":2}"#), r#"{"a":2}"#);
    }
}

#[cfg(test)]
mod javascript_parity {
    //! The same documents hashed by this crate and by real Node (the machine's
    //! `node`, with its own ICU), so parity is checked against JavaScript itself.

    use super::*;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Print a generated document the way `jsonb_out` would: keys deduplicated
    /// and in jsonb order (shorter first, then bytewise), single spaces.
    fn jsonb_text(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes())));
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(": ");
                    jsonb_text(&map[*k], out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    jsonb_text(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    fn node_hashes(docs: &[String]) -> Vec<(String, String)> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/src/stock/testdata/stable_json.js");
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node (20+) must be installed to check parity with JavaScript");
        child.stdin.take().unwrap().write_all(docs.join("\n").as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "node failed");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (hash, text) = l.split_once('\t').unwrap();
                (hash.to_string(), serde_json::from_str::<String>(text).unwrap())
            })
            .collect()
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "_x", "$y", "1", "10", "9", "01", "4294967294", "4294967295", "a", "A", "a_b", "a-b", "ab", "aB",
                "alpha", "b", "B", "e", "é", "e\u{301}", "f", "Zeta", "", " ", "ß", "ss", "Å", "z\u{1}", "z", "日本",
                "😀", "a\"b", "back\\slash", "tab\tkey", "co-op", "coop", "co_op", "-", "--", "ä", "æ", "ﬁ", "fi",
            ])
            .prop_map(str::to_string),
            "[a-zA-Z0-9_$ .:/-]{0,8}",
            "\\PC{0,4}",
        ]
    }

    fn number() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
            prop::sample::select(vec!["1e21", "1e-7", "0.000001", "123456789012345678901234567890", "1.0", "-0", "5e-324", "1.7976931348623157e308", "0.1", "100", "1e400"])
                .prop_map(|s| serde_json::from_str(s).unwrap_or(serde_json::Value::Null)),
        ]
    }

    fn document() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            number(),
            "\\PC{0,6}".prop_map(serde_json::Value::String),
            "[\u{1}-\u{1f}\"\\\\/\u{7f}\u{2028}é]{0,6}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 48, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
                prop::collection::vec((key(), inner), 0..8)
                    .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn hashes_equal_node_on_generated_documents() {
        let mut runner = TestRunner::new(Config { cases: 1, ..Config::default() });
        let mut docs = Vec::new();
        for _ in 0..400 {
            let tree = document().new_tree(&mut runner).unwrap();
            let mut text = String::new();
            jsonb_text(&tree.current(), &mut text);
            docs.push(text);
        }
        // The issue's own traps, as jsonb would print them.
        for fixed in [
            r#"{"9": 1, "_x": 2, "$y": 3, "10": 4, "a-b": 5, "a_b": 6, "Zeta": 7}"#,
            r#"{"a": 1.0, "b": 1e21, "c": 123456789012345678901234567890, "d": 1e-7, "e": 0.000001}"#,
            r#"{"s": "\b\f\n\r\t\u0001\u001f/\"\\é\u2028"}"#,
            r#"{"1": 1, "1\u0001": 2, "a": 3, "a\u0001": 4}"#,
        ] {
            docs.push(fixed.to_string());
        }
        let node = node_hashes(&docs);
        assert_eq!(node.len(), docs.len());
        for (doc, (node_hash, node_text)) in docs.iter().zip(node) {
            assert_eq!(stable_json(doc).unwrap(), node_text, "stable_json differs from Node for {doc}");
            assert_eq!(stock_hash(doc).unwrap(), node_hash, "hash differs from Node for {doc}");
        }
    }

    proptest! {
        #[test]
        fn key_order_in_the_input_does_not_change_the_hash(doc in document(), seed in any::<u64>()) {
            // Re-emit every object with its members rotated: JSON.parse would see
            // another insertion order, the canonical text must not change.
            fn rotated(value: &serde_json::Value, seed: u64) -> String {
                match value {
                    serde_json::Value::Object(map) => {
                        let mut members: Vec<_> = map.iter().collect();
                        if !members.is_empty() {
                            let n = (seed as usize) % members.len();
                            members.rotate_left(n);
                        }
                        let body: Vec<String> = members.iter()
                            .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), rotated(v, seed / 3 + 1)))
                            .collect();
                        format!("{{{}}}", body.join(","))
                    }
                    serde_json::Value::Array(items) => {
                        format!("[{}]", items.iter().map(|v| rotated(v, seed)).collect::<Vec<_>>().join(","))
                    }
                    other => other.to_string(),
                }
            }
            let mut base = String::new();
            jsonb_text(&doc, &mut base);
            let shuffled = rotated(&doc, seed);
            // Keys that collate equal are the one place input order may matter; the
            // generated keys only tie when identical after ignorable characters.
            let a = stable_json(&base).unwrap();
            let b = stable_json(&shuffled).unwrap();
            prop_assert_eq!(a, b);
        }

        #[test]
        fn the_binary_reader_hashes_as_the_text_reader(doc in document()) {
            // What stock_hash reads (jsonb's binary container) against what the
            // application parses (jsonb_out's text): the same canonical text.
            let mut text = String::new();
            jsonb_text(&doc, &mut text);
            let binary = crate::jsonb::encode::encode(&doc);
            let decoded = crate::jsonb::decode(&binary).unwrap();
            prop_assert_eq!(stable_json_value(&decoded, binary.len()), stable_json(&text).unwrap());
        }

        #[test]
        fn canonical_text_is_a_fixed_point(doc in document()) {
            let mut text = String::new();
            jsonb_text(&doc, &mut text);
            let canonical = stable_json(&text).unwrap();
            // Canonical text is a fixed point and still valid JSON.
            prop_assert_eq!(&stable_json(&canonical).unwrap(), &canonical);
            prop_assert!(serde_json::from_str::<serde_json::Value>(&canonical).is_ok());
            let hash = stock_hash(&text).unwrap();
            prop_assert!(hash.starts_with("sha256:") && hash.len() == 71 && hash[7..].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        }
    }
}

#[cfg(test)]
mod throughput {
    /// `STOCK_DOCS=/tmp/docs.txt cargo test --release --lib throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn core_docs_per_second() {
        let path = std::env::var("STOCK_DOCS").expect("STOCK_DOCS names a file of one jsonb text per line");
        let text = std::fs::read_to_string(path).unwrap();
        let docs: Vec<&str> = text.lines().collect();
        for phase in ["parse", "canonical", "hash"] {
            let started = std::time::Instant::now();
            let mut sink = 0usize;
            for doc in &docs {
                sink += match phase {
                    "parse" => super::json::parse(doc).map(|_| 1).unwrap(),
                    "canonical" => super::stable_json(doc).unwrap().len(),
                    _ => super::stock_hash(doc).unwrap().len(),
                };
            }
            let secs = started.elapsed().as_secs_f64();
            eprintln!("{phase:>10}: {:.0} docs/s ({:.2} µs/doc) [{sink}]", docs.len() as f64 / secs, secs * 1e6 / docs.len() as f64);
        }
    }
}
