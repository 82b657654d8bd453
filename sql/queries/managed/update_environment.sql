-- Write the stock into a stock-controlled row (env_vars untouched).
UPDATE @app@.environments
   SET name = $2, description = $3, config = $4::jsonb, metadata = $5::jsonb,
       status = 'active', updated_at = now()
 WHERE id = $1::uuid
RETURNING id::text
