-- Complete the absent operations found by absent_*.sql ($1 sandbox ids,
-- $2 run ids, $3 attempts, $4 environments, $5 routing domains) as
-- provider-confirmed-absent. A cleanup row is inserted as deleted, or an
-- existing one moved to deleted only while pending and unowned: a cleanup
-- worker's lease and fencing state is never erased. Each changed row gets one
-- audit event (in the order of the candidates), its live operation becomes
-- deleted and its open leases (same run) are released. History is never
-- deleted. The operation is found by its whole identity key (routing_domain_key
-- too): a unique index matched on every column is a one-row probe to any
-- planner, statistics or not.
--
-- No cleanup row is locked unless it is changed (an ON CONFLICT DO UPDATE
-- would lock every conflicting row before its WHERE leaves a worker's row
-- alone, and deadlock with a worker finishing two of them in one
-- transaction): every candidate is offered to the insert with DO NOTHING
-- (identity values are drawn as the application's upsert draws them), then
-- each candidate's existing row, if pending and unowned, is locked by the
-- probe that finds it (the identity key: a row at most), skipping one another
-- transaction holds (it is left to that transaction, as a worker's row is;
-- SKIP LOCKED never waits, so the order of the locks cannot deadlock), and
-- re-checked as it is updated, by key. (Locked after joining the candidates'
-- probes with the table, a never-analyzed 8k ledger took the pending unowned
-- rows for a row or two and rescanned the probes once per pending row, 880 x
-- 160.) `changed` reads the insert
-- before the update, so the only wait (on a transaction writing a candidate's
-- row, to know whether the insert conflicts) comes before any row is locked.
--
-- Every table is reached from the candidates by a probe (a LATERAL keyed on
-- the row's identity: the unique identity key of cleanups and operations, the
-- open-leases index for leases; OFFSET 0 so it stays a probe), and the rows to update are
-- then taken by key from an array (`= ANY (ARRAY(...))`). `changed` is a join
-- of CTEs whose size no planner can estimate (it guesses a row or two): joined
-- to a table directly, it let a never-analyzed ledger walk the live
-- operations and open leases by provider and scan `changed` once per row
-- (8,696 x 223 rows at 10k sandboxes, 0.9 s). The updates' own conditions
-- (`state = 'live'`, `released_at IS NULL`) are wrapped in a CASE so that no
-- partial index matches them: without statistics a planner believes the
-- live-operations and open-leases indexes small and ANDs a walk of each, every
-- live operation and open lease, with the keys' bitmap (seen at 32k sandboxes:
-- 28k and 33k index entries for 500 keys).
-- $6: the statement's clock (clock_timestamp() as it starts, from the shell): a parameter rather
-- than a volatile call, so Citus can route the statement to the ledger's shard.
WITH candidates AS (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[])
             WITH ORDINALITY AS item(sandbox_id, run_id, attempt, environment, routing_domain, position)
), inserted AS (
    INSERT INTO @ledger@.sandbox_cleanup_jobs_v2 AS cleanup (
        provider, sandbox_id, run_id, attempt, environment, routing_domain,
        status, deleted_at, available_at, updated_at, last_error
    )
    SELECT 'daytona', sandbox_id, run_id, attempt, environment, routing_domain,
           'deleted', $6::timestamptz, $6::timestamptz, $6::timestamptz,
           'reconciled_provider_confirmed_absent'
    FROM candidates
    ORDER BY position
    ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
    RETURNING cleanup.sandbox_id, cleanup.routing_domain_key
), unowned AS (
    SELECT existing.id, candidate.position
    FROM candidates AS candidate
    CROSS JOIN LATERAL (
        SELECT existing.id
        FROM @ledger@.sandbox_cleanup_jobs_v2 AS existing
        WHERE existing.provider = 'daytona'
          AND existing.sandbox_id = candidate.sandbox_id
          AND existing.routing_domain_key = coalesce(candidate.routing_domain, '')
          AND existing.status = 'pending'
          AND existing.lease_owner IS NULL
        FOR UPDATE SKIP LOCKED
    ) AS existing
), updated AS (
    UPDATE @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
    SET status = 'deleted',
        deleted_at = $6::timestamptz,
        lease_owner = NULL,
        lease_expires_at = NULL,
        updated_at = $6::timestamptz,
        last_error = 'reconciled_provider_confirmed_absent'
    WHERE cleanup.id = ANY (ARRAY(SELECT id FROM unowned))
      AND CASE WHEN cleanup.status = 'pending' AND cleanup.lease_owner IS NULL THEN true END
    RETURNING cleanup.id, cleanup.sandbox_id, cleanup.routing_domain, cleanup.run_id, cleanup.attempt
), changed AS (
    SELECT candidate.position, candidate.sandbox_id, candidate.routing_domain, candidate.run_id, candidate.attempt
    FROM inserted
    JOIN candidates AS candidate
      ON candidate.sandbox_id = inserted.sandbox_id
     AND coalesce(candidate.routing_domain, '') = inserted.routing_domain_key
    UNION ALL
    SELECT unowned.position, updated.sandbox_id, updated.routing_domain, updated.run_id, updated.attempt
    FROM updated
    JOIN unowned ON unowned.id = updated.id
), events AS (
    INSERT INTO @ledger@.sandbox_cleanup_events_v2 (
        provider, sandbox_id, routing_domain, run_id, attempt,
        cleanup_attempt, lease_owner, event_type, details_json
    )
    SELECT 'daytona', sandbox_id, routing_domain, run_id, attempt,
           0, NULL, 'reconciled_provider_confirmed_absent',
           jsonb_build_object('source', 'runtime-sandbox-ledger-reconciliation')
    FROM changed
    ORDER BY position
), operation_deleted AS (
    UPDATE @ledger@.runtime_sandbox_operations AS operation
    SET state = 'deleted',
        delete_confirmed_at = coalesce(operation.delete_confirmed_at, $6::timestamptz),
        updated_at = $6::timestamptz
    WHERE operation.operation_key = ANY (ARRAY(
              SELECT live.operation_key
              FROM changed
              CROSS JOIN LATERAL (
                  SELECT live.operation_key
                  FROM @ledger@.runtime_sandbox_operations AS live
                  WHERE live.provider = 'daytona'
                    AND live.sandbox_id = changed.sandbox_id
                    AND live.routing_domain_key = coalesce(changed.routing_domain, '')
                    AND live.routing_domain IS NOT DISTINCT FROM changed.routing_domain
                  OFFSET 0
              ) AS live))
      AND CASE WHEN operation.state = 'live' THEN true END
), released_leases AS (
    UPDATE @ledger@.runtime_sandbox_capacity_leases AS lease
    SET released_at = $6::timestamptz
    WHERE lease.lease_id = ANY (ARRAY(
              SELECT open_lease.lease_id
              FROM changed
              CROSS JOIN LATERAL (
                  SELECT open_lease.lease_id
                  FROM @ledger@.runtime_sandbox_capacity_leases AS open_lease
                  WHERE open_lease.provider = 'daytona'
                    AND open_lease.sandbox_id = changed.sandbox_id
                    AND open_lease.released_at IS NULL
                    AND open_lease.run_id = changed.run_id
                    AND open_lease.routing_domain IS NOT DISTINCT FROM changed.routing_domain
                  OFFSET 0
              ) AS open_lease))
      AND CASE WHEN lease.released_at IS NULL THEN true END
)
SELECT count(*) FROM changed
