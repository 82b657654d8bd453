-- The page as one row: the backfill_page value plus its parts for the
-- orchestrator (next cursor with its exact timestamptz text for the
-- checkpoint). Needs a `resources` CTE with would_insert; the shell
-- substitutes the inserted count and the targets (page_targets.sql, or an
-- empty array for the orchestrator, which reports no targets when applying). $5 is the page size: a full page reports has_more.
summary AS (
    SELECT count(*) AS scanned, @targets@ AS targets
    FROM resources
), last AS (
    SELECT resources.updated_at, resources.run_id, resources.attempt, resources.resource_ordinal
    FROM resources
    ORDER BY resources.position DESC
    LIMIT 1
), counted AS (
    SELECT summary.scanned, @inserted@ AS inserted, summary.scanned = $5 AS has_more, summary.targets
    FROM summary
)
SELECT ROW(counted.scanned, counted.inserted, counted.has_more,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END,
           counted.targets)::runtime_sandbox.backfill_page AS page,
       counted.scanned,
       counted.inserted,
       counted.has_more,
       last.updated_at AS next_updated_at,
       last.updated_at::text AS next_updated_at_text,
       last.run_id AS next_run_id,
       last.attempt AS next_attempt,
       last.resource_ordinal AS next_resource_ordinal
FROM counted LEFT JOIN last ON true
