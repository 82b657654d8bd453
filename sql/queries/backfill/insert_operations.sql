-- Insert a page's winners (the first resource of each sandbox identity in the
-- page, in identity order; one array per column) as live operations, as the
-- application inserts them: an identity that has an operation already is left
-- as it is. The orchestrator counts the rows; the single-page functions use
-- insert_operations_returning_keys.sql to report which resources inserted.
INSERT INTO @ledger@.runtime_sandbox_operations (
    operation_key, provider, run_id, attempt, org_id, environment,
    sandbox_id, routing_domain, state, provider_created_at
)
SELECT winner.operation_key, winner.provider, winner.run_id, winner.attempt, winner.org_id, winner.environment,
       winner.sandbox_id, winner.routing_domain, 'live'::@ledger@.runtime_sandbox_operation_state, winner.updated_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::timestamptz[])
     AS winner(operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, updated_at)
ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
