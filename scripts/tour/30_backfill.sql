-- 3. Backfill: build runtime_sandbox_operations from attempt JSON, one keyset page at a time.
SET TimeZone = 'UTC';  -- timestamps and cursors print the same everywhere
SET DateStyle = 'ISO';
INSERT INTO runtime_scheduler.runs (run_id, org_id) VALUES ('run-a', 'org-1'), ('run-b', 'org-2');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-a', 1, '2026-03-01 10:00:00.000001+00',
   '[{"kind": "daytona_sandbox", "sandboxId": "dt-1", "daytonaOrganizationId": "org-x"},
     {"kind": "modal_sandbox", "sandboxId": "mo-1", "modalAppId": "app-7"}]'),
  ('run-b', 1, '2026-03-01 10:05:00+00', '{"kind": "daytona_sandbox", "sandboxId": "dt-2"}');
SELECT phase, batches, scanned_attempts, projected_operations
  FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => true, batch_size => 2);
SELECT phase, batches, scanned_attempts, inserted_operations
  FROM runtime_sandbox.advance_sandbox_operation_backfill(dry_run => false, batch_size => 2, max_batches => 10);
SELECT operation_key, state, provider_created_at FROM runtime_scheduler.runtime_sandbox_operations ORDER BY 1;
SELECT * FROM runtime_sandbox.backfill_status();
