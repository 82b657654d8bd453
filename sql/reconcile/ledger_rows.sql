-- Everything the match, fail-closed check and capacity inspection read, in
-- one statement over one snapshot, as a few columns of arrays: live and
-- deleting production Daytona operations; Daytona capacity leases; durably
-- deleted Daytona cleanups. Rust pairs them with the inventory in hash maps
-- (src/reconcile/pairing.rs): one sequential scan per table, no per-item
-- work in SQL, no join the planner has to estimate against the inventory.
SELECT operation.keys, operation.sandbox_ids, operation.routing_domains, operation.live,
       lease.sandbox_ids, lease.routing_domains,
       terminal.sandbox_ids, terminal.routing_domains
FROM (
    SELECT array_agg(operation_key) AS keys, array_agg(sandbox_id) AS sandbox_ids,
           array_agg(routing_domain) AS routing_domains, array_agg(state = 'live') AS live
    FROM @ledger@.runtime_sandbox_operations
    WHERE provider = 'daytona'
      AND environment = 'production'
      AND state IN ('live', 'deleting')
) AS operation, (
    SELECT array_agg(sandbox_id) AS sandbox_ids, array_agg(routing_domain) AS routing_domains
    FROM @ledger@.runtime_sandbox_capacity_leases
    WHERE provider = 'daytona'
      AND sandbox_id IS NOT NULL
) AS lease, (
    SELECT array_agg(sandbox_id) AS sandbox_ids, array_agg(routing_domain) AS routing_domains
    FROM @ledger@.sandbox_cleanup_jobs_v2
    WHERE provider = 'daytona'
      AND status = 'deleted'
      AND deleted_at IS NOT NULL
) AS terminal
