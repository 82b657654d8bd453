-- 2. The sandbox ledger: the application's tables, created idempotently.
SELECT runtime_sandbox.install_ledger('runtime_scheduler');
SELECT count(*) AS ledger_tables FROM pg_tables WHERE schemaname = 'runtime_scheduler';
