-- (sandbox, routing domain) of every Daytona lease bound to a sandbox, the
-- open ones and the released ones apart, in one scan (the table is small
-- next to the listing; else lease_identities_open.sql and
-- released_lease_identities.sql).
SELECT array_agg(sandbox_id::text) FILTER (WHERE released_at IS NULL),
       array_agg(routing_domain::text) FILTER (WHERE released_at IS NULL),
       array_agg(sandbox_id::text) FILTER (WHERE released_at IS NOT NULL),
       array_agg(routing_domain::text) FILTER (WHERE released_at IS NOT NULL)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
