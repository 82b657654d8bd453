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
