-- Every durably deleted Daytona cleanup (sandbox, routing domain, run), when
-- there are not many more than listed sandboxes.
SELECT array_agg(sandbox_id::text), array_agg(routing_domain::text), array_agg(run_id::text)
FROM @ledger@.sandbox_cleanup_jobs_v2
WHERE provider = 'daytona'
  AND status = 'deleted'
  AND deleted_at IS NOT NULL
