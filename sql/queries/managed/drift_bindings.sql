-- Every managed-sandbox binding with its updated_at: the shell orders them
-- (company, then id) and finds each environment's newest (updated_at, then id),
-- whose stock hash is "latest" for every binding of the environment. Done in
-- Rust, not by a window and ORDER BY here: two sorts of wide rows grew faster
-- than the bindings.
SELECT id::text, company_id::text, resource_id::text, stock_version, stock_hash, defaults_json::text, updated_at
  FROM @app@.built_in_managed_resources
 WHERE bundle_key = $1 AND resource_kind = $2 AND resource_key = $3
