-- (sandbox, routing domain) of the leases $1 recovery just bound, as they are now.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(lease.sandbox_id::text, ''), array_agg(octet_length(lease.sandbox_id::text)),
       string_agg(lease.routing_domain::text, ''), array_agg(octet_length(lease.routing_domain::text))
FROM unnest($1::text[]) AS probe(lease_id)
CROSS JOIN LATERAL (
    SELECT lease.sandbox_id, lease.routing_domain
    FROM @ledger@.runtime_sandbox_capacity_leases AS lease
    WHERE lease.lease_id = probe.lease_id
      AND lease.provider = 'daytona'
      AND lease.sandbox_id IS NOT NULL
    LIMIT 1
) AS lease
