-- The open Daytona leases bound to a sandbox (lease id, sandbox, routing
-- domain), through a bitmap of the partial index of open leases (the shell
-- turns off whole-table scans, settings.sql): the current fleet's, whatever
-- the history. Their runs are not read: release_terminal_capacity.sql
-- compares them for the few with a deleted cleanup of their identity.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(lease_id::text, ''), array_agg(octet_length(lease_id::text)),
       string_agg(sandbox_id::text, ''), array_agg(octet_length(sandbox_id::text)),
       string_agg(routing_domain::text, ''), array_agg(octet_length(routing_domain::text))
FROM @ledger@.runtime_sandbox_capacity_leases
WHERE provider = 'daytona'
  AND sandbox_id IS NOT NULL
  AND released_at IS NULL
