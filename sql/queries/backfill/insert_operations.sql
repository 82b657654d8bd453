-- Insert a page's winners (the first resource of each sandbox identity in the
-- page, in identity order; one array per column) as live operations; existing
-- operations are never changed. @on_conflict@ is `ON CONFLICT (provider,
-- sandbox_id, routing_domain_key) DO NOTHING`, the application's insert, or
-- nothing for the shell's optimistic attempt in a subtransaction (a unique
-- violation rolls it back and the page is inserted with ON CONFLICT instead).
-- @returning@ is `RETURNING operation_key` when the caller reports which
-- resources inserted, else nothing (the shell counts the rows).
INSERT INTO @ledger@.runtime_sandbox_operations (
    operation_key, provider, run_id, attempt, org_id, environment,
    sandbox_id, routing_domain, state, provider_created_at
)
SELECT winner.operation_key, winner.provider, winner.run_id, winner.attempt, winner.org_id, winner.environment,
       winner.sandbox_id, winner.routing_domain, 'live'::@ledger@.runtime_sandbox_operation_state, winner.updated_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::timestamptz[])
     AS winner(operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, updated_at)
@on_conflict@
@returning@
