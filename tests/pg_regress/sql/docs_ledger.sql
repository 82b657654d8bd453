-- The examples of docs/ledger.md, in its order (tests/docs_examples.rs checks the page against this output).
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
SELECT runtime_sandbox.install_ledger();
SELECT * FROM runtime_sandbox.check_ledger();
DROP INDEX runtime_scheduler.sandbox_cleanup_events_v2_sandbox_idx;
SELECT * FROM runtime_sandbox.check_ledger();
SELECT * FROM runtime_sandbox.check_ledger('nowhere');
SELECT runtime_sandbox.install_ledger('a;b');
DROP SCHEMA runtime_scheduler CASCADE;
