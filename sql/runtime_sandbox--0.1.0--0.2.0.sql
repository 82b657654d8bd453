-- runtime_sandbox 0.1.0 -> 0.2.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`: each section brings a 0.1.0
-- catalog to exactly what a fresh 0.2.0 install creates (statement text from `cargo pgrx schema pg15`).

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
