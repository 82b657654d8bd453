-- One pruned snapshot ($1, locked by prunable_snapshots.sql) and its items.
WITH items AS (
    DELETE FROM @ledger@.provider_inventory_items WHERE snapshot_id = $1
)
DELETE FROM @ledger@.provider_inventory_snapshots WHERE snapshot_id = $1
