-- A dry run's recovery, read only: of the owned items ($1 sandboxes, $2
-- routing domains, $3 labels; unique in the inventory), how many reserved
-- creates of environment $4 an apply would recover (recover_reserved.sql's
-- rules: the create is reserved, carries the label and holds an open lease
-- the first release pass leaves open, and its attempt row exists, else it is
-- promoted but neither bound nor counted), and how many of the leases it
-- would bind its second release pass would release (a durably deleted
-- cleanup of the item's sandbox, routing domain and the lease's run).
-- Shaped as recover_promote.sql: each item probes the reserved creates by
-- label, each create its lease by key (`released_at IS NULL` in a CASE, so
-- that the lease is found by its key, never through the open-leases index:
-- release_terminal_capacity.sql says why), every other check a probe (the
-- cleanups compared bytewise too, so that the bytewise index of durably
-- deleted ones keys the probe: compared only by the column's collation, a
-- planner without statistics walked all of that index once per item).
WITH recovered AS (
    SELECT item.sandbox_id, item.routing_domain, lease.run_id
    FROM unnest($1::text[], $2::text[], $3::text[]) AS item(sandbox_id, routing_domain, label)
    CROSS JOIN LATERAL (
        SELECT candidate.operation_key, candidate.run_id, candidate.attempt
        FROM @ledger@.runtime_sandbox_operations AS candidate
        WHERE candidate.provider_operation_token = item.label
          AND candidate.provider = 'daytona'
          AND candidate.environment @environment_eq@ $4 /* the environment reconciled */
          AND candidate.state = 'reserved'
        OFFSET 0
    ) AS reserved
    CROSS JOIN LATERAL (
        SELECT lease.run_id, lease.provider, lease.sandbox_id, lease.routing_domain
        FROM @ledger@.runtime_sandbox_capacity_leases AS lease
        WHERE lease.lease_id = reserved.operation_key
          AND CASE WHEN lease.released_at IS NULL THEN true END
        OFFSET 0
    ) AS lease
    WHERE EXISTS (SELECT FROM @ledger@.attempts AS attempt
                  WHERE attempt.run_id = reserved.run_id
                    AND attempt.attempt = reserved.attempt)
      -- Not released by the first pass (its rule, on the lease as it is).
      AND NOT (lease.provider IS NOT DISTINCT FROM 'daytona'
               AND lease.sandbox_id IS NOT NULL
               AND EXISTS (SELECT FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
                           WHERE cleanup.provider = 'daytona'
                             AND cleanup.sandbox_id COLLATE "C" = lease.sandbox_id
                             AND cleanup.sandbox_id = lease.sandbox_id
                             AND cleanup.routing_domain IS NOT DISTINCT FROM lease.routing_domain
                             AND cleanup.run_id = lease.run_id
                             AND cleanup.status = 'deleted'
                             AND cleanup.deleted_at IS NOT NULL))
)
SELECT count(*)::bigint,
       count(*) FILTER (WHERE EXISTS (
           SELECT FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
           WHERE cleanup.provider = 'daytona'
             AND cleanup.sandbox_id COLLATE "C" = recovered.sandbox_id
             AND cleanup.sandbox_id = recovered.sandbox_id
             AND cleanup.routing_domain IS NOT DISTINCT FROM recovered.routing_domain
             AND cleanup.run_id = recovered.run_id
             AND cleanup.status = 'deleted'
             AND cleanup.deleted_at IS NOT NULL))::bigint
FROM recovered
