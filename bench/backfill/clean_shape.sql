-- The benchmark's clean shape (psql -v attempts=N): attempts/2 runs, two attempts each, 1-3 sandbox resources per
-- attempt, every 3 attempts share an updated_at (ties), the last 10 % of attempts repeat earlier sandboxes.
CREATE EXTENSION runtime_sandbox;
SELECT runtime_sandbox.install_ledger();
INSERT INTO runtime_scheduler.runs (run_id, org_id)
SELECT 'run-' || lpad(g::text, 7, '0'), 'org-' || (g % 97) FROM generate_series(1, :attempts / 2) AS g;
INSERT INTO runtime_scheduler.attempts (run_id, attempt, resource_json, updated_at)
SELECT 'run-' || lpad(((g + 1) / 2)::text, 7, '0'), 1 + g % 2,
       (SELECT jsonb_agg(jsonb_build_object(
            'kind', CASE WHEN (g + i) % 2 = 0 THEN 'daytona_sandbox' ELSE 'modal_sandbox' END,
            'sandboxId', 'sb-' || (g % (:attempts * 9 / 10)) || '-' || i,
            'daytonaOrganizationId', 'dorg-' || (g % (:attempts * 9 / 10) % 13),
            'modalAppId', 'app-' || (g % (:attempts * 9 / 10) % 7),
            'runtimeEnvironment', CASE WHEN g % 5 = 0 THEN 'staging' ELSE '' END))
        FROM generate_series(1, 1 + g % 3) AS i),
       timestamptz '2026-01-01 00:00:00+00' + (g / 3) * interval '1.5 milliseconds'
FROM generate_series(1, :attempts) AS g;
