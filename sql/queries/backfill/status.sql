-- The checkpoint's cursor as a backfill_cursor, and how many attempts lie
-- after it (an upper bound: attempts without sandbox resources count too).
-- With no cursor the shell drops the keyset condition: every attempt remains.
SELECT CASE WHEN $2::text IS NOT NULL THEN
           ROW($1::timestamptz, $2::text, $3::integer, $4::integer)::runtime_sandbox.backfill_cursor
       END AS cursor,
       (SELECT count(*) FROM @ledger@.attempts AS attempt
        WHERE true @after_attempt@) AS attempts_remaining
