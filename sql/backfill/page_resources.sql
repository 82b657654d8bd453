-- The resources of one backfill page, in keyset order (shared by the applied
-- page and its preview). The shell substitutes the quoted ledger schema and
-- the keyset condition after the cursor ($1 updated_at, $2 run_id, $3 attempt,
-- $4 ordinal; nothing for the first page); $5 is the page size. Two more
-- placeholders tell the applied page from the application's own dry-run
-- preview: the join to runs (JOIN: only attempts with a run; LEFT JOIN: every
-- attempt) and the limit ($5, or $5 + 1 for an exact has_more).
--
-- The first row condition is the index's own keyset, so the scan starts at the
-- cursor in attempts_backfill_keyset_idx instead of expanding every earlier
-- attempt (the application compares the 4-column row only, which no index can
-- serve); the second drops resources of the cursor's own attempt at or before
-- its ordinal. JSON is expanded only for attempts the scan reaches.
-- `position` numbers the page in keyset order while it streams out of the
-- sort, so later steps order by one integer instead of four keys.
page AS MATERIALIZED (
    SELECT attempt.run_id, attempt.attempt, attempt.updated_at, run.org_id,
           resource.ordinal::integer AS resource_ordinal, resource.value AS resource,
           row_number() OVER (ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal) AS position
    FROM @ledger@.attempts AS attempt
    @runs_join@ @ledger@.runs AS run ON run.run_id = attempt.run_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(attempt.resource_json) = 'array'
             THEN attempt.resource_json ELSE jsonb_build_array(attempt.resource_json) END
    ) WITH ORDINALITY AS resource(value, ordinal)
    WHERE attempt.resource_json IS NOT NULL
      AND resource.value ->> 'kind' IN ('daytona_sandbox', 'modal_sandbox')
      AND NULLIF(resource.value ->> 'sandboxId', '') IS NOT NULL
      @after@
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal
    LIMIT @page_limit@
), identified AS (
    SELECT page.run_id, page.attempt, page.updated_at, page.org_id, page.resource_ordinal, page.position,
           CASE page.resource ->> 'kind' WHEN 'modal_sandbox' THEN 'modal' ELSE 'daytona' END AS provider,
           page.resource ->> 'sandboxId' AS sandbox_id,
           CASE page.resource ->> 'kind'
               WHEN 'modal_sandbox' THEN NULLIF(page.resource ->> 'modalAppId', '')
               ELSE NULLIF(page.resource ->> 'daytonaOrganizationId', '') END AS routing_domain,
           COALESCE(NULLIF(page.resource ->> 'runtimeEnvironment', ''),
                    NULLIF(page.resource ->> 'daytonaEnvironment', ''), 'production') AS environment
    FROM page
), ranked AS (
    -- The first resource of each sandbox identity in keyset order wins. The
    -- identity is grouped bytewise (COLLATE "C"): equality is the same as in
    -- any deterministic collation, and grouping skips locale comparisons.
    SELECT identified.*,
           COALESCE(identified.routing_domain, '') AS routing_domain_key,
           row_number() OVER (
               PARTITION BY identified.provider COLLATE "C", identified.sandbox_id COLLATE "C",
                            COALESCE(identified.routing_domain, '') COLLATE "C"
               ORDER BY identified.position
           ) AS conflict_rank
    FROM identified
)
