COMMENT ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name) IS
'Records one complete Daytona listing (provider must be daytona; items as reconcile_daytona''s inventory, validated and normalized the same way) captured at captured_at (at most 5 minutes ahead of the database clock; stored no later than the moment of recording) in <ledger_schema>.provider_inventory_snapshots and provider_inventory_items, then prunes all but the newest keep_last (1..1000) snapshots of the provider, never the one just recorded nor one a running reconciliation holds. Returns the snapshot id.';
REVOKE EXECUTE ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real) IS
'Reconciles the ledger like reconcile_daytona against the newest recorded Daytona snapshot. Status no_fresh_snapshot (nothing reconciled) when there is none captured within max_snapshot_age. An operation is called absent only if missing from each of the absent_confirmations (1..100) newest snapshots and recorded before the oldest of them was captured; with fewer snapshots nothing is called absent. Applies record the snapshot in reconciliation_runs.snapshot_id and the run in provider_inventory_snapshots.reconciled_run_id. The mass-absence valve (max_absent_ratio) as in reconcile_daytona. Meant for pg_cron (schedule_reconciliation).';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job that reconciles the latest snapshot on schedule (a cron schedule, default every 5 minutes) with these options (CALL run_reconciliation_job: the job fails, and pg_cron records why, when a run is blocked or finds no fresh snapshot; the history row stays). database NULL: the job runs here, and the ledger is checked now; another database: call this from the database pg_cron runs in, with runtime_sandbox installed there too, and the job runs in that database. job_name NULL means reconcile_daytona:[<database>.]<ledger_schema>. A job whose database no longer has runtime_sandbox fails saying how to remove it. Returns the pg_cron job id. SQLSTATE 55000 with a hint when pg_cron runs in another database.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: reconcile_daytona:[<database>.]<ledger_schema>) that runs in database (NULL: this one). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job that runs CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => ..., max_batches => ..., ledger_schema => ...) on schedule (default every minute), in this database or (database, from the database pg_cron runs in) another one. job_name NULL means sandbox_operation_backfill:[<database>.]<ledger_schema>. Returns the pg_cron job id. SQLSTATE 55000 with a hint when pg_cron runs in another database.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: sandbox_operation_backfill:[<database>.]<ledger_schema>) that runs in database (NULL: this one). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name, name) FROM PUBLIC;
