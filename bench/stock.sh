#!/usr/bin/env bash
# Stock-hash throughput: runtime_sandbox.stock_hash against pgcrypto's
# encode(digest(doc::text, 'sha256'), 'hex') on the same documents, in the same
# run, on three corpora of DOCS documents each (default 100k):
#   regular   documents shaped like managed-environment stock: a few key lists
#             shared by all documents (the per-backend member-order cache hits);
#   distinct  the same documents, but every object of every document has a key
#             list of its own (every object misses the cache);
#   mixed     one document in two of each, interleaved.
# Rounds alternate the two expressions (best of ROUNDS, default 3, each), so
# load from other processes hits both alike; the ratio is the figure.
# Prints BENCH lines (docs/design/benchmarks.md) for bench/table.sh.
# Usage: bench/stock.sh "<psql command>" [docs]
set -euo pipefail
PSQL=${1:?usage: bench/stock.sh "<psql command>" [docs]}
DOCS=${2:-$([ -n "${BENCH_QUICK:-}" ] && echo 10000 || echo 100000)}  # BENCH_QUICK=1: 10,000
ROUNDS=${ROUNDS:-3}
DB=runtime_sandbox_bench_stock

PGOPTIONS="-c client_min_messages=warning" $PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
$PSQL -q -v ON_ERROR_STOP=1 -v docs="$DOCS" -v rounds="$ROUNDS" $DB <<'SQL'
SET client_min_messages = warning;
-- One backend, no parallel workers: per-core throughput, steadier on a shared machine.
SET max_parallel_workers_per_gather = 0;
CREATE EXTENSION runtime_sandbox;
CREATE EXTENSION pgcrypto;
-- One document shaped like the managed-environment stock the application
-- hashes: nested config, metadata markers, arrays, mixed-case keys, numbers,
-- unicode. Every key of it ends in `s`: '' gives the shared key lists, a
-- per-document suffix gives each of its objects a key list of its own (the two
-- adapter objects differ by one more letter).
CREATE FUNCTION pg_temp.doc(i int, s text) RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_build_object(
    'name' || s, 'Sandbox ' || i,
    'description' || s, CASE WHEN i % 3 = 0 THEN NULL ELSE 'Managed sandbox environment #' || i || ' – région é' END,
    'status' || s, CASE WHEN i % 10 = 0 THEN 'archived' ELSE 'active' END,
    'config' || s, jsonb_build_object(
        'provider' || s, (ARRAY['daytona', 'kubernetes', 'modal'])[1 + i % 3],
        'image' || s, 'ghcr.io/acme/runner:' || (i % 50),
        'timeoutMs' || s, 30000 + i,
        'cpu' || s, (i % 8) + 0.5,
        'egressAllowFqdns' || s, jsonb_build_array('api.github.com', 'registry.npmjs.org', 'pypi.org'),
        'namespacePrefix' || s, 'tenant-' || (i % 1000),
        'inCluster' || s, i % 2 = 0,
        'Region' || s, 'us-east-' || (i % 4),
        'adapters' || s, jsonb_build_array(
            jsonb_build_object('type' || s || 'a', 'claude', 'version' || s || 'a', i % 7),
            jsonb_build_object('type' || s || 'b', 'codex', 'version' || s || 'b', 1.0))
    ),
    'metadata' || s, jsonb_build_object(
        'managedByPaperclip' || s, true,
        'managedSandboxProvider' || s, 'daytona',
        'managedKubernetesSandbox' || s, NULL,
        '_paperclipLabel' || s, 'bench-' || i,
        'owner' || s, 'team-' || (i % 20)
    )
) $$;
CREATE TABLE docs_regular AS SELECT pg_temp.doc(i, '') AS doc FROM generate_series(1, :docs) AS i;
CREATE TABLE docs_distinct AS SELECT pg_temp.doc(i, '_' || i) AS doc FROM generate_series(1, :docs) AS i;
CREATE TABLE docs_mixed AS
SELECT pg_temp.doc(i, CASE WHEN i % 2 = 0 THEN '_' || i ELSE '' END) AS doc FROM generate_series(1, :docs) AS i;
VACUUM ANALYZE docs_regular, docs_distinct, docs_mixed;

-- Best of `rounds` for each expression, the two alternating round by round.
CREATE FUNCTION pg_temp.docs_per_second(tab text, rounds int, OUT pgcrypto numeric, OUT stock numeric)
LANGUAGE plpgsql AS $$
DECLARE started timestamptz; took interval; best_pgcrypto interval; best_stock interval; n bigint;
BEGIN
    FOR round IN 1..rounds LOOP
        started := clock_timestamp();
        EXECUTE format('SELECT count(encode(public.digest(doc::text, ''sha256''), ''hex'')) FROM %I', tab) INTO n;
        took := clock_timestamp() - started;
        IF best_pgcrypto IS NULL OR took < best_pgcrypto THEN best_pgcrypto := took; END IF;
        started := clock_timestamp();
        EXECUTE format('SELECT count(runtime_sandbox.stock_hash(doc)) FROM %I', tab) INTO n;
        took := clock_timestamp() - started;
        IF best_stock IS NULL OR took < best_stock THEN best_stock := took; END IF;
    END LOOP;
    pgcrypto := round(n / extract(epoch FROM best_pgcrypto));
    stock := round(n / extract(epoch FROM best_stock));
END $$;

CREATE TEMP TABLE results (corpus text, pgcrypto numeric, stock numeric);
INSERT INTO results SELECT 'regular', * FROM pg_temp.docs_per_second('docs_regular', :rounds);
INSERT INTO results SELECT 'distinct', * FROM pg_temp.docs_per_second('docs_distinct', :rounds);
INSERT INTO results SELECT 'mixed', * FROM pg_temp.docs_per_second('docs_mixed', :rounds);

\echo
\echo 'stock_hash against pgcrypto, ' :docs ' documents per corpus, best of ' :rounds ' (docs/s)'
SELECT corpus, pgcrypto AS pgcrypto_docs_per_s, stock AS stock_hash_docs_per_s,
       round(pgcrypto / stock, 2) AS stock_hash_time_vs_pgcrypto,
       CASE WHEN pgcrypto / stock <= 1.5 THEN 'met (<= 1.5x)' ELSE 'missed (> 1.5x)' END AS target
FROM results;
\pset tuples_only on
\pset format unaligned
SELECT format('BENCH|stock.%s|%s|x pgcrypto time|<= 1.5|%s|stock_hash %s docs/s, pgcrypto %s docs/s',
              corpus, round(pgcrypto / stock, 2), CASE WHEN pgcrypto / stock <= 1.5 THEN 'met' ELSE 'missed' END,
              stock, pgcrypto)
FROM results;
SQL
$PSQL -q postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
