-- Whether a schema named $1 exists.
SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)
