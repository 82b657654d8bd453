-- runtime_sandbox 0.2.0 -> 0.3.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`.
--
-- The rule (as in runtime_sandbox--0.1.0--0.2.0.sql, whose header says how to write a section): every change
-- of the SQL surface ships its section in this file, so that an updated database ends with exactly the
-- catalog of a fresh install. tests/upgrade.rs checks that, from 0.1.0 through this script.
--
-- What 0.3.0 changes for a ledger is not in this file (ledgers are user tables): its functions now run their
-- statements as the ledger's owner, and refuse a ledger check_ledger calls unusable. After the update run
-- `SELECT * FROM runtime_sandbox.check_ledger('<schema>')` on each ledger; roles that ran the functions with
-- table grants need membership in the ledger's owner role instead (docs/upgrading.md).

-- Section: check_ledger gains fix and severity columns, and a NULL schema is an error instead of no row.
-- The result type changes, so the function is dropped and created again, its grants carried over.
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.check_ledger(name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.check_ledger(name);
CREATE  FUNCTION @extschema@."check_ledger"(
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS TABLE (
	"object" TEXT,  /* String */
	"problem" TEXT,  /* String */
	"fix" TEXT,  /* Option < String > */
	"severity" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_ledger_with_fixes_wrapper';
COMMENT ON FUNCTION @extschema@.check_ledger(name) IS
'Lists what keeps a ledger schema (default runtime_scheduler) from serving the extension and the application''s SQL, one row per problem with the DDL that fixes it: severity error (the functions refuse the ledger: missing schema, enum type or labels, tables, columns, unique keys; column types, NULLs or defaults the statements cannot work with; objects owned by a role other than the schema''s owner), warning (missing index or health view: slower, or less to see) and notice (triggers, rules, policies, functions in defaults, CHECKs, domains, casts and index expressions: the functions run them as the ledger''s owner). No rows means ready. Read-only; reads only the catalogs.';
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.check_ledger(name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

-- Section: install_ledger runs only the DDL that is missing, as the schema's owner, and fails listing what
-- it could not fix; a NULL schema is an error (it was STRICT: NULL did nothing). Same arguments and result:
-- CREATE OR REPLACE keeps its OID and grants.
CREATE OR REPLACE FUNCTION @extschema@."install_ledger"(
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'install_ledger_checked_wrapper';
COMMENT ON FUNCTION @extschema@.install_ledger(name) IS
'Creates, idempotently, the sandbox ledger in ledger_schema (default runtime_scheduler): the runtime_sandbox_operation_state enum and its labels, runs, attempts, runtime_sandbox_operations, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, runtime_sandbox_capacity_leases, control, reconciliation_runs, provider_inventory_snapshots and provider_inventory_items, the columns, unique keys and indexes the application''s SQL and the reconciliation rely on, and the view reconciliation_health. Reads the catalog first and runs only what is missing, as the schema''s owner (a run with nothing to do takes no lock on any table); then checks the ledger and fails listing what it could not fix (column types, NOT NULLs, owners: the application''s data). Ordinary user tables: pg_dump keeps their data.';

-- Section: install_ledger_ddl, new: the DDL install_ledger would run, for a migration tool.
CREATE  FUNCTION @extschema@."install_ledger_ddl"(
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"concurrently" bool DEFAULT true /* Option < bool > */
) RETURNS TABLE (
	"step" INT,  /* i32 */
	"object" TEXT,  /* String */
	"statement" TEXT  /* String */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'install_ledger_ddl_wrapper';
COMMENT ON FUNCTION @extschema@.install_ledger_ddl(name, boolean) IS
'The DDL install_ledger would run on ledger_schema now, one statement per row, for a migration tool: with concurrently (the default) indexes on tables that already exist are built CREATE INDEX CONCURRENTLY, to be run outside a transaction block. No rows: nothing to do. Read-only.';

-- Section: complete_sandbox_operation_backfill, new: the rest of the backfill in the caller's transaction, for
-- migration tools that wrap a migration in one (after waiting for a backfill another session runs).
CREATE  FUNCTION @extschema@."complete_sandbox_operation_backfill"(
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"max_batches" INT DEFAULT NULL, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS @extschema@.backfill_progress /* PgHeapTuple */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'complete_sandbox_operation_backfill_wrapper';
-- advance_sandbox_operation_backfill: a max_batches outside 1..200 is now a WARNING.
COMMENT ON FUNCTION @extschema@.advance_sandbox_operation_backfill(boolean, integer, integer, name) IS
'The resumable orchestrator (the application''s advanceRuntimeSandboxOperationBackfill): applies up to max_batches pages (clamped to 1..200, as the application does, with a WARNING) from the checkpoint in <ledger_schema>.control key runtime_sandbox_operation_backfill_v1 (the application''s JSON shape), writing the checkpoint after every page; a short page completes it. dry_run previews one page with the application''s preview and writes nothing. A completed backfill stays complete.';

COMMENT ON FUNCTION @extschema@.complete_sandbox_operation_backfill(integer, integer, name) IS
'For migration tools that run each migration in a transaction: applies the rest of the operation backfill in the caller''s transaction, page by page from the checkpoint (no COMMIT), until complete or max_batches pages (NULL, the default: until complete); a NOTICE every 10 seconds. Waits first for a backfill another session runs on the ledger (the procedure, a pg_cron job; lock_timeout applies), so phase complete means the backfill is. Works where CALL run_sandbox_operation_backfill cannot: inside BEGIN ... COMMIT, and in one request of several statements.';
REVOKE EXECUTE ON FUNCTION @extschema@.complete_sandbox_operation_backfill(integer, integer, name) FROM PUBLIC;

-- Section: run_sandbox_operation_backfill refuses a transaction block at once with a HINT (its argument check,
-- _backfill_run_lock_key, now raises it), and reports progress every 10 seconds and at the end instead of a
-- NOTICE per page. Same arguments: CREATE OR REPLACE keeps its OID and the grants on it.
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
    scanned       bigint := 0;
    inserted      bigint := 0;
    started       pg_catalog.timestamptz;
    reported      pg_catalog.timestamptz;
BEGIN
    -- Bad arguments fail here, before the lock is taken or anything is written;
    -- so does a call inside a transaction block (with the fix in its HINT).
    lock_key := @extschema@._backfill_run_lock_key(batch_size, max_batches, pause, ledger_schema);
    -- Any other context where COMMIT is impossible (a CALL from a function)
    -- fails here too, not after the first page, and not while holding the lock.
    COMMIT;
    -- A session lock, so it spans the COMMITs; released at the end, and by the
    -- extension whenever a transaction of this run aborts (an error or cancel
    -- in a page or the pause, a COMMIT that fails).
    IF NOT @extschema@._backfill_run_lock(lock_key) THEN
        RAISE NOTICE 'runtime_sandbox: a sandbox operation backfill is already running on ledger %; not starting another', ledger_schema;
        RETURN;
    END IF;
    started := pg_catalog.clock_timestamp();
    reported := started;
    LOOP
        IF batch OPERATOR(pg_catalog.>) 0 AND pause OPERATOR(pg_catalog.>) '0'::pg_catalog.interval THEN
            PERFORM pg_catalog.pg_sleep_for(pause);
        END IF;
        progress := @extschema@.advance_sandbox_operation_backfill(false, batch_size, 1, ledger_schema);
        batch := batch OPERATOR(pg_catalog.+) progress.batches::integer;
        scanned := scanned OPERATOR(pg_catalog.+) progress.scanned_attempts;
        inserted := inserted OPERATOR(pg_catalog.+) progress.inserted_operations;
        COMMIT;
        EXIT WHEN progress.phase OPERATOR(pg_catalog.=) 'complete'
            OR batch OPERATOR(pg_catalog.>=) max_batches;
        -- Progress every 10 seconds, not every page (a pg_cron job's NOTICEs go to the server log).
        IF pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) reported OPERATOR(pg_catalog.>=) '10 seconds'::pg_catalog.interval THEN
            reported := pg_catalog.clock_timestamp();
            RAISE NOTICE 'runtime_sandbox backfill on ledger %: % pages, % attempts scanned, % operations inserted, cursor % (%)',
                ledger_schema, batch, scanned, inserted, progress.next_cursor, reported OPERATOR(pg_catalog.-) started;
        END IF;
    END LOOP;
    PERFORM @extschema@._backfill_run_unlock(lock_key);
    RAISE NOTICE 'runtime_sandbox backfill on ledger %: phase %, % pages, % attempts scanned, % operations inserted (%)',
        ledger_schema, progress.phase, batch, scanned, inserted, pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) started;
END
$procedure$;
COMMENT ON PROCEDURE @extschema@.run_sandbox_operation_backfill(integer, integer, interval, name) IS
'For migrations: applies the operation backfill page by page, COMMITting after each page, until complete or max_batches pages (NULL: until complete), sleeping pause between pages; a NOTICE every 10 seconds and one at the end (pages, attempts scanned, operations inserted, elapsed). Resumes from the checkpoint; cancelling loses at most the current page. A second concurrent CALL on the same ledger reports that one is running and returns (complete_sandbox_operation_backfill waits for it instead). CALL it as a statement of its own, outside a transaction block: inside one it fails at once (2D000) with a HINT.';

-- Section: the scheduling functions take the reconciliation's options and a database (pg_cron in another
-- database: schedule from there for this one); the jobs they make say what to do when the extension is gone,
-- and the reconciliation job fails when a run is blocked (run_reconciliation_job, new). Other arguments:
-- each is dropped and created again, the grants users gave on it carried over (see the header of
-- runtime_sandbox--0.1.0--0.2.0.sql).
CREATE PROCEDURE @extschema@.run_reconciliation_job(
    batch_size           integer  DEFAULT 500,
    minimum_age          interval DEFAULT '10 minutes',
    max_snapshot_age     interval DEFAULT '15 minutes',
    absent_confirmations integer  DEFAULT 2,
    max_absent_ratio     real     DEFAULT 0.5,
    ledger_schema        name     DEFAULT 'runtime_scheduler'
)
LANGUAGE plpgsql
AS $procedure$
DECLARE
    summary @extschema@.reconciliation_summary;
    reason  text;
BEGIN
    PERFORM pg_catalog.set_config('runtime_sandbox.scheduled_job', 'on', true);
    summary := @extschema@.reconcile_daytona_latest(false, batch_size, minimum_age, max_snapshot_age,
                                                    absent_confirmations, ledger_schema, max_absent_ratio);
    COMMIT;
    IF summary.status OPERATOR(pg_catalog.=) 'blocked_mass_absence' THEN
        reason := pg_catalog.format(
            '%s absent candidates among %s live operations are too many to believe (an empty or partial listing?); nothing was seeded or marked absent',
            summary.absent_candidates, summary.live_operations);
    ELSIF summary.status OPERATOR(pg_catalog.=) 'blocked_unowned_sandboxes' THEN
        reason := pg_catalog.format(
            '%s listed sandboxes are owned by no operation (first: %s); nothing was seeded or marked absent',
            pg_catalog.cardinality(summary.unmatched_provider_sandbox_ids),
            pg_catalog.left(summary.unmatched_provider_sandbox_ids[1], 100));
    ELSIF summary.status OPERATOR(pg_catalog.=) 'no_fresh_snapshot' THEN
        reason := pg_catalog.format(
            'the newest Daytona snapshot (%s) is older than max_snapshot_age; nothing was reconciled',
            coalesce(CAST(summary.snapshot_id AS pg_catalog.text), 'none'));
    END IF;
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'runtime_sandbox: scheduled reconciliation of ledger % was %: %', ledger_schema, summary.status, reason
            USING ERRCODE = '55000',
                  HINT = pg_catalog.format('The run is recorded: SELECT * FROM %I.reconciliation_health;', ledger_schema);
    END IF;
END
$procedure$;

COMMENT ON PROCEDURE @extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name) IS
'The job schedule_reconciliation creates: reconcile_daytona_latest (applying) with these options, COMMIT, then an error (SQLSTATE 55000) when the run was blocked (blocked_mass_absence, blocked_unowned_sandboxes) or found no fresh snapshot, so that pg_cron records the run as failed with its reason; the history row in <ledger_schema>.reconciliation_runs is kept. CALL it as a statement of its own (it COMMITs).';
REVOKE EXECUTE ON PROCEDURE @extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name) FROM PUBLIC;

SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.schedule_reconciliation(text, text, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.schedule_reconciliation(text, text, name);
CREATE  FUNCTION @extschema@."schedule_reconciliation"(
	"schedule" TEXT DEFAULT '*/5 * * * *', /* Option < & str > */
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"absent_confirmations" INT DEFAULT 2, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"max_snapshot_age" interval DEFAULT '15 minutes', /* Option < Interval > */
	"max_absent_ratio" real DEFAULT 0.5, /* Option < f32 > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"database" name DEFAULT NULL /* Option < Name > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'schedule_reconciliation_with_wrapper';
COMMENT ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job that reconciles the latest snapshot on schedule (a cron schedule, default every 5 minutes) with these options (CALL run_reconciliation_job: the job fails, and pg_cron records why, when a run is blocked or finds no fresh snapshot; the history row stays). database NULL: the job runs here, and the ledger is checked now; another database: call this from the database pg_cron runs in, with runtime_sandbox installed there too, and the job runs in that database. job_name NULL means reconcile_daytona:[<database>.]<ledger_schema>. A job whose database no longer has runtime_sandbox fails saying how to remove it. Returns the pg_cron job id. SQLSTATE 55000 with a hint when pg_cron runs in another database.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.unschedule_reconciliation(text, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.unschedule_reconciliation(text, name);
CREATE  FUNCTION @extschema@."unschedule_reconciliation"(
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"database" name DEFAULT NULL /* Option < Name > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'unschedule_reconciliation_in_wrapper';
COMMENT ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: reconcile_daytona:[<database>.]<ledger_schema>) that runs in database (NULL: this one). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name);
CREATE  FUNCTION @extschema@."schedule_sandbox_operation_backfill"(
	"schedule" TEXT DEFAULT '* * * * *', /* Option < & str > */
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"max_batches" INT DEFAULT NULL, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"database" name DEFAULT NULL /* Option < Name > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'schedule_sandbox_operation_backfill_in_wrapper';
COMMENT ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name, name) IS
'Creates or replaces (by name, for the calling user) a pg_cron job that runs CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => ..., max_batches => ..., ledger_schema => ...) on schedule (default every minute), in this database or (database, from the database pg_cron runs in) another one. job_name NULL means sandbox_operation_backfill:[<database>.]<ledger_schema>. Returns the pg_cron job id. SQLSTATE 55000 with a hint when pg_cron runs in another database.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name, name) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.schedule_sandbox_operation_backfill(text, text, integer, integer, name, name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.unschedule_sandbox_operation_backfill(text, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name);
CREATE  FUNCTION @extschema@."unschedule_sandbox_operation_backfill"(
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"database" name DEFAULT NULL /* Option < Name > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'unschedule_sandbox_operation_backfill_in_wrapper';
COMMENT ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name, name) IS
'Removes the calling user''s pg_cron job job_name (NULL: sandbox_operation_backfill:[<database>.]<ledger_schema>) that runs in database (NULL: this one). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name, name) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.unschedule_sandbox_operation_backfill(text, name, name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

