-- The examples of docs/stock.md, in its order (tests/docs_examples.rs checks the page against this output).
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
SELECT runtime_sandbox.stable_json('{"b": 1.0, "a": [1e21, "x"], "B": null, "_x": true}');
SELECT runtime_sandbox.stock_hash('{"a":1,"b":{"c":2}}');
SELECT runtime_sandbox.stock_hash('{"image":"node:20","packages":["git"]}');
-- A binding to check: one managed environment reconciled for one company.
DROP TABLE IF EXISTS public.environments, public.built_in_managed_resources, public.companies;
SELECT runtime_sandbox.install_environment_tables('public');
INSERT INTO public.companies (id, name) VALUES ('00000000-0000-0000-0000-0000000000c1', 'Acme');
SELECT action FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us"}');
SELECT b.company_id, b.stock_hash = runtime_sandbox.stock_hash(b.defaults_json) AS binding_consistent
FROM public.built_in_managed_resources AS b;
SELECT runtime_sandbox.managed_resource_status('env-1', 'sha256:aa', 'sha256:aa', 'sha256:bb');
DROP TABLE public.environments, public.built_in_managed_resources, public.companies;
