COMMENT ON FUNCTION @extschema@.stable_json(jsonb) IS
'The application''s stableJson(value): keys sorted by ICU en-US localeCompare (ties keep JavaScript Object.keys order), numbers as JavaScript doubles, strings escaped as JSON.stringify, no whitespace.';
COMMENT ON FUNCTION @extschema@.stock_hash(jsonb) IS
'The application''s stockHash(value): ''sha256:'' || hex(sha256(stable_json(value))). Bit-identical with hashes the application stored.';
COMMENT ON FUNCTION @extschema@.managed_resource_status(text, text, text, text) IS
'Classifies a managed resource against its stock: missing (no resource id or current hash), stock_current (current = latest), stock_update_available (current = binding hash), else operator_modified.';
COMMENT ON TYPE @extschema@.managed_stock_status IS
'How a managed resource relates to its stock baseline: missing, stock_current, stock_update_available, operator_modified.';
