-- Recover reserved creates whose response was lost after Daytona accepted
-- them, for more than a handful of items: step 1 of 4 (the shell runs them in
-- order, handing each the rows the previous returned: every join is then
-- against arrays of known size, never between statement results the planner
-- cannot estimate; recover_reserved.sql, one statement, joins its own CTEs,
-- which the planner, guessing one row each, nested-loops: quadratic). $1..$3 hold only
-- items whose operation label is unique in the inventory (decided once, in
-- Rust). Each item probes the environment's reserved Daytona creates carrying
-- its label and holding an open lease (lease id = operation key); those are
-- promoted to deleting with the item's identity. Returns them, with the
-- item's position in the inventory (the later steps keep that order).
-- $4: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
UPDATE @ledger@.runtime_sandbox_operations AS operation
SET sandbox_id = found.sandbox_id,
    routing_domain = found.routing_domain,
    state = 'deleting',
    provider_created_at = $4::timestamptz,
    updated_at = $4::timestamptz
FROM (
    SELECT item.sandbox_id, item.routing_domain, item.position, reserved.operation_key
    FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS item(sandbox_id, routing_domain, label, position)
    CROSS JOIN LATERAL (
        SELECT candidate.operation_key
        FROM @ledger@.runtime_sandbox_operations AS candidate
        WHERE candidate.provider_operation_token = item.label
          AND candidate.provider = 'daytona'
          AND candidate.environment @environment_eq@ $5 /* the environment reconciled */
          AND candidate.state = 'reserved'
          AND (SELECT lease.released_at IS NULL
               FROM @ledger@.runtime_sandbox_capacity_leases AS lease
               WHERE lease.lease_id = candidate.operation_key)
        OFFSET 0
    ) AS reserved
) AS found
WHERE operation.operation_key = found.operation_key
RETURNING operation.operation_key::text, operation.run_id::text, operation.attempt::integer,
          operation.environment::text, operation.sandbox_id::text, operation.routing_domain::text, found.position
