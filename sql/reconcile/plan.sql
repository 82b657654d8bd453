-- Everything the application reads between recovery and its first write, in
-- one statement over one snapshot: match, fail-closed check, absent
-- candidates, capacity inspection and the rows to seed. Run with nested loops and merge joins
-- off (see settings.sql): the planner cannot estimate joins against the
-- unnested inventory and would otherwise pick nested loops that are
-- quadratic in it.
--   $1 sandbox ids, $2 routing domains (the normalized inventory)
--   $3 owned: the item carries the unique label of a reserved create
--   $4 inventory_captured_at, $5 minimum_age, $6 batch_size + 1
WITH pairing AS MATERIALIZED (
    -- Inventory items and live or deleting production operations, paired by
    -- identity in one hash full join: a pair is a match, a lone item may be
    -- unowned, a lone live operation may be absent. The identity key is
    -- unique per provider, so each item meets at most one operation (an
    -- operation may meet several items, one row each, as the application
    -- counts them). Item routing domains are never '' (blank became NULL), so
    -- the key plus NULL-ness is exactly IS NOT DISTINCT FROM, in hashable form.
    SELECT item.ordinality, item.owned, item.sandbox_id AS item_sandbox_id,
           operation.operation_key, operation.sandbox_id, operation.routing_domain, operation.state,
           operation.provider_created_at, operation.run_id, operation.attempt, operation.environment,
           operation.org_id
    FROM unnest($1::text[], $2::text[], $3::boolean[])
             WITH ORDINALITY AS item(sandbox_id, routing_domain, owned, ordinality)
    FULL JOIN (
        SELECT *
        FROM @ledger@.runtime_sandbox_operations
        WHERE provider = 'daytona'
          AND environment = 'production'
          AND state IN ('live', 'deleting')
    ) AS operation
      ON operation.sandbox_id = item.sandbox_id
     AND operation.routing_domain_key = coalesce(item.routing_domain, '')
     AND (operation.routing_domain IS NULL) = (item.routing_domain IS NULL)
), live AS (
    SELECT operation_key, org_id, run_id, sandbox_id, routing_domain
    FROM pairing
    WHERE ordinality IS NOT NULL AND operation_key IS NOT NULL
), absent AS MATERIALIZED (
    -- Live production operations the inventory does not list, without a
    -- deleted cleanup row, recorded at or before the capture and older than
    -- the minimum age (a point-in-time observation never classifies a newer
    -- resource as absent). Oldest first.
    SELECT lone.sandbox_id, lone.run_id, lone.attempt, lone.environment, lone.routing_domain,
           lone.provider_created_at, lone.operation_key
    FROM pairing AS lone
    WHERE lone.ordinality IS NULL
      AND lone.state = 'live'
      AND NOT EXISTS (
          SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS existing
          WHERE existing.provider = 'daytona'
            AND existing.sandbox_id = lone.sandbox_id
            AND existing.routing_domain IS NOT DISTINCT FROM lone.routing_domain
            AND existing.status = 'deleted')
      AND lone.provider_created_at <= $4
      AND lone.provider_created_at <= clock_timestamp() - $5
    ORDER BY lone.provider_created_at, lone.operation_key
    LIMIT $6
), lease_identities AS (
    -- The application's inspection selects by sandbox id alone. A join
    -- rather than IN: no separate de-duplication of the live sandbox ids.
    SELECT DISTINCT lease.sandbox_id, lease.routing_domain
    FROM live
    JOIN @ledger@.runtime_sandbox_capacity_leases AS lease ON lease.sandbox_id = live.sandbox_id
    WHERE lease.provider = 'daytona'
), terminal_identities AS (
    -- A join rather than IN: the (few) terminal cleanups are the hashed side.
    SELECT DISTINCT cleanup.sandbox_id, cleanup.routing_domain
    FROM live
    JOIN @ledger@.sandbox_cleanup_jobs_v2 AS cleanup ON cleanup.sandbox_id = live.sandbox_id
    WHERE cleanup.provider = 'daytona'
      AND cleanup.status = 'deleted'
      AND cleanup.deleted_at IS NOT NULL
), to_seed AS MATERIALIZED (
    -- Matched rows whose identity has neither a lease nor a terminal cleanup
    -- (NULL and '' routing domains compare equal here, as in the application).
    -- Their values are what seed_capacity.sql inserts, as the application
    -- inserts the rows it read here.
    SELECT live.*
    FROM live
    WHERE NOT EXISTS (
              SELECT 1 FROM @ledger@.runtime_sandbox_capacity_leases AS lease
              WHERE lease.provider = 'daytona'
                AND lease.sandbox_id = live.sandbox_id
                AND coalesce(lease.routing_domain, '') = coalesce(live.routing_domain, ''))
      AND NOT EXISTS (
              SELECT 1 FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
              WHERE cleanup.provider = 'daytona'
                AND cleanup.status = 'deleted'
                AND cleanup.deleted_at IS NOT NULL
                AND cleanup.sandbox_id = live.sandbox_id
                AND coalesce(cleanup.routing_domain, '') = coalesce(live.routing_domain, ''))
), seed_rows AS (
    -- One row per lease: an identity listed under two labels is two matched
    -- rows but one lease (see seed_capacity.sql).
    SELECT DISTINCT ON (operation_key) * FROM to_seed ORDER BY operation_key
)
SELECT
    (SELECT count(*) FROM live) AS matched,
    (SELECT coalesce(array_agg(item_sandbox_id ORDER BY ordinality), '{}')
     FROM pairing
     WHERE ordinality IS NOT NULL AND operation_key IS NULL AND NOT owned) AS unmatched,
    (SELECT count(*) FROM absent) AS absent,
    (SELECT array_agg(sandbox_id ORDER BY provider_created_at, operation_key) FROM absent) AS absent_sandbox_ids,
    (SELECT array_agg(run_id ORDER BY provider_created_at, operation_key) FROM absent) AS absent_run_ids,
    (SELECT array_agg(attempt ORDER BY provider_created_at, operation_key) FROM absent) AS absent_attempts,
    (SELECT array_agg(environment ORDER BY provider_created_at, operation_key) FROM absent) AS absent_environments,
    (SELECT array_agg(routing_domain ORDER BY provider_created_at, operation_key) FROM absent) AS absent_routing_domains,
    (SELECT count(*) FROM lease_identities) AS lease_identities,
    (SELECT count(*) FROM terminal_identities) AS terminal_identities,
    (SELECT count(*) FROM to_seed) AS to_seed,
    (SELECT array_agg(operation_key ORDER BY operation_key) FROM seed_rows) AS seed_operation_keys,
    (SELECT array_agg(org_id ORDER BY operation_key) FROM seed_rows) AS seed_org_ids,
    (SELECT array_agg(run_id ORDER BY operation_key) FROM seed_rows) AS seed_run_ids,
    (SELECT array_agg(sandbox_id ORDER BY operation_key) FROM seed_rows) AS seed_sandbox_ids,
    (SELECT array_agg(routing_domain ORDER BY operation_key) FROM seed_rows) AS seed_routing_domains
