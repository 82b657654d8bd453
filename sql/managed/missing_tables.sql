-- Which of the application's tables app_schema ($1) lacks (NULL: none).
SELECT string_agg(t, ', ' ORDER BY t)
  FROM unnest(ARRAY['built_in_managed_resources', 'companies', 'environments']) AS t
 WHERE to_regclass(format('%I.%I', $1::text, t)) IS NULL
