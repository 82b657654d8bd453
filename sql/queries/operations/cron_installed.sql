-- Whether pg_cron is installed in this database, and the database it
-- schedules from (NULL when pg_cron is not preloaded).
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron'),
       pg_catalog.current_setting('cron.database_name', true),
       pg_catalog.current_database()::text
