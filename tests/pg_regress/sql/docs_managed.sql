-- The worked example of docs/managed_environments.md, in its order (tests/docs_examples.rs checks the page
-- against this output).
DROP TABLE IF EXISTS public.environments, public.built_in_managed_resources, public.companies;
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
SELECT runtime_sandbox.install_environment_tables('public');
INSERT INTO public.companies (id, name) VALUES
    ('00000000-0000-0000-0000-0000000000c1', 'Acme'),
    ('00000000-0000-0000-0000-0000000000c2', 'Globex');
SELECT action, stock_status, update_available, tracking_initialized, activity_action, stock_hash
  FROM runtime_sandbox.reconcile_managed_environment(
         'Daytona', 'daytona', '{"target":"us"}', 'Managed Daytona sandbox environment.');
SELECT name, status, config, metadata FROM public.environments;
SELECT action, stock_status, activity_action
  FROM runtime_sandbox.reconcile_managed_environment(
         'Daytona', 'daytona', '{"target":"us"}', 'Managed Daytona sandbox environment.');
UPDATE public.environments SET config = config || '{"cpu": 4}', env_vars = '{"API_TOKEN": "secret"}';
SELECT action, stock_status, update_available, activity_action
  FROM runtime_sandbox.reconcile_managed_environment(
         'Daytona', 'daytona', '{"target":"eu"}', 'Managed Daytona sandbox environment.');
SELECT config FROM public.environments;
SELECT company_id, stock_status, binding_stock_hash = current_hash AS matches_binding
  FROM runtime_sandbox.managed_environment_drift();
SELECT archived, bindings_updated, activity_action
  FROM runtime_sandbox.archive_managed_environment('daytona');
SELECT status, metadata ? '_paperclipManagedArchiveToken' AS has_token FROM public.environments;
SELECT action, stock_status, provider_reactivated
  FROM runtime_sandbox.reconcile_managed_environment(
         'Daytona', 'daytona', '{"target":"eu"}', 'Managed Daytona sandbox environment.');
SELECT status, config, metadata FROM public.environments;
SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '["not", "an", "object"]');
DROP TABLE public.environments, public.built_in_managed_resources, public.companies;
