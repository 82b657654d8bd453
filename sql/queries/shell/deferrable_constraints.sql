-- For a call run as another role (shell::owner): whether the database has a
-- deferrable constraint, and each INITIALLY DEFERRED constraint name (with
-- its schema) to defer again after the call; a name its schema shares with a
-- constraint that is not INITIALLY DEFERRED is left IMMEDIATE.
SELECT d.any_deferrable, k.nspname::text, k.conname::text
FROM (SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE condeferrable) AS any_deferrable) AS d
LEFT JOIN LATERAL (
    SELECT n.nspname, c.conname
    FROM pg_catalog.pg_constraint AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.connamespace
    WHERE d.any_deferrable
    GROUP BY n.nspname, c.conname
    HAVING pg_catalog.bool_and(c.condeferrable AND c.condeferred)
) AS k ON true
