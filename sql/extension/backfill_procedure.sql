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
REVOKE EXECUTE ON PROCEDURE @extschema@.run_sandbox_operation_backfill(integer, integer, interval, name) FROM PUBLIC;
