-- For a ledger installed before 0.4.0, whose table has no environment column
-- (it holds only 'production'): record_run.sql without it.
-- What this apply did, for operators (pg_cron keeps only a command tag).
INSERT INTO @ledger@.reconciliation_runs (provider, started_at, finished_at, dry_run, status, summary)
VALUES ('daytona', $1, clock_timestamp(), false, $2, $3::jsonb)
RETURNING id::bigint
