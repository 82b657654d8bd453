//! The Rust core against an independent JavaScript statement of the same
//! rules (`node_parity.js`), on generated inputs with the awkward parts:
//! locale-ordered keys, JavaScript number printing, present-null vs absent,
//! binding-only metadata keys. Skipped (with a note) when `node` is missing.

use super::input::{desired, ReconcileArgs};
use super::js;
use super::rules::{decide, merge_metadata, metadata_keys, Binding, Environment};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const KEYS: &[&str] = &[
    "a", "B", "b", "A", "_x", "Zeta", "é", "e", "10", "2", "ß", "ss", "tier", "managedKubernetesSandbox",
    "managedByPaperclip", "managedSandboxProvider", "_paperclipManagedArchiveToken",
];
const VALUES: &[&str] = &[
    "1", "1.0", "1e21", "1.5e-7", "-0", "0.1", "9007199254740993", "123456789012345678901234567890", "\"s\"",
    "\"é\\u00e9\"", "true", "false", "null", "[1,\"x\",{\"b\":1,\"a\":2}]", "{\"n\":{\"z\":1,\"a\":2}}",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.next() % from.len()]
    }

    /// A JSON object as text, so number spellings like `1.0` and `-0` survive.
    fn object(&mut self, max: usize) -> String {
        let n = self.next() % (max + 1);
        let members: Vec<String> =
            (0..n).map(|_| format!("{}:{}", Value::String(self.pick(KEYS).into()), self.pick(VALUES))).collect();
        format!("{{{}}}", members.join(","))
    }
}

fn node_available() -> bool {
    Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn core_agrees_with_javascript_on_generated_cases() {
    if !node_available() {
        eprintln!("node not found: skipping the JavaScript parity check");
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = Vec::new();
    let mut texts = Vec::new();
    for i in 0..300 {
        let config = rng.object(4);
        let extra = rng.object(3);
        let row_config = rng.object(3);
        let row_metadata = if i % 7 == 0 { "null".to_string() } else { rng.object(5) };
        let binding_metadata: Vec<String> = (0..rng.next() % 3).map(|_| rng.object(3)).collect();
        let description = if i % 3 == 0 { "null".to_string() } else { Value::String(format!("d{}", rng.next() % 3)).to_string() };
        let status = ["\"active\"", "\"archived\""][rng.next() % 2];
        texts.push((config.clone(), extra.clone(), description.clone()));
        cases.push(format!(
            r#"{{"input":{{"name":"S","provider":"p","config":{config},"description":{description},"extraMetadata":{extra}}},
                "row":{{"name":"S","description":{description},"config":{row_config},"metadata":{row_metadata},"status":{status}}},
                "bindings":[{}]}}"#,
            binding_metadata.iter().map(|m| format!(r#"{{"defaultsJson":{{"metadata":{m}}}}}"#)).collect::<Vec<_>>().join(",")
        ));
    }
    let input = format!("[{}]", cases.join(","));

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/src/stock/managed/node_parity.js");
    let mut child = Command::new("node").arg(script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "node failed");
    let expected: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();

    let parsed: Vec<Value> = js::parse(&input).unwrap().as_array().unwrap().clone();
    for (i, (case, want)) in parsed.iter().zip(&expected).enumerate() {
        let (config, extra, _) = &texts[i];
        let description = case["input"]["description"].as_str().map(str::to_owned);
        let d = desired(ReconcileArgs {
            name: Some("S".into()),
            provider: Some("p".into()),
            config: Some(config.clone()),
            description,
            extra_metadata: Some(extra.clone()),
            ..Default::default()
        })
        .unwrap();
        let bindings: Vec<Binding> = case["bindings"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(n, b)| Binding {
                id: format!("b{n}"),
                company_id: format!("c{n}"),
                resource_id: "other".into(),
                stock_version: None,
                stock_hash: "h".into(),
                defaults: b["defaultsJson"].clone(),
            })
            .collect();
        let row = &case["row"];
        let env = Environment {
            id: "env".into(),
            name: "S".into(),
            description: row["description"].as_str().map(str::to_owned),
            status: row["status"].as_str().unwrap().into(),
            config: row["config"].clone(),
            metadata: row["metadata"].clone(),
        };
        let keys = metadata_keys(&d.metadata, &bindings);
        assert_eq!(serde_json::to_value(&keys).unwrap(), want["keys"], "case {i}: keys");
        let decision = decide(&env, None, &d, &bindings, &keys);
        assert_eq!(decision.latest_hash, want["latest"].as_str().unwrap(), "case {i}: latest\n{}", cases[i]);
        assert_eq!(decision.current_hash, want["current"].as_str().unwrap(), "case {i}: current\n{}", cases[i]);
        let merged = Value::Object(merge_metadata(&env.metadata, &d.metadata, &keys));
        assert_eq!(merged, js::parse(&want["merged"].to_string()).unwrap(), "case {i}: merged");
    }
}
