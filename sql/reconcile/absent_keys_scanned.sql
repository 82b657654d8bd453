-- The lone keys of absent_operations.sql, many: one pass over the table,
-- each row's key looked up in the hashed array.
(SELECT * FROM @ledger@.runtime_sandbox_operations WHERE operation_key = ANY ($1::text[])) AS operation
