-- (sandbox, routing domain) of every Daytona lease bound to a sandbox, the
-- open ones and the released ones apart, in one scan, for the inspection when
-- the first release pass read no leases (the table is small next to the
-- listing; else lease_identities_open.sql and released_lease_identities.sql).
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(sandbox_id::text, '') FILTER (WHERE released_at IS NULL), array_agg(octet_length(sandbox_id::text)) FILTER (WHERE released_at IS NULL),
       string_agg(routing_domain::text, '') FILTER (WHERE released_at IS NULL), array_agg(octet_length(routing_domain::text)) FILTER (WHERE released_at IS NULL),
       string_agg(sandbox_id::text, '') FILTER (WHERE released_at IS NOT NULL), array_agg(octet_length(sandbox_id::text)) FILTER (WHERE released_at IS NOT NULL),
       string_agg(routing_domain::text, '') FILTER (WHERE released_at IS NOT NULL), array_agg(octet_length(routing_domain::text)) FILTER (WHERE released_at IS NOT NULL)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
