-- The applied page without writes: the same resources; would_insert when the
-- resource wins its identity and no operation has that identity yet.
WITH @page_resources@,
resources AS (
    SELECT ranked.*,
           ranked.conflict_rank = 1 AND NOT EXISTS (
               SELECT 1 FROM @ledger@.runtime_sandbox_operations AS operation
               WHERE operation.provider = ranked.provider
                 AND operation.sandbox_id = ranked.sandbox_id
                 AND operation.routing_domain_key = ranked.routing_domain_key
           ) AS would_insert
    FROM ranked
), @page_summary@
