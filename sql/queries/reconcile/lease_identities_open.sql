-- (sandbox, routing domain) of the open Daytona leases bound to a sandbox,
-- the current fleet's, through a bitmap of their partial index (the table is
-- large next to the listing; the shell turns off whole-table scans,
-- settings.sql).
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(sandbox_id::text, ''), array_agg(octet_length(sandbox_id::text)),
       string_agg(routing_domain::text, ''), array_agg(octet_length(routing_domain::text))
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
  AND released_at IS NULL
