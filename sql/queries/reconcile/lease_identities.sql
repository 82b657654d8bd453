-- Every Daytona lease bound to a sandbox, in one scan: the open ones (lease
-- id, sandbox, routing domain), then the released ones apart (sandbox,
-- routing domain), while the table is small next to the listing (else
-- open_leases.sql, lease_identities_open.sql and
-- released_lease_identities.sql). $1: whether the open leases' ids are read
-- (the first release pass reads them, and the inspection reuses its read; an
-- inspection reading for itself needs no ids, and they cost it a fifth).
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(lease_id::text, '') FILTER (WHERE released_at IS NULL AND $1), array_agg(octet_length(lease_id::text)) FILTER (WHERE released_at IS NULL AND $1),
       string_agg(sandbox_id::text, '') FILTER (WHERE released_at IS NULL), array_agg(octet_length(sandbox_id::text)) FILTER (WHERE released_at IS NULL),
       string_agg(routing_domain::text, '') FILTER (WHERE released_at IS NULL), array_agg(octet_length(routing_domain::text)) FILTER (WHERE released_at IS NULL),
       string_agg(sandbox_id::text, '') FILTER (WHERE released_at IS NOT NULL), array_agg(octet_length(sandbox_id::text)) FILTER (WHERE released_at IS NOT NULL),
       string_agg(routing_domain::text, '') FILTER (WHERE released_at IS NOT NULL), array_agg(octet_length(routing_domain::text)) FILTER (WHERE released_at IS NOT NULL)
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
