-- Every sandbox row, locked before the bindings are read, in id order so that
-- concurrent reconcilers take the locks in the same order.
SELECT id::text, name, description, status, config::text, metadata::text
  FROM @app@.environments
 WHERE driver = 'sandbox'
 ORDER BY id
   FOR UPDATE
