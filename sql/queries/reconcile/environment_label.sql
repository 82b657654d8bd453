-- On an enum environment column (type $1): the environment $2's value of the
-- enum (its label's oid; NULL when the type has no such label), and the
-- type's values for the message that says so.
SELECT (SELECT e.oid FROM pg_catalog.pg_enum AS e WHERE e.enumtypid = $1 AND e.enumlabel = $2),
       (SELECT pg_catalog.string_agg(e.enumlabel::text, ', ' ORDER BY e.enumsortorder)
        FROM pg_catalog.pg_enum AS e WHERE e.enumtypid = $1)
