// SQL-level tests of managed environment reconciliation (run by `cargo pgrx test`).
// Each test installs the application's tables in its own schema.

use pgrx::prelude::*;
use serde_json::{json, Value};

const C1: &str = "00000000-0000-0000-0000-0000000000c1";
const C2: &str = "00000000-0000-0000-0000-0000000000c2";

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The single row a query returns, as JSON (`row_to_json`).
fn row(sql: &str) -> Value {
    let text = Spi::get_one::<String>(&format!("SELECT row_to_json(r)::text FROM ({sql}) r"))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: no row"));
    serde_json::from_str(&text).unwrap()
}

fn value(sql: &str) -> Value {
    let text = Spi::get_one::<String>(&format!("SELECT to_jsonb(({sql}))::text")).unwrap().unwrap_or("null".into());
    serde_json::from_str(&text).unwrap()
}

/// Application tables in `schema` with two companies.
fn app(schema: &str) {
    run(&format!("SELECT runtime_sandbox.install_environment_tables('{schema}')"));
    run(&format!("INSERT INTO {schema}.companies (id, name) VALUES ('{C1}', 'one'), ('{C2}', 'two')"));
}

/// `reconcile_managed_environment` with the demo's Daytona input plus `extra` arguments.
fn reconcile(schema: &str, extra: &str) -> Value {
    row(&format!(
        "SELECT * FROM runtime_sandbox.reconcile_managed_environment(
             'Daytona', 'daytona', '{{\"target\":\"us\"}}', 'Managed Daytona sandbox environment.'
             {extra}, app_schema => '{schema}')"
    ))
}

fn environment(schema: &str) -> Value {
    row(&format!(
        "SELECT id, name, description, status, config, env_vars, metadata, ctid::text AS ctid
           FROM {schema}.environments WHERE driver = 'sandbox'"
    ))
}

fn binding_hashes(schema: &str) -> Value {
    value(&format!("SELECT jsonb_agg(stock_hash ORDER BY company_id) FROM {schema}.built_in_managed_resources"))
}

/// Every binding's hash is the application's hash of its defaults (the
/// archive token is never hashed).
fn assert_hashes_consistent(schema: &str) {
    let bad = value(&format!(
        "SELECT count(*) FROM {schema}.built_in_managed_resources
          WHERE stock_hash <> runtime_sandbox.stock_hash(defaults_json - '_paperclipManagedArchiveToken')"
    ));
    assert_eq!(bad, json!(0), "binding hash differs from stock_hash(defaults_json)");
}

#[pg_test]
fn managed_added_creates_row_and_bindings_for_every_company() {
    app("app_added");
    let r = reconcile("app_added", "");
    assert_eq!(r["action"], "added");
    assert_eq!(r["stock_status"], "missing");
    assert_eq!(r["update_available"], false);
    assert_eq!(r["tracking_initialized"], true);
    assert_eq!(r["provider_reactivated"], false);
    assert_eq!(r["activity_action"], "environment.managed_stock_added");
    assert_eq!(r["company_ids"], json!([C1, C2]));
    // The foundation's vector for exactly this stock object.
    assert_eq!(r["stock_hash"], "sha256:2c054730c82fd5f741172d425fada5832bea988ab8008a86088cc04f0d8fcc5f");
    let env = environment("app_added");
    assert_eq!(env["id"], r["environment_id"]);
    assert_eq!(env["config"], json!({"target":"us","provider":"daytona"}));
    assert_eq!(env["metadata"], json!({"managedByPaperclip":true,"managedSandboxProvider":"daytona"}));
    assert_eq!(env["env_vars"], json!({}));
    assert_eq!(binding_hashes("app_added"), json!([r["stock_hash"], r["stock_hash"]]));
    let b = row("SELECT * FROM app_added.built_in_managed_resources WHERE company_id = '00000000-0000-0000-0000-0000000000c1'");
    assert_eq!(b["bundle_key"], "managed-sandbox-environment");
    assert_eq!(b["resource_kind"], "environment");
    assert_eq!(b["resource_key"], "managed-sandbox");
    assert_eq!(b["stock_version"], "managed-environment-v1");
    assert_eq!(b["resource_id"], r["environment_id"]);
    assert_eq!(
        b["defaults_json"],
        json!({"name":"Daytona","description":"Managed Daytona sandbox environment.",
               "config":{"target":"us","provider":"daytona"},"status":"active",
               "metadata":{"managedByPaperclip":true,"managedKubernetesSandbox":null,"managedSandboxProvider":"daytona"}})
    );
    assert_hashes_consistent("app_added");
}

#[pg_test]
fn managed_unchanged_writes_nothing() {
    app("app_same");
    reconcile("app_same", "");
    let before = environment("app_same");
    let bindings_before = value("SELECT jsonb_agg(ctid::text ORDER BY company_id) FROM app_same.built_in_managed_resources");
    let r = reconcile("app_same", "");
    assert_eq!(r["action"], "unchanged");
    assert_eq!(r["stock_status"], "stock_current");
    assert_eq!(r["tracking_initialized"], false);
    assert_eq!(r["activity_action"], Value::Null);
    // No new tuple version: neither the row nor the bindings were written.
    assert_eq!(environment("app_same"), before);
    assert_eq!(
        value("SELECT jsonb_agg(ctid::text ORDER BY company_id) FROM app_same.built_in_managed_resources"),
        bindings_before
    );
}

#[pg_test]
fn managed_stock_change_updates_row_and_bindings() {
    app("app_upd");
    let first = reconcile("app_upd", "");
    run("UPDATE app_upd.environments SET env_vars = '{\"TOKEN\":\"x\"}'");
    let r = row(
        "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{\"target\":\"eu\"}',
             'Managed Daytona sandbox environment.', stock_version => 'v2', app_schema => 'app_upd')",
    );
    assert_eq!(r["action"], "updated");
    assert_eq!(r["stock_status"], "stock_update_available");
    assert_eq!(r["activity_action"], "environment.managed_stock_updated");
    assert_ne!(r["stock_hash"], first["stock_hash"]);
    let env = environment("app_upd");
    assert_eq!(env["config"], json!({"target":"eu","provider":"daytona"}));
    assert_eq!(env["env_vars"], json!({"TOKEN":"x"}), "env_vars are never stock");
    assert_eq!(binding_hashes("app_upd"), json!([r["stock_hash"], r["stock_hash"]]));
    assert_eq!(value("SELECT array_agg(DISTINCT stock_version) FROM app_upd.built_in_managed_resources"), json!(["v2"]));
    assert_hashes_consistent("app_upd");
}

#[pg_test]
fn managed_operator_config_edit_is_skipped_with_update_available() {
    app("app_op");
    let first = reconcile("app_op", "");
    run("UPDATE app_op.environments SET config = config || '{\"cpu\":4}'");
    let edited = environment("app_op");
    for config in ["{\"target\":\"us\"}", "{\"target\":\"eu\"}"] {
        let r = row(&format!(
            "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{config}',
                 'Managed Daytona sandbox environment.', app_schema => 'app_op')"
        ));
        assert_eq!(r["action"], "skipped");
        assert_eq!(r["stock_status"], "operator_modified");
        assert_eq!(r["update_available"], true);
        assert_eq!(r["activity_action"], "environment.managed_stock_skipped");
        assert_eq!(environment("app_op"), edited, "operator edit kept, row not written");
        assert_eq!(binding_hashes("app_op"), json!([first["stock_hash"], first["stock_hash"]]), "baseline kept");
    }
}

#[pg_test]
fn managed_unrelated_metadata_and_env_vars_stay_stock_current() {
    app("app_meta");
    reconcile("app_meta", "");
    run("UPDATE app_meta.environments SET metadata = metadata || '{\"owner\":\"ops\"}', env_vars = '{\"A\":\"1\"}'");
    let r = reconcile("app_meta", "");
    assert_eq!(r["stock_status"], "stock_current");
    assert_eq!(r["action"], "unchanged");
    // As in the application, a new extra metadata key widens the key set, so
    // the row no longer matches its recorded baseline: it reads as operator-modified.
    let r = row(
        "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{}', NULL,
             '{\"tier\":\"gold\"}', app_schema => 'app_meta')",
    );
    assert_eq!((r["action"].as_str(), r["stock_status"].as_str()), (Some("skipped"), Some("operator_modified")));
    // A stock change keeps the operator's own metadata key and env_vars.
    let r = row(
        "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{}', NULL,
             app_schema => 'app_meta')",
    );
    assert_eq!(r["action"], "updated");
    let env = environment("app_meta");
    assert_eq!(env["metadata"], json!({"managedByPaperclip":true,"managedSandboxProvider":"daytona","owner":"ops"}));
    assert_eq!(env["description"], Value::Null, "description ?? null");
    assert_eq!(env["env_vars"], json!({"A":"1"}));
    assert_hashes_consistent("app_meta");
}

#[pg_test]
fn managed_provider_outage_archive_then_reactivation_keeps_operator_fields() {
    app("app_out");
    reconcile("app_out", "");
    run("UPDATE app_out.environments SET description = 'operator text'");
    let wrong = row("SELECT * FROM runtime_sandbox.archive_managed_environment('kubernetes', app_schema => 'app_out')");
    assert_eq!(wrong["archived"], false);
    assert_eq!(wrong["environment_id"], Value::Null);
    let a = row("SELECT * FROM runtime_sandbox.archive_managed_environment('daytona', app_schema => 'app_out')");
    assert_eq!(a["archived"], true);
    assert_eq!(a["bindings_updated"], 2);
    assert_eq!(a["activity_action"], "environment.managed_provider_unavailable_archived");
    let env = environment("app_out");
    assert_eq!(env["status"], "archived");
    assert_eq!(env["metadata"]["_paperclipManagedArchiveToken"], a["archive_token"]);
    let defaults = value("SELECT jsonb_agg(defaults_json) FROM app_out.built_in_managed_resources");
    for d in defaults.as_array().unwrap() {
        assert_eq!(d["status"], "archived");
        assert_eq!(d["_paperclipManagedArchiveToken"], a["archive_token"]);
        assert_eq!(d["description"], "Managed Daytona sandbox environment.", "operator edit stays out of stock");
    }
    assert_hashes_consistent("app_out");
    let again = row("SELECT * FROM runtime_sandbox.archive_managed_environment('daytona', app_schema => 'app_out')");
    assert_eq!(again["archived"], false, "only an active row is archived");

    let r = reconcile("app_out", "");
    assert_eq!(r["action"], "skipped");
    assert_eq!(r["stock_status"], "operator_modified");
    assert_eq!(r["provider_reactivated"], true);
    let env = environment("app_out");
    assert_eq!(env["status"], "active");
    assert_eq!(env["description"], "operator text");
    assert_eq!(env["metadata"], json!({"managedByPaperclip":true,"managedSandboxProvider":"daytona"}));
    let defaults = value("SELECT jsonb_agg(defaults_json) FROM app_out.built_in_managed_resources");
    for d in defaults.as_array().unwrap() {
        assert_eq!(d["status"], "active");
        assert!(d.get("_paperclipManagedArchiveToken").is_none());
    }
    assert_hashes_consistent("app_out");
}

#[pg_test]
fn managed_manual_archive_stays_archived() {
    app("app_hand");
    reconcile("app_hand", "");
    run("UPDATE app_hand.environments SET status = 'archived'");
    let r = reconcile("app_hand", "");
    assert_eq!((r["action"].as_str(), r["stock_status"].as_str()), (Some("skipped"), Some("operator_modified")));
    assert_eq!(r["provider_reactivated"], false);
    assert_eq!(environment("app_hand")["status"], "archived");

    // Archived by the reconciler, then archived again by someone else (token
    // replaced): stays archived even for a platform-fully-managed caller.
    run("UPDATE app_hand.environments SET status = 'active'");
    row("SELECT * FROM runtime_sandbox.archive_managed_environment('daytona', app_schema => 'app_hand')");
    run("UPDATE app_hand.environments SET metadata = metadata || '{\"_paperclipManagedArchiveToken\":\"by-hand\"}'");
    let r = reconcile("app_hand", ", platform_fully_managed => true");
    assert_eq!((r["action"].as_str(), r["stock_status"].as_str()), (Some("skipped"), Some("operator_modified")));
    assert_eq!(environment("app_hand")["status"], "archived");
}

#[pg_test]
fn managed_platform_fully_managed_overrides_only_with_a_binding_for_the_row() {
    app("app_pfm");
    reconcile("app_pfm", "");
    run("UPDATE app_pfm.environments SET config = config || '{\"cpu\":4}'");
    let r = reconcile("app_pfm", ", platform_fully_managed => true");
    assert_eq!(r["action"], "updated");
    assert_eq!(r["stock_status"], "stock_update_available");
    assert_eq!(environment("app_pfm")["config"], json!({"target":"us","provider":"daytona"}));

    // A tenant's own sandbox row with the same name and no binding is never adopted.
    app("app_tenant");
    run("INSERT INTO app_tenant.environments (name, driver, config) VALUES ('Daytona', 'sandbox', '{\"mine\":true}')");
    let before = environment("app_tenant");
    let r = reconcile("app_tenant", ", platform_fully_managed => true");
    assert_eq!(r["action"], "skipped");
    assert_eq!(r["stock_status"], "operator_modified");
    assert_eq!(r["environment_id"], before["id"]);
    assert_eq!(environment("app_tenant"), before);
    // insert-missing records the desired stock as the baseline.
    assert_eq!(binding_hashes("app_tenant"), json!([r["stock_hash"], r["stock_hash"]]));
    assert_hashes_consistent("app_tenant");
}

#[pg_test(error = "runtime_sandbox: failed to ensure managed sandbox environment: environment \"Daytona\" already exists with driver \"local\"")]
fn managed_name_owned_by_non_sandbox_row_is_an_error() {
    app("app_name");
    run("INSERT INTO app_name.environments (name, driver) VALUES ('Daytona', 'local')");
    reconcile("app_name", "");
}

#[pg_test]
fn managed_name_held_by_another_row_keeps_the_managed_name() {
    app("app_keep");
    reconcile("app_keep", "");
    run("UPDATE app_keep.environments SET name = 'Renamed'");
    run("INSERT INTO app_keep.environments (name, driver) VALUES ('Daytona', 'local')");
    // The desired name is taken by another row, so the stock keeps the row's
    // own name: the rename reads as stock.
    let r = reconcile("app_keep", "");
    assert_eq!((r["action"].as_str(), r["stock_status"].as_str()), (Some("unchanged"), Some("stock_current")));
    assert_eq!(environment("app_keep")["name"], "Renamed");
    let r = row(
        "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{\"target\":\"eu\"}',
             'Managed Daytona sandbox environment.', platform_fully_managed => true, app_schema => 'app_keep')",
    );
    // The binding still records the old name, so only the platform bypass updates it.
    assert_eq!(r["action"], "updated");
    assert_eq!(environment("app_keep")["name"], "Renamed");
}

#[pg_test]
fn managed_company_scope_and_tracking_initialized() {
    app("app_co");
    let r = reconcile("app_co", &format!(", company_id => '{C1}'"));
    assert_eq!(r["action"], "added");
    assert_eq!(r["company_ids"], json!([C1]));
    assert_eq!(value("SELECT jsonb_agg(company_id) FROM app_co.built_in_managed_resources"), json!([C1]));
    let r = reconcile("app_co", &format!(", company_id => '{C1}'"));
    assert_eq!((r["action"].as_str(), r["tracking_initialized"].as_bool()), (Some("unchanged"), Some(false)));
    assert_eq!(r["activity_action"], Value::Null);
    // All companies: C2 has no binding yet → tracking initialized, insert-missing.
    let r = reconcile("app_co", "");
    assert_eq!(r["action"], "unchanged");
    assert_eq!(r["tracking_initialized"], true);
    assert_eq!(r["activity_action"], "environment.managed_stock_tracking_initialized");
    assert_eq!(
        value("SELECT jsonb_agg(company_id ORDER BY company_id) FROM app_co.built_in_managed_resources"),
        json!([C1, C2])
    );
    let r = reconcile("app_co", "");
    assert_eq!(r["tracking_initialized"], false);
    assert_eq!(r["activity_action"], Value::Null);
    assert_hashes_consistent("app_co");
}

#[pg_test]
fn managed_no_companies_means_no_bindings() {
    run("SELECT runtime_sandbox.install_environment_tables('app_none')");
    let r = reconcile("app_none", "");
    assert_eq!(r["action"], "added");
    assert_eq!(r["tracking_initialized"], false);
    assert_eq!(r["company_ids"], json!([]));
    assert_eq!(value("SELECT count(*) FROM app_none.built_in_managed_resources"), json!(0));
    // Without a binding the unchanged row is still stock_current (hash equality).
    assert_eq!(reconcile("app_none", "")["action"], "unchanged");
}

#[pg_test]
fn managed_drift_reports_each_binding() {
    app("app_drift");
    let r = reconcile("app_drift", "");
    let rows = value("SELECT jsonb_agg(to_jsonb(d) ORDER BY company_id) FROM runtime_sandbox.managed_environment_drift('app_drift') d");
    assert_eq!(rows.as_array().unwrap().len(), 2);
    for d in rows.as_array().unwrap() {
        assert_eq!(d["stock_status"], "stock_current");
        assert_eq!(d["current_hash"], r["stock_hash"], "SQL stock_hash agrees with the reconciler");
        assert_eq!(d["binding_stock_hash"], r["stock_hash"]);
        assert_eq!(d["environment_id"], r["environment_id"]);
    }
    run("UPDATE app_drift.environments SET config = '{}'");
    assert_eq!(
        value("SELECT jsonb_agg(DISTINCT stock_status) FROM runtime_sandbox.managed_environment_drift('app_drift')"),
        json!(["operator_modified"])
    );
    run("DELETE FROM app_drift.environments");
    assert_eq!(
        value("SELECT jsonb_agg(DISTINCT stock_status) FROM runtime_sandbox.managed_environment_drift('app_drift')"),
        json!(["missing"])
    );
}

#[pg_test]
fn managed_drift_rows_come_by_company_and_latest_is_each_environments_newest_binding() {
    const C0: &str = "00000000-0000-0000-0000-0000000000a0";
    app("app_newest");
    run(&format!("INSERT INTO app_newest.companies (id, name) VALUES ('{C0}', 'zero')"));
    let r = reconcile("app_newest", "");
    let current = r["stock_hash"].as_str().unwrap().to_owned();
    let bindings = "app_newest.built_in_managed_resources";
    // C1 still records the row's stock; C2 and C0 an older one. C2's binding is the newest.
    run(&format!(
        "UPDATE {bindings} SET id = CASE company_id WHEN '{C0}' THEN '00000000-0000-0000-0000-0000000000b3'::uuid
                                                    WHEN '{C1}' THEN '00000000-0000-0000-0000-0000000000b1'::uuid
                                                    ELSE '00000000-0000-0000-0000-0000000000b2'::uuid END,
                             stock_hash = CASE company_id WHEN '{C1}' THEN stock_hash ELSE 'sha256:old' END,
                             updated_at = CASE company_id WHEN '{C2}' THEN timestamptz '2026-01-03'
                                                          WHEN '{C0}' THEN timestamptz '2026-01-02'
                                                          ELSE timestamptz '2026-01-01' END"
    ));
    let drift = || {
        value(
            "SELECT jsonb_agg(jsonb_build_array(company_id, stock_status, binding_stock_hash))
               FROM runtime_sandbox.managed_environment_drift('app_newest')",
        )
    };
    // latest = C2's 'sha256:old' (newest updated_at): C1 still matches its binding, so an update is available.
    assert_eq!(
        drift(),
        json!([
            [C0, "operator_modified", "sha256:old"],
            [C1, "stock_update_available", current],
            [C2, "operator_modified", "sha256:old"],
        ]),
        "rows by company, latest from the newest binding"
    );
    // A tie on updated_at goes to the greater binding id: C0's (…b3), which records the row's stock.
    run(&format!(
        "UPDATE {bindings} SET updated_at = timestamptz '2026-01-03',
                             stock_hash = CASE company_id WHEN '{C0}' THEN '{current}' ELSE stock_hash END
          WHERE company_id IN ('{C0}', '{C2}')"
    ));
    assert_eq!(
        drift(),
        json!([[C0, "stock_current", current], [C1, "stock_current", current], [C2, "stock_current", "sha256:old"]]),
        "latest from the tie's greater id"
    );
}

#[pg_test]
fn managed_the_oldest_binding_is_the_baseline_for_new_companies() {
    const C3: &str = "00000000-0000-0000-0000-0000000000c3";
    const C4: &str = "00000000-0000-0000-0000-0000000000c4";
    app("app_oldest");
    reconcile("app_oldest", "");
    let bindings = "app_oldest.built_in_managed_resources";
    // An operator edit, and two bindings that no longer match the row: the pass skips, and a
    // company without a binding gets the baseline of the oldest binding (created_at, then id).
    run("UPDATE app_oldest.environments SET config = '{\"edited\": true}'");
    run(&format!(
        "UPDATE {bindings} SET id = CASE company_id WHEN '{C1}' THEN '00000000-0000-0000-0000-0000000000b2'::uuid
                                                    ELSE '00000000-0000-0000-0000-0000000000b1'::uuid END,
                             stock_hash = 'sha256:' || company_id, stock_version = 'v-' || company_id,
                             created_at = CASE company_id WHEN '{C1}' THEN timestamptz '2026-01-01'
                                                          ELSE timestamptz '2026-01-02' END"
    ));
    run(&format!("INSERT INTO app_oldest.companies (id, name) VALUES ('{C3}', 'three')"));
    assert_eq!(reconcile("app_oldest", "")["action"], "skipped");
    let new_binding = |company: &str| {
        value(&format!("SELECT jsonb_build_array(stock_version, stock_hash) FROM {bindings} WHERE company_id = '{company}'"))
    };
    assert_eq!(new_binding(C3), json!([format!("v-{C1}"), format!("sha256:{C1}")]), "C1's binding is the oldest");
    // A tie on created_at goes to the smaller id: C2's (…b1).
    run(&format!("UPDATE {bindings} SET created_at = timestamptz '2026-01-01'"));
    run(&format!("INSERT INTO app_oldest.companies (id, name) VALUES ('{C4}', 'four')"));
    assert_eq!(reconcile("app_oldest", "")["action"], "skipped");
    assert_eq!(new_binding(C4), json!([format!("v-{C2}"), format!("sha256:{C2}")]), "the tie's smaller id");
}

#[pg_test]
fn managed_install_is_idempotent_and_works_on_an_existing_schema() {
    run("SELECT runtime_sandbox.install_environment_tables('app_idem')");
    run("SELECT runtime_sandbox.install_environment_tables('app_idem')");
    let indexes = value(
        "SELECT jsonb_agg(indexname ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'app_idem'
            AND indexname LIKE 'environments%'",
    );
    assert_eq!(indexes, json!(["environments_local_driver_idx", "environments_managed_sandbox_idx", "environments_name_idx", "environments_pkey"]));
}

#[pg_test(error = "runtime_sandbox: invalid argument name: must not be empty")]
fn managed_rejects_empty_name() {
    app("app_bad1");
    row("SELECT * FROM runtime_sandbox.reconcile_managed_environment('', 'daytona', app_schema => 'app_bad1')");
}

#[pg_test(error = "runtime_sandbox: invalid argument provider: must not be empty")]
fn managed_rejects_empty_provider() {
    app("app_bad2");
    row("SELECT * FROM runtime_sandbox.reconcile_managed_environment('S', '', app_schema => 'app_bad2')");
}

#[pg_test(error = "runtime_sandbox: invalid argument config: must be a JSON object, got an array")]
fn managed_rejects_non_object_config() {
    app("app_bad3");
    row("SELECT * FROM runtime_sandbox.reconcile_managed_environment('S', 'p', '[1]', app_schema => 'app_bad3')");
}

#[pg_test(error = "runtime_sandbox: invalid argument extra_metadata: must be a JSON object, got a string")]
fn managed_rejects_non_object_extra_metadata() {
    app("app_bad4");
    row("SELECT * FROM runtime_sandbox.reconcile_managed_environment('S', 'p', extra_metadata => '\"x\"', app_schema => 'app_bad4')");
}

#[pg_test(error = "runtime_sandbox: invalid argument app_schema: \"public; drop\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)")]
fn managed_rejects_bad_app_schema() {
    row("SELECT * FROM runtime_sandbox.reconcile_managed_environment('S', 'p', app_schema => 'public; drop')");
}

#[pg_test(error = "runtime_sandbox: app_schema \"app_empty\" lacks the application's table(s) built_in_managed_resources, companies")]
fn managed_rejects_app_schema_without_tables() {
    run("CREATE SCHEMA app_empty; CREATE TABLE app_empty.environments (id uuid)");
    row("SELECT * FROM runtime_sandbox.archive_managed_environment('p', app_schema => 'app_empty')");
}

#[pg_test]
fn managed_functions_are_documented_and_writers_not_public() {
    let undocumented = value(
        "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
            AND p.proname IN ('install_environment_tables', 'reconcile_managed_environment',
                              'archive_managed_environment', 'managed_environment_drift')
            AND obj_description(p.oid, 'pg_proc') IS NOT NULL",
    );
    assert_eq!(undocumented, json!(4));
    let types = value(
        "SELECT count(*) FROM pg_type t WHERE t.typnamespace = 'runtime_sandbox'::regnamespace
            AND t.typname LIKE 'managed_environment_%' AND obj_description(t.oid, 'pg_type') IS NOT NULL",
    );
    assert_eq!(types, json!(3));
    let public_writers = value(
        "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
            AND p.proname IN ('install_environment_tables', 'reconcile_managed_environment', 'archive_managed_environment')
            AND has_function_privilege('public', p.oid, 'EXECUTE')",
    );
    assert_eq!(public_writers, json!(0));
}
