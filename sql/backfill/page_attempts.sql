-- The attempts of the orchestrator's applied page, in keyset order, with
-- their run's org_id and whether they have a run (the shell skips those
-- without, as the JOIN in page_resources.sql does; a LEFT JOIN above the
-- LIMIT keeps the join's plan sized for the fetch). The shell expands the
-- resources (resources.rs) and substitutes the quoted ledger schema and the
-- keyset condition: nothing for the first page, `>= ($1, $2, $3)` from the
-- page's cursor (the shell drops the cursor's own resources up to its
-- ordinal), `> ($1, $2, $3)` after the last attempt of a fetch that did not
-- fill the page; and @fetch@, how many attempts to fetch (a literal: the
-- shell keeps one plan per fetch size, and the LIMIT keeps it on the index).
SELECT attempt.updated_at, attempt.run_id, attempt.attempt, run.org_id, attempt.resource_json,
       run.run_id IS NOT NULL AS has_run
FROM (
    SELECT attempt.updated_at, attempt.run_id, attempt.attempt, attempt.resource_json
    FROM @ledger@.attempts AS attempt
    WHERE attempt.resource_json IS NOT NULL
      @after@
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt
    LIMIT @fetch@
) AS attempt
LEFT JOIN @ledger@.runs AS run ON run.run_id = attempt.run_id
ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt
