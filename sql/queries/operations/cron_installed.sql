-- Whether pg_cron is installed in this database, and this database's name
-- (the one pg_cron schedules from is read from the server's setting in Rust).
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron'),
       pg_catalog.current_database()::text
