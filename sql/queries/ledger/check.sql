-- Which requirements of the ledger schema $1 are not met. $2..$4 are the
-- requirements (kind, table or type name, comma-separated detail names) in
-- report order, from src/ledger/requirements.rs. One row per problem; a
-- missing table hides the checks of its columns and keys.
WITH ledger AS (
    SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1
), required AS (
    SELECT r.kind, r.object, pg_catalog.string_to_array(r.detail, ',') AS detail, r.ordinality,
           (SELECT c.oid FROM pg_catalog.pg_class AS c JOIN ledger ON c.relnamespace = ledger.oid
            WHERE c.relname = r.object AND c.relkind IN ('r', 'p')) AS relid
    FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r(kind, object, detail, ordinality)
), key_columns AS (
    -- Each valid index's key columns, in order (expressions have no name).
    SELECT i.indexrelid, i.indrelid, i.indisunique, i.indpred IS NULL AND i.indexprs IS NULL AS plain,
           i.indnkeyatts,
           pg_catalog.array_agg(a.attname::text ORDER BY k.position) AS names
    FROM pg_catalog.pg_index AS i
    CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
    LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indisvalid
      AND k.position <= i.indnkeyatts
      AND i.indrelid IN (SELECT relid FROM required)
    GROUP BY i.indexrelid, i.indrelid, i.indisunique, i.indpred, i.indexprs, i.indnkeyatts
), problems AS (
    SELECT r.ordinality,
           pg_catalog.format('%I.%I', $1, r.object)
             || CASE r.kind
                  WHEN 'column' THEN pg_catalog.format('.%I', r.detail[1])
                  WHEN 'generated_key' THEN pg_catalog.format('.%I', r.detail[1])
                  WHEN 'unique' THEN ' (' || pg_catalog.array_to_string(r.detail, ', ') || ')'
                  WHEN 'index' THEN ' (' || pg_catalog.array_to_string(r.detail, ', ') || ')'
                  ELSE '' END AS object,
           CASE r.kind
             WHEN 'enum' THEN (
                 SELECT CASE
                     WHEN ty.oid IS NULL THEN 'missing enum type'
                     WHEN missing.labels IS NOT NULL THEN 'missing enum labels: ' || missing.labels
                 END
                 FROM (SELECT NULL) AS one
                 LEFT JOIN pg_catalog.pg_type AS ty
                   ON ty.typname = r.object AND ty.typtype = 'e'
                  AND ty.typnamespace = (SELECT oid FROM ledger)
                 LEFT JOIN LATERAL (
                     SELECT pg_catalog.string_agg(label, ', ') AS labels
                     FROM unnest(r.detail) AS label
                     WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_enum AS e
                                       WHERE e.enumtypid = ty.oid AND e.enumlabel = label)
                 ) AS missing ON true)
             WHEN 'table' THEN CASE WHEN r.relid IS NULL THEN 'missing table' END
             WHEN 'view' THEN CASE WHEN NOT EXISTS (
                     SELECT 1 FROM pg_catalog.pg_class AS c JOIN ledger ON c.relnamespace = ledger.oid
                     WHERE c.relname = r.object AND c.relkind = 'v')
                 THEN 'missing view' END
             WHEN 'column' THEN CASE WHEN r.relid IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM pg_catalog.pg_attribute AS a
                     WHERE a.attrelid = r.relid AND a.attname = r.detail[1] AND a.attnum > 0 AND NOT a.attisdropped)
                 THEN 'missing column' END
             WHEN 'generated_key' THEN CASE WHEN r.relid IS NOT NULL AND EXISTS (
                     SELECT 1 FROM pg_catalog.pg_attribute AS a
                     LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                     WHERE a.attrelid = r.relid AND a.attname = r.detail[1] AND a.attnum > 0 AND NOT a.attisdropped
                       AND (a.attgenerated <> 's'
                            OR pg_catalog.pg_get_expr(d.adbin, d.adrelid)
                               IS DISTINCT FROM pg_catalog.format('COALESCE(%I, ''''::text)', r.detail[2])))
                 THEN pg_catalog.format('not GENERATED ALWAYS AS (coalesce(%I, %L)) STORED', r.detail[2], '') END
             WHEN 'unique' THEN CASE WHEN r.relid IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM key_columns AS k
                     WHERE k.indrelid = r.relid AND k.indisunique AND k.plain
                       AND k.indnkeyatts = pg_catalog.cardinality(r.detail)
                       AND k.names @> r.detail AND k.names <@ r.detail)
                 THEN 'missing unique key' END
             WHEN 'index' THEN CASE WHEN r.relid IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM key_columns AS k
                     WHERE k.indrelid = r.relid
                       AND k.names[1:pg_catalog.cardinality(r.detail)] = r.detail)
                 THEN 'missing index' END
           END AS problem
    FROM required AS r
)
SELECT pg_catalog.quote_ident($1), 'missing schema'
WHERE NOT EXISTS (SELECT 1 FROM ledger)
UNION ALL
(SELECT object, problem FROM problems
 WHERE problem IS NOT NULL AND EXISTS (SELECT 1 FROM ledger)
 ORDER BY ordinality)
