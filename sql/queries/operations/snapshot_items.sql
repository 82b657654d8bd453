-- The items of snapshot $1, in inventory order (already normalized when recorded).
SELECT array_agg(sandbox_id::text ORDER BY item_index),
       array_agg(routing_domain::text ORDER BY item_index),
       array_agg(operation_key::text ORDER BY item_index)
FROM @ledger@.provider_inventory_items
WHERE snapshot_id = $1
