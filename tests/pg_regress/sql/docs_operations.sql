-- The examples of docs/operations.md, in its order (tests/docs_examples.rs checks the page against this
-- output): snapshots recorded and reconciled, the mass-absence valve, the health view and its alert rules,
-- history retention. Timestamps and ages vary from run to run: the page shows ids, statuses, counts and
-- comparisons. The pg_cron examples run in tests/reconcile_cron.rs (pg_cron schedules only from the
-- database cron.database_name names, never one of pg_regress's).
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
SELECT runtime_sandbox.install_ledger();
INSERT INTO runtime_scheduler.runs VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1');
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', 'sb-3', 'live', 'label-3', now() - interval '2 hours');
-- Snapshot 1, captured 5 minutes ago, lists all three.
SELECT runtime_sandbox.record_inventory_snapshot('daytona',
    '[{"sandboxId": "sb-1"}, {"sandboxId": "sb-2"}, {"sandboxId": "sb-3"}]', now() - interval '5 minutes');

-- record_inventory_snapshot
SELECT runtime_sandbox.record_inventory_snapshot('daytona',
       '[{"sandboxId": " sb-1 "}, {"sandboxId": "sb-2", "routingDomain": ""}, {"sandboxId": "sb-1"}]',
       now() - interval '1 minute');
SELECT snapshot_id, item_index, sandbox_id, routing_domain, operation_key
     FROM runtime_scheduler.provider_inventory_items WHERE snapshot_id = 2;
SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{"id": "x"}]', now());
SELECT snapshot_id, provider, item_count, reconciled_run_id, captured_at <= recorded_at AS captured_not_after_recorded
     FROM runtime_scheduler.provider_inventory_snapshots ORDER BY snapshot_id;

-- reconcile_daytona_latest: absence confirmed across snapshots, then a stale newest snapshot.
SELECT status, snapshot_id, confirming_snapshots, absent_candidates, seeded_leases, marked_deleted
     FROM runtime_sandbox.reconcile_daytona_latest();
SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[{"sandboxId": "sb-1"}, {"sandboxId": "sb-2"}]', now());
SELECT status, snapshot_id, confirming_snapshots, absent_candidates, marked_deleted
     FROM runtime_sandbox.reconcile_daytona_latest();
SELECT id, status, snapshot_id FROM runtime_scheduler.reconciliation_runs ORDER BY id;
SELECT status, snapshot_id FROM runtime_sandbox.reconcile_daytona_latest(max_snapshot_age => '1 microsecond');
SELECT operation_key, state, delete_confirmed_at IS NOT NULL AS confirmed
     FROM runtime_scheduler.runtime_sandbox_operations ORDER BY 1;
SELECT snapshot_id, reconciled_run_id FROM runtime_scheduler.provider_inventory_snapshots ORDER BY snapshot_id;

-- The mass-absence valve: two empty listings in a row.
SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now());   -- twice: an API hiccup
SELECT runtime_sandbox.record_inventory_snapshot('daytona', '[]', now());
SELECT status, absent_candidates, live_operations, absent_ledger_rows, marked_deleted
     FROM runtime_sandbox.reconcile_daytona_latest(dry_run => true);
SELECT status, marked_deleted FROM runtime_sandbox.reconcile_daytona_latest();
SELECT id, status, snapshot_id, summary->>'absent_candidates' AS absent_candidates,
       summary->>'marked_deleted' AS marked_deleted
     FROM runtime_scheduler.reconciliation_runs WHERE id > 2 ORDER BY id;

-- The health view and the alert rules.
SELECT last_status, consecutive_blocked_runs, last_applied_age > '0' AS applied_before,
          newest_snapshot_id, newest_snapshot_items
     FROM runtime_scheduler.reconciliation_health;
SELECT coalesce(last_run_age > interval '15 minutes', true)          AS job_not_running,
       coalesce(last_applied_age > interval '30 minutes', true)      AS nothing_applied,
       consecutive_blocked_runs >= 2                                 AS blocked,
       coalesce(newest_snapshot_age > interval '15 minutes', true)   AS recorder_stopped,
       has_more_absent_ledger_rows                                   AS backlog
FROM runtime_scheduler.reconciliation_health;

-- History retention.
DELETE FROM runtime_scheduler.reconciliation_runs WHERE finished_at < now() - interval '90 days';
SELECT count(*) AS runs_kept FROM runtime_scheduler.reconciliation_runs;
-- A listing streamed by COPY, published in the same transaction.
BEGIN;
COPY runtime_scheduler.provider_inventory_stream (sandbox_id, routing_domain, operation_key) FROM STDIN;
sb-1	\N	op-1
 sb-2 	\N	op-2
\.
SELECT runtime_sandbox.publish_inventory_snapshot('daytona', 2, now());
COMMIT;
SELECT item_index, sandbox_id, operation_key FROM runtime_scheduler.provider_inventory_items
 WHERE snapshot_id = (SELECT max(snapshot_id) FROM runtime_scheduler.provider_inventory_snapshots) ORDER BY 1;
DROP SCHEMA runtime_scheduler CASCADE;
