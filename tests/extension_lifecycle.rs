//! The extension as a user meets it: CREATE, call without search_path, privileges,
//! and DROP EXTENSION keeping the ledger's data.

mod common;

#[test]
fn functions_work_without_the_extension_schema_on_search_path() {
    let db = common::fresh_database("it_ext_search_path");
    let mut c = common::connect(&db);
    c.batch_execute("SET search_path = public").unwrap();
    let hash: String = c
        .query_one(r#"SELECT runtime_sandbox.stock_hash('{"a":1,"b":{"c":2}}')"#, &[])
        .unwrap()
        .get(0);
    assert_eq!(hash, "sha256:007f2c1c104514608c3cdf42ec59d710d0888592c1d1f72437d9b075093617b8");
    let status: String = c
        .query_one("SELECT runtime_sandbox.managed_resource_status('r', 'h', 'h', 'x')::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(status, "stock_update_available");
}

#[test]
fn ledger_data_survives_drop_extension() {
    let db = common::fresh_database("it_ext_drop_keeps_ledger");
    let mut c = common::connect(&db);
    c.batch_execute(
        "SELECT runtime_sandbox.install_ledger('ledger_keep');
         SELECT runtime_sandbox.install_ledger('ledger_keep'); -- idempotent
         INSERT INTO ledger_keep.runs (run_id, org_id) VALUES ('run-1', 'org-1');
         DROP EXTENSION runtime_sandbox;",
    )
    .unwrap();
    let runs: i64 = c.query_one("SELECT count(*) FROM ledger_keep.runs", &[]).unwrap().get(0);
    assert_eq!(runs, 1, "ledger tables are user tables, not extension members");
}

/// docs/uninstalling.md, as written: its dependency query names a user's view, DROP EXTENSION refuses until
/// it is gone, the empty schema is left and can be dropped, and installing again works on the ledger kept.
#[test]
fn uninstalling_as_documented() {
    let db = common::fresh_database("it_ext_uninstall");
    let mut c = common::connect(&db);
    c.batch_execute(
        "SELECT runtime_sandbox.install_ledger();
         INSERT INTO runtime_scheduler.runs (run_id, org_id) VALUES ('run-1', 'org-1');
         CREATE VIEW public.hashes AS SELECT runtime_sandbox.stock_hash('{}'::jsonb) AS h;",
    )
    .unwrap();
    let page = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/uninstalling.md")).unwrap();
    let block = page.split("```sql\n").nth(1).unwrap().split("```").next().unwrap();
    let query = block.split("-- 2.").nth(1).unwrap().split("-- 3.").next().unwrap();
    let query = query.split_once('\n').unwrap().1.trim().trim_end_matches(';');
    let dependents: Vec<String> = c.query(query, &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert!(dependents.iter().any(|d| d.contains("view hashes")), "{dependents:?}");
    let e = c.batch_execute("DROP EXTENSION runtime_sandbox").unwrap_err();
    assert!(common::db_message(&e).contains("other objects depend on it"), "{e}");
    c.batch_execute("DROP VIEW public.hashes; DROP EXTENSION runtime_sandbox; DROP SCHEMA runtime_sandbox;").unwrap();
    c.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    let problems: i64 = c
        .query_one("SELECT count(*) FROM runtime_sandbox.check_ledger() WHERE severity = 'error'", &[])
        .unwrap()
        .get(0);
    let runs: i64 = c.query_one("SELECT count(*) FROM runtime_scheduler.runs", &[]).unwrap().get(0);
    assert_eq!((problems, runs), (0, 1), "the ledger kept its rows and serves the new install");
}

#[test]
fn writing_functions_are_not_granted_to_public() {
    let db = common::fresh_database("it_ext_privileges");
    let mut c = common::connect(&db);
    c.batch_execute(
        "DROP ROLE IF EXISTS rs_reader; CREATE ROLE rs_reader LOGIN;
         GRANT CONNECT ON DATABASE it_ext_privileges TO rs_reader;",
    )
    .unwrap();
    let mut reader = postgres::Client::connect(
        &format!("host=127.0.0.1 port={} user=rs_reader dbname={db}", common::port()),
        postgres::NoTls,
    )
    .unwrap();
    // Pure functions are callable by anyone who can use the schema.
    let hash: String = reader.query_one("SELECT runtime_sandbox.stock_hash('[]')", &[]).unwrap().get(0);
    assert!(hash.starts_with("sha256:"));
    // Anything that writes is not.
    let err = reader.batch_execute("SELECT runtime_sandbox.install_ledger('x')").unwrap_err();
    assert!(common::db_message(&err).contains("permission denied"), "{err}");
    let writers_granted_to_public: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_proc p
              WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
                AND p.provolatile = 'v'
                AND has_function_privilege('rs_reader', p.oid, 'EXECUTE')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(writers_granted_to_public, 0, "a volatile (writing) function is executable by PUBLIC");
    drop(reader);
    c.batch_execute("REVOKE ALL ON DATABASE it_ext_privileges FROM rs_reader").unwrap();
}

#[test]
fn bad_schema_names_are_refused_with_the_argument_name() {
    let db = common::fresh_database("it_ext_bad_schema");
    let mut c = common::connect(&db);
    let err = c.batch_execute(r#"SELECT runtime_sandbox.install_ledger('x"; DROP TABLE t; --')"#).unwrap_err();
    let msg = common::db_message(&err);
    assert!(msg.contains("invalid argument ledger_schema"), "{msg}");
    let schemas: i64 = c
        .query_one("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'x%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(schemas, 0);
}

/// A schema named runtime_sandbox that another role made (and could later rename away and replace with
/// look-alikes), or that already holds objects, is refused by CREATE EXTENSION; nothing is installed.
#[test]
fn create_extension_refuses_a_runtime_sandbox_schema_it_did_not_make() {
    let mut admin = common::connect("postgres");
    admin.batch_execute("DROP DATABASE IF EXISTS it_ext_precreated WITH (FORCE)").unwrap();
    admin.batch_execute("DROP ROLE IF EXISTS rs_precreator").unwrap();
    admin.batch_execute("CREATE ROLE rs_precreator").unwrap();
    admin.batch_execute("CREATE DATABASE it_ext_precreated").unwrap();
    let mut c = common::connect("it_ext_precreated");
    c.batch_execute("CREATE SCHEMA runtime_sandbox AUTHORIZATION rs_precreator").unwrap();
    let err = c.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(db.code().code(), "42501", "{err:?}");
    assert!(db.message().contains("already exists and belongs to role rs_precreator"), "{}", db.message());
    let installed: i64 = c.query_one("SELECT count(*) FROM pg_extension WHERE extname = 'runtime_sandbox'", &[]).unwrap().get(0);
    assert_eq!(installed, 0);
    // The installer's own schema, but not empty.
    c.batch_execute(
        "DROP SCHEMA runtime_sandbox; CREATE SCHEMA runtime_sandbox;
         CREATE FUNCTION runtime_sandbox.reconcile_daytona_latest() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    )
    .unwrap();
    let err = c.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap_err();
    assert_eq!(err.as_db_error().unwrap().code().code(), "55000", "{err:?}");
    // An empty schema of the installer's own is used.
    c.batch_execute("DROP SCHEMA runtime_sandbox CASCADE; CREATE SCHEMA runtime_sandbox; CREATE EXTENSION runtime_sandbox").unwrap();
    drop(c);
    admin.batch_execute("DROP DATABASE it_ext_precreated WITH (FORCE)").unwrap();
    admin.batch_execute("DROP ROLE rs_precreator").unwrap();
}
