-- Of the routines $1 (regprocedure texts) a scheduled job calls, those the
-- current user (the role the job will run as) may not execute; a routine
-- this catalog does not have (an older version's) is left out.
SELECT needed
FROM pg_catalog.unnest($1::text[]) AS needed
WHERE pg_catalog.to_regprocedure(needed) IS NOT NULL
  AND NOT pg_catalog.has_function_privilege(pg_catalog.to_regprocedure(needed), 'EXECUTE')
