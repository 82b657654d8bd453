-- (sandbox, routing domain) of every Daytona lease bound to a sandbox (the
-- table is small next to the listing; else lease_identities_open.sql).
SELECT array_agg(sandbox_id::text), array_agg(routing_domain::text)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
