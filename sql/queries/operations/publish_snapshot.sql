-- Record the listing transaction $1 (xid8 as text) streamed into provider_inventory_stream (checked first
-- by streamed_items.sql) as a snapshot of provider $2 captured at $3 (clamped to the moment of recording)
-- for environment $4, normalized as record_inventory_snapshot normalizes its items: trimmed with the
-- characters $5 (inventory::JS_WHITESPACE), blank optionals NULL, duplicates of one (sandbox, routing
-- domain, operation key) collapsed in first-seen order, compared bytewise. Then remove the stream's rows,
-- and those of transactions older than $6 (the oldest one running, xid8 as text): they ended without
-- publishing and nobody can.
WITH streamed AS (
    SELECT stream.item_index,
           btrim(stream.sandbox_id::text, $5) COLLATE "C" AS sandbox_id,
           nullif(btrim(stream.routing_domain::text, $5), '') COLLATE "C" AS routing_domain,
           nullif(btrim(stream.operation_key::text, $5), '') COLLATE "C" AS operation_key
    FROM @ledger@.provider_inventory_stream AS stream
    WHERE stream.stream = $1::xid8
), listed AS (
    SELECT min(streamed.item_index) AS first, streamed.sandbox_id, streamed.routing_domain, streamed.operation_key
    FROM streamed
    GROUP BY streamed.sandbox_id, streamed.routing_domain, streamed.operation_key
), snapshot AS (
    INSERT INTO @ledger@.provider_inventory_snapshots (provider, captured_at, recorded_at, item_count, environment)
    SELECT $2, least($3, clock_timestamp()), clock_timestamp(), count(*), $4 FROM listed
    RETURNING snapshot_id
), items AS (
    INSERT INTO @ledger@.provider_inventory_items (snapshot_id, item_index, sandbox_id, routing_domain, operation_key)
    SELECT snapshot.snapshot_id, (row_number() OVER (ORDER BY listed.first) - 1)::integer,
           listed.sandbox_id, listed.routing_domain, listed.operation_key
    FROM snapshot, listed
), consumed AS (
    DELETE FROM @ledger@.provider_inventory_stream AS stream
    WHERE stream.stream = $1::xid8 OR stream.stream < $6::xid8
)
SELECT snapshot_id::bigint FROM snapshot
