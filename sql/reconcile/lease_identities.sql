-- (sandbox, routing domain) of Daytona leases bound to a sandbox: all of
-- them when the table is small next to the listing, else (the last filter)
-- only the open ones, the current fleet's, through their partial index.
SELECT array_agg(sandbox_id), array_agg(routing_domain)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
  @open@
