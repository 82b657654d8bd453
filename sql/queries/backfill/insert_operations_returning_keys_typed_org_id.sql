-- insert_operations_returning_keys.sql for a ledger whose operations' org_id is of another type than text
-- (the type of runs.org_id, e.g. uuid, which the application copies from runs):
-- the org id goes in through that type's input, as a literal would.
-- The insert is a CTE read by a SELECT: Citus counts the rows of an INSERT ... RETURNING it routes as the
-- rows it sent (SPI then fails its tuple-count check); the SELECT counts what came back.
WITH inserted AS (
    INSERT INTO @ledger@.runtime_sandbox_operations (
        operation_key, provider, run_id, attempt, org_id, environment,
        sandbox_id, routing_domain, state, provider_created_at
    )
    SELECT winner.operation_key, winner.provider, winner.run_id, winner.attempt, (pg_catalog.json_populate_record(NULL::@ledger@.runtime_sandbox_operations,
           pg_catalog.json_build_object('org_id', winner.org_id))).org_id, winner.environment,
           winner.sandbox_id, winner.routing_domain, 'live'::@ledger@.runtime_sandbox_operation_state, winner.updated_at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[], $8::text[],
                $9::timestamptz[])
         AS winner(operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, updated_at)
    ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
    RETURNING operation_key::text AS operation_key
)
SELECT operation_key FROM inserted
