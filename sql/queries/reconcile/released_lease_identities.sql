-- (sandbox, routing domain) of the released Daytona leases of the sandboxes
-- $1 (distinct), when the table holds too much history to read whole: a
-- probe per sandbox, as deleted_probed.sql.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(lease.sandbox_id::text, ''), array_agg(octet_length(lease.sandbox_id::text)),
       string_agg(lease.routing_domain::text, ''), array_agg(octet_length(lease.routing_domain::text))
FROM unnest($1::text[]) AS probe(sandbox_id)
CROSS JOIN LATERAL (
    SELECT lease.sandbox_id, lease.routing_domain
    FROM @ledger@.runtime_sandbox_capacity_leases AS lease
    WHERE lease.provider = 'daytona'
      AND lease.sandbox_id COLLATE "C" = probe.sandbox_id
      AND lease.sandbox_id = probe.sandbox_id
      AND lease.released_at IS NOT NULL
    OFFSET 0
) AS lease
