-- A backfill_page row: $1 resources scanned, $2 operations inserted, $3
-- has_more, $4..$7 the next cursor (NULL on an empty page), and the targets
-- in keyset order, one array per backfill_target column ($8..$13).
SELECT ROW($1::bigint, $2::bigint, $3::boolean,
           CASE WHEN $4::timestamptz IS NOT NULL THEN
               ROW($4::timestamptz, $5::text, $6::integer, $7::integer)::runtime_sandbox.backfill_cursor
           END,
           (SELECT COALESCE(array_agg(ROW(target.run_id, target.attempt, target.resource_ordinal, target.provider,
                                          target.sandbox_id, target.would_insert)::runtime_sandbox.backfill_target
                                      ORDER BY target.position), '{}')
            FROM unnest($8::text[], $9::integer[], $10::integer[], $11::text[], $12::text[], $13::boolean[])
                 WITH ORDINALITY AS target(run_id, attempt, resource_ordinal, provider, sandbox_id, would_insert,
                                           position))
       )::runtime_sandbox.backfill_page
