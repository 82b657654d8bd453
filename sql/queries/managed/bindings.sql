-- The managed-sandbox bindings of the given companies ($1), optionally only
-- those pointing at one environment ($5). Oldest first: the seed's
-- `matchingBindings[0]` is the first row of an unordered SELECT; we make it
-- the oldest binding (created_at, then id).
SELECT id::text, company_id::text, resource_id::text, stock_version, stock_hash, defaults_json::text
  FROM @app@.built_in_managed_resources
 WHERE company_id = ANY ($1::uuid[])
   AND bundle_key = $2 AND resource_kind = $3 AND resource_key = $4
   AND ($5::uuid IS NULL OR resource_id = $5::uuid)
 ORDER BY created_at, id
