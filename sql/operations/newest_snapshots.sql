-- The newest $1 snapshots of Daytona, newest first, with whether each was
-- captured within $2 of now. An apply locks them FOR KEY SHARE: the
-- snapshots stay until it commits (pruning skips them), so the older ones it
-- confirms absences against cannot vanish mid-run. A dry run takes no lock.
SELECT snapshot.snapshot_id, snapshot.captured_at, snapshot.captured_at >= clock_timestamp() - $2 AS fresh
FROM @ledger@.provider_inventory_snapshots AS snapshot
WHERE snapshot.provider = 'daytona'
ORDER BY snapshot.captured_at DESC, snapshot.snapshot_id DESC
LIMIT $1
@lock@
