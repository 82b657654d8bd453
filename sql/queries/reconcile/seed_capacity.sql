-- Seed a soft-capacity lease for the matched sandboxes the inspection found
-- without a Daytona lease or a terminal cleanup for their identity: $1 their
-- operation keys (the lease ids), each once; the lease takes the operation's
-- org, run and identity. An existing lease row with the same id is rebound
-- only while unreleased; nothing is seeded over a terminal cleanup of the
-- same run. (The application sends one row per matched item, so an identity
-- listed under two labels makes its ON CONFLICT DO UPDATE touch one lease
-- twice, an error; here that lease is seeded once.) The terminal check is a
-- probe per row whatever the planner believes (a scalar subquery is never
-- made a join); both equalities on sandbox_id let either the bytewise index
-- or the ledger's own serve it.
--
-- No lease is locked unless it is changed. The application's ON CONFLICT
-- (lease_id) DO UPDATE ... WHERE released_at IS NULL locks a conflicting
-- lease before its WHERE leaves a released one alone (and keeps it locked to
-- the end of the run: a worker holding it while waiting for a row the run
-- holds deadlocks with it). Here a candidate whose id no lease has (in the
-- statement's snapshot) is inserted with DO NOTHING (it locks nothing, and
-- meets no row a worker is writing; only a lease of that id made since the
-- snapshot makes it wait, to learn whether it conflicts), then each candidate's existing open
-- lease is locked by the probe that finds it (its primary key), skipping one
-- another transaction holds (left to it; SKIP LOCKED never waits, so the
-- order of the locks cannot deadlock), and re-bound by key. The insert's
-- rows are not in the statement's snapshot, so nothing is both inserted and
-- re-bound.
-- Whether a candidate already has a lease is read with the candidates (one
-- primary-key probe each), not in the insert's own WHERE: Citus 13 turns a
-- sub-select there into an empty `( IS NOT NULL)` filter on a single-shard
-- table (a syntax error on the worker). Only those candidates are re-bound:
-- the same rows the snapshot shows, and on Citus, which runs each
-- data-modifying CTE as a statement of its own, not the rows just inserted.
-- $2: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH candidates AS (
    SELECT item.operation_key, item.org_id, item.run_id, item.sandbox_id, item.routing_domain,
           (SELECT true FROM @ledger@.runtime_sandbox_capacity_leases AS existing
            WHERE existing.lease_id = item.operation_key) IS NOT NULL AS leased
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
), inserted AS (
    INSERT INTO @ledger@.runtime_sandbox_capacity_leases AS lease (
        lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at
    )
    SELECT candidate.operation_key, candidate.org_id, candidate.run_id, 'daytona', candidate.sandbox_id,
           candidate.routing_domain, $2::timestamptz, NULL
    FROM candidates AS candidate
    WHERE NOT candidate.leased
    ON CONFLICT (lease_id) DO NOTHING
    RETURNING lease.lease_id
), held AS (
    SELECT candidate.*
    FROM candidates AS candidate
    CROSS JOIN LATERAL (
        SELECT existing.lease_id
        FROM @ledger@.runtime_sandbox_capacity_leases AS existing
        WHERE existing.lease_id = candidate.operation_key
          AND existing.released_at IS NULL
        FOR UPDATE SKIP LOCKED
    ) AS locked
    WHERE candidate.leased
), rebound AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET org_id = held.org_id,
        run_id = held.run_id,
        provider = 'daytona',
        sandbox_id = held.sandbox_id,
        routing_domain = held.routing_domain,
        expires_at = $2::timestamptz
    FROM held
    WHERE lease.lease_id = held.operation_key
      AND lease.lease_id = ANY (ARRAY(SELECT operation_key FROM held))
      AND CASE WHEN lease.released_at IS NULL THEN true END
    RETURNING lease.lease_id
)
SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM rebound)
