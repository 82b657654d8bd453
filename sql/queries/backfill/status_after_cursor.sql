-- backfill_status with a checkpoint cursor ($1 updated_at, $2 run_id, $3
-- attempt, $4 resource_ordinal): the cursor as a backfill_cursor, and how many
-- attempts lie after its attempt (an upper bound: attempts without sandbox
-- resources count too).
SELECT ROW($1::timestamptz, $2::text, $3::integer, $4::integer)::runtime_sandbox.backfill_cursor AS cursor,
       (SELECT count(*) FROM @ledger@.attempts AS attempt
        WHERE (attempt.updated_at, attempt.run_id, attempt.attempt) > ($1, $2, $3)) AS attempts_remaining
