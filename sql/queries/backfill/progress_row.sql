-- A backfill_progress row from the orchestrator's values: $1 phase, $2
-- dry_run, $3..$6 batches, scanned, inserted, projected, $7..$10 the next
-- cursor (NULL when complete), and the dry run's targets in keyset order, one
-- array per backfill_target column ($11..$16; empty when applying).
SELECT ROW($1::text, $2::boolean, $3::bigint, $4::bigint, $5::bigint, $6::bigint,
           (SELECT COALESCE(array_agg(ROW(target.run_id, target.attempt, target.resource_ordinal, target.provider,
                                          target.sandbox_id, target.would_insert)::runtime_sandbox.backfill_target
                                      ORDER BY target.position), '{}')
            FROM unnest($11::text[], $12::integer[], $13::integer[], $14::text[], $15::text[], $16::boolean[])
                 WITH ORDINALITY AS target(run_id, attempt, resource_ordinal, provider, sandbox_id, would_insert,
                                           position)),
           CASE WHEN $7::timestamptz IS NOT NULL THEN
               ROW($7::timestamptz, $8::text, $9::integer, $10::integer)::runtime_sandbox.backfill_cursor
           END)::runtime_sandbox.backfill_progress
