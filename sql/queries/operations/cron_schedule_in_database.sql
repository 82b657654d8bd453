-- Create or replace (by name, for the current role) the pg_cron job $1 on
-- schedule $2 running $3 in database $4 (scheduled from the database pg_cron
-- runs in for another one). Returns the job id.
SELECT cron.schedule_in_database($1, $2, $3, $4)
