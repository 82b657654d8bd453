-- writeBindings(replace = true): every target company points at the row with this stock.
INSERT INTO @app@.built_in_managed_resources
       (id, company_id, bundle_key, resource_kind, resource_key, resource_id,
        stock_version, stock_hash, defaults_json, created_at, updated_at)
SELECT gen_random_uuid(), c, $2, $3, $4, $5::uuid, $6, $7, $8::jsonb, now(), now()
  FROM unnest($1::uuid[]) AS c
ON CONFLICT (company_id, bundle_key, resource_kind, resource_key) DO UPDATE
   SET resource_id = excluded.resource_id, stock_version = excluded.stock_version,
       stock_hash = excluded.stock_hash, defaults_json = excluded.defaults_json,
       updated_at = now()
