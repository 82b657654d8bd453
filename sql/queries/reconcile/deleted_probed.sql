-- The durably deleted Daytona cleanups (sandbox, routing domain, run) of the
-- sandboxes $1 (distinct), when history makes them many: a probe per
-- sandbox, through the bytewise partial index install_ledger creates (the
-- second equality lets a ledger without it use its own index; both mean the
-- same in a deterministic collation). OFFSET 0 keeps the lateral from
-- becoming a join over the whole table.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(cleanup.sandbox_id::text, ''), array_agg(octet_length(cleanup.sandbox_id::text)),
       string_agg(cleanup.routing_domain::text, ''), array_agg(octet_length(cleanup.routing_domain::text)),
       string_agg(cleanup.run_id::text, ''), array_agg(octet_length(cleanup.run_id::text))
FROM unnest($1::text[]) AS probe(sandbox_id)
CROSS JOIN LATERAL (
    SELECT cleanup.sandbox_id, cleanup.routing_domain, cleanup.run_id
    FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
    WHERE cleanup.provider = 'daytona'
      AND cleanup.sandbox_id COLLATE "C" = probe.sandbox_id
      AND cleanup.sandbox_id = probe.sandbox_id
      AND cleanup.status = 'deleted'
      AND cleanup.deleted_at IS NOT NULL
    OFFSET 0
) AS cleanup
