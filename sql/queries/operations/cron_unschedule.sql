-- Remove the current role's pg_cron job named $1 that runs in database $2;
-- false when there is none.
SELECT coalesce(bool_or(cron.unschedule(job.jobid)), false)
FROM cron.job AS job
WHERE job.jobname = $1
  AND job.username = current_user
  AND job.database = $2
