-- Every durably deleted Daytona cleanup (sandbox, routing domain, run), when
-- there are not many more than listed sandboxes.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(sandbox_id::text, ''), array_agg(octet_length(sandbox_id::text)),
       string_agg(routing_domain::text, ''), array_agg(octet_length(routing_domain::text)),
       string_agg(run_id::text, ''), array_agg(octet_length(run_id::text))
FROM @ledger@.sandbox_cleanup_jobs_v2
WHERE provider = 'daytona'
  AND status = 'deleted'
  AND deleted_at IS NOT NULL
