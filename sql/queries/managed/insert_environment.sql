-- A new managed row. Either the managed-slot partial index or the name index
-- may pick a concurrent winner: then nothing is returned and the caller
-- re-selects the winner under lock.
INSERT INTO @app@.environments
       (name, description, driver, status, config, env_vars, metadata, created_at, updated_at)
VALUES ($1, $2, 'sandbox', 'active', $3::jsonb, '{}'::jsonb, $4::jsonb, now(), now())
ON CONFLICT DO NOTHING
RETURNING id::text
