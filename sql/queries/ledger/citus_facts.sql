-- Citus's metadata of ledger schema $1: whether it is a distributed schema (schema-based sharding) and
-- which of its tables Citus knows. Run only when the citus extension is installed: these catalogs exist
-- only then.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema AS s WHERE s.schemaid = n.oid),
       ARRAY(SELECT c.relname::text
             FROM pg_catalog.pg_dist_partition AS p
             JOIN pg_catalog.pg_class AS c ON c.oid = p.logicalrelid
             WHERE c.relnamespace = n.oid
             ORDER BY 1)
FROM pg_catalog.pg_namespace AS n
WHERE n.nspname = $1
