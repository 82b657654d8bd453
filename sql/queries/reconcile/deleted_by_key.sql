-- The durably deleted Daytona cleanups (sandbox, routing domain, run) of the
-- sandboxes $1 (distinct), as deleted_probed.sql, when the ledger has the
-- bytewise index install_ledger creates (capacity_sizes.sql checks): one
-- index scan with the sandboxes as its array key. The array is behind a
-- sub-select so the planner costs it as a generic plan would (the shell
-- also turns bitmap scans off: settings.sql); seeing 100k keys it would
-- rather walk the whole index. PostgreSQL 17 scans such keys leaf page by
-- leaf page instead of one descent per key.
-- Each text column comes as its values run together and their lengths
-- (the shell cuts them apart: `cut` in src/reconcile/shell/capacity.rs).
SELECT string_agg(cleanup.sandbox_id::text, ''), array_agg(octet_length(cleanup.sandbox_id::text)),
       string_agg(cleanup.routing_domain::text, ''), array_agg(octet_length(cleanup.routing_domain::text)),
       string_agg(cleanup.run_id::text, ''), array_agg(octet_length(cleanup.run_id::text))
FROM @ledger@.sandbox_cleanup_jobs_v2 AS cleanup
WHERE cleanup.provider = 'daytona'
  AND cleanup.sandbox_id COLLATE "C" = ANY ((SELECT $1::text[])::text[])
  AND cleanup.status = 'deleted'
  AND cleanup.deleted_at IS NOT NULL
