-- A backfill page's first attempts, oldest first (keyset order), with their
-- run's org_id and whether they have a run: the first page of a backfill.
-- @fetch@ is how many attempts, a literal: one kept plan per fetch size, planned
-- for that LIMIT, which keeps the scan on attempts_backfill_keyset_idx (with a
-- parameter the plan cache would plan for a tenth of the table, or replan every
-- page). Each attempt's run is looked up in a LATERAL subquery (OFFSET 0 keeps
-- it one): a join the planner could turn into a hash join scanning all of runs
-- on every page. Siblings: attempts_from_start, attempts_from_cursor,
-- attempts_after (the same statement from another keyset position).
-- Every column is read as the type the page reads in binary (the ledger's
-- own columns may be varchar, bigint, timestamp, json or uuid); run_id as its
-- own text (concat: a char(n) keeps its blanks, as the application reads it).
SELECT attempt.updated_at::timestamptz, pg_catalog.concat(attempt.run_id), attempt.attempt::integer, run.org_id::text,
       attempt.resource_json::jsonb, run.found IS NOT NULL AS has_run
FROM (
    SELECT attempt.updated_at, attempt.run_id, attempt.attempt, attempt.resource_json
    FROM @ledger@.attempts AS attempt
    WHERE attempt.resource_json IS NOT NULL
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt
    LIMIT @fetch@
) AS attempt
LEFT JOIN LATERAL (
    SELECT run.org_id, true AS found
    FROM @ledger@.runs AS run
    WHERE run.run_id = attempt.run_id
    OFFSET 0
) AS run ON true
ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt
