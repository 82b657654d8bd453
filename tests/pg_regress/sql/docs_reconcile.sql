-- The worked example of docs/reconcile.md, in its order (tests/docs_examples.rs checks the page against this
-- output). The diagnostics' durations vary from run to run: the example shows their phases and row counts.
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
SELECT runtime_sandbox.install_ledger();
INSERT INTO runtime_scheduler.runs VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1');
INSERT INTO runtime_scheduler.attempts (run_id, attempt, resource_json) VALUES ('run-3', 1, NULL);
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, 'reserved', 'label-3', NULL);
INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('op-3', 'org-1', 'run-3');
\x on
SELECT provider_sandbox_count, matched_live_sandboxes, unmatched_provider_sandbox_ids, live_leases_to_seed,
       absent_ledger_rows, recovered_reserved_operations, would_recover_reserved_operations, status
FROM runtime_sandbox.reconcile_daytona(
    '[{"sandboxId": "sb-1", "operationKey": "label-1"},
      {"sandboxId": "sb-9", "operationKey": "label-3", "routingDomain": "eu"}]',
    now(), dry_run => true);
SELECT provider, provider_sandbox_count, matched_live_sandboxes, unmatched_provider_sandbox_ids,
       live_leases_to_seed, absent_ledger_rows, seeded_leases, released_terminal_leases, marked_deleted,
       recovered_reserved_operations, has_more_absent_ledger_rows, dry_run, status,
       (SELECT string_agg(d.phase || ' ' || d.row_count, ', ') FROM unnest(diagnostics) d) AS diagnostic_rows
FROM runtime_sandbox.reconcile_daytona(
    '[{"sandboxId": "sb-1", "operationKey": "label-1"},
      {"sandboxId": "sb-9", "operationKey": "label-3", "routingDomain": "eu"}]',
    now(), dry_run => false);
\x off
SELECT operation_key, state, sandbox_id, routing_domain, delete_confirmed_at IS NOT NULL AS confirmed
FROM runtime_scheduler.runtime_sandbox_operations ORDER BY 1;
SELECT lease_id, sandbox_id, released_at IS NOT NULL AS released FROM runtime_scheduler.runtime_sandbox_capacity_leases ORDER BY 1;
SELECT sandbox_id, run_id, status, last_error FROM runtime_scheduler.sandbox_cleanup_jobs_v2 ORDER BY id;
SELECT status, summary->>'marked_deleted' AS marked, finished_at >= started_at AS ok FROM runtime_scheduler.reconciliation_runs;
SELECT status, unmatched_provider_sandbox_ids, seeded_leases, marked_deleted
FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1"}, {"sandboxId": "stray"}]', now(), false);
SELECT runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1"}, {"id": "x"}]', now(), false);
SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, batch_size => 0);
DROP SCHEMA runtime_scheduler CASCADE;
