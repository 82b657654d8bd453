-- Make ledger schema $1 (its quoted name) a Citus distributed schema: its tables become single-shard tables on
-- one worker.
SELECT pg_catalog.citus_schema_distribute($1::pg_catalog.regnamespace)
