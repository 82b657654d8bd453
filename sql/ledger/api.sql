COMMENT ON FUNCTION @extschema@.install_ledger(name) IS
'Creates, idempotently, the sandbox ledger in ledger_schema (default runtime_scheduler): the runtime_sandbox_operation_state enum, runs, attempts, runtime_sandbox_operations, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, runtime_sandbox_capacity_leases, control and reconciliation_runs, with the unique keys and indexes the application''s SQL relies on. Ordinary user tables: pg_dump keeps their data.';
REVOKE EXECUTE ON FUNCTION @extschema@.install_ledger(name) FROM PUBLIC;
