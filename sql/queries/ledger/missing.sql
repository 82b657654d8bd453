-- Which of the relations a call needs ($2: tables, or table.column) are
-- missing from the ledger schema $1, in the order asked.
SELECT coalesce(pg_catalog.array_agg(required.name ORDER BY required.ordinality), '{}')
FROM unnest($2::text[]) WITH ORDINALITY AS required(name, ordinality)
WHERE NOT EXISTS (
    SELECT 1
    FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE n.nspname = $1
      AND c.relname = pg_catalog.split_part(required.name, '.', 1)
      AND c.relkind IN ('r', 'p')
      AND (pg_catalog.strpos(required.name, '.') = 0 OR EXISTS (
          SELECT 1 FROM pg_catalog.pg_attribute AS a
          WHERE a.attrelid = c.oid
            AND a.attname = pg_catalog.split_part(required.name, '.', 2)
            AND a.attnum > 0
            AND NOT a.attisdropped)))
