-- Seed a soft-capacity lease for the matched live sandboxes plan.sql found
-- without a Daytona lease or a terminal cleanup for their identity: $1
-- operation keys (the lease ids), $2 org ids, $3 run ids, $4 sandbox ids,
-- $5 routing domains, one row per lease. An existing lease row with the same
-- id is rebound only while unreleased; nothing is seeded over a terminal
-- cleanup of the same run. (The application sends one row per matched item,
-- so an identity listed under two labels makes its ON CONFLICT DO UPDATE
-- touch one lease twice, an error; here that lease is seeded once.)
WITH seeded AS (
    INSERT INTO @ledger@.runtime_sandbox_capacity_leases AS lease (
        lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at
    )
    SELECT item.operation_key, item.org_id, item.run_id, 'daytona',
           item.sandbox_id, item.routing_domain, clock_timestamp(), NULL
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
             AS item(operation_key, org_id, run_id, sandbox_id, routing_domain)
    WHERE NOT EXISTS (
        SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS terminal
        WHERE terminal.provider = 'daytona'
          AND terminal.sandbox_id = item.sandbox_id
          AND terminal.run_id = item.run_id
          AND terminal.routing_domain IS NOT DISTINCT FROM item.routing_domain
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
