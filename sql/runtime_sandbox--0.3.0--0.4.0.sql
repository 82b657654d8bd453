-- runtime_sandbox 0.3.0 -> 0.4.0, run by `ALTER EXTENSION runtime_sandbox UPDATE`.
--
-- The rule (as in runtime_sandbox--0.1.0--0.2.0.sql, whose header says how to write a section): every change
-- of the SQL surface ships its section in this file, so that an updated database ends with exactly the
-- catalog of a fresh install. tests/upgrade.rs checks that, from 0.1.0 through this script.
--
-- 0.4.0: the environment a reconcile works on is an argument (default 'production': every existing call and
-- every existing pg_cron job keeps its meaning). What changes for a ledger is not in this file (ledgers are
-- user tables): a ledger installed before keeps working for 'production'; `SELECT runtime_sandbox.install_ledger
-- ('<schema>')` (or the statements of install_ledger_ddl, from a migration tool) adds the environment columns of
-- reconciliation_runs and provider_inventory_snapshots, the indexes that serve other environments and the health
-- view with one row per environment (docs/upgrading.md).

-- Section: the result type gains the environment reconciled, what other environments own of the unowned
-- sandboxes, and what an apply would release and recover (a dry run counts them), appended.
ALTER TYPE @extschema@.reconciliation_summary
    ADD ATTRIBUTE environment text,
    ADD ATTRIBUTE unowned_in_other_environments jsonb,
    ADD ATTRIBUTE would_release_terminal_leases bigint,
    ADD ATTRIBUTE would_recover_reserved_operations bigint;
COMMENT ON TYPE @extschema@.reconciliation_summary IS
'The result of reconcile_daytona and reconcile_daytona_latest: the application''s reconciliation summary fields in snake_case, status (applied, planned, blocked_unowned_sandboxes, blocked_mass_absence, skipped_concurrent, no_fresh_snapshot), the per-statement diagnostics, then absent_candidates (every live operation the absence filters kept, not only the batch), live_operations (live Daytona operations of the environment), snapshot_id (the snapshot reconciled), confirming_snapshots (how many snapshots an absent operation had to be missing from), environment (the operations'' environment reconciled), unowned_in_other_environments (when blocked_unowned_sandboxes: how many of the unowned sandboxes live operations of each other environment own, {} when none), would_release_terminal_leases and would_recover_reserved_operations (what an apply on the same ledger and listing releases and recovers: a dry run counts them, read only, since the application''s dry run skips both phases and leaves released_terminal_leases and recovered_reserved_operations 0; an apply reports its own counts). NULL: not evaluated in this run.';

-- Section: the reconciles, the snapshot recording and the scheduling functions take environment, last, with
-- default 'production'. Other arguments: each is dropped and created again, the grants users gave on it carried
-- over. The library keeps the 0.3.0 symbols (reconcile_daytona_guarded_wrapper, ...) for a 0.3.0 catalog.
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real);
CREATE  FUNCTION @extschema@."reconcile_daytona"(
	"inventory" jsonb, /* Option < JsonbBytes > */
	"inventory_captured_at" timestamp with time zone, /* Option < TimestampWithTimeZone > */
	"dry_run" bool, /* Option < bool > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"max_absent_ratio" real DEFAULT 0.5, /* Option < f32 > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS @extschema@.reconciliation_summary
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reconcile_daytona_in_wrapper';
COMMENT ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text) IS
'Reconciles the operations of one environment (environment, default production: the value of the ledger''s environment columns) in the sandbox ledger in ledger_schema against one complete, label-scoped Daytona inventory (a JSON array of {sandboxId, operationKey?, routingDomain?}) captured at inventory_captured_at: releases leases of durably deleted sandboxes, recovers reserved creates by a unique operation label, fails closed on any unowned provider sandbox, seeds capacity leases for live sandboxes and marks at most batch_size absent live operations (older than minimum_age) provider-confirmed-absent. Blocks (status blocked_mass_absence, nothing seeded or marked) when the inventory is empty while live operations would be called absent, or when more than 10 absent candidates exceed max_absent_ratio (0 < ratio <= 1; 1 never blocks) of the live operations. One transaction; dry_run writes nothing. Applies are recorded in <ledger_schema>.reconciliation_runs; an overlapping apply of the same ledger and environment returns status skipped_concurrent. When blocked by unowned sandboxes that live operations of other environments own, says which (unowned_in_other_environments and a NOTICE).';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.reconcile_daytona(jsonb, timestamptz, boolean, integer, interval, name, real, text) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name);
CREATE  FUNCTION @extschema@."record_inventory_snapshot"(
	"provider" TEXT, /* Option < & str > */
	"items" jsonb, /* Option < JsonbBytes > */
	"captured_at" timestamp with time zone, /* Option < TimestampWithTimeZone > */
	"keep_last" INT DEFAULT 20, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'record_inventory_snapshot_of_wrapper';
COMMENT ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name, text) IS
'Records one complete Daytona listing of one environment (environment, default production; provider must be daytona; items as reconcile_daytona''s inventory, validated and normalized the same way) captured at captured_at (at most 5 minutes ahead of the database clock; stored no later than the moment of recording) in <ledger_schema>.provider_inventory_snapshots and provider_inventory_items, then prunes all but the newest keep_last (1..1000) snapshots of the provider and environment, never the one just recorded nor one a running reconciliation holds. Returns the snapshot id.';
REVOKE EXECUTE ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name, text) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.record_inventory_snapshot(text, jsonb, timestamptz, integer, name, text) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;
-- A listing streamed by COPY into the ledger's provider_inventory_stream (install_ledger adds it), published;
-- install_ledger names the table it now creates.
COMMENT ON FUNCTION @extschema@.install_ledger(name) IS
'Creates, idempotently, the sandbox ledger in ledger_schema (default runtime_scheduler): the runtime_sandbox_operation_state enum and its labels, runs, attempts, runtime_sandbox_operations, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, runtime_sandbox_capacity_leases, control, reconciliation_runs, provider_inventory_snapshots, provider_inventory_items and provider_inventory_stream, the columns, unique keys and indexes the application''s SQL and the reconciliation rely on, and the view reconciliation_health. Reads the catalog first and runs only what is missing, as the schema''s owner (a run with nothing to do takes no lock on any table); then checks the ledger and fails listing what it could not fix (column types, NOT NULLs, owners: the application''s data). Ordinary user tables: pg_dump keeps their data.';
CREATE  FUNCTION @extschema@."publish_inventory_snapshot"(
	"provider" TEXT, /* Option < & str > */
	"streamed_items" INT, /* Option < i32 > */
	"captured_at" timestamp with time zone, /* Option < TimestampWithTimeZone > */
	"keep_last" INT DEFAULT 20, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'publish_inventory_snapshot_of_wrapper';
COMMENT ON FUNCTION @extschema@.publish_inventory_snapshot(text, integer, timestamptz, integer, name, text) IS
'Records, as record_inventory_snapshot does, the Daytona listing this transaction streamed into <ledger_schema>.provider_inventory_stream (COPY ... (sandbox_id, routing_domain, operation_key) FROM STDIN, in listing order; streamed_items: how many rows, checked): every row checked by the inventory''s rules (the first refused is named by its element), normalized the same way, recorded as one snapshot of the environment captured at captured_at, the rows removed; then prunes as record_inventory_snapshot does. No one-value limit on the listing''s size. Returns the snapshot id.';
REVOKE EXECUTE ON FUNCTION @extschema@.publish_inventory_snapshot(text, integer, timestamptz, integer, name, text) FROM PUBLIC;
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real);
CREATE  FUNCTION @extschema@."reconcile_daytona_latest"(
	"dry_run" bool DEFAULT false, /* Option < bool > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"max_snapshot_age" interval DEFAULT '15 minutes', /* Option < Interval > */
	"absent_confirmations" INT DEFAULT 2, /* Option < i32 > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"max_absent_ratio" real DEFAULT 0.5, /* Option < f32 > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS @extschema@.reconciliation_summary
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reconcile_daytona_latest_in_wrapper';
COMMENT ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real, text) IS
'Reconciles the ledger''s operations of one environment (default production) like reconcile_daytona against the newest recorded Daytona snapshot of that environment (never another environment''s). Status no_fresh_snapshot (nothing reconciled) when there is none captured within max_snapshot_age. An operation is called absent only if missing from each of the absent_confirmations (1..100) newest snapshots and recorded before the oldest of them was captured; with fewer snapshots nothing is called absent. Applies record the snapshot in reconciliation_runs.snapshot_id and the run in provider_inventory_snapshots.reconciled_run_id. The mass-absence valve (max_absent_ratio) as in reconcile_daytona. Meant for pg_cron (schedule_reconciliation).';
REVOKE EXECUTE ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real, text) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real, text) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name);
CREATE  FUNCTION @extschema@."schedule_reconciliation"(
	"schedule" TEXT DEFAULT '*/5 * * * *', /* Option < & str > */
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"absent_confirmations" INT DEFAULT 2, /* Option < i32 > */
	"minimum_age" interval DEFAULT '10 minutes', /* Option < Interval > */
	"max_snapshot_age" interval DEFAULT '15 minutes', /* Option < Interval > */
	"max_absent_ratio" real DEFAULT 0.5, /* Option < f32 > */
	"batch_size" INT DEFAULT 500, /* Option < i32 > */
	"database" name DEFAULT NULL, /* Option < Name > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'schedule_reconciliation_of_wrapper';
COMMENT ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name, text) IS
'Creates or replaces (by name, for the calling user) a pg_cron job that reconciles the latest snapshot of environment (default production) on schedule (a cron schedule, default every 5 minutes) with these options (CALL run_reconciliation_job, or run_reconciliation_job_in_environment for another environment: the job fails, and pg_cron records why, when a run is blocked or finds no fresh snapshot; the history row stays). database NULL: the job runs here, and the ledger is checked now; another database: call this from the database pg_cron runs in, with runtime_sandbox installed there too, and the job runs in that database. job_name NULL means reconcile_daytona:[<database>.]<ledger_schema>, with :<environment> appended for an environment other than production. A job whose database no longer has runtime_sandbox fails saying how to remove it. Returns the pg_cron job id. SQLSTATE 55000 with a hint when pg_cron runs in another database.';
REVOKE EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name, text) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.schedule_reconciliation(text, text, name, integer, interval, interval, real, integer, name, text) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.unschedule_reconciliation(text, name, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DROP FUNCTION @extschema@.unschedule_reconciliation(text, name, name);
CREATE  FUNCTION @extschema@."unschedule_reconciliation"(
	"job_name" TEXT DEFAULT NULL, /* Option < & str > */
	"ledger_schema" name DEFAULT 'runtime_scheduler', /* Option < Name > */
	"database" name DEFAULT NULL, /* Option < Name > */
	"environment" TEXT DEFAULT 'production' /* Option < & str > */
) RETURNS bool
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'unschedule_reconciliation_of_wrapper';
COMMENT ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name, text) IS
'Removes the calling user''s pg_cron job job_name (NULL: reconcile_daytona:[<database>.]<ledger_schema>, with :<environment> appended for an environment other than production) that runs in database (NULL: this one). True when a job was removed, false when there was none.';
REVOKE EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name, text) FROM PUBLIC;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.unschedule_reconciliation(text, name, name, text) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

-- Section: the scheduled job of an environment other than production (new), and the production job of earlier
-- releases, whose pg_cron commands name run_reconciliation_job(integer, interval, interval, integer, real, name),
-- now a call of it for 'production' (same arguments: CREATE OR REPLACE keeps its OID and grants). Whoever may
-- run the old procedure may run the new one (a role that runs the jobs keeps working).
CREATE PROCEDURE @extschema@.run_reconciliation_job_in_environment(
    environment          text     DEFAULT 'production',
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
    owners  text;
BEGIN
    PERFORM pg_catalog.set_config('runtime_sandbox.scheduled_job', 'on', true);
    summary := @extschema@.reconcile_daytona_latest(false, batch_size, minimum_age, max_snapshot_age,
                                                    absent_confirmations, ledger_schema, max_absent_ratio, environment);
    COMMIT;
    IF summary.status OPERATOR(pg_catalog.=) 'blocked_mass_absence' THEN
        reason := pg_catalog.format(
            '%s absent candidates among %s live operations are too many to believe (an empty or partial listing?); nothing was seeded or marked absent',
            summary.absent_candidates, summary.live_operations);
    ELSIF summary.status OPERATOR(pg_catalog.=) 'blocked_unowned_sandboxes' THEN
        SELECT pg_catalog.string_agg(pg_catalog.format('%s in %L', owned.value, owned.key), ', ')
          INTO owners
          FROM pg_catalog.jsonb_each_text(summary.unowned_in_other_environments) AS owned;
        reason := pg_catalog.format(
            '%s listed sandboxes are owned by no operation of environment %L (first: %s); nothing was seeded or marked absent%s',
            pg_catalog.cardinality(summary.unmatched_provider_sandbox_ids), environment,
            pg_catalog.left(summary.unmatched_provider_sandbox_ids[1], 100),
            CASE WHEN owners IS NULL THEN ''
                 ELSE pg_catalog.format(' (live operations of other environments own some of them: %s)', owners) END);
    ELSIF summary.status OPERATOR(pg_catalog.=) 'no_fresh_snapshot' THEN
        reason := pg_catalog.format(
            'the newest Daytona snapshot of environment %L (%s) is older than max_snapshot_age; nothing was reconciled',
            environment, coalesce(CAST(summary.snapshot_id AS pg_catalog.text), 'none'));
    END IF;
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'runtime_sandbox: scheduled reconciliation of ledger % was %: %', ledger_schema, summary.status, reason
            USING ERRCODE = '55000',
                  HINT = pg_catalog.format('The run is recorded: SELECT * FROM %I.reconciliation_health;', ledger_schema);
    END IF;
END
$procedure$;

COMMENT ON PROCEDURE @extschema@.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name) IS
'The job schedule_reconciliation creates for an environment other than production: reconcile_daytona_latest (applying) of that environment with these options, COMMIT, then an error (SQLSTATE 55000) when the run was blocked (blocked_mass_absence, blocked_unowned_sandboxes) or found no fresh snapshot, so that pg_cron records the run as failed with its reason; the history row in <ledger_schema>.reconciliation_runs is kept. CALL it as a statement of its own (it COMMITs).';
REVOKE EXECUTE ON PROCEDURE @extschema@.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name) FROM PUBLIC;
SELECT pg_catalog.set_config('runtime_sandbox.grantees', coalesce(pg_catalog.string_agg(
           pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text), ', '), ''), true)
  FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name)'::pg_catalog.regprocedure
   AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) 0
   AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON PROCEDURE @extschema@.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

-- The job of production, as earlier releases scheduled it (their jobs name
-- this signature): run_reconciliation_job_in_environment for 'production'.
CREATE OR REPLACE PROCEDURE @extschema@.run_reconciliation_job(
    batch_size           integer  DEFAULT 500,
    minimum_age          interval DEFAULT '10 minutes',
    max_snapshot_age     interval DEFAULT '15 minutes',
    absent_confirmations integer  DEFAULT 2,
    max_absent_ratio     real     DEFAULT 0.5,
    ledger_schema        name     DEFAULT 'runtime_scheduler'
)
LANGUAGE plpgsql
AS $procedure$
BEGIN
    CALL @extschema@.run_reconciliation_job_in_environment('production', batch_size, minimum_age, max_snapshot_age,
                                                           absent_confirmations, max_absent_ratio, ledger_schema);
END
$procedure$;

COMMENT ON PROCEDURE @extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name) IS
'The job schedule_reconciliation creates for environment production: run_reconciliation_job_in_environment(''production'', ...): reconcile_daytona_latest (applying) with these options, COMMIT, then an error (SQLSTATE 55000) when the run was blocked (blocked_mass_absence, blocked_unowned_sandboxes) or found no fresh snapshot, so that pg_cron records the run as failed with its reason; the history row in <ledger_schema>.reconciliation_runs is kept. CALL it as a statement of its own (it COMMITs).';

-- Section: check_ledger names, in a new last column breaks, the functions each problem refuses (an error
-- refuses the functions that work on its table; the others run). The result type changes, so the function
-- is dropped and created again, its grants carried over; the first four columns are as before.
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
	"severity" TEXT,  /* String */
	"breaks" TEXT[]  /* Vec < String > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_ledger_with_breaks_wrapper';
COMMENT ON FUNCTION @extschema@.check_ledger(name) IS
'Lists what keeps a ledger schema (default runtime_scheduler) from serving the extension and the application''s SQL, one row per problem with the DDL that fixes it and, in breaks, the functions it refuses: severity error (the functions that work on the table concerned refuse the ledger, the others run: missing schema, enum type or labels, tables, columns, unique keys; column types, NULLs or defaults the statements cannot work with; objects owned by a role other than the schema''s owner), warning (missing index or health view: slower, or less to see) and notice (triggers, rules, policies, functions in defaults, CHECKs, domains, casts and index expressions: the functions run them as the ledger''s owner). No rows means ready. Read-only; reads only the catalogs.';
DO $$ BEGIN
  IF pg_catalog.current_setting('runtime_sandbox.grantees') OPERATOR(pg_catalog.<>) '' THEN
    EXECUTE pg_catalog.concat('GRANT EXECUTE ON FUNCTION @extschema@.check_ledger(name) TO ',
            pg_catalog.current_setting('runtime_sandbox.grantees'));
  END IF;
END $$;

-- Section: ledger_readiness, per capability: whether each function can run on a ledger, and the check_ledger
-- errors that refuse it.
CREATE  FUNCTION @extschema@."ledger_readiness"(
	"ledger_schema" name DEFAULT 'runtime_scheduler' /* Option < Name > */
) RETURNS TABLE (
	"function" TEXT,  /* String */
	"ready" bool,  /* bool */
	"refused_for" TEXT[]  /* Vec < String > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ledger_readiness_wrapper';
COMMENT ON FUNCTION @extschema@.ledger_readiness(name) IS
'Per capability of the extension on a ledger schema (default runtime_scheduler), one row per function as check_ledger''s breaks names it (reconcile_daytona (dry run), reconcile_daytona (apply), ..., the backfill functions): ready, and in refused_for the check_ledger errors that refuse it (object: problem). A function is ready when no error concerns a table it works on; the others run whatever the rest of the ledger lacks. Read-only; reads only the catalogs.';
