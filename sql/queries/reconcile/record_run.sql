-- What this apply did, for operators (pg_cron keeps only a command tag), with
-- the environment it reconciled ($4). A ledger installed before 0.4.0 has no
-- environment column: record_run_without_environment.sql.
INSERT INTO @ledger@.reconciliation_runs (provider, started_at, finished_at, dry_run, status, summary, environment)
VALUES ('daytona', $1, clock_timestamp(), false, $2, $3::jsonb, $4)
RETURNING id::bigint
