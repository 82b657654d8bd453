-- The rows transaction $1 (xid8 as text) streamed into provider_inventory_stream, before
-- publish_inventory_snapshot records them: how many, and the first, in the listing's order, that the
-- inventory's rules refuse (values trimmed with the characters $2, inventory::JS_WHITESPACE; at most $3
-- bytes each): its element (0-based), the member and its trimmed length in bytes (NULL: the value is NULL;
-- 0: blank). sandboxId first, then routingDomain, then operationKey, as the JSON inventory is checked.
WITH streamed AS (
    SELECT stream.item_index,
           octet_length(btrim(stream.sandbox_id::text, $2)) AS sandbox_id,
           octet_length(btrim(stream.routing_domain::text, $2)) AS routing_domain,
           octet_length(btrim(stream.operation_key::text, $2)) AS operation_key
    FROM @ledger@.provider_inventory_stream AS stream
    WHERE stream.stream = $1::xid8
), refused AS (
    SELECT streamed.item_index, problem.key, problem.bytes
    FROM streamed
    CROSS JOIN LATERAL (VALUES (1, 'sandboxId', streamed.sandbox_id),
                               (2, 'routingDomain', streamed.routing_domain),
                               (3, 'operationKey', streamed.operation_key)) AS problem(position, key, bytes)
    WHERE (problem.position = 1 AND coalesce(problem.bytes, 0) = 0) OR problem.bytes > $3
    ORDER BY streamed.item_index, problem.position
    LIMIT 1
)
SELECT (SELECT count(*) FROM streamed)::bigint AS rows,
       (SELECT count(*) FROM streamed WHERE streamed.item_index < refused.item_index)::bigint AS element,
       refused.key::text,
       refused.bytes::integer
FROM (SELECT) AS one
LEFT JOIN refused ON true
