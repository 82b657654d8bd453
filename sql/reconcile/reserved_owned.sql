-- Inventory items ($1: their operation labels, in normalized inventory order)
-- that carry the label of a reserved production create holding an open
-- capacity lease. One row per (item, operation) pair, as the application
-- counts them; the ordinals say which items are owned this way.
SELECT count(*),
       coalesce(array_agg(item.ordinality), '{}')
FROM unnest($1::text[]) WITH ORDINALITY AS item(operation_key, ordinality)
JOIN @ledger@.runtime_sandbox_operations AS operation
  ON operation.provider_operation_token = item.operation_key
JOIN @ledger@.runtime_sandbox_capacity_leases AS lease
  ON lease.lease_id = operation.operation_key
WHERE operation.provider = 'daytona'
  AND operation.environment = 'production'
  AND operation.state = 'reserved'
  AND lease.released_at IS NULL
