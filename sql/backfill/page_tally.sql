-- The page's counts, targets (in keyset order) and last resource, for the
-- page row and the dry run's progress row. Needs a `resources` CTE with
-- would_insert.
summary AS (
    SELECT count(*) AS scanned,
           count(*) FILTER (WHERE resources.would_insert) AS projected,
           COALESCE(array_agg(ROW(resources.run_id, resources.attempt, resources.resource_ordinal,
                                  resources.provider, resources.sandbox_id, resources.would_insert
                              )::runtime_sandbox.backfill_target
                              ORDER BY resources.position),
                    '{}') AS targets
    FROM resources
), last AS (
    SELECT resources.updated_at, resources.run_id, resources.attempt, resources.resource_ordinal
    FROM resources
    ORDER BY resources.position DESC
    LIMIT 1
)
