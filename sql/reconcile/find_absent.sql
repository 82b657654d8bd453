-- Live production operations the inventory ($1 sandbox ids, $2 routing
-- domains) does not list, without a deleted cleanup row, recorded at or before
-- the inventory was captured ($3) and older than the minimum age ($4): a
-- point-in-time observation never classifies a newer resource as absent.
-- Oldest first, at most $5 (batch size + 1, to tell whether more remain).
SELECT operation.sandbox_id, operation.run_id, operation.attempt,
       operation.environment, operation.routing_domain
FROM @ledger@.runtime_sandbox_operations AS operation
WHERE operation.provider = 'daytona'
  AND operation.environment = 'production'
  AND operation.state = 'live'
  AND NOT EXISTS (
      SELECT 1
      FROM unnest($1::text[], $2::text[]) AS item(sandbox_id, routing_domain)
      WHERE item.sandbox_id = operation.sandbox_id
        AND item.routing_domain IS NOT DISTINCT FROM operation.routing_domain
  )
  AND NOT EXISTS (
      SELECT 1
      FROM @ledger@.sandbox_cleanup_jobs_v2 AS existing
      WHERE existing.provider = 'daytona'
        AND existing.sandbox_id = operation.sandbox_id
        AND existing.routing_domain IS NOT DISTINCT FROM operation.routing_domain
        AND existing.status = 'deleted'
  )
  AND operation.provider_created_at <= $3
  AND operation.provider_created_at <= clock_timestamp() - $4
ORDER BY operation.provider_created_at, operation.operation_key
LIMIT $5
