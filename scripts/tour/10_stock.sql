-- 1. Stock hashes, bit-identical with the application's stockHash().
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
SELECT runtime_sandbox.stable_json('{"b": 1.0, "a": [1e21, "x"], "B": null, "_x": true}');
SELECT runtime_sandbox.stock_hash('{"image": "node:20", "packages": ["git"]}');
SELECT runtime_sandbox.managed_resource_status('env-1', 'sha256:aa', 'sha256:aa', 'sha256:bb') AS status;
