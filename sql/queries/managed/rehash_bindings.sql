-- Rewrite bindings' baselines in place (archive / reactivation), one
-- statement for all of them: ids $1, hashes $3, defaults $4 (parallel arrays).
UPDATE @app@.built_in_managed_resources AS b
   SET stock_hash = v.stock_hash, defaults_json = v.defaults::jsonb, updated_at = now()
  FROM unnest($1::uuid[], $3::text[], $4::text[]) AS v(id, stock_hash, defaults)
 WHERE b.id = v.id AND b.resource_id = $2::uuid
