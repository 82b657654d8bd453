-- @environment_eq@: `=`, or citext's own `=` when the operations' environment is citext.
-- The live and deleting Daytona operations of the environment reconciled
-- ($1: each statement is planned for its value, so the application's
-- partial indexes of 'production' serve it as before), as a few columns:
-- what the match, the fail-closed check and the lone live operations
-- are computed from (Rust pairs them with the inventory in hash maps,
-- src/reconcile/pairing.rs). Only current operations are read, through a
-- bitmap of the current-operations index (the shell turns off the scans that
-- read the whole table, settings.sql); the deleted history never is.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(operation_key::text, ''), array_agg(octet_length(operation_key::text)),
       string_agg(sandbox_id::text, ''), array_agg(octet_length(sandbox_id::text)),
       string_agg(routing_domain::text, ''), array_agg(octet_length(routing_domain::text)),
       array_agg(state = 'live')
FROM @ledger@.runtime_sandbox_operations
WHERE provider = 'daytona'
  AND environment @environment_eq@ $1
  AND state IN ('live', 'deleting')
