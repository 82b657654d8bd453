// SQL-level tests of the stock hashes (run by `cargo pgrx test`).

use pgrx::prelude::*;

fn text(sql: &str) -> Option<String> {
    Spi::get_one::<String>(sql).expect("query runs")
}

#[pg_test]
fn stock_hash_matches_application_vectors() {
    assert_eq!(
        text(r#"SELECT runtime_sandbox.stock_hash('{"a":1,"b":{"c":2}}')"#).as_deref(),
        Some("sha256:007f2c1c104514608c3cdf42ec59d710d0888592c1d1f72437d9b075093617b8")
    );
    assert_eq!(
        text(r#"SELECT runtime_sandbox.stock_hash('{"packages":["git"],"image":"node:20"}')"#).as_deref(),
        Some("sha256:dfb71ca3591ef80c86fec970ecd38146d1d43794f0307c5dfb4a36478ac700b3")
    );
    assert_eq!(
        text(r#"SELECT runtime_sandbox.stock_hash('{"name":"Daytona","description":"Managed Daytona sandbox environment.","config":{"target":"us","provider":"daytona"},"metadata":{"managedByPaperclip":true,"managedKubernetesSandbox":null,"managedSandboxProvider":"daytona"},"status":"active"}')"#).as_deref(),
        Some("sha256:2c054730c82fd5f741172d425fada5832bea988ab8008a86088cc04f0d8fcc5f")
    );
}

#[pg_test]
fn stock_stable_json_sorts_keys_by_icu_and_prints_js_numbers() {
    assert_eq!(
        text(r#"SELECT runtime_sandbox.stable_json('{"b":1.0,"B":1e21,"a":[3,1],"_x":"\"","A":0.0000001}')"#).as_deref(),
        Some(r#"{"_x":"\"","a":[3,1],"A":1e-7,"b":1,"B":1e+21}"#)
    );
    assert_eq!(text("SELECT runtime_sandbox.stable_json('null')").as_deref(), Some("null"));
    assert_eq!(
        text("SELECT runtime_sandbox.stable_json('123456789012345678901234567890')").as_deref(),
        Some("1.2345678901234568e+29")
    );
}

#[pg_test]
fn stock_functions_are_strict_on_null() {
    assert_eq!(text("SELECT runtime_sandbox.stable_json(NULL)"), None);
    assert_eq!(text("SELECT runtime_sandbox.stock_hash(NULL)"), None);
}

#[pg_test]
fn stock_hash_ignores_jsonb_input_formatting() {
    let same = Spi::get_one::<bool>(
        r#"SELECT runtime_sandbox.stock_hash('{ "z": [1, 2], "a": {"y": true, "x": null} }')
                = runtime_sandbox.stock_hash('{"a":{"x":null,"y":true},"z":[1,2]}')"#,
    );
    assert_eq!(same, Ok(Some(true)));
}

#[pg_test]
fn stock_status_rules_agree_with_the_core() {
    use crate::stock::status::resource_status;
    let values: [Option<&str>; 4] = [None, Some(""), Some("h1"), Some("h2")];
    for r in [None, Some(""), Some("r")] {
        for c in values {
            for b in values {
                for l in values {
                    let lit = |v: Option<&str>| v.map_or("NULL".to_string(), |s| format!("'{s}'"));
                    let got = text(&format!(
                        "SELECT runtime_sandbox.managed_resource_status({}, {}, {}, {})::text",
                        lit(r), lit(c), lit(b), lit(l)
                    ));
                    assert_eq!(got.as_deref(), Some(resource_status(r, c, b, l).as_str()), "{r:?} {c:?} {b:?} {l:?}");
                }
            }
        }
    }
}

#[pg_test]
fn stock_status_enum_has_the_application_labels() {
    let labels = text(
        "SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum
          WHERE enumtypid = 'runtime_sandbox.managed_stock_status'::regtype",
    );
    assert_eq!(labels.as_deref(), Some("missing,stock_current,stock_update_available,operator_modified"));
}

#[pg_test]
fn stock_functions_are_documented_and_immutable() {
    let undocumented = Spi::get_one::<i64>(
        "SELECT count(*) FROM pg_proc p
          WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
            AND p.proname IN ('stable_json', 'stock_hash', 'managed_resource_status')
            AND (obj_description(p.oid, 'pg_proc') IS NULL OR p.provolatile <> 'i' OR p.proparallel <> 's')",
    );
    assert_eq!(undocumented, Ok(Some(0)));
}
