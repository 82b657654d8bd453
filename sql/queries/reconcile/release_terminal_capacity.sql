-- Release the terminal leases among $1 (the open Daytona leases with a
-- durably deleted cleanup of the same sandbox and routing domain, found from
-- the rows the run read; or the leases recovery bound): those whose cleanup,
-- same sandbox, routing domain and run, is durably deleted, the rule checked
-- here on the current rows.
-- Idempotent: only unreleased leases are touched. The leases are found by
-- their key alone: `provider` is compared bytewise and `released_at IS NULL`
-- is wrapped in a CASE so that neither matches the open-leases index (on
-- (provider, sandbox_id) WHERE released_at IS NULL). Without statistics a
-- planner believes that index small and walks all of it, every open lease,
-- for a few keys (measured at 100k sandboxes: 31 ms against 6 ms by key).
-- $2: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH released AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET released_at = $2::timestamptz
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
    RETURNING lease.lease_id
)
SELECT count(*) FROM released
