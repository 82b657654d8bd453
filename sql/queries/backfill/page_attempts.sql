-- The next attempts of a backfill page, in keyset order, with their run's
-- org_id and whether they have a run. The shell (src/backfill/shell.rs)
-- substitutes the quoted ledger schema, the keyset condition (nothing for the
-- first page, `>= ($1, $2, $3)` from the page's cursor, `> ($1, $2, $3)` after
-- the last attempt of a fetch that did not fill the page) and @fetch@, how
-- many attempts (a literal: one kept plan per fetch size, and the LIMIT keeps
-- the scan on attempts_backfill_keyset_idx). The run is looked up per fetched
-- attempt in a LATERAL subquery (OFFSET 0 keeps it one): a join the planner
-- could turn into a hash join scanning all of runs on every page.
SELECT attempt.updated_at, attempt.run_id, attempt.attempt, run.org_id, attempt.resource_json,
       run.found IS NOT NULL AS has_run
FROM (
    SELECT attempt.updated_at, attempt.run_id, attempt.attempt, attempt.resource_json
    FROM @ledger@.attempts AS attempt
    WHERE attempt.resource_json IS NOT NULL
      @after@
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
