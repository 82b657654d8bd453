-- Leases whose sandbox cleanup is durably deleted (same run) are released.
-- Idempotent: only unreleased leases are touched.
WITH released AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET released_at = clock_timestamp()
    FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
    WHERE lease.provider = 'daytona'
      AND lease.released_at IS NULL
      AND cleanup.provider = lease.provider
      AND cleanup.sandbox_id = lease.sandbox_id
      AND cleanup.routing_domain IS NOT DISTINCT FROM lease.routing_domain
      AND cleanup.run_id = lease.run_id
      AND cleanup.status = 'deleted'
      AND cleanup.deleted_at IS NOT NULL
    RETURNING lease.lease_id
)
SELECT count(*) FROM released
