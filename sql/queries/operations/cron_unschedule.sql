-- Remove the caller's job named $1, if there is one; true when one was removed.
SELECT coalesce(bool_or(cron.unschedule(job.jobid)), false)
FROM cron.job AS job
WHERE job.jobname = $1
  AND job.username = current_user
