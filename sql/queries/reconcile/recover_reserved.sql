-- Recover reserved creates whose response was lost after Daytona accepted
-- them, for a handful of items (the shell's RECOVER_IN_ONE_STATEMENT); more
-- take the four steps of recover_promote.sql .. recover_cleanups.sql, the same
-- rules. $1..$3 hold only items whose operation label is unique in the
-- inventory (decided once, in Rust). In one statement, shaped as the
-- application's (its rows come out in the same order): promote the operation
-- to deleting with the provider identity, append the late daytona_sandbox
-- fact to its attempt's resource_json, bind the lease, insert the cleanup row.
-- Returns how many were recovered and the leases bound.
-- $4: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH inventory AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::text[]) AS item(sandbox_id, routing_domain, operation_key)
), promoted AS (
    UPDATE @ledger@.runtime_sandbox_operations AS operation
    SET sandbox_id = inventory.sandbox_id,
        routing_domain = inventory.routing_domain,
        state = 'deleting',
        provider_created_at = $4::timestamptz,
        updated_at = $4::timestamptz
    FROM inventory, @ledger@.runtime_sandbox_capacity_leases AS lease
    WHERE operation.provider_operation_token = inventory.operation_key
      AND operation.provider = 'daytona'
      AND operation.environment @environment_eq@ $5 /* the environment reconciled */
      AND operation.state = 'reserved'
      AND lease.lease_id = operation.operation_key
      AND lease.released_at IS NULL
    RETURNING operation.operation_key, operation.run_id, operation.attempt,
              operation.environment, operation.sandbox_id, operation.routing_domain
), facts AS (
    -- Explicitly late: this path records the provider fact, it never
    -- re-opens execution. Several recovered operations of one attempt all
    -- get their fact, in operation-key order.
    SELECT promoted.run_id, promoted.attempt,
           jsonb_agg(jsonb_build_object(
               'kind', 'daytona_sandbox',
               'sandboxId', promoted.sandbox_id,
               'runtimeEnvironment', promoted.environment,
               'daytonaOrganizationId', promoted.routing_domain,
               'billingStartedAt', extract(epoch FROM $4::timestamptz) * 1000,
               'sandboxCapacityLeaseId', promoted.operation_key,
               'lateAcquired', true
           ) ORDER BY promoted.operation_key) AS resources
    FROM promoted
    GROUP BY promoted.run_id, promoted.attempt
), recorded_attempt AS (
    UPDATE @ledger@.attempts AS attempt
    SET resource_json = CASE
            WHEN attempt.resource_json IS NULL THEN facts.resources
            WHEN jsonb_typeof(attempt.resource_json::jsonb) = 'array' THEN attempt.resource_json::jsonb || facts.resources
            ELSE ('[]'::jsonb || attempt.resource_json::jsonb) || facts.resources  -- [old]: jsonb_build_array is not IMMUTABLE (Citus)
        END,
        updated_at = $4::timestamptz
    FROM facts
    WHERE attempt.run_id = facts.run_id
      AND attempt.attempt = facts.attempt
    RETURNING attempt.run_id, attempt.attempt
), bound AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET provider = 'daytona',
        sandbox_id = promoted.sandbox_id,
        routing_domain = promoted.routing_domain
    FROM promoted
    JOIN recorded_attempt
      ON recorded_attempt.run_id = promoted.run_id
     AND recorded_attempt.attempt = promoted.attempt
    WHERE lease.lease_id = promoted.operation_key
      AND lease.released_at IS NULL
    RETURNING lease.lease_id
), cleanup_inserted AS (
    INSERT INTO @ledger@.sandbox_cleanup_jobs_v2 (
        provider, sandbox_id, run_id, attempt, environment, routing_domain
    )
    SELECT 'daytona', promoted.sandbox_id, promoted.run_id, promoted.attempt,
           promoted.environment, promoted.routing_domain
    FROM promoted
    JOIN bound ON bound.lease_id = promoted.operation_key
    ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
)
SELECT count(*), coalesce(array_agg(bound.lease_id::text), '{}')
FROM promoted
JOIN bound ON bound.lease_id = promoted.operation_key
