-- The newest $1 snapshots of Daytona's listing of environment $3 (without
-- the environment column: newest_snapshots_locked_without_environment.sql), newest first, with whether each was
-- captured within $2 of now. An apply's read: it locks them FOR KEY
-- SHARE, so the snapshots stay until it commits (pruning skips them) and the
-- older ones it confirms absences against cannot vanish mid-run.
SELECT snapshot.snapshot_id::bigint, snapshot.captured_at::timestamptz, snapshot.captured_at >= clock_timestamp() - $2 AS fresh
FROM @ledger@.provider_inventory_snapshots AS snapshot
WHERE snapshot.provider = 'daytona'
  AND snapshot.environment = $3
ORDER BY snapshot.captured_at DESC, snapshot.snapshot_id DESC
LIMIT $1
FOR KEY SHARE OF snapshot
