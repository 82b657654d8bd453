-- advance_sandbox_operation_backfill(dry_run => true): the application's own
-- preview, kept as it is so both report the same: attempts are not joined to
-- runs (an attempt without a run is previewed, though applying skips it), and
-- one row beyond the page makes has_more exact. The window ranks only the
-- fetched rows: every earlier resource of an identity is in that prefix, so
-- the ranks equal the application's ranks over everything after the cursor,
-- without reading everything after the cursor.
-- The page resources with a LEFT JOIN to runs and a limit of $5 + 1; $5 is the
-- page size.
WITH @page_resources@,
@unwritten_resources@,
@page_tally@
-- The application reports one batch when the page had rows.
SELECT ROW('pending', true, CASE WHEN summary.scanned > 0 THEN 1 ELSE 0 END,
           summary.scanned, 0, summary.projected, summary.targets,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END)::runtime_sandbox.backfill_progress
FROM summary LEFT JOIN last ON true
