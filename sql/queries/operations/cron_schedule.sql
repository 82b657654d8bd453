-- Create or replace the caller's job named $1 (pg_cron keys jobs by name and
-- user): schedule $2, command $3. Returns its job id.
SELECT cron.schedule($1, $2, $3)
