-- The page's resources without writing: would_insert when the resource wins
-- its identity and no operation has that identity yet. Only the page itself
-- (a dry run fetches one row more, to know whether more follow).
resources AS (
    SELECT ranked.*,
           ranked.conflict_rank = 1 AND NOT EXISTS (
               SELECT 1 FROM @ledger@.runtime_sandbox_operations AS operation
               WHERE operation.provider = ranked.provider
                 AND operation.sandbox_id = ranked.sandbox_id
                 AND operation.routing_domain_key = ranked.routing_domain_key
           ) AS would_insert
    FROM ranked
    WHERE ranked.position <= $5
)