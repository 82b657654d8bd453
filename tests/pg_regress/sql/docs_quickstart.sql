-- The README's quick start on a ledger an application made (tests/docs_examples.rs checks the page against
-- this output): schema app, one live operation, and an index of the extension's missing.
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
DROP SCHEMA IF EXISTS app CASCADE;
CREATE SCHEMA app;
SELECT runtime_sandbox.install_ledger('app');
DROP INDEX app.sandbox_cleanup_events_v2_sandbox_idx;
INSERT INTO app.runs VALUES ('run-1', 'org-1');
INSERT INTO app.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '2 hours');
-- 1. What keeps the ledger from serving each function: one row per problem, with its fix.
SELECT severity, object, problem, breaks FROM runtime_sandbox.check_ledger('app');
SELECT function, ready FROM runtime_sandbox.ledger_readiness('app') WHERE NOT ready;
-- 2. The DDL the extension wants (indexes CONCURRENTLY, columns, its own tables):
SELECT statement FROM runtime_sandbox.install_ledger_ddl('app');
-- 3. Run those from your migration tool, outside a transaction; then the extension checks and finishes:
SELECT ddl.statement FROM runtime_sandbox.install_ledger_ddl('app') ddl \gexec
SELECT runtime_sandbox.install_ledger('app');
SELECT count(*) AS problems FROM runtime_sandbox.check_ledger('app');
-- 4. A dry run against a listing, then the apply:
SELECT status, matched_live_sandboxes, unmatched_provider_sandbox_ids, live_leases_to_seed
  FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}]', now(), true,
                                         ledger_schema => 'app');
SELECT status, seeded_leases
  FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}]', now(), false,
                                         ledger_schema => 'app');
DROP SCHEMA app CASCADE;
