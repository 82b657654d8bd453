#!/usr/bin/env bash
# Stock-hash throughput: runtime_sandbox.stock_hash against pgcrypto's
# encode(digest(doc::text, 'sha256'), 'hex') on the same 100k realistic
# documents, in the same run. Usage: bench/stock.sh "<psql command>" [docs]
set -euo pipefail
PSQL=${1:?usage: bench/stock.sh "<psql command>" [docs]}
DOCS=${2:-100000}
DB=runtime_sandbox_bench_stock

$PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
$PSQL -q -v ON_ERROR_STOP=1 -v docs="$DOCS" $DB <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION runtime_sandbox;
CREATE EXTENSION pgcrypto;
-- Documents shaped like the managed-environment stock the application hashes:
-- nested config, metadata markers, arrays, mixed-case keys, numbers, unicode.
CREATE TABLE docs AS
SELECT jsonb_build_object(
    'name', 'Sandbox ' || i,
    'description', CASE WHEN i % 3 = 0 THEN NULL ELSE 'Managed sandbox environment #' || i || ' – région é' END,
    'status', CASE WHEN i % 10 = 0 THEN 'archived' ELSE 'active' END,
    'config', jsonb_build_object(
        'provider', (ARRAY['daytona', 'kubernetes', 'modal'])[1 + i % 3],
        'image', 'ghcr.io/acme/runner:' || (i % 50),
        'timeoutMs', 30000 + i,
        'cpu', (i % 8) + 0.5,
        'egressAllowFqdns', jsonb_build_array('api.github.com', 'registry.npmjs.org', 'pypi.org'),
        'namespacePrefix', 'tenant-' || (i % 1000),
        'inCluster', i % 2 = 0,
        'Region', 'us-east-' || (i % 4),
        'adapters', jsonb_build_array(jsonb_build_object('type', 'claude', 'version', i % 7), jsonb_build_object('type', 'codex', 'version', 1.0))
    ),
    'metadata', jsonb_build_object(
        'managedByPaperclip', true,
        'managedSandboxProvider', 'daytona',
        'managedKubernetesSandbox', NULL,
        '_paperclipLabel', 'bench-' || i,
        'owner', 'team-' || (i % 20)
    )
) AS doc
FROM generate_series(1, :docs) AS i;
VACUUM ANALYZE docs;

CREATE FUNCTION pg_temp.docs_per_second(expr text) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE started timestamptz; best interval; took interval; n bigint;
BEGIN
    FOR round IN 1..3 LOOP
        started := clock_timestamp();
        EXECUTE format('SELECT count(%s) FROM docs', expr) INTO n;
        took := clock_timestamp() - started;
        IF best IS NULL OR took < best THEN best := took; END IF;
    END LOOP;
    RETURN round(n / extract(epoch FROM best));
END $$;

SELECT pg_temp.docs_per_second('encode(digest(doc::text, ''sha256''), ''hex'')') AS pgcrypto \gset
SELECT pg_temp.docs_per_second('runtime_sandbox.stock_hash(doc)') AS stock \gset
\echo
\echo 'stock_hash benchmark, ' :docs ' documents, best of 3 (docs/s)'
SELECT :pgcrypto AS pgcrypto_docs_per_s,
       :stock AS stock_hash_docs_per_s,
       round(:pgcrypto::numeric / :stock, 2) AS stock_hash_slowdown_vs_pgcrypto,
       CASE WHEN :pgcrypto::numeric / :stock <= 1.5 THEN 'met (<= 1.5x)' ELSE 'missed (> 1.5x)' END AS target;
SQL
$PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
