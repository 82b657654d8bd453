-- A backfill_progress row from the orchestrator's values ($7..$10: next cursor, NULL when complete).
SELECT ROW($1::text, $2::boolean, $3::bigint, $4::bigint, $5::bigint, $6::bigint,
           '{}'::runtime_sandbox.backfill_target[],
           CASE WHEN $7::timestamptz IS NOT NULL THEN
               ROW($7::timestamptz, $8::text, $9::integer, $10::integer)::runtime_sandbox.backfill_cursor
           END)::runtime_sandbox.backfill_progress
