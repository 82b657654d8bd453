-- The operation labels of the reserved Daytona creates of environment $1 that still
-- hold an open capacity lease: the creates an inventory item may recover by
-- its label. One element per create (a label repeats when several creates
-- carry it); Rust pairs them with the items, so the inventory is never
-- re-read per item. The lease is looked up per create by primary key (a
-- subquery, not a join: reserved creates are few, and a join would hash the
-- whole lease table for them).
SELECT coalesce(array_agg(operation.provider_operation_token::text), '{}')
FROM @ledger@.runtime_sandbox_operations AS operation
WHERE operation.provider = 'daytona'
  AND operation.environment @environment_eq@ $1
  AND operation.state = 'reserved'
  AND operation.provider_operation_token IS NOT NULL
  AND (SELECT lease.released_at IS NULL
       FROM @ledger@.runtime_sandbox_capacity_leases AS lease
       WHERE lease.lease_id = operation.operation_key)
