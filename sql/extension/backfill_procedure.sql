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
