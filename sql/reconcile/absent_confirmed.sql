-- The latest snapshot's absence check: no older snapshot among $5 lists the
-- sandbox (Daytona's list is eventually consistent; one missing listing is
-- not proof).
AND (SELECT 1 FROM @ledger@.provider_inventory_items AS listed
     WHERE listed.snapshot_id = ANY ($5::bigint[])
       AND listed.sandbox_id = operation.sandbox_id
       AND listed.routing_domain IS NOT DISTINCT FROM operation.routing_domain
     LIMIT 1) IS NULL
