-- :h sandboxes of history (numbered after :s, default 0) added to the synthetic ledger in schema bench
-- (ledger.sql): each a deleted operation, a released capacity lease and a
-- durably deleted cleanup, a month old, on sandbox ids the inventory never
-- lists. What a long-lived ledger accumulates; a reconciliation's work should
-- not grow with it.
SET client_min_messages = warning;
\if :{?s}
\else
\set s 0
\endif
INSERT INTO bench.runtime_sandbox_operations (
    operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain,
    state, provider_operation_token, provider_created_at, delete_confirmed_at)
SELECT 'old-op-' || i, 'daytona', 'old-run-' || i, 1, 'org-' || (i % 50), 'production',
       'old-sb-' || i, CASE WHEN i % 3 = 0 THEN 'org-eu' END, 'deleted', 'old-tok-' || i,
       now() - interval '30 days' - i * interval '1 second', now() - interval '29 days'
FROM generate_series(:s + 1, :s + :h) AS i;
INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain,
                                                   expires_at, released_at)
SELECT 'old-op-' || i, 'org-' || (i % 50), 'old-run-' || i, 'daytona', 'old-sb-' || i,
       CASE WHEN i % 3 = 0 THEN 'org-eu' END, now() - interval '29 days', now() - interval '29 days'
FROM generate_series(:s + 1, :s + :h) AS i;
INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', 'old-sb-' || i, 'old-run-' || i, 1, CASE WHEN i % 3 = 0 THEN 'org-eu' END, 'deleted',
       now() - interval '29 days'
FROM generate_series(:s + 1, :s + :h) AS i;
VACUUM ANALYZE bench.runtime_sandbox_operations, bench.runtime_sandbox_capacity_leases, bench.sandbox_cleanup_jobs_v2;
