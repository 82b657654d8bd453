-- Leases whose sandbox cleanup is durably deleted (same run) are released,
-- when durably deleted cleanups are few next to the listing (the shell
-- estimates it): each one probes the open leases of its sandbox (OFFSET 0
-- keeps the lateral from becoming a join the planner might answer with a
-- pass over every lease). Idempotent: only unreleased leases are touched.
-- The update finds them by key only (its `released_at IS NULL` in a CASE:
-- release_terminal_capacity.sql says why; a never-analyzed 20k ledger ANDed
-- 800 keys with a walk of all 20,200 open-lease index entries).
-- $1: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH terminal AS (
    SELECT lease.lease_id
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
), released AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET released_at = $1::timestamptz
    WHERE lease.lease_id = ANY (ARRAY(SELECT lease_id FROM terminal))
      AND CASE WHEN lease.released_at IS NULL THEN true END
    RETURNING lease.lease_id
)
SELECT count(*) FROM released
