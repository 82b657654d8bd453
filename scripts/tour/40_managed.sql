-- 4. A managed sandbox environment kept at stock; an operator's edit is protected.
SELECT runtime_sandbox.install_environment_tables('public');
INSERT INTO public.companies (id, name) VALUES ('00000000-0000-0000-0000-00000000000a', 'Acme');
SELECT action, stock_status, activity_action
  FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us"}');
-- An operator points the environment at another region ...
UPDATE public.environments SET config = config || '{"target": "eu"}' WHERE name = 'Daytona';
-- ... and the next stock (a new image) is held back instead of overwriting the edit.
SELECT action, stock_status, update_available
  FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us", "image": "node:22"}');
SELECT config->>'target' AS target FROM public.environments WHERE name = 'Daytona';
SELECT company_id, stock_status FROM runtime_sandbox.managed_environment_drift();
