-- The snapshots of provider $1 and environment $4 (without the environment
-- column: prunable_snapshots_without_environment.sql) beyond the newest $2, never $3 (the one just
-- recorded, whatever its capture time), locked for deletion. SKIP LOCKED: a
-- snapshot a running reconciliation holds (FOR KEY SHARE) is left for the
-- next recording to prune.
SELECT snapshot.snapshot_id::bigint
FROM @ledger@.provider_inventory_snapshots AS snapshot
WHERE snapshot.provider = $1
  AND snapshot.environment = $4
  AND snapshot.snapshot_id <> $3
  AND snapshot.snapshot_id NOT IN (
      SELECT newest.snapshot_id
      FROM @ledger@.provider_inventory_snapshots AS newest
      WHERE newest.provider = $1
        AND newest.environment = $4
      ORDER BY newest.captured_at DESC, newest.snapshot_id DESC
      LIMIT $2)
ORDER BY snapshot.snapshot_id
FOR UPDATE SKIP LOCKED
