-- A dry run's first release pass, when durably deleted cleanups are few:
-- how many leases release_from_cleanups.sql would release (the same rule and
-- probes), read only: a dry run takes no row lock.
SELECT count(DISTINCT lease.lease_id)
FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
CROSS JOIN LATERAL (
    SELECT lease.lease_id
    FROM @ledger@.runtime_sandbox_capacity_leases AS lease
    WHERE lease.provider = 'daytona'
      AND lease.sandbox_id = cleanup.sandbox_id
      AND lease.released_at IS NULL
      AND lease.routing_domain IS NOT DISTINCT FROM cleanup.routing_domain
      AND lease.run_id = cleanup.run_id
    OFFSET 0
) AS lease
WHERE cleanup.provider = 'daytona'
  AND cleanup.status = 'deleted'
  AND cleanup.deleted_at IS NOT NULL
