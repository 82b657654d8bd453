-- Whether app_schema ($1) exists, and which of the application's tables it
-- lacks (NULL: none).
SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1),
       (SELECT string_agg(t, ', ' ORDER BY t)
          FROM unnest(ARRAY['built_in_managed_resources', 'companies', 'environments']) AS t
         WHERE to_regclass(format('%I.%I', $1::text, t)) IS NULL)
