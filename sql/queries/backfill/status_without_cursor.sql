-- backfill_status before the first page: no cursor, and every attempt remains.
SELECT NULL::runtime_sandbox.backfill_cursor AS cursor,
       (SELECT count(*) FROM @ledger@.attempts AS attempt) AS attempts_remaining
