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
fn stock_depth_limit_is_an_argument_error_not_a_crash() {
    // 1,000 levels hash; deeper is 54000 naming the argument (10,000 levels
    // overflowed the backend's stack before the bound).
    let at_limit = "SELECT runtime_sandbox.stable_json((repeat('[', 1000) || '1' || repeat(']', 1000))::jsonb)";
    assert_eq!(text(at_limit).map(|t| t.len()), Some(1000 * 2 + 1));
    for (open, close) in [("[", "]"), ("{\"a\": ", "}")] {
        for depth in [1001, 10_000] {
            let sql = format!(
                "DO $$ BEGIN PERFORM runtime_sandbox.stock_hash((repeat('{open}', {depth}) || '1' || repeat('{close}', {depth}))::jsonb); \
                 RAISE EXCEPTION 'no error'; EXCEPTION WHEN program_limit_exceeded THEN \
                 IF SQLERRM NOT LIKE 'runtime_sandbox: invalid argument value: nested more than 1000 levels deep' THEN RAISE; END IF; END $$"
            );
            Spi::run(&sql).unwrap_or_else(|e| panic!("depth {depth}: {e}"));
        }
    }
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
fn stock_status_function_returns_enum_values_on_every_row() {
    // Several rows and two call sites in one query: the label OIDs each call site keeps serve every row.
    let got = text(
        "SELECT string_agg(a::text || '/' || b::text, ',' ORDER BY i) FROM (
             SELECT i, runtime_sandbox.managed_resource_status('r', 'h' || (i % 2), 'h1', 'h0') AS a,
                    runtime_sandbox.managed_resource_status(NULL, 'h', 'h', 'h') AS b
               FROM generate_series(0, 3) AS i) t",
    );
    assert_eq!(
        got.as_deref(),
        Some("stock_current/missing,stock_update_available/missing,stock_current/missing,stock_update_available/missing")
    );
    // Real enum values: they compare with the type's labels and sort in label order.
    let ordered = text(
        "SELECT string_agg(s::text, ',' ORDER BY s) FROM (VALUES
             (runtime_sandbox.managed_resource_status('r', 'x', 'y', 'z')),
             (runtime_sandbox.managed_resource_status('r', 'z', 'y', 'z')),
             (runtime_sandbox.managed_resource_status('', 'z', 'y', 'z'))) AS v(s)
          WHERE s >= 'missing'::runtime_sandbox.managed_stock_status",
    );
    assert_eq!(ordered.as_deref(), Some("missing,stock_current,operator_modified"));
}

#[pg_test]
fn stock_status_function_keeps_its_catalog_entry() {
    // The signature and attributes the 0.1.0 SQL function had; now C, without a SET clause (it runs no SQL).
    let entry = text(
        "SELECT format('%s(%s) -> %s %s%s strict=%s lang=%s config=%s', p.proname,
                       pg_get_function_arguments(p.oid), p.prorettype::regtype, p.provolatile, p.proparallel,
                       p.proisstrict, l.lanname, p.proconfig)
           FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
          WHERE p.oid = 'runtime_sandbox.managed_resource_status(text, text, text, text)'::regprocedure",
    );
    assert_eq!(
        entry.as_deref(),
        Some(
            "managed_resource_status(resource_id text, current_hash text, binding_stock_hash text, latest_stock_hash text) \
             -> runtime_sandbox.managed_stock_status is strict=f lang=c config="
        )
    );
    let public = Spi::get_one::<bool>(
        "SELECT has_function_privilege('public', 'runtime_sandbox.managed_resource_status(text, text, text, text)', 'EXECUTE')",
    );
    assert_eq!(public, Ok(Some(true)), "a pure function, executable by everyone as before");
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

/// The binary reader must agree with the text path (jsonb_out → parse) on every value.
fn assert_binary_equals_text(sql_values: &str) {
    let rows: Vec<(String, String)> = Spi::connect(|client| {
        client
            .select(
                &format!("SELECT v::text, runtime_sandbox.stable_json(v) FROM ({sql_values}) AS t(v)"),
                None,
                &[],
            )
            .unwrap()
            .map(|row| (row.get::<String>(1).unwrap().unwrap(), row.get::<String>(2).unwrap().unwrap()))
            .collect()
    });
    assert!(!rows.is_empty());
    for (text, binary) in rows {
        assert_eq!(crate::stock::canonical::stable_json(&text).unwrap(), binary, "jsonb {text}");
    }
}

#[pg_test]
fn stock_binary_reader_agrees_with_text_on_numbers() {
    assert_binary_equals_text(
        "SELECT to_jsonb(x) FROM unnest(ARRAY[
            0, -0, 1, -1, 0.1, 1.0, 1.50, 9999, 10000, 10001, 123456789, 1e21, 1e-7, 0.000001, 1e-400,
            123456789012345678901234567890, -98765.4321e-30, 5e-324, 1.7976931348623157e308, 1e308, 1e309,
            9007199254740993, 0.30000000000000004, 1234.5678e100, 1e-100, 7e-10, 1e131071
         ]::numeric[]) AS x",
    );
    assert_binary_equals_text(
        "SELECT to_jsonb((random() * 10 ^ (random() * 60 - 30))::numeric * (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END))
           FROM generate_series(1, 2000) AS i",
    );
    assert_binary_equals_text("SELECT to_jsonb(i::numeric / 7) FROM generate_series(-300, 300) AS i");
}

#[pg_test]
fn stock_binary_reader_agrees_with_text_on_documents() {
    assert_binary_equals_text(
        r#"SELECT d::jsonb FROM unnest(ARRAY[
            'null', 'true', 'false', '"s"', '""', '[]', '{}', '[[[]]]', '{"a":{"b":{"c":[1,{"d":null}]}}}',
            '{"é":1,"e":2,"E":3,"_":4,"10":5,"9":6,"":7}', '"\u0001\n\"\\/é😀"',
            '[1, "2", [3], {"4": 4}, true, null, 1.5e300]'
         ]) AS d"#,
    );
    // Large enough to be TOASTed and compressed, with more than 32 children per container
    // (jsonb stores explicit offsets every 32 entries).
    assert_binary_equals_text(
        "SELECT jsonb_object_agg('key' || i, jsonb_build_array(i, 'v' || repeat('x', i % 50), i * 1.5, i % 3 = 0, NULL))
           FROM generate_series(1, 3000) AS i",
    );
    assert_binary_equals_text(
        "SELECT jsonb_agg(jsonb_build_object('n', i, 's', md5(i::text))) FROM generate_series(1, 500) AS i",
    );
}

/// An error raised inside an SPI statement of the extension reaches the
/// client without a Rust backtrace, even with RUST_BACKTRACE set.
#[pg_test]
fn stock_no_rust_backtrace_reaches_the_client() {
    std::env::set_var("RUST_BACKTRACE", "full");
    Spi::run("SELECT runtime_sandbox.install_ledger('bt_ledger')").unwrap();
    // The ledger owner's trigger fails the backfill's checkpoint write inside its SPI statement.
    Spi::run(
        "CREATE FUNCTION bt_ledger.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT ON bt_ledger.control FOR EACH ROW EXECUTE FUNCTION bt_ledger.refuse()",
    )
    .unwrap();
    Spi::run(
        "DO $$ BEGIN PERFORM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bt_ledger');
         EXCEPTION WHEN OTHERS THEN
             DECLARE d text; m text; BEGIN
                 GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, m = MESSAGE_TEXT;
                 PERFORM set_config('bt.report', coalesce(m, '') || ' | ' || coalesce(d, ''), true);
             END;
         END $$",
    )
    .unwrap();
    let report = Spi::get_one::<String>("SELECT current_setting('bt.report', true)").unwrap().unwrap_or_default();
    assert!(report.starts_with("refused"), "{report}");
    assert!(!report.contains("backtrace") && !report.contains(".rs:"), "{report}");
}
