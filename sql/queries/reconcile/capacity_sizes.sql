-- Estimated rows of the lease and the cleanup tables from their current size
-- (rows per page as last measured, else a typical density; no statistics
-- needed): whether each is small enough next to the listing to be read
-- whole, or so large (history: released leases, deleted cleanups) that the
-- run probes it sandbox by sandbox instead.
SELECT (SELECT (CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 64 END
                * pg_relation_size(c.oid) / current_setting('block_size')::integer)::bigint
        FROM pg_class AS c WHERE c.oid = '@ledger@.runtime_sandbox_capacity_leases'::regclass),
       (SELECT (CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 64 END
                * pg_relation_size(c.oid) / current_setting('block_size')::integer)::bigint
        FROM pg_class AS c WHERE c.oid = '@ledger@.sandbox_cleanup_jobs_v2'::regclass)
