-- Bring distributed ledger schema $1 (its quoted name) back to the coordinator, so that tables created in it
-- can be distributed with the others.
SELECT pg_catalog.citus_schema_undistribute($1::pg_catalog.regnamespace)
