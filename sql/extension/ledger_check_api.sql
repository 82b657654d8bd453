COMMENT ON FUNCTION @extschema@.check_ledger(name) IS
'Lists what a ledger schema (default runtime_scheduler) lacks for the extension and the application''s SQL: missing schema, enum type or labels, tables, columns, the generated routing_domain_key columns, unique keys (ON CONFLICT targets) and indexes. No rows means ready. Read-only.';
