-- A synthetic ledger of :n Daytona sandboxes in schema bench, and the provider
-- inventory that lists them (table bench_inventory). The mix, in percent of
-- n (psql variables, set by bench/reconcile.sh):
--   :reserved  reserved creates whose response was lost: listed by their
--              operation label only, open unbound lease, attempt row -> recovered
--   :unleased  live, listed, no capacity lease yet -> seeded
--   :absent    live, NOT listed, older than the minimum age -> marked (batch_size)
--   :terminal  deleted, durably deleted cleanup, lease still open -> released
--   :deleting  deleting, listed, open lease, pending cleanup
--   the rest   live, listed, open lease
-- Every listed sandbox carries its operation label; a third have a routing domain.
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench CASCADE;
SELECT runtime_sandbox.install_ledger('bench');

-- k names the kind: 16 reserved, 12 unleased, 17 absent, 19 terminal,
-- 14 deleting, 0 live with a lease.
CREATE TEMP TABLE mix AS
SELECT i, k,
       CASE WHEN i % 3 = 0 THEN 'org-eu' END AS domain,
       CASE k WHEN 14 THEN 'deleting' WHEN 16 THEN 'reserved' WHEN 19 THEN 'deleted' ELSE 'live' END AS state
FROM generate_series(1, :n) AS i,
     LATERAL (SELECT CASE
         WHEN i % 100 < :reserved THEN 16
         WHEN i % 100 < :reserved + :unleased THEN 12
         WHEN i % 100 < :reserved + :unleased + :absent THEN 17
         WHEN i % 100 < :reserved + :unleased + :absent + :terminal THEN 19
         WHEN i % 100 < :reserved + :unleased + :absent + :terminal + :deleting THEN 14
         ELSE 0 END AS k) AS kind;

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
FROM mix WHERE k <> 12;

INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', 'sb-' || i, 'run-' || i, 1, domain,
       CASE WHEN k = 19 THEN 'deleted' ELSE 'pending' END,
       CASE WHEN k = 19 THEN now() - interval '30 minutes' END
FROM mix WHERE k IN (14, 19);

DROP TABLE IF EXISTS bench_inventory;
CREATE TABLE bench_inventory AS
SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'sandboxId', CASE WHEN k = 16 THEN 'sb-new-' || i ELSE 'sb-' || i END,
           'operationKey', 'tok-' || i,
           'routingDomain', domain)) ORDER BY i) AS inventory
FROM mix WHERE k NOT IN (17, 19);

VACUUM ANALYZE bench.runs, bench.attempts, bench.runtime_sandbox_operations,
    bench.runtime_sandbox_capacity_leases, bench.sandbox_cleanup_jobs_v2, bench_inventory;
