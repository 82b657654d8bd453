-- The managed-sandbox bindings of the given companies ($1), optionally only
-- those pointing at one environment ($5), with created_at: the seed's
-- `matchingBindings[0]` is the first row of an unordered SELECT; we make it
-- the oldest binding (created_at, then id), sorted by the shell (the rows are
-- wide). The companies are joined as a set (distinct ids: one, or every
-- company's primary key), which the planner sizes from the array: hashed for
-- thousands, an index probe for one. `= ANY` of thousands of ids cost an index
-- descent and a selectivity estimate each.
SELECT b.id::text, b.company_id::text, b.resource_id::text, b.stock_version, b.stock_hash, b.defaults_json::text,
       b.created_at
  FROM @app@.built_in_managed_resources AS b
  JOIN unnest($1::uuid[]) AS c(id) ON b.company_id = c.id
 WHERE b.bundle_key = $2 AND b.resource_kind = $3 AND b.resource_key = $4
   AND ($5::uuid IS NULL OR b.resource_id = $5::uuid)
