-- The page as one backfill_page row. Needs a `resources` CTE with
-- would_insert; the shell substitutes the inserted count. $5 is the page
-- size: a full page reports has_more.
@page_tally@
SELECT ROW(summary.scanned, @inserted@, summary.scanned = $5,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END,
           summary.targets)::runtime_sandbox.backfill_page AS page
FROM summary LEFT JOIN last ON true
