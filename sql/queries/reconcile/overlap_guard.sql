-- One apply per (ledger schema, provider, environment) at a time; a second
-- one skips instead of queueing behind the first. Released at commit or
-- rollback. Two environments' applies may run together: their reads and
-- writes are of disjoint operations, except the release of terminal leases,
-- which is ledger-wide and idempotent (a lease released by one is skipped by
-- the other's UPDATE, which re-checks released_at IS NULL after waiting).
-- 'production' keeps the key of earlier releases. $4: the operations'
-- environment is citext, where environments differing in case are one.
SELECT pg_catalog.pg_try_advisory_xact_lock(
    pg_catalog.hashtext('runtime_sandbox.reconcile:' || $1),
    pg_catalog.hashtext(CASE WHEN environment = 'production' THEN $2 ELSE $2 || ':' || environment END))
FROM (SELECT CASE WHEN $4 THEN pg_catalog.lower($3) ELSE $3 END AS environment) AS reconciled
