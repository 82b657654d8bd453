-- runtime_sandbox 0.1.0 -> 0.2.0 (ALTER EXTENSION runtime_sandbox UPDATE). Yields the catalog of a fresh
-- 0.2.0 install. One section per change of the SQL surface, each naming what it is for.

-- ---------------------------------------------------------------------------
-- Reconciliation run unattended (issue 9): the mass-absence valve and the
-- columns that explain it, inventory snapshots, reconcile_daytona_latest,
-- pg_cron scheduling. The texts below are cargo pgrx schema's.
-- ---------------------------------------------------------------------------
ALTER TYPE @extschema@.reconciliation_summary
    ADD ATTRIBUTE absent_candidates    bigint,
    ADD ATTRIBUTE live_operations      bigint,
    ADD ATTRIBUTE snapshot_id          bigint,
    ADD ATTRIBUTE confirming_snapshots bigint;
COMMENT ON TYPE @extschema@.reconciliation_summary IS
'The result of reconcile_daytona and reconcile_daytona_latest: the application''s reconciliation summary fields in snake_case, status (applied, planned, blocked_unowned_sandboxes, blocked_mass_absence, skipped_concurrent, no_fresh_snapshot), the per-statement diagnostics, then absent_candidates (every live operation the absence filters kept, not only the batch), live_operations (live production Daytona operations), snapshot_id (the snapshot reconciled) and confirming_snapshots (how many snapshots an absent operation had to be missing from). NULL: not evaluated in this run.';

-- reconcile_daytona gains max_absent_ratio (last, so positional 0.1.0 calls keep working).
DROP FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name);
CREATE  FUNCTION "reconcile_daytona"(
	"inventory" jsonb, /* Option < JsonbBytes > */
	"inventory_captured_at" timestamp with time zone, /* Option < TimestampWithTimeZone > */
	"dry_run" bool, /* Option < bool > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"max_absent_ratio" real DEFAULT 0.5 /* Option < f32 > */
) RETURNS runtime_sandbox.reconciliation_summary /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE  
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reconcile_daytona_guarded_wrapper';
COMMENT ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real) IS
'Reconciles the sandbox ledger in ledger_schema against one complete, label-scoped Daytona inventory (a JSON array of {sandboxId, operationKey?, routingDomain?}) captured at inventory_captured_at: releases leases of durably deleted sandboxes, recovers reserved creates by a unique operation label, fails closed on any unowned provider sandbox, seeds capacity leases for live sandboxes and marks at most batch_size absent live operations (older than minimum_age) provider-confirmed-absent. Blocks (status blocked_mass_absence, nothing seeded or marked) when the inventory is empty while live operations would be called absent, or when more than 10 absent candidates exceed max_absent_ratio (0 < ratio <= 1; 1 never blocks) of the live operations. One transaction; dry_run writes nothing. Applies are recorded in <ledger_schema>.reconciliation_runs; an overlapping apply returns status skipped_concurrent.';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real) FROM PUBLIC;

CREATE  FUNCTION "record_inventory_snapshot"(
	"provider" TEXT, /* Option < & str > */
	"items" jsonb, /* Option < JsonbBytes > */
	"captured_at" timestamp with time zone, /* Option < TimestampWithTimeZone > */
	"keep_last" INT DEFAULT 20, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'record_inventory_snapshot_wrapper';

CREATE  FUNCTION "reconcile_daytona_latest"(
	"dry_run" bool DEFAULT false, /* Option < bool > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"max_snapshot_age" interval DEFAULT '15 minutes', /* Option < Interval > */
	"absent_confirmations" INT DEFAULT 2, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"max_absent_ratio" real DEFAULT 0.5 /* Option < f32 > */
) RETURNS runtime_sandbox.reconciliation_summary /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust
> */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reconcile_daytona_latest_wrapper';

CREATE  FUNCTION "schedule_reconciliation"(
	"schedule" TEXT DEFAULT '*/5 * * * *', /* Option < & str > */
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'schedule_reconciliation_wrapper';

CREATE  FUNCTION "unschedule_reconciliation"(
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'unschedule_reconciliation_wrapper';

CREATE  FUNCTION "schedule_sandbox_operation_backfill"(
	"schedule" TEXT DEFAULT '* * * * *', /* Option < & str > */
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"max_batches" INT DEFAULT NULL, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'schedule_sandbox_operation_backfill_wrapper';

CREATE  FUNCTION "unschedule_sandbox_operation_backfill"(
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'unschedule_sandbox_operation_backfill_wrapper';

COMMENT ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name) IS
'Records one complete Daytona listing (provider must be daytona; items as reconcile_daytona''s inventory, validated and normalized the same way) captured at captured_at (at most 5 minutes ahead of the database clock; stored no later than the moment of recording) in <ledger_schema>.provider_inventory_snapshots and provider_inventory_items, then prunes all but the newest keep_last (1..1000) snapshots of the provider, never the one just recorded nor one a running reconciliation holds. Returns the snapshot id.';
REVOKE EXECUTE ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real) IS
'Reconciles the ledger like reconcile_daytona against the newest recorded Daytona snapshot. Status no_fresh_snapshot (nothing reconciled) when there is none captured within max_snapshot_age. An operation is called absent only if missing from each of the absent_confirmations (1..100) newest snapshots and recorded before the oldest of them was captured; with fewer snapshots nothing is called absent. Applies record the snapshot in reconciliation_runs.snapshot_id and the run in provider_inventory_snapshots.reconciled_run_id. The mass-absence valve (max_absent_ratio) as in reconcile_daytona. Meant for pg_cron (schedule_reconciliation).';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.schedule_reconciliation(text, text, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job running SELECT status FROM runtime_sandbox.reconcile_daytona_latest(ledger_schema => ...) on schedule (a cron schedule, default every 5 minutes). job_name NULL means reconcile_daytona:<ledger_schema>. Returns the pg_cron job id. Requires pg_cron in this database (SQLSTATE 55000 otherwise, with a hint) and a ledger install_ledger has brought up to date.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.unschedule_reconciliation(text, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: reconcile_daytona:<ledger_schema>). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job whose single statement is CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => ..., max_batches => ..., ledger_schema => ...) (pg_cron runs a COMMITting procedure only as the job''s only statement) on schedule (default every minute). job_name NULL means sandbox_operation_backfill:<ledger_schema>. Returns the pg_cron job id. Requires pg_cron in this database (SQLSTATE 55000 otherwise, with a hint).';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: sandbox_operation_backfill:<ledger_schema>). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name) FROM PUBLIC;

-- install_ledger now also creates the snapshot tables and the health view.
COMMENT ON FUNCTION @extschema@.install_ledger(name) IS
'Creates, idempotently, the sandbox ledger in ledger_schema (default runtime_scheduler): the runtime_sandbox_operation_state enum, runs, attempts, runtime_sandbox_operations, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, runtime_sandbox_capacity_leases, control, reconciliation_runs, provider_inventory_snapshots and provider_inventory_items, with the unique keys and indexes the application''s SQL and the reconciliation rely on, and the view reconciliation_health; on a ledger of an earlier version it adds what is missing. Ordinary user tables: pg_dump keeps their data.';
