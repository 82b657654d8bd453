-- Result rows of the managed-environment functions.
CREATE TYPE @extschema@.managed_environment_reconciliation AS (
    environment_id       uuid,
    action               text,
    stock_status         @extschema@.managed_stock_status,
    update_available     boolean,
    stock_hash           text,
    provider_reactivated boolean,
    tracking_initialized boolean,
    activity_action      text,
    company_ids          uuid[]
);

CREATE TYPE @extschema@.managed_environment_archive AS (
    environment_id   uuid,
    archived         boolean,
    archive_token    uuid,
    bindings_updated integer,
    activity_action  text
);

CREATE TYPE @extschema@.managed_environment_drift AS (
    company_id         uuid,
    environment_id     uuid,
    binding_stock_hash text,
    current_hash       text,
    stock_status       @extschema@.managed_stock_status
);
