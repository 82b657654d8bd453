-- One apply per (ledger schema, provider) at a time; a second one skips
-- instead of queueing behind the first. Released at commit or rollback.
SELECT pg_catalog.pg_try_advisory_xact_lock(
    pg_catalog.hashtext('runtime_sandbox.reconcile:' || $1),
    pg_catalog.hashtext($2))
