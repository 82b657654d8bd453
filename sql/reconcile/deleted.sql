-- (sandbox, routing domain) of every durably deleted Daytona cleanup, when
-- they are few next to the listing.
SELECT array_agg(sandbox_id), array_agg(routing_domain)
FROM @ledger@.sandbox_cleanup_jobs_v2
WHERE provider = 'daytona'
  AND status = 'deleted'
  AND deleted_at IS NOT NULL
