-- Live and deleting production operations owning an inventory item
-- ($1 sandbox ids, $2 routing domains; one result row per (item, operation)
-- pair, as the application counts them), and the sandbox ids of items owned
-- by nobody: not matched and not owned by a reserved create ($3), in
-- inventory order. Item routing domains are never '' (blank became NULL), so
-- comparing routing_domain_key as well only lets the identity index serve.
WITH inventory AS MATERIALIZED (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::boolean[])
             WITH ORDINALITY AS item(sandbox_id, routing_domain, owned, ordinality)
), matched AS MATERIALIZED (
    SELECT item.ordinality
    FROM inventory AS item
    JOIN @ledger@.runtime_sandbox_operations AS operation
      ON operation.sandbox_id = item.sandbox_id
     AND operation.routing_domain_key = coalesce(item.routing_domain, '')
     AND operation.routing_domain IS NOT DISTINCT FROM item.routing_domain
    WHERE operation.provider = 'daytona'
      AND operation.environment = 'production'
      AND operation.state IN ('live', 'deleting')
)
SELECT (SELECT count(*) FROM matched),
       coalesce((
           SELECT array_agg(item.sandbox_id ORDER BY item.ordinality)
           FROM inventory AS item
           WHERE NOT item.owned
             AND NOT EXISTS (SELECT 1 FROM matched WHERE matched.ordinality = item.ordinality)
       ), '{}')
