-- The migration procedure: loops the one-page orchestrator and COMMITs after
-- every page. PL/pgSQL, because only a procedure can COMMIT mid-call; no SET
-- clause and no SECURITY DEFINER (either would forbid COMMIT), so every name
-- and operator is schema-qualified instead.
CREATE PROCEDURE @extschema@.run_sandbox_operation_backfill(
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

COMMENT ON PROCEDURE @extschema@.run_sandbox_operation_backfill(integer, integer, interval, name) IS
'For migrations: applies the operation backfill page by page, COMMITting after each page and raising a NOTICE per page (batch, scanned, inserted, cursor, elapsed), until complete or max_batches pages (NULL: until complete), sleeping pause between pages. Resumes from the checkpoint; cancelling loses at most the current page. A second concurrent CALL on the same ledger reports that one is running and returns. CALL it outside a transaction block.';
REVOKE EXECUTE ON PROCEDURE @extschema@.run_sandbox_operation_backfill(integer, integer, interval, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.backfill_sandbox_operations(integer, @extschema@.backfill_cursor, name) IS
'Applies one keyset page (batch_size 1..1000 sandbox resources after the cursor `after`, NULL: from the oldest) of the operation backfill: inserts the first modal_sandbox/daytona_sandbox resource of each (provider, sandbox id, routing domain) as a live runtime_sandbox_operations row with key backfill:<provider>:<sandboxId>:<routing domain>; existing operations are never changed. Attempts without a run are skipped. has_more is true on a full page. The application''s backfillRuntimeSandboxOperationsFromAttemptResources.';
REVOKE EXECUTE ON FUNCTION @extschema@.backfill_sandbox_operations(integer, @extschema@.backfill_cursor, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.preview_sandbox_operation_backfill(integer, @extschema@.backfill_cursor, name) IS
'The page backfill_sandbox_operations would apply with the same arguments, without writing: same resources, has_more and next_cursor; would_insert marks the first resource of an identity no operation has yet; inserted_operations is 0.';

COMMENT ON FUNCTION @extschema@.advance_sandbox_operation_backfill(boolean, integer, integer, name) IS
'The resumable orchestrator (the application''s advanceRuntimeSandboxOperationBackfill): applies up to max_batches pages (clamped to 1..200) from the checkpoint in <ledger_schema>.control key runtime_sandbox_operation_backfill_v1 (the application''s JSON shape), writing the checkpoint after every page; a short page completes it. dry_run previews one page with the application''s preview and writes nothing. A completed backfill stays complete.';
REVOKE EXECUTE ON FUNCTION @extschema@.advance_sandbox_operation_backfill(boolean, integer, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.backfill_status(name) IS
'The backfill checkpoint at a glance: phase (pending or complete), the cursor the next page starts after, and the attempts after it (an upper bound; 0 when complete).';

COMMENT ON FUNCTION @extschema@._backfill_run_lock_key(integer, integer, interval, name) IS
'Internal to run_sandbox_operation_backfill: checks its arguments and returns the session advisory-lock key of the ledger''s backfill run.';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_lock_key(integer, integer, interval, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@._backfill_run_lock(bigint) IS
'Internal to run_sandbox_operation_backfill: takes the ledger''s run lock (a session advisory lock; false when another session holds it) and releases it if a transaction of the run aborts.';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_lock(bigint) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@._backfill_run_unlock(bigint) IS
'Internal to run_sandbox_operation_backfill: releases the run lock _backfill_run_lock took (false when it was not held).';
REVOKE EXECUTE ON FUNCTION @extschema@._backfill_run_unlock(bigint) FROM PUBLIC;
