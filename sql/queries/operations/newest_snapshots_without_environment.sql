-- For a ledger installed before 0.4.0, whose table has no environment column
-- (it holds only 'production'): newest_snapshots.sql without it.
-- The newest $1 snapshots of Daytona, newest first, with whether each was
-- captured within $2 of now. A dry run's read, without a
-- lock (an apply's: newest_snapshots_locked.sql).
SELECT snapshot.snapshot_id::bigint, snapshot.captured_at::timestamptz, snapshot.captured_at >= clock_timestamp() - $2 AS fresh
FROM @ledger@.provider_inventory_snapshots AS snapshot
WHERE snapshot.provider = 'daytona'
ORDER BY snapshot.captured_at DESC, snapshot.snapshot_id DESC
LIMIT $1
