-- Check and record, in one pass over its rows, the listing transaction $1 (xid8 as text) streamed into
-- provider_inventory_stream, as a snapshot of provider $2 captured at $3 (clamped to the moment of recording)
-- for environment $4, by the inventory's rules: values trimmed with the characters $5
-- (inventory::JS_WHITESPACE), at most $7 bytes each; sandboxId present and not blank; blank optionals NULL;
-- duplicates of one (sandbox, routing domain, operation key) collapsed in first-seen order, compared
-- bytewise. Then remove the stream's rows, and those of transactions older than $6 (the oldest one running,
-- xid8 as text): they ended without publishing and nobody can.
-- Returns the snapshot (NULL when a row is refused: nothing is recorded), the rows streamed, and the first
-- refused row (in listing order): its element (0-based), member and trimmed length in bytes (NULL: the
-- value is NULL). The shell raises on a refusal or a count other than the caller's, rolling it all back.
WITH streamed AS MATERIALIZED (
    SELECT stream.item_index,
           stream.sandbox_id IS NULL AS no_sandbox,
           btrim(stream.sandbox_id::text, $5) COLLATE "C" AS sandbox_id,
           nullif(btrim(stream.routing_domain::text, $5), '') COLLATE "C" AS routing_domain,
           nullif(btrim(stream.operation_key::text, $5), '') COLLATE "C" AS operation_key
    FROM @ledger@.provider_inventory_stream AS stream
    WHERE stream.stream = $1::xid8
), refused AS (
    SELECT streamed.item_index,
           CASE WHEN streamed.no_sandbox OR streamed.sandbox_id = '' OR octet_length(streamed.sandbox_id) > $7
                THEN 'sandboxId'
                WHEN octet_length(streamed.routing_domain) > $7 THEN 'routingDomain'
                ELSE 'operationKey' END AS key,
           CASE WHEN streamed.no_sandbox THEN NULL
                WHEN streamed.sandbox_id = '' OR octet_length(streamed.sandbox_id) > $7 THEN octet_length(streamed.sandbox_id)
                WHEN octet_length(streamed.routing_domain) > $7 THEN octet_length(streamed.routing_domain)
                ELSE octet_length(streamed.operation_key) END AS bytes
    FROM streamed
    WHERE streamed.no_sandbox OR streamed.sandbox_id = '' OR octet_length(streamed.sandbox_id) > $7
       OR octet_length(streamed.routing_domain) > $7 OR octet_length(streamed.operation_key) > $7
    ORDER BY streamed.item_index
    LIMIT 1
), listed AS (
    SELECT min(streamed.item_index) AS first, streamed.sandbox_id, streamed.routing_domain, streamed.operation_key
    FROM streamed
    WHERE NOT EXISTS (SELECT FROM refused)
    GROUP BY streamed.sandbox_id, streamed.routing_domain, streamed.operation_key
), snapshot AS (
    INSERT INTO @ledger@.provider_inventory_snapshots (provider, captured_at, recorded_at, item_count, environment)
    SELECT $2, least($3, clock_timestamp()), clock_timestamp(), count(*), $4 FROM listed
    HAVING NOT EXISTS (SELECT FROM refused)
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
SELECT (SELECT snapshot.snapshot_id::bigint FROM snapshot),
       (SELECT count(*) FROM streamed)::bigint,
       CASE WHEN refused.item_index IS NOT NULL
            THEN (SELECT count(*) FROM streamed WHERE streamed.item_index < refused.item_index) END::bigint,
       refused.key::text,
       refused.bytes::integer
FROM (SELECT) AS one
LEFT JOIN refused ON true
