-- runtime_sandbox 0.1.0 -> 0.2.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`.
--
-- The rule: every change of the SQL surface (a function, procedure or type added, changed or dropped; a
-- comment; a grant or revoke) ships its section in this file, so that an updated 0.1.0 database ends with
-- exactly the catalog of a fresh 0.2.0 install. tests/upgrade.rs checks that: it installs the frozen
-- sql/runtime_sandbox--0.1.0.sql, makes ledgers, data, grants and a dependent view, runs the update and
-- compares every function (pg_get_functiondef: arguments, defaults, result, volatility, strictness,
-- parallel, SET search_path, symbol), ACL, type, enum label, comment and extension member with a fresh
-- install, printing a diff.
--
-- How to write a section:
-- - Start it with a comment header naming what it is for; take the statements' text from
--   `cargo pgrx schema pg15 --out /tmp/x.sql` (the generated install script), schema-qualified with
--   @extschema@ (the script runs with search_path = @extschema@, but say so anyway).
-- - The shared library of 0.2.0 serves both catalogs (0.1.0 until this script ran): keep the Rust name of
--   every existing #[pg_extern] (its C symbol <rust_name>_wrapper is named by the 0.1.0 script); rename
--   in SQL with #[pg_extern(name = "...")].
-- - Same argument types: CREATE OR REPLACE FUNCTION keeps the function's OID, so users' grants and
--   the views that call it survive (a changed language, body, volatility or SET clause is fine; the
--   result type and argument names must stay). Then COMMENT ON again if the comment changed.
-- - Other argument types (a new argument, even with a default): DROP FUNCTION old(signature) and CREATE
--   FUNCTION, then its COMMENT ON and REVOKE EXECUTE ... FROM PUBLIC again. Never CASCADE (a test refuses
--   it): a DROP fails while a user's view depends on the function, which is right, but it also loses the
--   grants users gave on it (an operator's cron job would stop with "permission denied"; tests/upgrade.rs
--   runs an operator's calls before and after). Carry them over:
--     SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
--                pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::text), ', '), ''), true)
--       FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
--      WHERE p.oid = '@extschema@.f(old argument types)'::pg_catalog.regprocedure
--        AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner;
--     DROP FUNCTION @extschema@.f(old argument types);
--     CREATE FUNCTION ...; COMMENT ON ...; REVOKE ...;        -- as generated
--     DO $$ BEGIN
--       IF pg_catalog.current_setting('runtime_sandbox.grantees') <> '' THEN
--         EXECUTE 'GRANT EXECUTE ON FUNCTION @extschema@.f(new argument types) TO '
--                 || pg_catalog.current_setting('runtime_sandbox.grantees');
--       END IF;
--     END $$;
--   (A grant made inside the script is recorded as the extension's initial privilege, so pg_dump leaves it
--   out of a dump; say so in README "Upgrading".)
-- - A new composite column: ALTER TYPE @extschema@.t ADD ATTRIBUTE ... (append at the end, as the fresh
--   install must declare it too). A new enum label: ALTER TYPE ... ADD VALUE ... BEFORE/AFTER so that the
--   label order equals the fresh install's.
-- - Functions added in 0.2.0: exactly the generated CREATE FUNCTION, COMMENT ON and REVOKE.
-- - Never edit sql/runtime_sandbox--0.1.0.sql (it is what 0.1.0 databases have).

-- Section: stock hashes — managed_resource_status is the Rust rule (src/stock/status.rs via
-- src/stock/shell.rs), no longer a second implementation in SQL. Same name, arguments, result type,
-- IMMUTABLE PARALLEL SAFE, not strict (NULL means missing); it runs no SQL, so no SET search_path (as
-- stable_json and stock_hash). CREATE OR REPLACE keeps the function's OID, so its ACL (EXECUTE for
-- PUBLIC, as before), users' grants and the views that call it survive; the comment is restated.
CREATE OR REPLACE FUNCTION @extschema@."managed_resource_status"(
	"resource_id" TEXT,
	"current_hash" TEXT,
	"binding_stock_hash" TEXT,
	"latest_stock_hash" TEXT
) RETURNS @extschema@.managed_stock_status
IMMUTABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'managed_resource_status_wrapper';
COMMENT ON FUNCTION @extschema@.managed_resource_status(text, text, text, text) IS
'Classifies a managed resource against its stock: missing (no resource id or current hash), stock_current (current = latest), stock_update_available (current = binding hash), else operator_modified.';

-- Section: managed environments — the comment of reconcile_managed_environment names its error classes
-- (22023 arguments, 42P01 missing tables, 40001 a concurrent change: retry).
COMMENT ON FUNCTION @extschema@.reconcile_managed_environment(text, text, jsonb, text, jsonb, uuid, text, boolean, name) IS
'The application''s ensureManagedSandboxEnvironment in one transaction step: keeps the single Paperclip-managed sandbox environment in app_schema at stock for provider while never overwriting operator edits. Locks the sandbox rows before reading the bindings of company_id (NULL: every company); inserts, updates, leaves unchanged or skips; rewrites bindings exactly where the application does. Errors: SQLSTATE 22023 on an empty name or provider, a config or extra_metadata that is not a JSON object, or an app_schema that is not a plain identifier or does not exist; 42P01 when app_schema lacks the tables; 40001 when a concurrent change makes it stop (at REPEATABLE READ or SERIALIZABLE, a change committed after the transaction''s snapshot): retry. Nothing is written then.';

-- Section: backfill — the migration procedure's run lock. The procedure held a session advisory lock that
-- leaked when its COMMIT failed (a deferred trigger, a serialization failure) or a cancel landed outside the
-- exception block around each page; now the extension takes it (_backfill_run_lock) and releases it itself when
-- any transaction of the run aborts, and the per-page exception block (a subtransaction per page) is gone.
-- Internal helpers carry a leading underscore: backfill_run_lock_key becomes _backfill_run_lock_key (same C
-- symbol; its argument types stay, but a new name needs DROP and CREATE; it was never granted to PUBLIC, and an
-- operator's grant on it is carried over to the new name and given on the two new helpers, which the procedure
-- calls with the caller's rights). The procedure keeps its signature: CREATE OR REPLACE keeps its OID and ACL.
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.backfill_run_lock_key(integer, integer, interval, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.backfill_run_lock_key(integer, integer, interval, name);
CREATE FUNCTION @extschema@."_backfill_run_lock_key"(
	"batch_size" INT,
	"max_batches" INT,
	"pause" interval,
	"ledger_schema" name
) RETURNS bigint
STABLE PARALLEL RESTRICTED
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'backfill_run_lock_key_wrapper';
CREATE FUNCTION @extschema@."_backfill_run_lock"(
	"lock_key" bigint
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'backfill_run_lock_wrapper';
CREATE FUNCTION @extschema@."_backfill_run_unlock"(
	"lock_key" bigint
) RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'backfill_run_unlock_wrapper';
COMMENT ON FUNCTION @extschema@._backfill_run_lock_key(integer, integer, interval, name) IS
'Internal to run_sandbox_operation_backfill: checks its arguments and returns the session advisory-lock key of the ledger''s backfill run.';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_lock_key(integer, integer, interval, name) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@._backfill_run_lock(bigint) IS
'Internal to run_sandbox_operation_backfill: takes the ledger''s run lock (a session advisory lock; false when another session holds it) and releases it if a transaction of the run aborts.';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_lock(bigint) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@._backfill_run_unlock(bigint) IS
'Internal to run_sandbox_operation_backfill: releases the run lock _backfill_run_lock took (false when it was not held).';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_unlock(bigint) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@._backfill_run_lock_key(integer, integer, ',
            'interval, name), @extschema@._backfill_run_lock(bigint), @extschema@._backfill_run_unlock(bigint) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;
CREATE OR REPLACE PROCEDURE @extschema@.run_sandbox_operation_backfill(
    batch_size    integer  DEFAULT 500,
    max_batches   integer  DEFAULT NULL,
    pause         interval DEFAULT '0',
    ledger_schema name     DEFAULT 'runtime_scheduler'
)
LANGUAGE plpgsql
AS $procedure$
DECLARE
    lock_key      bigint;
    progress      @extschema@.backfill_progress;
    batch         integer := 0;
    started       pg_catalog.timestamptz;
    batch_started pg_catalog.timestamptz;
BEGIN
    -- Bad arguments fail here, before the lock is taken or anything is written.
    lock_key := @extschema@._backfill_run_lock_key(batch_size, max_batches, pause, ledger_schema);
    -- Inside a transaction block COMMIT is impossible: fail now, not after the
    -- first page, and not while holding the lock.
    COMMIT;
    -- A session lock, so it spans the COMMITs; released at the end, and by the
    -- extension whenever a transaction of this run aborts (an error or cancel
    -- in a page or the pause, a COMMIT that fails).
    IF NOT @extschema@._backfill_run_lock(lock_key) THEN
        RAISE NOTICE 'runtime_sandbox: a sandbox operation backfill is already running on ledger %; not starting another', ledger_schema;
        RETURN;
    END IF;
    started := pg_catalog.clock_timestamp();
    LOOP
        IF batch OPERATOR(pg_catalog.>) 0 AND pause OPERATOR(pg_catalog.>) '0'::pg_catalog.interval THEN
            PERFORM pg_catalog.pg_sleep_for(pause);
        END IF;
        batch_started := pg_catalog.clock_timestamp();
        progress := @extschema@.advance_sandbox_operation_backfill(false, batch_size, 1, ledger_schema);
        IF progress.batches OPERATOR(pg_catalog.>) 0 THEN
            batch := batch OPERATOR(pg_catalog.+) 1;
            RAISE NOTICE 'runtime_sandbox backfill batch %: scanned %, inserted %, phase %, cursor %, elapsed % (total %)',
                batch, progress.scanned_attempts, progress.inserted_operations, progress.phase,
                progress.next_cursor,
                pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) batch_started,
                pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) started;
        ELSE
            RAISE NOTICE 'runtime_sandbox backfill on ledger % is already complete', ledger_schema;
        END IF;
        COMMIT;
        EXIT WHEN progress.phase OPERATOR(pg_catalog.=) 'complete'
            OR batch OPERATOR(pg_catalog.>=) max_batches;
    END LOOP;
    PERFORM @extschema@._backfill_run_unlock(lock_key);
END
$procedure$;

-- Section: reconciliation run unattended (issue 9) — the mass-absence valve and the result columns that explain
-- it, inventory snapshots, reconcile_daytona_latest, pg_cron scheduling. The statements are cargo pgrx schema's,
-- qualified with @extschema@, without pgrx's type comments; the grant carry-over as the header shows.
ALTER TYPE @extschema@.reconciliation_summary
    ADD ATTRIBUTE absent_candidates    bigint,
    ADD ATTRIBUTE live_operations      bigint,
    ADD ATTRIBUTE snapshot_id          bigint,
    ADD ATTRIBUTE confirming_snapshots bigint;
COMMENT ON TYPE @extschema@.reconciliation_summary IS
'The result of reconcile_daytona and reconcile_daytona_latest: the application''s reconciliation summary fields in snake_case, status (applied, planned, blocked_unowned_sandboxes, blocked_mass_absence, skipped_concurrent, no_fresh_snapshot), the per-statement diagnostics, then absent_candidates (every live operation the absence filters kept, not only the batch), live_operations (live production Daytona operations), snapshot_id (the snapshot reconciled) and confirming_snapshots (how many snapshots an absent operation had to be missing from). NULL: not evaluated in this run.';

-- reconcile_daytona gains max_absent_ratio (last, so positional 0.1.0 calls keep working). The grants users
-- gave on the 0.1.0 function are carried over to the new one (see the header).
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name);
CREATE FUNCTION @extschema@."reconcile_daytona"(
	"inventory" jsonb,
	"inventory_captured_at" timestamp with time zone,
	"dry_run" bool,
	"batch_size" INT DEFAULT 500,
	"minimum_age" interval DEFAULT '10 minutes',
	"ledger_schema" name DEFAULT 'runtime_scheduler',
	"max_absent_ratio" real DEFAULT 0.5
) RETURNS @extschema@.reconciliation_summary
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'reconcile_daytona_guarded_wrapper';
COMMENT ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real) IS
'Reconciles the sandbox ledger in ledger_schema against one complete, label-scoped Daytona inventory (a JSON array of {sandboxId, operationKey?, routingDomain?}) captured at inventory_captured_at: releases leases of durably deleted sandboxes, recovers reserved creates by a unique operation label, fails closed on any unowned provider sandbox, seeds capacity leases for live sandboxes and marks at most batch_size absent live operations (older than minimum_age) provider-confirmed-absent. Blocks (status blocked_mass_absence, nothing seeded or marked) when the inventory is empty while live operations would be called absent, or when more than 10 absent candidates exceed max_absent_ratio (0 < ratio <= 1; 1 never blocks) of the live operations. One transaction; dry_run writes nothing. Applies are recorded in <ledger_schema>.reconciliation_runs; an overlapping apply returns status skipped_concurrent.';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, ',
            'integer, interval, name, real) TO ', pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

CREATE FUNCTION @extschema@."record_inventory_snapshot"(
	"provider" TEXT,
	"items" jsonb,
	"captured_at" timestamp with time zone,
	"keep_last" INT DEFAULT 20,
	"ledger_schema" name DEFAULT 'runtime_scheduler'
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'record_inventory_snapshot_wrapper';

CREATE FUNCTION @extschema@."reconcile_daytona_latest"(
	"dry_run" bool DEFAULT false,
	"batch_size" INT DEFAULT 500,
	"minimum_age" interval DEFAULT '10 minutes',
	"max_snapshot_age" interval DEFAULT '15 minutes',
	"absent_confirmations" INT DEFAULT 2,
	"ledger_schema" name DEFAULT 'runtime_scheduler',
	"max_absent_ratio" real DEFAULT 0.5
) RETURNS @extschema@.reconciliation_summary
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'reconcile_daytona_latest_wrapper';

CREATE FUNCTION @extschema@."schedule_reconciliation"(
	"schedule" TEXT DEFAULT '*/5 * * * *',
	"job_name" TEXT DEFAULT NULL,
	"ledger_schema" name DEFAULT 'runtime_scheduler'
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'schedule_reconciliation_wrapper';

CREATE FUNCTION @extschema@."unschedule_reconciliation"(
	"job_name" TEXT DEFAULT NULL,
	"ledger_schema" name DEFAULT 'runtime_scheduler'
) RETURNS bool
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'unschedule_reconciliation_wrapper';

CREATE FUNCTION @extschema@."schedule_sandbox_operation_backfill"(
	"schedule" TEXT DEFAULT '* * * * *',
	"job_name" TEXT DEFAULT NULL,
	"batch_size" INT DEFAULT 500,
	"max_batches" INT DEFAULT NULL,
	"ledger_schema" name DEFAULT 'runtime_scheduler'
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
AS 'MODULE_PATHNAME', 'schedule_sandbox_operation_backfill_wrapper';

CREATE FUNCTION @extschema@."unschedule_sandbox_operation_backfill"(
	"job_name" TEXT DEFAULT NULL,
	"ledger_schema" name DEFAULT 'runtime_scheduler'
) RETURNS bool
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c
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
