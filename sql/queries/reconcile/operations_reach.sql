-- How many operations (any provider, any state) the table holds, counted
-- only up to $1: many lone keys are reached by one scan only when the table
-- is not much larger than they are.
SELECT count(*) FROM (SELECT FROM @ledger@.runtime_sandbox_operations LIMIT $1) AS operation
