-- Seed a soft-capacity lease for the matched sandboxes the inspection found
-- without a Daytona lease or a terminal cleanup for their identity: $1 their
-- operation keys (the lease ids), each once; the lease takes the operation's
-- org, run and identity. An existing lease row with the same id is rebound
-- only while unreleased; nothing is seeded over a terminal cleanup of the
-- same run. (The application sends one row per matched item, so an identity
-- listed under two labels makes its ON CONFLICT DO UPDATE touch one lease
-- twice, an error; here that lease is seeded once.) The terminal checks are
-- a probe per row whatever the planner believes (scalar subqueries are never
-- made joins); both equalities on sandbox_id let either the bytewise index
-- or the ledger's own serve it.
WITH seeded AS (
    INSERT INTO @ledger@.runtime_sandbox_capacity_leases AS lease (
        lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at
    )
    SELECT item.operation_key, item.org_id, item.run_id, 'daytona',
           item.sandbox_id, item.routing_domain, clock_timestamp(), NULL
    FROM @ledger@.runtime_sandbox_operations AS item
    WHERE item.operation_key = ANY ($1::text[])
      AND (SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS terminal
           WHERE terminal.provider = 'daytona'
             AND terminal.sandbox_id COLLATE "C" = item.sandbox_id
             AND terminal.sandbox_id = item.sandbox_id
             AND terminal.run_id = item.run_id
             AND terminal.routing_domain IS NOT DISTINCT FROM item.routing_domain
             AND terminal.status = 'deleted'
             AND terminal.deleted_at IS NOT NULL
           LIMIT 1) IS NULL
    ON CONFLICT (lease_id) DO UPDATE
    SET org_id = EXCLUDED.org_id,
        run_id = EXCLUDED.run_id,
        provider = EXCLUDED.provider,
        sandbox_id = EXCLUDED.sandbox_id,
        routing_domain = EXCLUDED.routing_domain,
        expires_at = EXCLUDED.expires_at
    WHERE lease.released_at IS NULL
      AND (SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS terminal
           WHERE terminal.provider = 'daytona'
             AND terminal.sandbox_id COLLATE "C" = EXCLUDED.sandbox_id
             AND terminal.sandbox_id = EXCLUDED.sandbox_id
             AND terminal.run_id = EXCLUDED.run_id
             AND terminal.routing_domain IS NOT DISTINCT FROM EXCLUDED.routing_domain
             AND terminal.status = 'deleted'
             AND terminal.deleted_at IS NOT NULL
           LIMIT 1) IS NULL
    RETURNING lease.lease_id
)
SELECT count(*) FROM seeded
