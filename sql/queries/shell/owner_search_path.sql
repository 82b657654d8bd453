-- The search_path setting of role $1 in this database, by PostgreSQL's own
-- precedence (ALTER ROLE .. IN DATABASE, ALTER ROLE, ALTER DATABASE, ALTER
-- ROLE ALL); NULL when none is set.
SELECT pg_catalog.substr(setting, pg_catalog.length('search_path=') + 1)
FROM pg_catalog.pg_db_role_setting AS d,
     pg_catalog.unnest(d.setconfig) AS setting
WHERE d.setrole IN ($1, 0)
  AND d.setdatabase IN ((SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()), 0)
  AND setting OPERATOR(pg_catalog.^@) 'search_path='
ORDER BY d.setrole OPERATOR(pg_catalog.=) 0, d.setdatabase OPERATOR(pg_catalog.=) 0
LIMIT 1
