-- runtime_sandbox 0.2.0 -> 0.3.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`.
--
-- The rule (as in runtime_sandbox--0.1.0--0.2.0.sql, whose header says how to write a section): every change
-- of the SQL surface ships its section in this file, so that an updated database ends with exactly the
-- catalog of a fresh install. tests/upgrade.rs checks that, from 0.1.0 through this script.
--
-- What 0.3.0 changes for a ledger is not in this file (ledgers are user tables): its functions now run their
-- statements as the ledger's owner, and refuse a ledger check_ledger calls unusable. After the update run
-- `SELECT * FROM runtime_sandbox.check_ledger('<schema>')` on each ledger; roles that ran the functions with
-- table grants need membership in the ledger's owner role instead (docs/upgrading.md).

-- Section: check_ledger gains fix and severity columns, and a NULL schema is an error instead of no row.
-- The result type changes, so the function is dropped and created again, its grants carried over.
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.check_ledger(name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.check_ledger(name);
CREATE  FUNCTION @extschema@."check_ledger"(
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS TABLE (
	"object" TEXT,  /* String */
	"problem" TEXT,  /* String */
	"fix" TEXT,  /* Option < String > */
	"severity" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_ledger_with_fixes_wrapper';
COMMENT ON FUNCTION @extschema@.check_ledger(name) IS
'Lists what keeps a ledger schema (default runtime_scheduler) from serving the extension and the application''s SQL, one row per problem with the DDL that fixes it: severity error (the functions refuse the ledger: missing schema, enum type or labels, tables, columns, unique keys; column types, NULLs or defaults the statements cannot work with; objects owned by a role other than the schema''s owner), warning (missing index or health view: slower, or less to see) and notice (triggers, rules, policies, functions in defaults, CHECKs, domains, casts and index expressions: the functions run them as the ledger''s owner). No rows means ready. Read-only; reads only the catalogs.';
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.check_ledger(name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

-- Section: install_ledger runs only the DDL that is missing, as the schema's owner, and fails listing what
-- it could not fix; a NULL schema is an error (it was STRICT: NULL did nothing). Same arguments and result:
-- CREATE OR REPLACE keeps its OID and grants.
CREATE OR REPLACE FUNCTION @extschema@."install_ledger"(
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'install_ledger_checked_wrapper';
COMMENT ON FUNCTION @extschema@.install_ledger(name) IS
'Creates, idempotently, the sandbox ledger in ledger_schema (default runtime_scheduler): the runtime_sandbox_operation_state enum and its labels, runs, attempts, runtime_sandbox_operations, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, runtime_sandbox_capacity_leases, control, reconciliation_runs, provider_inventory_snapshots and provider_inventory_items, the columns, unique keys and indexes the application''s SQL and the reconciliation rely on, and the view reconciliation_health. Reads the catalog first and runs only what is missing, as the schema''s owner (a run with nothing to do takes no lock on any table); then checks the ledger and fails listing what it could not fix (column types, NOT NULLs, owners: the application''s data). Ordinary user tables: pg_dump keeps their data.';

-- Section: install_ledger_ddl, new: the DDL install_ledger would run, for a migration tool.
CREATE  FUNCTION @extschema@."install_ledger_ddl"(
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"concurrently" bool DEFAULT true /* Option < bool > */
) RETURNS TABLE (
	"step" INT,  /* i32 */
	"object" TEXT,  /* String */
	"statement" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'install_ledger_ddl_wrapper';
COMMENT ON FUNCTION @extschema@.install_ledger_ddl(name, boolean) IS
'The DDL install_ledger would run on ledger_schema now, one statement per row, for a migration tool: with concurrently (the default) indexes on tables that already exist are built CREATE INDEX CONCURRENTLY, to be run outside a transaction block. No rows: nothing to do. Read-only.';
