-- One row per managed-sandbox binding: the hash the binding recorded, the
-- hash of the environment as it is now (the application's stock object over
-- the reconciler's key set: the three markers and every binding's stock
-- metadata keys), and the status rules with the newest stock any binding of
-- that environment installed as "latest".
WITH binding AS (
    SELECT * FROM @app@.built_in_managed_resources
     WHERE bundle_key = $1 AND resource_kind = $2 AND resource_key = $3
), managed_key AS (
    SELECT unnest(ARRAY['managedByPaperclip', 'managedSandboxProvider', 'managedKubernetesSandbox']) AS k
    UNION
    SELECT jsonb_object_keys(defaults_json -> 'metadata') FROM binding
     WHERE jsonb_typeof(defaults_json -> 'metadata') = 'object'
), latest AS (
    SELECT DISTINCT ON (resource_id) resource_id, stock_hash
      FROM binding ORDER BY resource_id, updated_at DESC, id DESC
), current AS (
    SELECT e.id, runtime_sandbox.stock_hash(jsonb_build_object(
               'name', e.name, 'description', e.description, 'config', e.config,
               'metadata', (SELECT jsonb_object_agg(k, coalesce(
                                CASE WHEN jsonb_typeof(e.metadata) = 'object' THEN e.metadata -> k END,
                                'null'::jsonb))
                              FROM managed_key),
               'status', e.status)) AS hash
      FROM @app@.environments e
     WHERE e.id IN (SELECT resource_id FROM binding)
)
SELECT ROW(b.company_id, b.resource_id, b.stock_hash, c.hash,
           runtime_sandbox.managed_resource_status(c.id::text, c.hash, b.stock_hash, l.stock_hash))
       ::runtime_sandbox.managed_environment_drift
  FROM binding b
  LEFT JOIN current c ON c.id = b.resource_id
  LEFT JOIN latest l ON l.resource_id = b.resource_id
 ORDER BY b.company_id, b.id
