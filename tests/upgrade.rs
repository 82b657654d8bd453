//! `ALTER EXTENSION runtime_sandbox UPDATE` from the frozen 0.1.0 script, on a database that has ledgers,
//! data, an operator role with grants and user objects depending on the extension; then its catalog
//! against a fresh install of the current version, object by object.
//!
//! Compared, for every extension member (pg_depend deptype 'e'): functions and procedures as
//! `pg_get_functiondef` prints them (arguments, defaults, result, language, symbol, volatility,
//! strictness, security, parallel, cost, rows, SET clauses, body), owner, ACL and initial privileges
//! (pg_init_privs); types (composite attributes with collations and comments, enum labels in order),
//! their owner, ACL and initial privileges; the schema's owner and ACL; every member's comment; the
//! extension's own row and comment.
//! Left out, and why:
//! - objects in schema `tests`: `cargo pgrx test` builds the `#[pg_test]` functions into the install
//!   script of the build it installs; no release has them;
//! - the operator role's own grants (ACL entries naming it): the fresh database has no such role's
//!   grants; they are checked instead by the role still running its calls after the update.

mod common;

use postgres::Client;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const OPERATOR: &str = "rs_upgrade_operator";
/// The role that owns the ledger (its schema and tables), as an application's role does.
const LEDGER_OWNER: &str = "rs_upgrade_ledger";
const UPGRADED: &str = "it_upgrade_from_0_1_0";
const FRESH: &str = "it_upgrade_fresh";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pg_config(arg: &str) -> String {
    let bin = std::env::var("PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
    let out = Command::new(&bin).arg(arg).output().unwrap_or_else(|e| panic!("run {bin} {arg}: {e}"));
    assert!(out.status.success(), "{bin} {arg} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The frozen 0.1.0 script goes into the server's extension directory (`make install` does not ship it:
/// a database upgrading from 0.1.0 needs only the update scripts); the update scripts must be the
/// repository's, as installed by `cargo pgrx test`/`make install`.
fn install_scripts() {
    let extdir = PathBuf::from(pg_config("--sharedir")).join("extension");
    std::fs::copy(repo().join("sql/runtime_sandbox--0.1.0.sql"), extdir.join("runtime_sandbox--0.1.0.sql"))
        .unwrap_or_else(|e| panic!("install the 0.1.0 script into {}: {e}", extdir.display()));
    let mut updates = 0;
    for entry in std::fs::read_dir(repo().join("sql")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("runtime_sandbox--") && name.matches("--").count() == 2 && name.ends_with(".sql") {
            let ours = std::fs::read_to_string(repo().join("sql").join(&name)).unwrap();
            let installed = std::fs::read_to_string(extdir.join(&name)).unwrap_or_default();
            assert_eq!(
                installed,
                ours,
                "{} is not the repository's sql/{name}: install the extension first (`make test` does)",
                extdir.join(&name).display()
            );
            updates += 1;
        }
    }
    assert!(updates > 0, "no update script sql/runtime_sandbox--<from>--<to>.sql");
}

fn recreate(db: &str) -> Client {
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    common::connect(db)
}

fn one(c: &mut Client, sql: &str) -> String {
    c.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", common::db_message(&e))).get(0)
}

/// Ledgers, data and user objects made with 0.1.0's functions only.
const DATA_0_1_0: &str = r#"
CREATE SCHEMA runtime_scheduler AUTHORIZATION rs_upgrade_ledger;
GRANT EXECUTE ON FUNCTION runtime_sandbox.install_ledger(name) TO rs_upgrade_ledger;
SET ROLE rs_upgrade_ledger;
SELECT runtime_sandbox.install_ledger();
RESET ROLE;
REVOKE EXECUTE ON FUNCTION runtime_sandbox.install_ledger(name) FROM rs_upgrade_ledger;
INSERT INTO runtime_scheduler.runs (run_id, org_id)
VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1'), ('run-a', 'org-1'), ('run-b', 'org-2');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-3', 1, '2026-03-01 09:00:00+00', NULL),
  ('run-a', 1, '2026-03-01 10:00:00+00',
   '[{"kind": "daytona_sandbox", "sandboxId": "dt-1"}, {"kind": "modal_sandbox", "sandboxId": "mo-1", "modalAppId": "app-7"}]'),
  ('run-b', 1, '2026-03-01 10:05:00+00', '{"kind": "daytona_sandbox", "sandboxId": "dt-2"}');
INSERT INTO runtime_scheduler.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, 'reserved', 'label-3', NULL);
INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('op-3', 'org-1', 'run-3');
SELECT status FROM runtime_sandbox.reconcile_daytona(
  '[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]', now(), false);
-- One page of two: the update must keep a pending checkpoint.
SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1);
SELECT runtime_sandbox.install_environment_tables('app');
-- The application's tables belong to the ledger's owner role too (0.3.0 runs the managed statements as it).
ALTER SCHEMA app OWNER TO rs_upgrade_ledger;
ALTER TABLE app.environments OWNER TO rs_upgrade_ledger;
ALTER TABLE app.built_in_managed_resources OWNER TO rs_upgrade_ledger;
ALTER TABLE app.companies OWNER TO rs_upgrade_ledger;
INSERT INTO app.companies (id, name) VALUES ('00000000-0000-0000-0000-0000000000c1', 'Acme');
SELECT action FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us"}', app_schema => 'app');

-- User objects that depend on the extension: a view calling its functions, a table column of its enum,
-- a function over its composite type (BEGIN ATOMIC records the dependency).
CREATE SCHEMA ops;
CREATE VIEW ops.environment_stock AS
SELECT e.name, runtime_sandbox.stock_hash(e.config) AS config_hash,
       runtime_sandbox.managed_resource_status(e.id::text, runtime_sandbox.stock_hash(b.defaults_json), b.stock_hash,
                                               b.stock_hash) AS status
  FROM app.environments e JOIN app.built_in_managed_resources b ON b.resource_id = e.id;
CREATE TABLE ops.stock_audit (name text, status runtime_sandbox.managed_stock_status);
INSERT INTO ops.stock_audit SELECT name, status FROM ops.environment_stock;
CREATE FUNCTION ops.reconciled(s runtime_sandbox.reconciliation_summary) RETURNS boolean
LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT s.status IN ('applied', 'planned'); END;

-- The operator: what it needs on the user's tables, and EXECUTE on three of the extension's functions.
GRANT USAGE ON SCHEMA runtime_scheduler, app, ops TO rs_upgrade_operator;
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA runtime_scheduler, app TO rs_upgrade_operator;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA runtime_scheduler TO rs_upgrade_operator;
GRANT SELECT ON ops.environment_stock TO rs_upgrade_operator;
GRANT EXECUTE ON FUNCTION ops.reconciled(runtime_sandbox.reconciliation_summary) TO rs_upgrade_operator;
GRANT EXECUTE ON FUNCTION runtime_sandbox.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name)
    TO rs_upgrade_operator;
GRANT EXECUTE ON FUNCTION runtime_sandbox.advance_sandbox_operation_backfill(boolean, integer, integer, name)
    TO rs_upgrade_operator;
GRANT EXECUTE ON FUNCTION runtime_sandbox.reconcile_managed_environment(text, text, jsonb, text, jsonb, uuid, text, boolean, name)
    TO rs_upgrade_operator;
"#;

/// What the operator runs (from a cron job, say); none of it writes, so it gives the same answers
/// before and after the update.
const OPERATOR_CALLS: &[&str] = &[
    r#"SELECT (r.provider_sandbox_count, r.matched_live_sandboxes, r.unmatched_provider_sandbox_ids,
               r.live_leases_to_seed, r.absent_ledger_rows, r.status, ops.reconciled(r))::text
         FROM runtime_sandbox.reconcile_daytona(
         '[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"}]',
         '2026-03-01', dry_run => true) r"#,
    "SELECT (phase, batches, scanned_attempts, projected_operations, targets, next_cursor)::text
       FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => true, batch_size => 10)",
    r#"SELECT (action, stock_status, update_available, stock_hash)::text
       FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us"}', app_schema => 'app')"#,
    "SELECT string_agg((name, config_hash, status)::text, ',' ORDER BY name) FROM ops.environment_stock",
];

fn operator_answers(db: &str) -> Vec<String> {
    let mut op = postgres::Client::connect(
        &format!("host=127.0.0.1 port={} user={OPERATOR} dbname={db}", common::port()),
        postgres::NoTls,
    )
    .unwrap();
    OPERATOR_CALLS
        .iter()
        .map(|sql| match op.query_one(*sql, &[]) {
            Ok(row) => row.get::<_, Option<String>>(0).unwrap_or_default(),
            Err(e) => format!("ERROR: {}", common::db_message(&e)),
        })
        .collect()
}

/// Every row of every user table and view, as text (the data the update must not touch). A view's
/// `interval` columns are left out: they are ages computed from `now()` (reconciliation_health's
/// `last_run_age`, ...), different at every read; the columns they are computed from are compared.
fn user_data(c: &mut Client) -> BTreeMap<String, String> {
    let relations: Vec<(String, String)> = c
        .query(
            "SELECT format('%I.%I', n.nspname, r.relname),
                    (SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a
                      WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
                        AND (r.relkind = 'r' OR a.atttypid <> 'interval'::regtype))
               FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
              WHERE n.nspname IN ('runtime_scheduler', 'app', 'ops') AND r.relkind IN ('r', 'v') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(relations.len() >= 12, "expected the ledger, app and ops relations, got {relations:?}");
    relations
        .into_iter()
        .map(|(rel, columns)| {
            let rows = one(
                c,
                &format!("SELECT coalesce(string_agg(({columns})::text, E'\\n' ORDER BY ({columns})::text), '') FROM {rel} t"),
            );
            (rel, rows)
        })
        .collect()
}

/// The catalog of the extension, one entry per member object (plus the extension itself).
const CATALOG: &str = r#"
WITH ext AS (SELECT * FROM pg_catalog.pg_extension WHERE extname = 'runtime_sandbox'),
members AS (
    SELECT d.classid, d.objid, o.type, o.schema, o.identity
      FROM pg_catalog.pg_depend d
      JOIN ext ON d.refobjid = ext.oid
     CROSS JOIN LATERAL pg_catalog.pg_identify_object(d.classid, d.objid, d.objsubid) o
     WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
       AND o.schema IS DISTINCT FROM 'tests' AND NOT (o.type = 'schema' AND o.identity = 'tests')
),
-- Initial privileges (what the scripts granted), without the test's operator.
init AS (
    SELECT m.classid, m.objid,
           (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM unnest(p.initprivs) a
             WHERE a::text NOT LIKE $1 || '=%') AS privs
      FROM members m JOIN pg_catalog.pg_init_privs p ON p.classoid = m.classid AND p.objoid = m.objid AND p.objsubid = 0
)
SELECT 'extension runtime_sandbox',
       format(E'version %s relocatable %s schema %s config %s condition %s\ncomment %s',
              extversion, extrelocatable, extnamespace::regnamespace, extconfig, extcondition,
              pg_catalog.obj_description(ext.oid, 'pg_extension'))
  FROM ext
UNION ALL
SELECT m.type || ' ' || m.identity,
       concat_ws(E'\n',
           CASE WHEN p.prokind = 'a' THEN 'aggregate ' || p.oid::regprocedure::text
                ELSE pg_catalog.pg_get_functiondef(p.oid) END,
           'owner ' || pg_catalog.pg_get_userbyid(p.proowner),
           'acl ' || (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                        FROM unnest(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                       WHERE a::text NOT LIKE $1 || '=%'),
           'initprivs ' || (SELECT privs FROM init i WHERE i.classid = m.classid AND i.objid = m.objid),
           'comment ' || pg_catalog.obj_description(p.oid, 'pg_proc'))
  FROM members m JOIN pg_catalog.pg_proc p ON m.classid = 'pg_catalog.pg_proc'::regclass AND p.oid = m.objid
UNION ALL
SELECT m.type || ' ' || m.identity,
       concat_ws(E'\n',
           format('typtype %s %s', t.typtype, pg_catalog.format_type(t.oid, NULL)),
           (SELECT string_agg(format('attribute %s %s%s%s', quote_ident(a.attname),
                                     pg_catalog.format_type(a.atttypid, a.atttypmod),
                                     CASE WHEN a.attcollation <> 0 THEN ' collate ' || a.attcollation::regcollation::text END,
                                     ' comment ' || pg_catalog.col_description(a.attrelid, a.attnum)),
                              E'\n' ORDER BY a.attnum)
              FROM pg_catalog.pg_attribute a
             WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped),
           'labels ' || (SELECT string_agg(e.enumlabel, ', ' ORDER BY e.enumsortorder)
                           FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid),
           'owner ' || pg_catalog.pg_get_userbyid(t.typowner),
           'acl ' || (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                        FROM unnest(coalesce(t.typacl, pg_catalog.acldefault('T', t.typowner))) a
                       WHERE a::text NOT LIKE $1 || '=%'),
           'initprivs ' || (SELECT privs FROM init i WHERE i.classid = m.classid AND i.objid = m.objid),
           'comment ' || pg_catalog.obj_description(t.oid, 'pg_type'))
  FROM members m JOIN pg_catalog.pg_type t ON m.classid = 'pg_catalog.pg_type'::regclass AND t.oid = m.objid
UNION ALL
SELECT m.type || ' ' || m.identity,
       concat_ws(E'\n',
           'owner ' || pg_catalog.pg_get_userbyid(n.nspowner),
           'acl ' || (SELECT string_agg(a::text, ' ' ORDER BY a::text)
                        FROM unnest(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
                       WHERE a::text NOT LIKE $1 || '=%'),
           'initprivs ' || (SELECT privs FROM init i WHERE i.classid = m.classid AND i.objid = m.objid),
           'comment ' || pg_catalog.obj_description(n.oid, 'pg_namespace'))
  FROM members m JOIN pg_catalog.pg_namespace n ON m.classid = 'pg_catalog.pg_namespace'::regclass AND n.oid = m.objid
UNION ALL
-- Members of any other kind (operators, casts, tables, ...): identity and comment.
SELECT m.type || ' ' || m.identity,
       'comment ' || coalesce(pg_catalog.obj_description(m.objid, c.relname::text), '')
  FROM members m JOIN pg_catalog.pg_class c ON c.oid = m.classid
 WHERE m.classid NOT IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_type'::regclass,
                         'pg_catalog.pg_namespace'::regclass)
"#;

fn catalog(c: &mut Client) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // ACL entries are compared without the test's operator (NOT LIKE $1 || '=%').
    for row in c.query(CATALOG, &[&OPERATOR]).unwrap_or_else(|e| panic!("catalog query: {}", common::db_message(&e))) {
        let key: String = row.get(0);
        let value: String = row.get::<_, Option<String>>(1).unwrap_or_default();
        assert!(out.insert(key.clone(), value).is_none(), "two catalog entries named {key}");
    }
    out
}

/// A line diff (longest common subsequence): `-` only in the updated database, `+` only in the fresh one.
fn line_diff(left: &str, right: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (left.lines().collect(), right.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &format!("      {}\n", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out += &format!("    + {}\n", b[j]);
            j += 1;
        } else {
            out += &format!("    - {}\n", a[i]);
            i += 1;
        }
    }
    out
}

/// Empty when equal; otherwise what differs, readable.
fn catalog_diff(updated: &BTreeMap<String, String>, fresh: &BTreeMap<String, String>) -> String {
    let keys: BTreeSet<&String> = updated.keys().chain(fresh.keys()).collect();
    let mut out = String::new();
    for key in keys {
        match (updated.get(key), fresh.get(key)) {
            (Some(u), Some(f)) if u == f => {}
            (Some(u), Some(f)) => out += &format!("\n~ {key} differs (- updated from 0.1.0, + fresh install):\n{}", line_diff(u, f)),
            (Some(u), None) => out += &format!("\n- {key} is only in the updated database (drop it in the update script):\n{}", line_diff(u, "")),
            (None, Some(f)) => out += &format!("\n+ {key} is missing after the update (create it in the update script):\n{}", line_diff("", f)),
            (None, None) => unreachable!(),
        }
    }
    out
}

#[test]
fn update_from_0_1_0_equals_a_fresh_install_and_keeps_data_grants_and_dependents() {
    install_scripts();
    let mut admin = common::connect("postgres");
    for db in [UPGRADED, FRESH] {
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    }
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {OPERATOR}; CREATE ROLE {OPERATOR} LOGIN;
             DROP ROLE IF EXISTS {LEDGER_OWNER}; CREATE ROLE {LEDGER_OWNER}"
        ))
        .unwrap();

    // 0.1.0, used as 0.1.0 was.
    let mut old = recreate(UPGRADED);
    old.batch_execute("CREATE EXTENSION runtime_sandbox VERSION '0.1.0'")
        .unwrap_or_else(|e| panic!("CREATE EXTENSION ... VERSION '0.1.0' with the new library: {}", common::db_message(&e)));
    assert_eq!(one(&mut old, "SELECT extversion FROM pg_extension WHERE extname = 'runtime_sandbox'"), "0.1.0");
    old.batch_execute(DATA_0_1_0).unwrap_or_else(|e| panic!("0.1.0 data: {}", common::db_message(&e)));
    let data_before = user_data(&mut old);
    // The library is shared by every database: once 0.3.0's files are installed, a database still at 0.1.0
    // runs the ledger's statements as its owner too (docs/upgrading.md: grant membership first).
    let refused = operator_answers(UPGRADED);
    assert!(
        refused[0].starts_with(&format!("ERROR: runtime_sandbox: reconcile_daytona runs on schema \"runtime_scheduler\" as its owner \"{LEDGER_OWNER}\"")),
        "before the update: {refused:?}"
    );
    old.batch_execute(&format!("GRANT {LEDGER_OWNER} TO {OPERATOR}")).unwrap();
    let answers_before = operator_answers(UPGRADED);
    for (sql, answer) in OPERATOR_CALLS.iter().zip(&answers_before) {
        assert!(!answer.starts_with("ERROR") && !answer.is_empty(), "before the update, {sql}\n  gave {answer:?}");
    }
    // Taken back, to see the update leave the operator as the 0.3.0 rules say.
    old.batch_execute(&format!("REVOKE {LEDGER_OWNER} FROM {OPERATOR}")).unwrap();
    drop(old);

    // The update, in a session of its own as a deployment would run it.
    let mut updated = common::connect(UPGRADED);
    updated
        .batch_execute("ALTER EXTENSION runtime_sandbox UPDATE")
        .unwrap_or_else(|e| panic!("ALTER EXTENSION runtime_sandbox UPDATE: {}", common::db_message(&e)));
    assert_eq!(
        one(&mut updated, "SELECT extversion FROM pg_extension WHERE extname = 'runtime_sandbox'"),
        env!("CARGO_PKG_VERSION")
    );

    let mut fresh = recreate(FRESH);
    fresh.batch_execute("CREATE EXTENSION runtime_sandbox").unwrap();
    let (after, new) = (catalog(&mut updated), catalog(&mut fresh));
    assert!(new.len() > 20, "a fresh install has the schema, types and functions: {:?}", new.keys());
    let diff = catalog_diff(&after, &new);
    assert!(diff.is_empty(), "the catalog after ALTER EXTENSION UPDATE is not a fresh install's:\n{diff}");

    // Data, grants and dependent objects.
    let data_after = user_data(&mut updated);
    for (rel, rows) in &data_before {
        assert_eq!(data_after.get(rel), Some(rows), "{rel} changed in the update");
    }
    // README's second upgrade step: install_ledger on each ledger adds what the new version uses and keeps
    // every row; the ledger is then complete.
    updated.batch_execute("SELECT runtime_sandbox.install_ledger('runtime_scheduler')").unwrap();
    assert_eq!(user_data(&mut updated), data_after, "install_ledger after the update changed data");
    assert_eq!(one(&mut updated, "SELECT count(*)::text FROM runtime_sandbox.check_ledger()"), "0");
    // Since 0.3.0 the ledger's statements run as its owner: an operator that worked with table grants is
    // told what to grant (docs/upgrading.md), and works again once it has it.
    let refused = operator_answers(UPGRADED);
    assert!(
        refused[0].starts_with(&format!("ERROR: runtime_sandbox: reconcile_daytona runs on schema \"runtime_scheduler\" as its owner \"{LEDGER_OWNER}\"")),
        "{refused:?}"
    );
    updated.batch_execute(&format!("GRANT {LEDGER_OWNER} TO {OPERATOR}")).unwrap();
    let answers_after = operator_answers(UPGRADED);
    for ((sql, before), after) in OPERATOR_CALLS.iter().zip(&answers_before).zip(&answers_after) {
        assert_eq!(after, before, "the operator's call answers differently after the update (a grant lost?):\n  {sql}");
    }
    // The backfill goes on from 0.1.0's pending checkpoint: dt-1 was its page; mo-1, dt-2 and sb-9 (the
    // recovered create's late fact, whose attempt the reconcile touched last) are three full pages of one
    // (sb-9 exists already), then an empty page completes.
    let progress = one(
        &mut updated,
        "SELECT (phase, batches, inserted_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 10)",
    );
    assert_eq!(progress, "(complete,4,2)", "backfill resumed after the update");
    let kinds = one(&mut updated, "SELECT string_agg(DISTINCT status::text, ',') FROM ops.stock_audit");
    assert_eq!(kinds, "stock_current");

    drop((updated, fresh));
    for db in [UPGRADED, FRESH] {
        admin.batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)")).unwrap();
    }
    admin.batch_execute(&format!("DROP ROLE {OPERATOR}; DROP ROLE {LEDGER_OWNER}")).unwrap();
}

/// The update scripts never CASCADE (that would drop users' views and columns silently) and are never
/// empty of their header.
#[test]
fn update_scripts_state_the_rule_and_never_cascade() {
    for entry in std::fs::read_dir(repo().join("sql")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if !(name.starts_with("runtime_sandbox--") && name.matches("--").count() == 2) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("ships its section in this file"), "{name} lost its header");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("--").next().unwrap().to_uppercase();
            assert!(!code.contains("CASCADE"), "{}:{}: CASCADE in an update script: {line}", path_str(&path), n + 1);
        }
    }
}

fn path_str(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap_or(p).display().to_string()
}
