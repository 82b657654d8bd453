-- (sandbox, routing domain) of the released Daytona leases of the sandboxes
-- $1 (distinct), as released_lease_identities.sql, when the ledger has the
-- bytewise index install_ledger creates: one index scan with the sandboxes
-- as its array key (deleted_by_key.sql says why the sub-select).
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(lease.sandbox_id::text, ''), array_agg(octet_length(lease.sandbox_id::text)),
       string_agg(lease.routing_domain::text, ''), array_agg(octet_length(lease.routing_domain::text))
FROM @ledger@.runtime_sandbox_capacity_leases AS lease
WHERE lease.provider = 'daytona'
  AND lease.sandbox_id COLLATE "C" = ANY ((SELECT $1::text[])::text[])
  AND lease.released_at IS NOT NULL
