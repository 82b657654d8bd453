-- The application's environment tables, for new installs, tests and the demo.
-- @app@ is replaced by the quoted app_schema. Every statement is idempotent;
-- an existing application schema keeps its own definitions. The schema itself
-- is created by install_environment_tables when missing.

CREATE TABLE IF NOT EXISTS @app@.companies (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS @app@.environments (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    description text,
    driver      text NOT NULL DEFAULT 'local',
    status      text NOT NULL DEFAULT 'active',
    config      jsonb NOT NULL DEFAULT '{}'::jsonb,
    env_vars    jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata    jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS environments_name_idx ON @app@.environments (name);
CREATE UNIQUE INDEX IF NOT EXISTS environments_local_driver_idx ON @app@.environments (driver)
    WHERE driver = 'local';
-- At most one Paperclip-managed sandbox row per instance.
CREATE UNIQUE INDEX IF NOT EXISTS environments_managed_sandbox_idx ON @app@.environments (driver)
    WHERE driver = 'sandbox' AND (metadata ->> 'managedByPaperclip')::boolean = true;

CREATE TABLE IF NOT EXISTS @app@.built_in_managed_resources (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    company_id    uuid NOT NULL,
    bundle_key    text NOT NULL,
    resource_kind text NOT NULL,
    resource_key  text NOT NULL,
    resource_id   uuid NOT NULL,
    stock_version text,
    stock_hash    text NOT NULL,
    defaults_json jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS built_in_managed_resources_key_idx
    ON @app@.built_in_managed_resources (company_id, bundle_key, resource_kind, resource_key);
