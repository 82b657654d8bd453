-- What the catalog says about the ledger schema $1, as one jsonb document
-- that the pure check (src/ledger/check.rs) reads: the schema's owner (the
-- database's owner when the schema belongs to pg_database_owner), every
-- relation and type in it with its owner, and for the relations named in $2
-- their columns (domains resolved to their base type), indexes, and the code
-- that runs when the functions read or write them. NULL when the schema does
-- not exist. Only catalogs are read: no lock is taken on any table. (search_path
-- is pinned to pg_catalog by every function that runs it.)
WITH schema AS (
    SELECT n.oid,
           CASE WHEN n.nspowner = 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT d.datdba FROM pg_catalog.pg_database AS d
                      WHERE d.datname = pg_catalog.current_database())
                ELSE n.nspowner END AS owner
    FROM pg_catalog.pg_namespace AS n
    WHERE n.nspname = $1
), user_function AS (
    -- Functions that are not PostgreSQL's own: what a default, CHECK, index
    -- expression or cast may call that could do anything.
    SELECT p.oid FROM pg_catalog.pg_proc AS p
    WHERE p.pronamespace <> 'pg_catalog'::pg_catalog.regnamespace
), relation AS (
    SELECT c.oid, c.relname, c.relkind, c.relowner, c.relrowsecurity, c.relforcerowsecurity
    FROM pg_catalog.pg_class AS c, schema
    WHERE c.relnamespace = schema.oid
      AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
)
SELECT pg_catalog.jsonb_build_object(
    'owner', schema.owner::pg_catalog.regrole::text,
    'owner_oid', schema.owner::bigint,
    'relations', (
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
            'name', r.relname,
            'kind', r.relkind,
            'owner', r.relowner::pg_catalog.regrole::text,
            'row_security', r.relrowsecurity,
            'forced_row_security', r.relforcerowsecurity,
            'comment', pg_catalog.obj_description(r.oid, 'pg_class'),
            'policies', (SELECT coalesce(pg_catalog.jsonb_agg(pol.polname ORDER BY pol.polname), '[]')
                         FROM pg_catalog.pg_policy AS pol WHERE pol.polrelid = r.oid),
            'triggers', (SELECT coalesce(pg_catalog.jsonb_agg(t.tgname ORDER BY t.tgname), '[]')
                         FROM pg_catalog.pg_trigger AS t
                         WHERE t.tgrelid = r.oid AND NOT t.tgisinternal),
            -- Triggers that fire at COMMIT (constraint triggers, deferred
            -- foreign keys and unique keys): named by their constraint.
            'deferred', (SELECT coalesce(pg_catalog.jsonb_agg(DISTINCT coalesce(k.conname, t.tgname)), '[]')
                         FROM pg_catalog.pg_trigger AS t
                         LEFT JOIN pg_catalog.pg_constraint AS k ON k.oid = t.tgconstraint
                         WHERE t.tgrelid = r.oid AND t.tgdeferrable AND t.tginitdeferred),
            'rules', (SELECT coalesce(pg_catalog.jsonb_agg(w.rulename ORDER BY w.rulename), '[]')
                      FROM pg_catalog.pg_rewrite AS w
                      WHERE w.ev_class = r.oid
                        AND w.rulename <> '_RETURN'),
            'checks_calling_functions', (
                SELECT coalesce(pg_catalog.jsonb_agg(k.conname ORDER BY k.conname), '[]')
                FROM pg_catalog.pg_constraint AS k
                WHERE k.conrelid = r.oid AND k.contype = 'c'
                  AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS dep JOIN user_function AS f ON f.oid = dep.refobjid
                              WHERE dep.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass
                                AND dep.objid = k.oid
                                AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass)),
            'columns', CASE WHEN r.relname = ANY ($2) THEN (
                SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                    'name', a.attname,
                    'type', pg_catalog.format_type(a.atttypid, a.atttypmod),
                    'type_oid', a.atttypid::bigint,
                    'type_kind', t.typtype,
                    'base', base.typname,
                    'base_oid', base.oid::bigint,
                    'base_schema', base.nspname,
                    'base_kind', base.typtype,
                    'domain_checks', EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS k
                                             WHERE k.contypid = a.atttypid),
                    'user_casts', EXISTS (SELECT 1 FROM pg_catalog.pg_cast AS cast_ JOIN user_function AS f
                                            ON f.oid = cast_.castfunc
                                          WHERE a.atttypid IN (cast_.castsource, cast_.casttarget)),
                    'not_null', a.attnotnull,
                    'default', pg_catalog.pg_get_expr(d.adbin, d.adrelid),
                    'default_calls_function', EXISTS (
                        SELECT 1 FROM pg_catalog.pg_depend AS dep JOIN user_function AS f ON f.oid = dep.refobjid
                        WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                          AND dep.objid = d.oid
                          AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass),
                    'generated', a.attgenerated <> '',
                    'identity', a.attidentity <> ''
                ) ORDER BY a.attnum), '[]')
                FROM pg_catalog.pg_attribute AS a
                JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
                CROSS JOIN LATERAL (
                    -- A domain's base type, through domains over domains.
                    WITH RECURSIVE chain(oid, depth) AS (
                        SELECT a.atttypid, 0
                        UNION ALL
                        SELECT d.typbasetype, chain.depth + 1
                        FROM chain JOIN pg_catalog.pg_type AS d ON d.oid = chain.oid
                        WHERE d.typtype = 'd' AND chain.depth < 100
                    )
                    -- (The last link found by the type's key, not a scan of pg_type per column.)
                    SELECT b.oid, b.typname, n.nspname, b.typtype
                    FROM pg_catalog.pg_type AS b
                    JOIN pg_catalog.pg_namespace AS n ON n.oid = b.typnamespace
                    WHERE b.oid = (SELECT chain.oid FROM chain ORDER BY chain.depth DESC LIMIT 1)
                ) AS base
                LEFT JOIN pg_catalog.pg_attrdef AS d
                  ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = r.oid AND a.attnum > 0
                  AND NOT a.attisdropped) END,
            'indexes', CASE WHEN r.relname = ANY ($2) THEN (
                SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                    'name', ic.relname,
                    'unique', i.indisunique,
                    'valid', i.indisvalid,
                    'partial', i.indpred IS NOT NULL,
                    'expressions', i.indexprs IS NOT NULL,
                    'calls_function', EXISTS (
                        SELECT 1 FROM pg_catalog.pg_depend AS dep JOIN user_function AS f ON f.oid = dep.refobjid
                        WHERE dep.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                          AND dep.objid = i.indexrelid
                          AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass),
                    'columns', (SELECT coalesce(pg_catalog.jsonb_agg(a.attname ORDER BY k.position), '[]')
                                FROM unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, position)
                                LEFT JOIN pg_catalog.pg_attribute AS a
                                  ON a.attrelid = i.indrelid
                                 AND a.attnum = k.attnum
                                WHERE k.position <= i.indnkeyatts)
                ) ORDER BY ic.relname), '[]')
                FROM pg_catalog.pg_index AS i
                JOIN pg_catalog.pg_class AS ic ON ic.oid = i.indexrelid
                WHERE i.indrelid = r.oid) END
        ) ORDER BY r.relname), '[]')
        FROM relation AS r
    ),
    'types', (
        -- Types of their own (not a table's row type, not an array).
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
            'name', t.typname,
            'oid', t.oid::bigint,
            'kind', t.typtype,
            'owner', t.typowner::pg_catalog.regrole::text,
            'labels', (SELECT coalesce(pg_catalog.jsonb_agg(e.enumlabel ORDER BY e.enumsortorder), '[]')
                       FROM pg_catalog.pg_enum AS e WHERE e.enumtypid = t.oid)
        ) ORDER BY t.typname), '[]')
        FROM pg_catalog.pg_type AS t
        WHERE t.typnamespace = schema.oid
          AND t.typelem = 0
          AND (t.typrelid = 0
               OR (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = t.typrelid)
                  = 'c')
    )
)::text
FROM schema
