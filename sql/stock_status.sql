-- How a managed resource relates to its stock baseline (the application's
-- ManagedResourceStockStatus).
CREATE TYPE @extschema@.managed_stock_status AS ENUM (
    'missing', 'stock_current', 'stock_update_available', 'operator_modified'
);

-- The application's resourceStatus rules, in their order. Not STRICT: a NULL
-- resource or hash is an answer (missing), not an unknown.
CREATE FUNCTION @extschema@.managed_resource_status(
    resource_id text,
    current_hash text,
    binding_stock_hash text,
    latest_stock_hash text
) RETURNS @extschema@.managed_stock_status
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN coalesce(resource_id, '') = '' OR coalesce(current_hash, '') = ''
            THEN 'missing'
        WHEN current_hash = latest_stock_hash
            THEN 'stock_current'
        WHEN coalesce(binding_stock_hash, '') <> '' AND current_hash = binding_stock_hash
            THEN 'stock_update_available'
        ELSE 'operator_modified'
    END::@extschema@.managed_stock_status
$$;
