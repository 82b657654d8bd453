-- Undo the reconciler's own archive: status and the token only.
UPDATE @app@.environments
   SET status = 'active', metadata = $2::jsonb, updated_at = now()
 WHERE id = $1::uuid AND status = 'archived'
RETURNING id::text
