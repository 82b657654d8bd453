-- The examples in docs/backfill.md (psql -X -f, in an empty database with the extension).
\pset footer off
SET TimeZone = 'UTC';
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
\echo '-- preview the first page'
SELECT * FROM runtime_sandbox.preview_sandbox_operation_backfill(batch_size => 2);
\echo '-- apply it, then the next page after its cursor'
SELECT scanned_attempts, inserted_operations, has_more, next_cursor FROM runtime_sandbox.backfill_sandbox_operations(batch_size => 2);
SELECT * FROM runtime_sandbox.backfill_sandbox_operations(2, ('2026-03-01 10:00:00.000001+00', 'run-a', 1, 2));
SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at
FROM runtime_scheduler.runtime_sandbox_operations ORDER BY operation_key;
\echo '-- the orchestrator: dry run, then apply page by page'
TRUNCATE runtime_scheduler.runtime_sandbox_operations;
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => true, batch_size => 2);
SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => false, batch_size => 2, max_batches => 1);
SELECT value FROM runtime_scheduler.control WHERE key = 'runtime_sandbox_operation_backfill_v1';
SELECT * FROM runtime_sandbox.backfill_status();
\echo '-- the migration procedure'
CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 1);
SELECT * FROM runtime_sandbox.backfill_status();
CALL runtime_sandbox.run_sandbox_operation_backfill();
\echo '-- bad input'
SELECT runtime_sandbox.backfill_sandbox_operations(0);
SELECT runtime_sandbox.backfill_sandbox_operations(10, ('2026-03-01', 'run-a', 0, 1));
SELECT runtime_sandbox.advance_sandbox_operation_backfill(true, 10, 1, 'no_such_schema');
BEGIN;
CALL runtime_sandbox.run_sandbox_operation_backfill();
ROLLBACK;
