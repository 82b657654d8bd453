-- Rewrite one binding's baseline in place (archive / reactivation).
UPDATE @app@.built_in_managed_resources
   SET stock_hash = $3, defaults_json = $4::jsonb, updated_at = now()
 WHERE id = $1::uuid AND resource_id = $2::uuid
