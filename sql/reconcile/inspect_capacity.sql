-- For the matched live sandboxes ($1 sandbox ids, $2 routing domains, joined
-- as in match_inventory.sql): the distinct (sandbox_id, routing_domain) pairs
-- among their Daytona leases (released or not) and among their durably
-- deleted cleanup rows (the application's two inspection queries, which
-- select by sandbox id alone), and how many matched rows have neither a lease
-- nor a terminal cleanup for their identity (NULL and '' routing domains
-- compare equal here, as in the application).
WITH live AS MATERIALIZED (
    SELECT operation.sandbox_id, operation.routing_domain
    FROM unnest($1::text[], $2::text[]) AS item(sandbox_id, routing_domain)
    JOIN @ledger@.runtime_sandbox_operations AS operation
      ON operation.sandbox_id = item.sandbox_id
     AND operation.routing_domain_key = coalesce(item.routing_domain, '')
     AND operation.routing_domain IS NOT DISTINCT FROM item.routing_domain
    WHERE operation.provider = 'daytona'
      AND operation.environment = 'production'
      AND operation.state IN ('live', 'deleting')
), lease_identities AS MATERIALIZED (
    SELECT DISTINCT lease.sandbox_id, lease.routing_domain
    FROM @ledger@.runtime_sandbox_capacity_leases AS lease
    WHERE lease.provider = 'daytona'
      AND lease.sandbox_id IN (SELECT live.sandbox_id FROM live)
), terminal_identities AS MATERIALIZED (
    SELECT DISTINCT cleanup.sandbox_id, cleanup.routing_domain
    FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
    WHERE cleanup.provider = 'daytona'
      AND cleanup.status = 'deleted'
      AND cleanup.deleted_at IS NOT NULL
      AND cleanup.sandbox_id IN (SELECT live.sandbox_id FROM live)
)
SELECT (SELECT count(*) FROM lease_identities),
       (SELECT count(*) FROM terminal_identities),
       (SELECT count(*)
        FROM live
        WHERE NOT EXISTS (
                  SELECT 1 FROM lease_identities AS l
                  WHERE l.sandbox_id = live.sandbox_id
                    AND coalesce(l.routing_domain, '') = coalesce(live.routing_domain, ''))
          AND NOT EXISTS (
                  SELECT 1 FROM terminal_identities AS t
                  WHERE t.sandbox_id = live.sandbox_id
                    AND coalesce(t.routing_domain, '') = coalesce(live.routing_domain, '')))
