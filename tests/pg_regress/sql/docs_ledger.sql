-- The examples of docs/ledger.md, in its order (tests/docs_examples.rs checks the page against this output).
CREATE EXTENSION IF NOT EXISTS runtime_sandbox;
DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
DROP SCHEMA IF EXISTS app_ledger CASCADE;
SELECT runtime_sandbox.install_ledger();
SELECT runtime_sandbox.install_ledger();
SELECT * FROM runtime_sandbox.check_ledger();
DROP INDEX runtime_scheduler.sandbox_cleanup_events_v2_sandbox_idx;
SELECT object, problem, severity FROM runtime_sandbox.check_ledger();
SELECT step, object FROM runtime_sandbox.install_ledger_ddl();
SELECT statement FROM runtime_sandbox.install_ledger_ddl();
SELECT object, problem, fix, severity FROM runtime_sandbox.check_ledger('nowhere');
SELECT runtime_sandbox.install_ledger('a;b');
-- An application's own ledger: a uuid lease id, a NOT NULL column of its own, an audit trigger.
CREATE SCHEMA app_ledger;
SELECT runtime_sandbox.install_ledger('app_ledger');
ALTER TABLE app_ledger.runtime_sandbox_capacity_leases ALTER COLUMN lease_id TYPE uuid USING lease_id::uuid;
ALTER TABLE app_ledger.sandbox_cleanup_jobs_v2 ADD COLUMN tenant text NOT NULL;
CREATE FUNCTION app_ledger.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER audit BEFORE UPDATE ON app_ledger.runtime_sandbox_operations FOR EACH ROW EXECUTE FUNCTION app_ledger.touch();
\x on
SELECT * FROM runtime_sandbox.check_ledger('app_ledger');
\x off
SELECT status FROM runtime_sandbox.reconcile_daytona('[]', now(), dry_run => true, ledger_schema => 'app_ledger');
SELECT runtime_sandbox.install_ledger('app_ledger');
SELECT function FROM runtime_sandbox.ledger_readiness('app_ledger') WHERE NOT ready;
DROP SCHEMA app_ledger CASCADE;
DROP SCHEMA runtime_scheduler CASCADE;
