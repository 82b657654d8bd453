-- The row that holds a name (the name index makes it unique).
SELECT id::text, driver FROM @app@.environments WHERE name = $1
