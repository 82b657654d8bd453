-- Create or replace (by name, for the current role) the pg_cron job $1 on
-- schedule $2 running $3 in this database. Returns the job id.
SELECT cron.schedule($1, $2, $3)
