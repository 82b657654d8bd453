-- (sandbox, routing domain) of the open Daytona leases bound to a sandbox,
-- the current fleet's, through a bitmap of their partial index (the table is
-- large next to the listing; the shell turns off whole-table scans,
-- settings.sql).
SELECT array_agg(sandbox_id::text), array_agg(routing_domain::text)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
  AND released_at IS NULL
