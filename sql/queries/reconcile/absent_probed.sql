-- Absent candidates among the live operations the inventory does not list
-- ($1: their operation keys, found by Rust): of the environment reconciled ($6), without a deleted
-- cleanup row, recorded at or before the capture ($2) and older than the
-- minimum age ($3; a point-in-time observation never classifies a newer
-- resource as absent). The filters are the application's, re-checked here
-- on the current rows; every candidate is counted (the mass-absence valve
-- weighs them all), the oldest $4 (= batch size + 1, to know whether more
-- follow) are returned, then by operation key. The cleanup and snapshot checks
-- are a probe per candidate whatever the planner believes (scalar
-- subqueries are never made joins).
-- Few keys: one primary-key probe each (LIMIT keeps the subquery from being
-- flattened into a join the planner would answer with a scan of the whole
-- table; the key is unique anyway).
-- $5: the older snapshots reconcile_daytona_latest confirms absence with (no
-- snapshot among them may list the sandbox either: Daytona's list is
-- eventually consistent, one missing listing is not proof); empty for
-- reconcile_daytona, and then the check is planned away (the parameter is a
-- constant to the planner).
WITH candidates AS MATERIALIZED (
    SELECT operation.sandbox_id, operation.run_id, operation.attempt, operation.environment,
           operation.routing_domain, operation.provider_created_at, operation.operation_key
    FROM unnest($1::text[]) AS lone(operation_key)
    CROSS JOIN LATERAL (
        SELECT * FROM @ledger@.runtime_sandbox_operations AS candidate
        WHERE candidate.operation_key = lone.operation_key
        LIMIT 1
    ) AS operation
    WHERE operation.provider = 'daytona'
      AND operation.environment @environment_eq@ $6
      AND operation.state = 'live'
      AND (SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS existing
           WHERE existing.provider = 'daytona'
             AND existing.sandbox_id = operation.sandbox_id
             AND existing.routing_domain IS NOT DISTINCT FROM operation.routing_domain
             AND existing.status = 'deleted'
           LIMIT 1) IS NULL
      AND operation.provider_created_at <= $2
      AND operation.provider_created_at <= clock_timestamp() - $3
      AND (cardinality($5::bigint[]) = 0
           OR (SELECT 1 FROM @ledger@.provider_inventory_items AS listed
               WHERE listed.snapshot_id = ANY ($5::bigint[])
                 AND listed.sandbox_id = operation.sandbox_id
                 AND listed.routing_domain IS NOT DISTINCT FROM operation.routing_domain
               LIMIT 1) IS NULL)
), batch AS (
    SELECT * FROM candidates
    ORDER BY provider_created_at, operation_key
    LIMIT $4
)
SELECT (SELECT count(*) FROM candidates),
       count(*),
       array_agg(sandbox_id::text ORDER BY provider_created_at, operation_key),
       array_agg(run_id::text ORDER BY provider_created_at, operation_key),
       array_agg(attempt::integer ORDER BY provider_created_at, operation_key),
       array_agg(environment::text ORDER BY provider_created_at, operation_key),
       array_agg(routing_domain::text ORDER BY provider_created_at, operation_key)
FROM batch
