-- advance_sandbox_operation_backfill(dry_run => true): the application's own
-- preview, kept as it is so both report the same: attempts are not joined to
-- runs (an attempt without a run is previewed, though applying skips it), and
-- one row beyond the page makes has_more exact. The window ranks only the
-- fetched rows: every earlier resource of an identity is in that prefix, so
-- the ranks equal the application's ranks over everything after the cursor,
-- without reading everything after the cursor.
-- Placeholders as in the page resources; $5 is the page size.
WITH page AS MATERIALIZED (
    SELECT attempt.run_id, attempt.attempt, attempt.updated_at,
           resource.ordinal::integer AS resource_ordinal, resource.value AS resource,
           row_number() OVER (ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal) AS position
    FROM @ledger@.attempts AS attempt
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(attempt.resource_json) = 'array'
             THEN attempt.resource_json ELSE jsonb_build_array(attempt.resource_json) END
    ) WITH ORDINALITY AS resource(value, ordinal)
    WHERE attempt.resource_json IS NOT NULL
      AND resource.value ->> 'kind' IN ('daytona_sandbox', 'modal_sandbox')
      AND NULLIF(resource.value ->> 'sandboxId', '') IS NOT NULL
      @after@
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal
    LIMIT $5 + 1
), identified AS (
    SELECT page.run_id, page.attempt, page.updated_at, page.resource_ordinal, page.position,
           CASE page.resource ->> 'kind' WHEN 'modal_sandbox' THEN 'modal' ELSE 'daytona' END AS provider,
           page.resource ->> 'sandboxId' AS sandbox_id,
           COALESCE(CASE page.resource ->> 'kind'
               WHEN 'modal_sandbox' THEN NULLIF(page.resource ->> 'modalAppId', '')
               ELSE NULLIF(page.resource ->> 'daytonaOrganizationId', '') END, '') AS routing_domain_key
    FROM page
), ranked AS (
    SELECT identified.*,
           row_number() OVER (
               PARTITION BY identified.provider COLLATE "C", identified.sandbox_id COLLATE "C",
                            identified.routing_domain_key COLLATE "C"
               ORDER BY identified.position
           ) AS conflict_rank
    FROM identified
), resources AS (
    SELECT ranked.*,
           ranked.conflict_rank = 1 AND NOT EXISTS (
               SELECT 1 FROM @ledger@.runtime_sandbox_operations AS operation
               WHERE operation.provider = ranked.provider
                 AND operation.sandbox_id = ranked.sandbox_id
                 AND operation.routing_domain_key = ranked.routing_domain_key
           ) AS would_insert
    FROM ranked
    WHERE ranked.position <= $5
), summary AS (
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
-- The application reports one batch when the page had rows.
SELECT ROW('pending', true, CASE WHEN summary.scanned > 0 THEN 1 ELSE 0 END,
           summary.scanned, 0, summary.projected, summary.targets,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END)::runtime_sandbox.backfill_progress
FROM summary LEFT JOIN last ON true
