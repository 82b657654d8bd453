-- The lone keys of absent_operations.sql, few: one primary-key probe each
-- (LIMIT keeps the subquery from being flattened into a join the planner
-- would answer with a scan of the whole table; the key is unique anyway).
unnest($1::text[]) AS lone(operation_key)
CROSS JOIN LATERAL (
    SELECT * FROM @ledger@.runtime_sandbox_operations AS candidate
    WHERE candidate.operation_key = lone.operation_key
    LIMIT 1
) AS operation
