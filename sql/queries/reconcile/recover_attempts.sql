-- Recovery, step 2: append the late daytona_sandbox fact of each promoted
-- operation ($1 keys, $2 runs, $3 attempts, $4 environments, $5 sandboxes,
-- $6 routing domains) to its attempt's resource_json (NULL becomes [fact], an
-- array is appended to, anything else becomes [old, fact]). Explicitly late:
-- this path records the provider fact, it never re-opens execution. Several
-- recovered operations of one attempt all get their fact, in operation-key
-- order. Returns the attempts written.
-- $7: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH facts AS (
    SELECT promoted.run_id, promoted.attempt,
           jsonb_agg(jsonb_build_object(
               'kind', 'daytona_sandbox',
               'sandboxId', promoted.sandbox_id,
               'runtimeEnvironment', promoted.environment,
               'daytonaOrganizationId', promoted.routing_domain,
               'billingStartedAt', extract(epoch FROM $7::timestamptz) * 1000,
               'sandboxCapacityLeaseId', promoted.operation_key,
               'lateAcquired', true
           ) ORDER BY promoted.operation_key) AS resources
    FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[])
             AS promoted(operation_key, run_id, attempt, environment, sandbox_id, routing_domain)
    GROUP BY promoted.run_id, promoted.attempt
)
UPDATE @ledger@.attempts AS attempt
SET resource_json = CASE
        WHEN attempt.resource_json IS NULL THEN facts.resources
        WHEN jsonb_typeof(attempt.resource_json::jsonb) = 'array' THEN attempt.resource_json::jsonb || facts.resources
        ELSE ('[]'::jsonb || attempt.resource_json::jsonb) || facts.resources  -- [old]: jsonb_build_array is not IMMUTABLE (Citus)
    END,
    updated_at = $7::timestamptz
FROM facts
WHERE attempt.run_id = facts.run_id
  AND attempt.attempt = facts.attempt
RETURNING attempt.run_id::text, attempt.attempt::integer
