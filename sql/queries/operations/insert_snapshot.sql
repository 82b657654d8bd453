-- Record one normalized listing of provider $1 captured at $2 (clamped to the
-- moment of recording: the listing cannot have finished later) with its items
-- in inventory order ($3 sandbox ids, $4 routing domains, $5 operation keys),
-- for the environment whose listing it is ($6). Without the environment
-- column: insert_snapshot_without_environment.sql.
WITH snapshot AS (
    INSERT INTO @ledger@.provider_inventory_snapshots (provider, captured_at, recorded_at, item_count, environment)
    VALUES ($1, least($2, clock_timestamp()), clock_timestamp(), cardinality($3::text[]), $6)
    RETURNING snapshot_id
), items AS (
    INSERT INTO @ledger@.provider_inventory_items (snapshot_id, item_index, sandbox_id, routing_domain, operation_key)
    SELECT snapshot.snapshot_id, (item.ordinality - 1)::integer, item.sandbox_id, item.routing_domain, item.operation_key
    FROM snapshot,
         unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS item(sandbox_id, routing_domain, operation_key, ordinality)
)
SELECT snapshot_id::bigint FROM snapshot
