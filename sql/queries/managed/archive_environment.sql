-- Archive the managed row on provider outage, recording the archive token.
UPDATE @app@.environments
   SET status = 'archived', metadata = $2::jsonb, updated_at = now()
 WHERE id = $1::uuid AND status = 'active'
RETURNING id::text
