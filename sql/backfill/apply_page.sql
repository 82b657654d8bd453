-- Apply one backfill page: insert the first resource of each sandbox identity
-- as a live operation; existing operations are never changed.
WITH @page_resources@,
inserted AS (
    INSERT INTO @ledger@.runtime_sandbox_operations (
        operation_key, provider, run_id, attempt, org_id, environment,
        sandbox_id, routing_domain, state, provider_created_at
    )
    SELECT 'backfill:' || ranked.provider || ':' || ranked.sandbox_id || ':' || ranked.routing_domain_key,
           ranked.provider, ranked.run_id, ranked.attempt, ranked.org_id, ranked.environment,
           ranked.sandbox_id, ranked.routing_domain,
           'live'::@ledger@.runtime_sandbox_operation_state, ranked.updated_at
    FROM ranked
    WHERE ranked.conflict_rank = 1
    ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
    RETURNING provider, sandbox_id, routing_domain_key
), resources AS (
    -- Inserted identities are unique, so this join never repeats a resource.
    SELECT ranked.*, ranked.conflict_rank = 1 AND inserted.provider IS NOT NULL AS would_insert
    FROM ranked
    LEFT JOIN inserted
      ON inserted.provider = ranked.provider
     AND inserted.sandbox_id = ranked.sandbox_id
     AND inserted.routing_domain_key = ranked.routing_domain_key
), @page_summary@
