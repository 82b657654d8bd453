-- Recovery, step 3: bind the lease of each promoted operation whose attempt
-- was written ($1 keys = lease ids, $2 sandboxes, $3 routing domains), while
-- it is open. Returns the leases bound with where they were stored (block,
-- item): the application writes the cleanup rows of step 4 in the order its
-- statement scans these leases, and so does the shell. `released_at IS NULL`
-- is wrapped in a CASE so that the leases are found by key, never through
-- the open-leases index (release_terminal_capacity.sql says why).
UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
SET provider = 'daytona',
    sandbox_id = promoted.sandbox_id,
    routing_domain = promoted.routing_domain
FROM unnest($1::text[], $2::text[], $3::text[]) AS promoted(operation_key, sandbox_id, routing_domain)
CROSS JOIN LATERAL (
    -- Where the lease is stored before the update, found by its key (one probe per lease, never a scan).
    SELECT target.ctid
    FROM @ledger@.runtime_sandbox_capacity_leases AS target
    WHERE target.lease_id = promoted.operation_key
      AND CASE WHEN target.released_at IS NULL THEN true END
    OFFSET 0
) AS target
WHERE lease.lease_id = promoted.operation_key
  AND CASE WHEN lease.released_at IS NULL THEN true END
RETURNING lease.lease_id::text, (target.ctid::text::point)[0] AS block, (target.ctid::text::point)[1] AS item
