-- Seed a soft-capacity lease (id = operation key) for every matched live
-- sandbox ($1 sandbox ids, $2 routing domains) that has no Daytona lease and
-- no durably deleted cleanup for its identity. An existing lease row with the
-- same id is rebound only while unreleased; nothing is seeded over a terminal
-- cleanup of the same run. The application sends one row per matched item,
-- so an identity listed under two operation labels would make its
-- ON CONFLICT DO UPDATE touch one lease twice (an error); one row per lease
-- here.
WITH live AS (
    SELECT operation.operation_key, operation.org_id, operation.run_id,
           operation.sandbox_id, operation.routing_domain
    FROM unnest($1::text[], $2::text[]) AS item(sandbox_id, routing_domain)
    JOIN @ledger@.runtime_sandbox_operations AS operation
      ON operation.sandbox_id = item.sandbox_id
     AND operation.routing_domain_key = coalesce(item.routing_domain, '')
     AND operation.routing_domain IS NOT DISTINCT FROM item.routing_domain
    WHERE operation.provider = 'daytona'
      AND operation.environment = 'production'
      AND operation.state IN ('live', 'deleting')
), to_seed AS (
    SELECT DISTINCT ON (live.operation_key) live.*
    FROM live
    WHERE NOT EXISTS (
              SELECT 1 FROM @ledger@.runtime_sandbox_capacity_leases AS lease
              WHERE lease.provider = 'daytona'
                AND lease.sandbox_id = live.sandbox_id
                AND coalesce(lease.routing_domain, '') = coalesce(live.routing_domain, ''))
      AND NOT EXISTS (
              SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
              WHERE cleanup.provider = 'daytona'
                AND cleanup.status = 'deleted'
                AND cleanup.deleted_at IS NOT NULL
                AND cleanup.sandbox_id = live.sandbox_id
                AND coalesce(cleanup.routing_domain, '') = coalesce(live.routing_domain, ''))
    ORDER BY live.operation_key
), seeded AS (
    INSERT INTO @ledger@.runtime_sandbox_capacity_leases AS lease (
        lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at
    )
    SELECT to_seed.operation_key, to_seed.org_id, to_seed.run_id, 'daytona',
           to_seed.sandbox_id, to_seed.routing_domain, clock_timestamp(), NULL
    FROM to_seed
    WHERE NOT EXISTS (
        SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS terminal
        WHERE terminal.provider = 'daytona'
          AND terminal.sandbox_id = to_seed.sandbox_id
          AND terminal.run_id = to_seed.run_id
          AND terminal.routing_domain IS NOT DISTINCT FROM to_seed.routing_domain
          AND terminal.status = 'deleted'
          AND terminal.deleted_at IS NOT NULL
    )
    ON CONFLICT (lease_id) DO UPDATE
    SET org_id = EXCLUDED.org_id,
        run_id = EXCLUDED.run_id,
        provider = EXCLUDED.provider,
        sandbox_id = EXCLUDED.sandbox_id,
        routing_domain = EXCLUDED.routing_domain,
        expires_at = EXCLUDED.expires_at
    WHERE lease.released_at IS NULL
      AND NOT EXISTS (
          SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS terminal
          WHERE terminal.provider = 'daytona'
            AND terminal.sandbox_id = EXCLUDED.sandbox_id
            AND terminal.run_id = EXCLUDED.run_id
            AND terminal.routing_domain IS NOT DISTINCT FROM EXCLUDED.routing_domain
            AND terminal.status = 'deleted'
            AND terminal.deleted_at IS NOT NULL
      )
    RETURNING lease.lease_id
)
SELECT count(*) FROM seeded
