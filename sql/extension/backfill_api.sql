-- Backfill paging: what each function is for, and who may run it (nothing that writes is granted to
-- PUBLIC; _backfill_run_lock_key, _lock and _unlock are internal to the procedure).
COMMENT ON FUNCTION @extschema@.backfill_sandbox_operations(integer, @extschema@.backfill_cursor, name) IS
'Applies one keyset page (batch_size 1..1000 sandbox resources after the cursor `after`, NULL: from the oldest) of the operation backfill: inserts the first modal_sandbox/daytona_sandbox resource of each (provider, sandbox id, routing domain) as a live runtime_sandbox_operations row with key backfill:<provider>:<sandboxId>:<routing domain>; existing operations are never changed. Attempts without a run are skipped. has_more is true on a full page. The application''s backfillRuntimeSandboxOperationsFromAttemptResources.';
REVOKE EXECUTE ON FUNCTION @extschema@.backfill_sandbox_operations(integer, @extschema@.backfill_cursor, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.preview_sandbox_operation_backfill(integer, @extschema@.backfill_cursor, name) IS
'The page backfill_sandbox_operations would apply with the same arguments, without writing: same resources, has_more and next_cursor; would_insert marks the first resource of an identity no operation has yet; inserted_operations is 0.';

COMMENT ON FUNCTION @extschema@.advance_sandbox_operation_backfill(boolean, integer, integer, name) IS
'The resumable orchestrator (the application''s advanceRuntimeSandboxOperationBackfill): applies up to max_batches pages (clamped to 1..200, as the application does, with a WARNING) from the checkpoint in <ledger_schema>.control key runtime_sandbox_operation_backfill_v1 (the application''s JSON shape), writing the checkpoint after every page; a short page completes it. dry_run previews one page with the application''s preview and writes nothing. A completed backfill stays complete.';
REVOKE EXECUTE ON FUNCTION @extschema@.advance_sandbox_operation_backfill(boolean, integer, integer, name) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.complete_sandbox_operation_backfill(integer, integer, name) IS
'For migration tools that run each migration in a transaction: applies the rest of the operation backfill in the caller''s transaction, page by page from the checkpoint (no COMMIT), until complete or max_batches pages (NULL, the default: until complete); a NOTICE every 10 seconds. Waits first for a backfill another session runs on the ledger (the procedure, a pg_cron job; lock_timeout applies), so phase complete means the backfill is. Works where CALL run_sandbox_operation_backfill cannot: inside BEGIN ... COMMIT, and in one request of several statements.';
REVOKE EXECUTE ON FUNCTION @extschema@.complete_sandbox_operation_backfill(integer, integer, name) FROM PUBLIC;

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
