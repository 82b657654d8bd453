-- A ledger whose operations own every sandbox the fake Daytona lists (sb-0 .. sb-<n-1>, routing domain its
-- organization, org-bench, as the recorder gives it): 1% without a capacity lease (seeded), and 1% more
-- operations whose sandboxes are gone (marked absent, created long before the listing).
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench CASCADE;
SELECT runtime_sandbox.install_ledger('bench');
INSERT INTO bench.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_operation_token, provider_created_at)
SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org', 'sb-' || i, 'org-bench', 'live'::bench.runtime_sandbox_operation_state, 'op-' || i, now() - interval '2 hours'
FROM generate_series(0, :n - 1) AS i
UNION ALL
SELECT 'gone-' || i, 'daytona', 'run-gone-' || i, 1, 'org', 'sb-gone-' || i, 'org-bench', 'live', 'gone-' || i, now() - interval '2 hours'
FROM generate_series(0, :n / 100 - 1) AS i;
INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at)
SELECT 'op-' || i, 'org', 'run-' || i, 'daytona', 'sb-' || i, 'org-bench', now() + interval '1 hour'
FROM generate_series(0, :n - 1) AS i WHERE i % 100 <> 7;
VACUUM ANALYZE;
