-- Of the listed sandboxes no operation of the environment reconciled ($3) owns
-- ($1 their sandbox ids, $2 their routing domains): how many are owned by
-- live or deleting Daytona operations of other environments, per
-- environment, most first. Run only when a reconcile is blocked by unowned
-- sandboxes, for its hint; one probe of the identity key per sandbox.
SELECT coalesce(array_agg(owners.environment ORDER BY owners.owned DESC, owners.environment), '{}'::text[]),
       coalesce(array_agg(owners.owned ORDER BY owners.owned DESC, owners.environment), '{}'::bigint[])
FROM (
    SELECT operation.environment::text AS environment, count(DISTINCT item.position)::bigint AS owned
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS item(sandbox_id, routing_domain, position)
    JOIN @ledger@.runtime_sandbox_operations AS operation
      ON operation.provider = 'daytona'
     AND operation.sandbox_id = item.sandbox_id
     AND operation.routing_domain IS NOT DISTINCT FROM item.routing_domain
    WHERE NOT (operation.environment @environment_eq@ $3)
      AND operation.state IN ('live', 'deleting')
    GROUP BY operation.environment
) AS owners
