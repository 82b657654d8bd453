-- runtime_sandbox 0.1.0 -> 0.2.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`.
--
-- The rule: every change of the SQL surface (a function, procedure or type added, changed or dropped; a
-- comment; a grant or revoke) ships its section in this file, so that an updated 0.1.0 database ends with
-- exactly the catalog of a fresh 0.2.0 install. tests/upgrade.rs checks that: it installs the frozen
-- sql/runtime_sandbox--0.1.0.sql, makes ledgers, data, grants and a dependent view, runs the update and
-- compares every function (pg_get_functiondef: arguments, defaults, result, volatility, strictness,
-- parallel, SET search_path, symbol), ACL, type, enum label, comment and extension member with a fresh
-- install, printing a diff.
--
-- How to write a section:
-- - Start it with a comment header naming what it is for; take the statements' text from
--   `cargo pgrx schema pg15 --out /tmp/x.sql` (the generated install script), schema-qualified with
--   @extschema@ (the script runs with search_path = @extschema@, but say so anyway).
-- - The shared library of 0.2.0 serves both catalogs (0.1.0 until this script ran): keep the Rust name of
--   every existing #[pg_extern] (its C symbol <rust_name>_wrapper is named by the 0.1.0 script); rename
--   in SQL with #[pg_extern(name = "...")].
-- - Same argument types: CREATE OR REPLACE FUNCTION keeps the function's OID, so users' grants and
--   the views that call it survive (a changed language, body, volatility or SET clause is fine; the
--   result type and argument names must stay). Then COMMENT ON again if the comment changed.
-- - Other argument types (a new argument, even with a default): DROP FUNCTION old(signature) and CREATE
--   FUNCTION, then its COMMENT ON and REVOKE EXECUTE ... FROM PUBLIC again. Never CASCADE (a test refuses
--   it): a DROP fails while a user's view depends on the function, which is right, but it also loses the
--   grants users gave on it (an operator's cron job would stop with "permission denied"; tests/upgrade.rs
--   runs an operator's calls before and after). Carry them over:
--     SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
--                pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::text), ', '), ''), true)
--       FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
--      WHERE p.oid = '@extschema@.f(old argument types)'::pg_catalog.regprocedure
--        AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner;
--     DROP FUNCTION @extschema@.f(old argument types);
--     CREATE FUNCTION ...; COMMENT ON ...; REVOKE ...;        -- as generated
--     DO $$ BEGIN
--       IF pg_catalog.current_setting('runtime_sandbox.grantees') <> '' THEN
--         EXECUTE 'GRANT EXECUTE ON FUNCTION @extschema@.f(new argument types) TO '
--                 || pg_catalog.current_setting('runtime_sandbox.grantees');
--       END IF;
--     END $$;
--   (A grant made inside the script is recorded as the extension's initial privilege, so pg_dump leaves it
--   out of a dump; say so in README "Upgrading".)
-- - A new composite column: ALTER TYPE @extschema@.t ADD ATTRIBUTE ... (append at the end, as the fresh
--   install must declare it too). A new enum label: ALTER TYPE ... ADD VALUE ... BEFORE/AFTER so that the
--   label order equals the fresh install's.
-- - Functions added in 0.2.0: exactly the generated CREATE FUNCTION, COMMENT ON and REVOKE.
-- - Never edit sql/runtime_sandbox--0.1.0.sql (it is what 0.1.0 databases have).

-- Section: stock hashes — managed_resource_status is the Rust rule (src/stock/status.rs via
-- src/stock/shell.rs), no longer a second implementation in SQL. Same name, arguments, result type,
-- IMMUTABLE PARALLEL SAFE, not strict (NULL means missing); it runs no SQL, so no SET search_path (as
-- stable_json and stock_hash). CREATE OR REPLACE keeps the function's OID, so its ACL (EXECUTE for
-- PUBLIC, as before), users' grants and the views that call it survive; the comment is restated.
CREATE OR REPLACE FUNCTION @extschema@."managed_resource_status"(
	"resource_id" TEXT,
	"current_hash" TEXT,
	"binding_stock_hash" TEXT,
	"latest_stock_hash" TEXT
) RETURNS @extschema@.managed_stock_status
IMMUTABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'managed_resource_status_wrapper';
COMMENT ON FUNCTION @extschema@.managed_resource_status(text, text, text, text) IS
'Classifies a managed resource against its stock: missing (no resource id or current hash), stock_current (current = latest), stock_update_available (current = binding hash), else operator_modified.';

-- Section: managed environments — the comment of reconcile_managed_environment names its error classes
-- (22023 arguments, 42P01 missing tables, 40001 a concurrent change: retry).
COMMENT ON FUNCTION @extschema@.reconcile_managed_environment(text, text, jsonb, text, jsonb, uuid, text, boolean, name) IS
'The application''s ensureManagedSandboxEnvironment in one transaction step: keeps the single Paperclip-managed sandbox environment in app_schema at stock for provider while never overwriting operator edits. Locks the sandbox rows before reading the bindings of company_id (NULL: every company); inserts, updates, leaves unchanged or skips; rewrites bindings exactly where the application does. Errors: SQLSTATE 22023 on an empty name or provider, a config or extra_metadata that is not a JSON object, or an app_schema that is not a plain identifier or does not exist; 42P01 when app_schema lacks the tables; 40001 when a concurrent change makes it stop (at REPEATABLE READ or SERIALIZABLE, a change committed after the transaction''s snapshot): retry. Nothing is written then.';
