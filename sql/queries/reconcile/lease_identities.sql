-- (sandbox, routing domain, open) of every Daytona lease bound to a sandbox
-- (the table is small next to the listing; else lease_identities_open.sql
-- and released_lease_identities.sql).
SELECT array_agg(sandbox_id::text), array_agg(routing_domain::text), array_agg((released_at IS NULL)::text)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
