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
