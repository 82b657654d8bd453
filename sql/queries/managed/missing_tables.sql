-- Whether app_schema ($1) exists, which of the application's tables it
-- lacks (NULL: none), the owner of its environments table (the functions run
-- their statements as that role), and the tables another role owns.
SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1),
       (SELECT string_agg(t, ', ' ORDER BY t)
          FROM unnest(ARRAY['built_in_managed_resources', 'companies', 'environments']) AS t
         WHERE to_regclass(format('%I.%I', $1::text, t)) IS NULL),
       (SELECT c.relowner::bigint FROM pg_catalog.pg_class AS c
         WHERE c.oid = to_regclass(format('%I.%I', $1::text, 'environments'))),
       (SELECT string_agg(format('%I.%I (owned by %s)', $1::text, c.relname, c.relowner::pg_catalog.regrole), ', '
                          ORDER BY c.relname)
          FROM pg_catalog.pg_class AS c
          JOIN pg_catalog.pg_class AS environments
            ON environments.oid = to_regclass(format('%I.%I', $1::text, 'environments'))
         WHERE c.oid IN (to_regclass(format('%I.%I', $1::text, 'built_in_managed_resources')),
                         to_regclass(format('%I.%I', $1::text, 'companies')))
           AND c.relowner <> environments.relowner)
