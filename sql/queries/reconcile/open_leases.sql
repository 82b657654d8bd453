-- The open Daytona leases bound to a sandbox (lease id, sandbox, routing
-- domain, run), through a bitmap of the partial index of open leases (the
-- shell turns off whole-table scans, settings.sql): the current fleet's,
-- whatever the history.
SELECT array_agg(lease_id::text), array_agg(sandbox_id::text), array_agg(routing_domain::text), array_agg(run_id::text)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
  AND released_at IS NULL
