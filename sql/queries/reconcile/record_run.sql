-- What this apply did, for operators (pg_cron keeps only a command tag).
INSERT INTO @ledger@.reconciliation_runs (provider, started_at, finished_at, dry_run, status, summary)
VALUES ('daytona', $1, clock_timestamp(), false, $2, $3::jsonb)
RETURNING id::bigint
