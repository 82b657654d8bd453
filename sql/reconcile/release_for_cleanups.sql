-- The first release pass when history makes deleted cleanups many: the ones
-- found for the open leases' sandboxes ($1 sandboxes, $2 routing domains,
-- $3 runs) each probe the open leases of their sandbox; those of the same
-- routing domain and run are released, the cleanup re-checked on the
-- current rows. Idempotent: only unreleased leases are touched.
WITH terminal AS (
    SELECT lease.lease_id
    FROM unnest($1::text[], $2::text[], $3::text[]) AS cleanup(sandbox_id, routing_domain, run_id)
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
), released AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET released_at = clock_timestamp()
    WHERE lease.lease_id = ANY (ARRAY(SELECT lease_id FROM terminal))
      AND lease.released_at IS NULL
      AND (SELECT true
           FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
           WHERE cleanup.provider = 'daytona'
             AND cleanup.sandbox_id = lease.sandbox_id
             AND cleanup.routing_domain IS NOT DISTINCT FROM lease.routing_domain
             AND cleanup.run_id = lease.run_id
             AND cleanup.status = 'deleted'
             AND cleanup.deleted_at IS NOT NULL
           LIMIT 1)
    RETURNING lease.lease_id
)
SELECT count(*) FROM released
