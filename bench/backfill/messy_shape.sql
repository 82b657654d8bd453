-- The benchmark's messy shape (psql -v attempts=N), the data issue 11 was measured on: attempts/2 runs, two
-- attempts each (1 % name a run that does not exist), every 3 attempts share an updated_at, and
--   * a quarter of the sandbox slots take the identity of the first slot of a random earlier attempt, so about a
--     fifth of the resources repeat an earlier identity, most of them on an earlier page;
--   * 3 % of the identities already have an operation (the application's own rows, inserted below);
--   * every shape the page skips: SQL NULL, JSON null, scalars, `[]`, `{}` as resource_json (7 % of attempts);
--     0-2 malformed elements among the resources of the arrays (null, numbers, strings, booleans, nested
--     arrays, objects without kind or with a kind that is a number, object, array, boolean, null, an unknown or
--     mis-cased string, a sandbox kind without or with a NULL or empty sandboxId, also beside a number or an
--     object where the routing domain is read);
--   * 0.5 % of the sandbox ids are JSON numbers (kept by the page, printed as the server prints them).
CREATE EXTENSION runtime_sandbox;
SELECT runtime_sandbox.install_ledger();
CREATE FUNCTION pg_temp.h(x bigint, salt int) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT hashint8(x * 64 + salt) & 2147483647 $$;
-- The sandbox in slot i of attempt g.
CREATE FUNCTION pg_temp.sandbox(g bigint, i int) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
               'kind', CASE WHEN b % 2 = 0 THEN 'daytona_sandbox' ELSE 'modal_sandbox' END,
               'sandboxId', CASE WHEN pg_temp.h(g * 4 + i, 7) % 200 = 0 THEN to_jsonb(b) ELSE to_jsonb('sb-' || b) END,
               'daytonaOrganizationId', 'dorg-' || (b % 13),
               'modalAppId', 'app-' || (b % 7),
               'runtimeEnvironment', CASE WHEN g % 5 = 0 THEN 'staging' ELSE '' END)
    FROM (SELECT CASE WHEN g > 10 AND pg_temp.h(g * 4 + i, 5) % 4 = 0
                      THEN (pg_temp.h(g * 4 + i, 6) % (g - 1) + 1)::bigint * 4 + 1
                      ELSE g * 4 + i END AS b) AS identity
$$;
INSERT INTO runtime_scheduler.runs (run_id, org_id)
SELECT 'run-' || lpad(g::text, 7, '0'), 'org-' || (g % 97) FROM generate_series(1, :attempts / 2) AS g;
INSERT INTO runtime_scheduler.attempts (run_id, attempt, resource_json, updated_at)
SELECT CASE WHEN pg_temp.h(g, 1) % 100 = 0 THEN 'orphan-' || g ELSE 'run-' || lpad(((g + 1) / 2)::text, 7, '0') END,
       1 + g % 2,
       CASE form WHEN 0 THEN NULL WHEN 1 THEN 'null' WHEN 2 THEN '"text"' WHEN 3 THEN '42' WHEN 4 THEN '[]'
                 WHEN 5 THEN '{}' WHEN 6 THEN 'true' WHEN 7 THEN pg_temp.sandbox(g, 1)
       ELSE (SELECT jsonb_agg(e.element ORDER BY e.pos)
             FROM (SELECT i * 10 AS pos, pg_temp.sandbox(g, i) AS element FROM generate_series(1, 1 + g % 3) AS i
                   UNION ALL
                   SELECT pg_temp.h(g * 4 + j, 8) % 40,
                          (ARRAY['null', '7', '"text"', 'true', '[1, {"kind": "daytona_sandbox", "sandboxId": "nested"}]',
                                 '{}', '{"kind": "docker", "sandboxId": "d-1"}', '{"kind": 1, "sandboxId": "k"}',
                                 '{"kind": {"a": "daytona_sandbox"}, "sandboxId": "k"}', '{"kind": null, "sandboxId": "k"}',
                                 '{"kind": "daytona_sandbox"}', '{"kind": "modal_sandbox", "sandboxId": ""}',
                                 '{"kind": "daytona_sandbox", "sandboxId": null}', '{"kind": ["modal_sandbox"], "sandboxId": "k"}',
                                 '{"kind": "DAYTONA_SANDBOX", "sandboxId": "k"}', '{"kind": "daytona_sandbox ", "sandboxId": "k"}',
                                 '{"sandboxId": "nokind"}', '"daytona_sandbox"', '{"kind": true, "sandboxId": "k"}',
                                 '{"kind": "modal_sandbox", "sandboxId": "", "modalAppId": 7}',
                                 '{"kind": "daytona_sandbox", "sandboxId": null, "daytonaOrganizationId": {"id": 1}}'
                                ])[1 + pg_temp.h(g * 4 + j, 9) % 21]::jsonb
                   FROM generate_series(1, pg_temp.h(g, 3) % 3) AS j) AS e)
       END,
       timestamptz '2026-01-01 00:00:00+00' + (g / 3) * interval '1.5 milliseconds'
FROM generate_series(1, :attempts) AS g, LATERAL (SELECT pg_temp.h(g, 2) % 100 AS form) AS f;
-- The identities the page takes (the seed's filters), to pick the pre-existing 3 % and to report the repeats.
CREATE TEMP TABLE identity AS
SELECT CASE r.value ->> 'kind' WHEN 'modal_sandbox' THEN 'modal' ELSE 'daytona' END AS provider,
       r.value ->> 'sandboxId' AS sandbox_id,
       coalesce(CASE r.value ->> 'kind' WHEN 'modal_sandbox' THEN NULLIF(r.value ->> 'modalAppId', '')
                ELSE NULLIF(r.value ->> 'daytonaOrganizationId', '') END, '') AS domain_key
FROM runtime_scheduler.attempts AS a
JOIN runtime_scheduler.runs USING (run_id)
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(a.resource_json) = 'array' THEN a.resource_json
                                        ELSE jsonb_build_array(a.resource_json) END) AS r(value)
WHERE r.value ->> 'kind' IN ('daytona_sandbox', 'modal_sandbox') AND NULLIF(r.value ->> 'sandboxId', '') IS NOT NULL;
INSERT INTO runtime_scheduler.runtime_sandbox_operations
    (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state)
SELECT 'app:' || provider || ':' || sandbox_id || ':' || domain_key, provider, 'app-run', 1, 'org-app', sandbox_id,
       NULLIF(domain_key, ''), 'live'
FROM (SELECT DISTINCT provider, sandbox_id, domain_key FROM identity) AS d
WHERE pg_temp.h(hashtext(provider || ':' || sandbox_id || ':' || domain_key), 11) % 100 < 3;
\pset format unaligned
\pset tuples_only on
SELECT format('   %s resources in %s identities: %s %% of the resources repeat an earlier identity; %s operations exist already (%s %% of the identities)',
              count(*), count(DISTINCT (provider, sandbox_id, domain_key)),
              round(100.0 * (count(*) - count(DISTINCT (provider, sandbox_id, domain_key))) / count(*), 1),
              (SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations),
              round(100.0 * (SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations)
                    / count(DISTINCT (provider, sandbox_id, domain_key)), 1))
FROM identity;
