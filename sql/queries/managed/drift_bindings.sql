-- Every managed-sandbox binding, in the drift report's order, and whether it
-- is its environment's newest (updated_at, then id): that one's stock hash is
-- "latest" for every binding of the environment.
SELECT id::text, company_id::text, resource_id::text, stock_version, stock_hash, defaults_json::text,
       row_number() OVER (PARTITION BY resource_id ORDER BY updated_at DESC, id DESC) = 1
  FROM @app@.built_in_managed_resources
 WHERE bundle_key = $1 AND resource_kind = $2 AND resource_key = $3
 ORDER BY company_id, id
