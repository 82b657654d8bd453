-- The search_path and TimeZone settings of role $1 in this database, by
-- PostgreSQL's own precedence (ALTER ROLE .. IN DATABASE, ALTER ROLE, ALTER
-- DATABASE, ALTER ROLE ALL): the first row of each name applies; a name with
-- no row has no such setting. The names are stored normalized (TimeZone,
-- search_path); lower() keeps an older spelling matching too.
SELECT pg_catalog.lower(pg_catalog.split_part(setting, '=', 1)) AS name,
       pg_catalog.substr(setting, pg_catalog.strpos(setting, '=') + 1) AS value
FROM pg_catalog.pg_db_role_setting AS d,
     pg_catalog.unnest(d.setconfig) AS setting
WHERE d.setrole IN ($1, 0)
  AND d.setdatabase IN ((SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()), 0)
  AND pg_catalog.lower(pg_catalog.split_part(setting, '=', 1)) IN ('search_path', 'timezone')
ORDER BY 1, d.setrole OPERATOR(pg_catalog.=) 0, d.setdatabase OPERATOR(pg_catalog.=) 0
