-- A dry run's first release pass: how many of the leases $1 (found from the
-- rows the run read) release_terminal_capacity.sql would release, by the
-- same rule on the current rows, read only (no row lock).
SELECT count(*)
FROM @ledger@.runtime_sandbox_capacity_leases AS lease
WHERE lease.lease_id = ANY ($1::text[])
  AND lease.provider COLLATE "C" = 'daytona'
  AND CASE WHEN lease.released_at IS NULL THEN true END
  AND (SELECT true
       FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
       WHERE cleanup.provider = 'daytona'
         AND cleanup.sandbox_id COLLATE "C" = lease.sandbox_id
         AND cleanup.sandbox_id = lease.sandbox_id
         AND cleanup.routing_domain IS NOT DISTINCT FROM lease.routing_domain
         AND cleanup.run_id = lease.run_id
         AND cleanup.status = 'deleted'
         AND cleanup.deleted_at IS NOT NULL
       LIMIT 1)
