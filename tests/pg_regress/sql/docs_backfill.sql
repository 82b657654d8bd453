-- The examples of docs/backfill.md, in its order (tests/docs_examples.rs checks the page against this output).
-- Cursors carry timestamps as text in the session's TimeZone and DateStyle: the page shows UTC, ISO.
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
SELECT runtime_sandbox.install_ledger();
INSERT INTO runtime_scheduler.runs (run_id, org_id) VALUES ('run-a', 'org-1'), ('run-b', 'org-2');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-a', 1, '2026-03-01 10:00:00.000001+00',
   '[{"kind":"daytona_sandbox","sandboxId":"dt-1","daytonaOrganizationId":"org-x","daytonaEnvironment":"eu"},
     {"kind":"modal_sandbox","sandboxId":"mo-1","modalAppId":"app-7"}]'),
  ('run-a', 2, '2026-03-01 10:00:00.000001+00',
   '{"kind":"daytona_sandbox","sandboxId":"dt-1","daytonaOrganizationId":"org-x"}'),
  ('run-b', 1, '2026-03-01 10:05:00+00',
   '[{"kind":"daytona_sandbox","sandboxId":"dt-2"}, {"kind":"kubernetes","sandboxId":"k-1"}, 42]');
SELECT * FROM runtime_sandbox.preview_sandbox_operation_backfill(batch_size => 2);
SELECT scanned_attempts, inserted_operations, has_more, next_cursor FROM runtime_sandbox.backfill_sandbox_operations(batch_size => 2);
SELECT * FROM runtime_sandbox.backfill_sandbox_operations(2, ('2026-03-01 10:00:00.000001+00', 'run-a', 1, 2));
SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at
FROM runtime_scheduler.runtime_sandbox_operations ORDER BY operation_key;
TRUNCATE runtime_scheduler.runtime_sandbox_operations;  -- start over, for the orchestrator
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => true, batch_size => 2);
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => false, batch_size => 2, max_batches => 1);
SELECT value FROM runtime_scheduler.control WHERE key = 'runtime_sandbox_operation_backfill_v1';
SELECT * FROM runtime_sandbox.backfill_status();
SELECT runtime_sandbox.backfill_sandbox_operations(10, ('2026-03-01', 'run-a', 0, 1));
-- Migration recipe, step 1 (the procedure's NOTICEs carry elapsed times: not shown here).
SELECT runtime_sandbox.install_ledger();
SET statement_timeout = 0;            -- the CALL is one statement however many pages it commits
CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 1000, pause => '50 ms');
-- Step 3, watching progress (nothing is running now).
SELECT * FROM runtime_sandbox.backfill_status();            -- phase, cursor, attempts after it
SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations;
SELECT pid, now() - query_start AS running_for FROM pg_stat_activity
WHERE query LIKE 'CALL runtime_sandbox.run_sandbox_operation_backfill%';
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE query LIKE 'CALL runtime_sandbox.run_sandbox_operation_backfill%';  -- stop it; the next CALL resumes
-- Step 4, from cron or the application: a completed backfill stays complete.
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 500, 20);
DROP SCHEMA runtime_scheduler CASCADE;
