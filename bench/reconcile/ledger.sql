-- A synthetic ledger of :n Daytona sandboxes in schema bench, and the provider
-- inventory that lists them (table bench_inventory). The mix, by i % 20:
--   0-11  live, listed, open lease                      (60%)
--   12-13 live, listed, no lease yet -> seeded          (10%)
--   14-15 deleting, listed, open lease, pending cleanup (10%)
--   16    reserved create, listed by its operation label only, open unbound
--         lease, attempt with resource_json -> recovered (5%)
--   17-18 live, NOT listed, old, open lease -> absent   (10%; batch_size marked)
--   19    deleted, deleted cleanup, lease still open -> released (5%)
-- Every listed sandbox carries its operation label; a third have a routing domain.
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench CASCADE;
SELECT runtime_sandbox.install_ledger('bench');

CREATE TEMP TABLE mix AS
SELECT i, i % 20 AS k,
       CASE WHEN i % 3 = 0 THEN 'org-eu' END AS domain,
       CASE WHEN i % 20 IN (14, 15) THEN 'deleting'
            WHEN i % 20 = 16 THEN 'reserved'
            WHEN i % 20 = 19 THEN 'deleted'
            ELSE 'live' END AS state
FROM generate_series(1, :n) AS i;

INSERT INTO bench.runs (run_id, org_id) SELECT 'run-' || i, 'org-' || (i % 50) FROM mix;
INSERT INTO bench.attempts (run_id, attempt, resource_json)
SELECT 'run-' || i, 1,
       CASE WHEN k = 16 AND i % 3 = 0 THEN NULL
            WHEN k = 16 AND i % 3 = 1 THEN '[{"kind":"modal_sandbox"}]'::jsonb
            ELSE jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'sb-' || i) END
FROM mix;

INSERT INTO bench.runtime_sandbox_operations (
    operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain,
    state, provider_operation_token, provider_created_at, delete_confirmed_at)
SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org-' || (i % 50), 'production',
       CASE WHEN k = 16 THEN NULL ELSE 'sb-' || i END,
       CASE WHEN k = 16 THEN NULL ELSE domain END,
       state::bench.runtime_sandbox_operation_state, 'tok-' || i,
       CASE WHEN k = 16 THEN NULL ELSE now() - interval '1 hour' - i * interval '1 second' END,
       CASE WHEN k = 19 THEN now() - interval '30 minutes' END
FROM mix;

INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at)
SELECT 'op-' || i, 'org-' || (i % 50), 'run-' || i,
       CASE WHEN k = 16 THEN NULL ELSE 'daytona' END,
       CASE WHEN k = 16 THEN NULL ELSE 'sb-' || i END,
       CASE WHEN k = 16 THEN NULL ELSE domain END,
       now() + interval '1 hour'
FROM mix WHERE k NOT IN (12, 13);

INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', 'sb-' || i, 'run-' || i, 1, domain,
       CASE WHEN k = 19 THEN 'deleted' ELSE 'pending' END,
       CASE WHEN k = 19 THEN now() - interval '30 minutes' END
FROM mix WHERE k IN (14, 15, 19);

DROP TABLE IF EXISTS bench_inventory;
CREATE TABLE bench_inventory AS
SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'sandboxId', CASE WHEN k = 16 THEN 'sb-new-' || i ELSE 'sb-' || i END,
           'operationKey', 'tok-' || i,
           'routingDomain', domain)) ORDER BY i) AS inventory
FROM mix WHERE k NOT IN (17, 18, 19);

VACUUM ANALYZE bench.runs, bench.attempts, bench.runtime_sandbox_operations,
    bench.runtime_sandbox_capacity_leases, bench.sandbox_cleanup_jobs_v2, bench_inventory;
