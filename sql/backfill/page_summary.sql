-- The page as one backfill_page row. Needs a `resources` CTE with
-- would_insert; the shell substitutes the inserted count. $5 is the page
-- size: a full page reports has_more.
summary AS (
    SELECT count(*) AS scanned,
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
SELECT ROW(summary.scanned, @inserted@, summary.scanned = $5,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END,
           summary.targets)::runtime_sandbox.backfill_page AS page
FROM summary LEFT JOIN last ON true
