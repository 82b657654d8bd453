-- The history row of a reconcile_daytona_latest apply ($1 started, $2 status,
-- $3 summary, $4 the snapshot it reconciled or NULL), and on the snapshot the
-- run that reconciled it, with the environment reconciled ($5). Returns the
-- run's id. Without the environment column: record_snapshot_run_without_environment.sql.
WITH run AS (
    INSERT INTO @ledger@.reconciliation_runs (provider, started_at, finished_at, dry_run, status, summary, snapshot_id, environment)
    VALUES ('daytona', $1, clock_timestamp(), false, $2, $3::jsonb, $4, $5)
    RETURNING id
), reconciled AS (
    UPDATE @ledger@.provider_inventory_snapshots AS snapshot
    SET reconciled_run_id = run.id
    FROM run
    WHERE snapshot.snapshot_id = $4
)
SELECT id::bigint FROM run
