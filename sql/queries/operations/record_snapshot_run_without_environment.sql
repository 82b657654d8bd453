-- For a ledger installed before 0.4.0, whose table has no environment column
-- (it holds only 'production'): record_snapshot_run.sql without it.
-- The history row of a reconcile_daytona_latest apply ($1 started, $2 status,
-- $3 summary, $4 the snapshot it reconciled or NULL), and on the snapshot the
-- run that reconciled it. Returns the run's id.
WITH run AS (
    INSERT INTO @ledger@.reconciliation_runs (provider, started_at, finished_at, dry_run, status, summary, snapshot_id)
    VALUES ('daytona', $1, clock_timestamp(), false, $2, $3::jsonb, $4)
    RETURNING id
), reconciled AS (
    UPDATE @ledger@.provider_inventory_snapshots AS snapshot
    SET reconciled_run_id = run.id
    FROM run
    WHERE snapshot.snapshot_id = $4
)
SELECT id::bigint FROM run
