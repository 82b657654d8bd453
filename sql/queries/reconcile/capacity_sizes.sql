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
        FROM pg_class AS c WHERE c.oid = '@ledger@.sandbox_cleanup_jobs_v2'::regclass),
-- Whether the deleted cleanups and the released leases each have a valid
-- bytewise B-tree on sandbox_id whose predicate (if any) is the one
-- install_ledger writes: only then are their probes one index scan with the
-- sandboxes as its array key (deleted_by_key.sql). Any other index (a
-- ledger the application shaped) gets one probe per sandbox, which needs no
-- particular index to stay linear.
       by_key.cleanups, by_key.leases
FROM (SELECT coalesce(bool_or(want.rel = '@ledger@.sandbox_cleanup_jobs_v2'::regclass), false) AS cleanups,
             coalesce(bool_or(want.rel = '@ledger@.runtime_sandbox_capacity_leases'::regclass), false) AS leases
      FROM (VALUES ('@ledger@.sandbox_cleanup_jobs_v2'::regclass,
                    '((provider = ''daytona''::text) AND (status = ''deleted''::text) AND (deleted_at IS NOT NULL))'),
                   ('@ledger@.runtime_sandbox_capacity_leases'::regclass,
                    '((provider = ''daytona''::text) AND (released_at IS NOT NULL))')) AS want(rel, predicate)
      JOIN pg_index AS i ON i.indrelid = want.rel
      JOIN pg_class AS index_rel ON index_rel.oid = i.indexrelid
      JOIN pg_am AS am ON am.oid = index_rel.relam AND am.amname = 'btree'
      JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
      WHERE i.indisvalid AND i.indisready AND a.attname = 'sandbox_id'
        AND i.indcollation[0] = 'pg_catalog."C"'::regcollation
        AND (i.indpred IS NULL OR pg_get_expr(i.indpred, i.indrelid) = want.predicate)) AS by_key
