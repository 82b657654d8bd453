-- The environment rows with these ids ($1), as they are now (no lock: read-only callers).
SELECT id::text, name, description, status, config::text, metadata::text
  FROM @app@.environments
 WHERE id = ANY ($1::uuid[])
