-- Test oracle, not used by the extension: the page preview_sandbox_operation_backfill shows,
-- as one SQL statement in the application's terms (the extension's page SQL
-- before the page moved to Rust): jsonb_array_elements and ->> per resource,
-- row_number() per identity. $1..$4 the cursor (NULL: from the oldest), $5
-- the page size, @ledger@ the quoted ledger schema. src/backfill/pg_tests.rs
-- compares the extension's pages with it; the final row is cast to text.
WITH page AS MATERIALIZED (
    SELECT attempt.run_id, attempt.attempt, attempt.updated_at, run.org_id,
           resource.ordinal::integer AS resource_ordinal, resource.value AS resource,
           row_number() OVER (ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal) AS position
    FROM @ledger@.attempts AS attempt
    JOIN @ledger@.runs AS run ON run.run_id = attempt.run_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(attempt.resource_json) = 'array'
             THEN attempt.resource_json ELSE jsonb_build_array(attempt.resource_json) END
    ) WITH ORDINALITY AS resource(value, ordinal)
    WHERE attempt.resource_json IS NOT NULL
      AND resource.value ->> 'kind' IN ('daytona_sandbox', 'modal_sandbox')
      AND NULLIF(resource.value ->> 'sandboxId', '') IS NOT NULL
      AND ($1::timestamptz IS NULL OR ((attempt.updated_at, attempt.run_id, attempt.attempt) >= ($1, $2, $3)
           AND (attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal) > ($1, $2, $3, $4)))
    ORDER BY attempt.updated_at, attempt.run_id, attempt.attempt, resource.ordinal
    LIMIT $5
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
    SELECT identified.*,
           COALESCE(identified.routing_domain, '') AS routing_domain_key,
           row_number() OVER (
               PARTITION BY identified.provider COLLATE "C", identified.sandbox_id COLLATE "C",
                            COALESCE(identified.routing_domain, '') COLLATE "C"
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
SELECT ROW(summary.scanned, 0::bigint, summary.scanned = $5,
           CASE WHEN last.run_id IS NOT NULL THEN
               ROW(last.updated_at, last.run_id, last.attempt, last.resource_ordinal)::runtime_sandbox.backfill_cursor
           END,
           summary.targets)::runtime_sandbox.backfill_page::text AS page
FROM summary LEFT JOIN last ON true
