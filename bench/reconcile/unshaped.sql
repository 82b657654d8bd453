-- A ledger of :n Daytona sandboxes in schema bench that is not shaped for the
-- code reading it, loaded and left without statistics (never analyzed,
-- autovacuum off), as right after a bulk load or the backfill migration:
--   - sandbox ids are md5 strings (no order shared with insertion), the kinds
--     (the steady mix of ledger.sql: 1% lost creates, 2% unleased, 2% absent,
--     2% terminal, 10% deleting) are spread by hash, not by position;
--   - history: 2n older sandboxes, each a deleted operation, a released lease,
--     a durably deleted cleanup and its event;
--   - repeated identities: a fifth of the fleet's sandboxes also have a
--     deleted operation, a released lease and a deleted cleanup under another
--     routing domain, and a tenth an older released lease of another run;
--   - the inventory lists the fleet in an order of its own.
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench CASCADE;
SELECT runtime_sandbox.install_ledger('bench');
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'bench' LOOP
        EXECUTE format('ALTER TABLE bench.%I SET (autovacuum_enabled = off, toast.autovacuum_enabled = off)', t);
    END LOOP;
END $$;

CREATE TEMP TABLE fleet AS
SELECT i, md5('sandbox-' || i) AS sandbox, 'op-' || md5('op-' || i) AS op, 'run-' || md5('run-' || i) AS run,
       CASE WHEN abs(hashint4(i)) % 3 = 0 THEN 'org-eu' END AS domain,
       CASE WHEN h < 1 THEN 16 WHEN h < 3 THEN 12 WHEN h < 5 THEN 17 WHEN h < 7 THEN 19 WHEN h < 17 THEN 14 ELSE 0 END AS k,
       abs(hashint4(i * 7)) % 10 AS repeat
FROM generate_series(1, :n) AS i, LATERAL (SELECT abs(hashint4(i)) % 100 AS h) AS spread;

-- History first: it is older.
INSERT INTO bench.runs (run_id, org_id) SELECT 'old-run-' || g, 'org-' || (g % 50) FROM generate_series(1, 2 * :n) AS g;
INSERT INTO bench.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain,
                                              state, provider_operation_token, provider_created_at, delete_confirmed_at)
SELECT 'old-op-' || g, 'daytona', 'old-run-' || g, 1, 'org-' || (g % 50), md5('old-sandbox-' || g),
       CASE WHEN g % 4 = 0 THEN 'org-eu' END, 'deleted', 'old-tok-' || g,
       now() - interval '40 days' + g * interval '1 second', now() - interval '39 days' + g * interval '1 second'
FROM generate_series(1, 2 * :n) AS g;
INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at)
SELECT 'old-op-' || g, 'org-' || (g % 50), 'old-run-' || g, 'daytona', md5('old-sandbox-' || g),
       CASE WHEN g % 4 = 0 THEN 'org-eu' END, now() - interval '39 days', now() - interval '39 days'
FROM generate_series(1, 2 * :n) AS g;
INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', md5('old-sandbox-' || g), 'old-run-' || g, 1, CASE WHEN g % 4 = 0 THEN 'org-eu' END, 'deleted',
       now() - interval '39 days'
FROM generate_series(1, 2 * :n) AS g;
INSERT INTO bench.sandbox_cleanup_events_v2 (provider, sandbox_id, routing_domain, run_id, attempt, event_type)
SELECT 'daytona', md5('old-sandbox-' || g), CASE WHEN g % 4 = 0 THEN 'org-eu' END, 'old-run-' || g, 1, 'deleted'
FROM generate_series(1, 2 * :n) AS g;

-- Repeated identities: earlier lives of a fifth of the fleet's sandboxes
-- under another routing domain, and older leases of a tenth under another run.
INSERT INTO bench.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain,
                                              state, provider_operation_token, provider_created_at, delete_confirmed_at)
SELECT 'prev-' || op, 'daytona', 'prev-' || run, 1, 'org-1', sandbox, coalesce(nullif(domain, 'org-eu'), 'org-us'),
       'deleted', 'prev-tok-' || i, now() - interval '20 days', now() - interval '19 days'
FROM fleet WHERE repeat < 2;
INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at, released_at)
SELECT 'prev-' || op, 'org-1', 'prev-' || run, 'daytona', sandbox, coalesce(nullif(domain, 'org-eu'), 'org-us'),
       now() - interval '19 days', now() - interval '19 days'
FROM fleet WHERE repeat < 2
UNION ALL
SELECT 'older-' || op, 'org-1', 'older-' || run, 'daytona', sandbox, domain, now() - interval '10 days', now() - interval '10 days'
FROM fleet WHERE repeat = 9;
INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', sandbox, 'prev-' || run, 1, coalesce(nullif(domain, 'org-eu'), 'org-us'), 'deleted', now() - interval '19 days'
FROM fleet WHERE repeat < 2;

-- The fleet (kinds as in ledger.sql: 16 reserved, 12 unleased, 17 absent,
-- 19 terminal, 14 deleting, 0 live with a lease).
INSERT INTO bench.runs (run_id, org_id) SELECT run, 'org-' || (i % 50) FROM fleet;
INSERT INTO bench.attempts (run_id, attempt, resource_json)
SELECT run, 1, CASE WHEN k = 16 AND i % 3 = 0 THEN NULL
                    WHEN k = 16 AND i % 3 = 1 THEN '[{"kind":"modal_sandbox"}]'::jsonb
                    ELSE jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', sandbox) END
FROM fleet;
INSERT INTO bench.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id,
                                              routing_domain, state, provider_operation_token, provider_created_at,
                                              delete_confirmed_at)
SELECT op, 'daytona', run, 1, 'org-' || (i % 50), 'production',
       CASE WHEN k = 16 THEN NULL ELSE sandbox END, CASE WHEN k = 16 THEN NULL ELSE domain END,
       (CASE k WHEN 14 THEN 'deleting' WHEN 16 THEN 'reserved' WHEN 19 THEN 'deleted' ELSE 'live' END)::bench.runtime_sandbox_operation_state,
       'tok-' || op, CASE WHEN k = 16 THEN NULL ELSE now() - interval '1 hour' - i * interval '1 second' END,
       CASE WHEN k = 19 THEN now() - interval '30 minutes' END
FROM fleet;
INSERT INTO bench.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at)
SELECT op, 'org-' || (i % 50), run, CASE WHEN k = 16 THEN NULL ELSE 'daytona' END,
       CASE WHEN k = 16 THEN NULL ELSE sandbox END, CASE WHEN k = 16 THEN NULL ELSE domain END, now() + interval '1 hour'
FROM fleet WHERE k <> 12;
INSERT INTO bench.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
SELECT 'daytona', sandbox, run, 1, domain, CASE WHEN k = 19 THEN 'deleted' ELSE 'pending' END,
       CASE WHEN k = 19 THEN now() - interval '30 minutes' END
FROM fleet WHERE k IN (14, 19);

DROP TABLE IF EXISTS bench_inventory;
CREATE TABLE bench_inventory WITH (autovacuum_enabled = off) AS
SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'sandboxId', CASE WHEN k = 16 THEN md5('new-' || i) ELSE sandbox END,
           'operationKey', 'tok-' || op,
           'routingDomain', domain)) ORDER BY md5('order-' || i)) AS inventory
FROM fleet WHERE k NOT IN (17, 19);
