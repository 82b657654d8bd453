-- 2b. Reconcile a Daytona inventory against the ledger (its own ledger schema here).
SELECT runtime_sandbox.install_ledger('tour_ledger');
INSERT INTO tour_ledger.runs VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-1');
INSERT INTO tour_ledger.attempts (run_id, attempt, resource_json) VALUES ('run-3', 1, NULL);
INSERT INTO tour_ledger.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, 'reserved', 'label-3', NULL);
INSERT INTO tour_ledger.runtime_sandbox_capacity_leases (lease_id, org_id, run_id) VALUES ('op-3', 'org-1', 'run-3');
-- Daytona lists sb-1, and sb-9 carrying op-3's label (its create response was lost); sb-2 is gone.
SELECT status, provider_sandbox_count, matched_live_sandboxes, live_leases_to_seed, absent_ledger_rows
  FROM runtime_sandbox.reconcile_daytona(
       '[{"sandboxId": "sb-1", "operationKey": "label-1"},
         {"sandboxId": "sb-9", "operationKey": "label-3", "routingDomain": "eu"}]',
       now(), dry_run => true, ledger_schema => 'tour_ledger');
SELECT status, recovered_reserved_operations, seeded_leases, marked_deleted
  FROM runtime_sandbox.reconcile_daytona(
       '[{"sandboxId": "sb-1", "operationKey": "label-1"},
         {"sandboxId": "sb-9", "operationKey": "label-3", "routingDomain": "eu"}]',
       now(), dry_run => false, ledger_schema => 'tour_ledger');
SELECT operation_key, state, sandbox_id, routing_domain FROM tour_ledger.runtime_sandbox_operations ORDER BY 1;
-- A sandbox nobody owns: fail closed, nothing further written.
SELECT status, unmatched_provider_sandbox_ids
  FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1"}, {"sandboxId": "stray"}]', now(), false,
                                         ledger_schema => 'tour_ledger');
