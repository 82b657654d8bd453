// SQL-level tests of shell::owner's function-manager hook (run by `cargo pgrx
// test`): the owner's code runs with the settings PostgreSQL would give it
// under the application's own statement, and the hook's GUC nest levels
// balance on every path. (The callers other than a superuser, pg_cron and
// every ledger table: tests/owner_settings.rs.)

use pgrx::prelude::*;

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn text(sql: &str) -> Option<String> {
    Spi::get_one::<String>(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn level() -> i32 {
    crate::shell::owner::guc_nest_level()
}

/// An extension function with a SET clause of its own (as every one of the
/// extension's is): the search_path it runs with.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn pinned_search_path() -> String {
    Spi::get_one::<String>("SELECT current_setting('search_path')").unwrap().unwrap_or_default()
}

/// A ledger `s` owned by role `owner` (whose search_path is `<s>, public`),
/// with an operation live on sb-1 in domain eu and no lease, and the owner's
/// audit schema `<s>_audit` beside a look-alike `public.<s>_trail`.
fn ledger(s: &str, owner: &str) {
    run(&format!(
        "CREATE ROLE {owner}; ALTER ROLE {owner} SET search_path = {s}, public;
         CREATE SCHEMA {s} AUTHORIZATION {owner}; CREATE SCHEMA {s}_audit AUTHORIZATION {owner};
         SELECT runtime_sandbox.install_ledger('{s}');
         GRANT USAGE ON SCHEMA tests TO {owner};
         CREATE TABLE public.{s}_trail (tab text, path text, helper text, pinned text, work_mem text);
         GRANT ALL ON public.{s}_trail TO PUBLIC;
         SET ROLE {owner};
         CREATE TABLE {s}_audit.{s}_trail (tab text, path text, helper text, pinned text, work_mem text);
         CREATE TABLE {s}.{s}_trail (tab text, path text, helper text, pinned text, work_mem text);
         CREATE FUNCTION {s}_audit.whereami() RETURNS text LANGUAGE plpgsql AS $$BEGIN RETURN current_setting('search_path'); END$$;
         INSERT INTO {s}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id,
                routing_domain, state, provider_operation_token, provider_created_at)
         VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'eu', 'live', 'tok-1', now() - interval '2 hours');
         RESET ROLE;"
    ));
}

/// A trigger on the leases running `body` (plpgsql) with the SET clause `set`.
fn trigger(s: &str, owner: &str, set: &str, body: &str) {
    run(&format!(
        "SET ROLE {owner};
         CREATE FUNCTION {s}.on_lease() RETURNS trigger LANGUAGE plpgsql {set} AS $$BEGIN {body} RETURN NULL; END$$;
         CREATE TRIGGER on_lease AFTER INSERT ON {s}.runtime_sandbox_capacity_leases
             FOR EACH ROW EXECUTE FUNCTION {s}.on_lease();
         RESET ROLE;"
    ));
}

fn seed_lease(s: &str) -> String {
    text(&format!(
        r#"SELECT status || ' ' || seeded_leases FROM runtime_sandbox.reconcile_daytona(
             '[{{"sandboxId":"sb-1","operationKey":"tok-1","routingDomain":"eu"}}]', now(), false, ledger_schema => '{s}')"#
    ))
    .unwrap()
}

fn trail(table: &str) -> Vec<String> {
    let sql = format!("SELECT coalesce(string_agg(concat_ws(' | ', tab, path, helper, pinned, work_mem), E'\\n'), '') FROM {table}");
    text(&sql).unwrap().lines().map(str::to_string).collect()
}

#[pg_test]
fn a_trigger_with_its_own_search_path_writes_to_its_own_schema() {
    ledger("hk1", "rs_hook_owner1");
    trigger(
        "hk1",
        "rs_hook_owner1",
        "SET search_path = hk1_audit, pg_temp",
        "INSERT INTO hk1_trail VALUES (TG_TABLE_NAME, current_setting('search_path'), whereami(), tests.pinned_search_path());",
    );
    let before = level();
    assert_eq!(seed_lease("hk1"), "applied 1");
    assert_eq!(level(), before, "the hook left a GUC nest level behind");
    // Its own path, and so did the helper without a SET clause it called
    // (as under the application's INSERT); the extension's function kept its own.
    assert_eq!(
        trail("hk1_audit.hk1_trail"),
        ["runtime_sandbox_capacity_leases | hk1_audit, pg_temp | hk1_audit, pg_temp | pg_catalog, pg_temp"]
    );
    assert!(trail("public.hk1_trail").is_empty());
    assert!(trail("hk1.hk1_trail").is_empty());
}

#[pg_test]
fn a_trigger_without_settings_gets_the_owners_path_and_its_callees_keep_it() {
    ledger("hk2", "rs_hook_owner2");
    trigger(
        "hk2",
        "rs_hook_owner2",
        "",
        "INSERT INTO hk2_trail VALUES (TG_TABLE_NAME, current_setting('search_path'), hk2_audit.whereami(), tests.pinned_search_path());",
    );
    let before = level();
    assert_eq!(seed_lease("hk2"), "applied 1");
    assert_eq!(level(), before);
    assert_eq!(
        trail("hk2.hk2_trail"),
        ["runtime_sandbox_capacity_leases | pg_catalog, hk2, public, pg_temp | pg_catalog, hk2, public, pg_temp | pg_catalog, pg_temp"]
    );
    assert!(trail("public.hk2_trail").is_empty());
}

#[pg_test]
fn a_trigger_setting_other_settings_keeps_them_and_gets_the_owners_path() {
    ledger("hk3", "rs_hook_owner3");
    trigger(
        "hk3",
        "rs_hook_owner3",
        "SET work_mem = '64MB'",
        "INSERT INTO hk3_trail (tab, path, work_mem) VALUES (TG_TABLE_NAME, current_setting('search_path'), current_setting('work_mem'));",
    );
    run("SET LOCAL work_mem = '4MB'");
    let before = level();
    assert_eq!(seed_lease("hk3"), "applied 1");
    assert_eq!(level(), before);
    assert_eq!(trail("hk3.hk3_trail"), ["runtime_sandbox_capacity_leases | pg_catalog, hk3, public, pg_temp | 64MB"]);
    assert_eq!(text("SELECT current_setting('work_mem')").as_deref(), Some("4MB"));
    assert_eq!(text("SELECT current_setting('search_path')").as_deref(), Some(&*text("SELECT reset_val FROM pg_settings WHERE name = 'search_path'").unwrap()));
}

#[pg_test]
fn a_security_definer_trigger_of_a_third_role_keeps_its_own_path() {
    ledger("hk4", "rs_hook_owner4");
    run("CREATE ROLE rs_hook_auditor4; CREATE SCHEMA hk4_events AUTHORIZATION rs_hook_auditor4;
         SET ROLE rs_hook_auditor4;
         CREATE TABLE hk4_events.events (tab text, who text, path text);
         CREATE FUNCTION hk4_events.record() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
             SET search_path = pg_catalog, hk4_events AS $$
             BEGIN INSERT INTO events VALUES (TG_TABLE_NAME, current_user, current_setting('search_path')); RETURN NULL; END $$;
         GRANT EXECUTE ON FUNCTION hk4_events.record() TO rs_hook_owner4;
         GRANT USAGE ON SCHEMA hk4_events TO rs_hook_owner4;
         SET ROLE rs_hook_owner4;
         CREATE TRIGGER record AFTER INSERT ON hk4.runtime_sandbox_capacity_leases
             FOR EACH ROW EXECUTE FUNCTION hk4_events.record();
         RESET ROLE;");
    let before = level();
    assert_eq!(seed_lease("hk4"), "applied 1");
    assert_eq!(level(), before);
    assert_eq!(
        text("SELECT string_agg(concat_ws(' | ', tab, who, path), ',') FROM hk4_events.events").as_deref(),
        Some("runtime_sandbox_capacity_leases | rs_hook_auditor4 | pg_catalog, hk4_events")
    );
}

#[pg_test]
fn the_hooks_nest_levels_balance_when_the_caller_catches_an_error() {
    ledger("hk5", "rs_hook_owner5");
    trigger("hk5", "rs_hook_owner5", "SET search_path = hk5_audit, pg_temp", "RAISE EXCEPTION 'refused by the owner';");
    let before = level();
    // The error is caught by the caller (a subtransaction), twice.
    for _ in 0..2 {
        run(r#"DO $$BEGIN
                 PERFORM runtime_sandbox.reconcile_daytona('[{"sandboxId":"sb-1","operationKey":"tok-1","routingDomain":"eu"}]',
                                                          now(), false, ledger_schema => 'hk5');
                 RAISE 'not reached';
               EXCEPTION WHEN raise_exception THEN
                 IF SQLERRM <> 'refused by the owner' THEN RAISE; END IF;
               END$$"#);
        assert_eq!(level(), before);
    }
    // And a trigger without settings, whose level is the hook's own.
    run("DROP FUNCTION hk5.on_lease() CASCADE");
    trigger("hk5", "rs_hook_owner5", "", "RAISE EXCEPTION 'refused by the owner';");
    run(r#"DO $$BEGIN
             PERFORM runtime_sandbox.reconcile_daytona('[{"sandboxId":"sb-1","operationKey":"tok-1","routingDomain":"eu"}]',
                                                      now(), false, ledger_schema => 'hk5');
           EXCEPTION WHEN raise_exception THEN NULL;
           END$$"#);
    assert_eq!(level(), before);
    assert_eq!(text("SELECT current_setting('search_path')"), text("SELECT reset_val FROM pg_settings WHERE name = 'search_path'"));
}
