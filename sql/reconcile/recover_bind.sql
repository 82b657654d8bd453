-- Recovery, step 3: bind the lease of each promoted operation whose attempt
-- was written ($1 keys = lease ids, $2 sandboxes, $3 routing domains), while
-- it is open. Returns the leases bound.
UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
SET provider = 'daytona',
    sandbox_id = promoted.sandbox_id,
    routing_domain = promoted.routing_domain
FROM unnest($1::text[], $2::text[], $3::text[]) AS promoted(operation_key, sandbox_id, routing_domain)
WHERE lease.lease_id = promoted.operation_key
  AND lease.released_at IS NULL
RETURNING lease.lease_id
