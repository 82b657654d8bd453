-- Whether Citus 12 or later (schema-based sharding: pg_dist_schema) is installed in this database: only then
-- may citus_facts.sql name Citus's catalogs.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
   AND pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL
