-- The scheduled reconciliation's job (schedule_reconciliation makes pg_cron
-- run it): reconcile the latest snapshot of an environment, COMMIT (the
-- history row and the notification stay), then fail when the run was blocked
-- or found no fresh snapshot, so pg_cron's job_run_details shows the run as
-- failed, with the reason. The reconcile's own WARNING is left out in the job
-- (the error says it): each message is logged once. PL/pgSQL, no SET clause
-- (it COMMITs): every name and operator is schema-qualified.
CREATE PROCEDURE @extschema@.run_reconciliation_job_in_environment(
    environment          text     DEFAULT 'production',
    batch_size           integer  DEFAULT 500,
    minimum_age          interval DEFAULT '10 minutes',
    max_snapshot_age     interval DEFAULT '15 minutes',
    absent_confirmations integer  DEFAULT 2,
    max_absent_ratio     real     DEFAULT 0.5,
    ledger_schema        name     DEFAULT 'runtime_scheduler'
)
LANGUAGE plpgsql
AS $procedure$
DECLARE
    summary @extschema@.reconciliation_summary;
    reason  text;
    owners  text;
BEGIN
    PERFORM pg_catalog.set_config('runtime_sandbox.scheduled_job', 'on', true);
    summary := @extschema@.reconcile_daytona_latest(false, batch_size, minimum_age, max_snapshot_age,
                                                    absent_confirmations, ledger_schema, max_absent_ratio, environment);
    COMMIT;
    IF summary.status OPERATOR(pg_catalog.=) 'blocked_mass_absence' THEN
        reason := pg_catalog.format(
            '%s absent candidates among %s live operations are too many to believe (an empty or partial listing?); nothing was seeded or marked absent',
            summary.absent_candidates, summary.live_operations);
    ELSIF summary.status OPERATOR(pg_catalog.=) 'blocked_unowned_sandboxes' THEN
        SELECT pg_catalog.string_agg(pg_catalog.format('%s in %L', owned.value, owned.key), ', ')
          INTO owners
          FROM pg_catalog.jsonb_each_text(summary.unowned_in_other_environments) AS owned;
        reason := pg_catalog.format(
            '%s listed sandboxes are owned by no operation of environment %L (first: %s); nothing was seeded or marked absent%s',
            pg_catalog.cardinality(summary.unmatched_provider_sandbox_ids), environment,
            pg_catalog.left(summary.unmatched_provider_sandbox_ids[1], 100),
            CASE WHEN owners IS NULL THEN ''
                 ELSE pg_catalog.format(' (live operations of other environments own some of them: %s)', owners) END);
    ELSIF summary.status OPERATOR(pg_catalog.=) 'no_fresh_snapshot' THEN
        reason := pg_catalog.format(
            'the newest Daytona snapshot of environment %L (%s) is older than max_snapshot_age; nothing was reconciled',
            environment, coalesce(CAST(summary.snapshot_id AS pg_catalog.text), 'none'));
    END IF;
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'runtime_sandbox: scheduled reconciliation of ledger % was %: %', ledger_schema, summary.status, reason
            USING ERRCODE = '55000',
                  HINT = pg_catalog.format('The run is recorded: SELECT * FROM %I.reconciliation_health;', ledger_schema);
    END IF;
END
$procedure$;

COMMENT ON PROCEDURE @extschema@.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name) IS
'The job schedule_reconciliation creates for an environment other than production: reconcile_daytona_latest (applying) of that environment with these options, COMMIT, then an error (SQLSTATE 55000) when the run was blocked (blocked_mass_absence, blocked_unowned_sandboxes) or found no fresh snapshot, so that pg_cron records the run as failed with its reason; the history row in <ledger_schema>.reconciliation_runs is kept. CALL it as a statement of its own (it COMMITs).';
REVOKE EXECUTE ON PROCEDURE @extschema@.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name) FROM PUBLIC;

-- The job of production, as earlier releases scheduled it (their jobs name
-- this signature): run_reconciliation_job_in_environment for 'production'.
CREATE PROCEDURE @extschema@.run_reconciliation_job(
    batch_size           integer  DEFAULT 500,
    minimum_age          interval DEFAULT '10 minutes',
    max_snapshot_age     interval DEFAULT '15 minutes',
    absent_confirmations integer  DEFAULT 2,
    max_absent_ratio     real     DEFAULT 0.5,
    ledger_schema        name     DEFAULT 'runtime_scheduler'
)
LANGUAGE plpgsql
AS $procedure$
BEGIN
    CALL @extschema@.run_reconciliation_job_in_environment('production', batch_size, minimum_age, max_snapshot_age,
                                                           absent_confirmations, max_absent_ratio, ledger_schema);
END
$procedure$;

COMMENT ON PROCEDURE @extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name) IS
'The job schedule_reconciliation creates for environment production: run_reconciliation_job_in_environment(''production'', ...): reconcile_daytona_latest (applying) with these options, COMMIT, then an error (SQLSTATE 55000) when the run was blocked (blocked_mass_absence, blocked_unowned_sandboxes) or found no fresh snapshot, so that pg_cron records the run as failed with its reason; the history row in <ledger_schema>.reconciliation_runs is kept. CALL it as a statement of its own (it COMMITs).';
REVOKE EXECUTE ON PROCEDURE @extschema@.run_reconciliation_job(integer, interval, interval, integer, real, name) FROM PUBLIC;
