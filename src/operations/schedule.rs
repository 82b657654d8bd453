//! pg_cron jobs for the reconciliation (of the latest snapshot) and for the
//! operation backfill: created, replaced and removed by name.

use super::rules;
use super::snapshots::LATEST_APPLY_NEEDS;
use crate::args::{self, SchemaName};
use crate::pg_types::Name;
use crate::reconcile::summary;
use crate::shell::{check, existing_schema, raise_with_hint};
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::PgSqlErrorCode;

const CRON_INSTALLED: &str = include_str!("../../sql/operations/cron_installed.sql");
const CRON_SCHEDULE: &str = include_str!("../../sql/operations/cron_schedule.sql");
const CRON_UNSCHEDULE: &str = include_str!("../../sql/operations/cron_unschedule.sql");

const RECONCILE_JOB: &str = "reconcile_daytona";
const BACKFILL_JOB: &str = "sandbox_operation_backfill";
/// What the backfill procedure reads and writes in the ledger.
const BACKFILL_NEEDS: &[&str] = &["runs", "attempts", "runtime_sandbox_operations", "control"];

/// Schedule `reconcile_daytona_latest(ledger_schema => ...)` with pg_cron.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn schedule_reconciliation(
    schedule: default!(Option<&str>, "'*/5 * * * *'"),
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> i64 {
    let schedule = check(rules::cron_schedule(check(summary::required("schedule", schedule))));
    let ledger = existing_schema("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str());
    let job = job(job_name, RECONCILE_JOB, &ledger);
    let command = rules::reconcile_command(&ledger);
    Spi::connect_mut(|client| {
        crate::ledger::require(client, &ledger, LATEST_APPLY_NEEDS, "schedule_reconciliation");
        schedule_job(client, "schedule_reconciliation", &job, &schedule, &command)
    })
}

/// Remove the reconciliation job; false when there was none.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn unschedule_reconciliation(
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> bool {
    let ledger = check(args::schema_name("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str()));
    let job = job(job_name, RECONCILE_JOB, &ledger);
    Spi::connect_mut(|client| unschedule_job(client, "unschedule_reconciliation", &job))
}

/// Schedule `CALL run_sandbox_operation_backfill(...)` with pg_cron.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn schedule_sandbox_operation_backfill(
    schedule: default!(Option<&str>, "'* * * * *'"),
    job_name: default!(Option<&str>, "NULL"),
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> i64 {
    let schedule = check(rules::cron_schedule(check(summary::required("schedule", schedule))));
    let batch_size = check(args::batch_size(check(summary::required("batch_size", batch_size))));
    let max_batches = check(rules::max_batches(max_batches));
    let ledger = existing_schema("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str());
    let job = job(job_name, BACKFILL_JOB, &ledger);
    let command = rules::backfill_command(batch_size, max_batches, &ledger);
    Spi::connect_mut(|client| {
        crate::ledger::require(client, &ledger, BACKFILL_NEEDS, "schedule_sandbox_operation_backfill");
        schedule_job(client, "schedule_sandbox_operation_backfill", &job, &schedule, &command)
    })
}

/// Remove the backfill job; false when there was none.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn unschedule_sandbox_operation_backfill(
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> bool {
    let ledger = check(args::schema_name("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str()));
    let job = job(job_name, BACKFILL_JOB, &ledger);
    Spi::connect_mut(|client| unschedule_job(client, "unschedule_sandbox_operation_backfill", &job))
}

/// The job's name: the caller's, or `<kind>:<ledger_schema>`.
fn job(job_name: Option<&str>, kind: &str, ledger: &SchemaName) -> String {
    match job_name {
        Some(name) => check(rules::job_name("job_name", name)),
        None => check(rules::default_job_name(kind, ledger)),
    }
}

/// pg_cron must be installed here (it can only be, in the database named by
/// cron.database_name); otherwise say where, and what to run there instead.
fn require_cron(client: &mut SpiClient, function: &'static str, command: Option<&str>, job: &str, schedule: &str) {
    let table = client
        .select(CRON_INSTALLED, None, &[])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function} could not read the catalog: {e}"))
        .first();
    if table.get::<bool>(1).ok().flatten().unwrap_or(false) {
        return;
    }
    let cron_database = table.get::<String>(2).ok().flatten();
    let here = table.get::<String>(3).ok().flatten().unwrap_or_default();
    let hint = match (cron_database, command) {
        (None, _) => "pg_cron is not loaded: add it to shared_preload_libraries, set cron.database_name, restart, \
                      then CREATE EXTENSION pg_cron in that database."
            .to_string(),
        (Some(cron), _) if cron == here => format!("Run CREATE EXTENSION pg_cron in database {here:?} first."),
        (Some(cron), Some(command)) => format!(
            "pg_cron schedules only from database {cron:?} (cron.database_name). Either create runtime_sandbox there too, \
             or run there: SELECT cron.schedule_in_database({}, {}, {}, {});",
            rules::literal(job),
            rules::literal(schedule),
            rules::literal(command),
            rules::literal(&here)
        ),
        (Some(cron), None) => format!("pg_cron schedules only from database {cron:?} (cron.database_name); unschedule the job there."),
    };
    raise_with_hint(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("runtime_sandbox: {function}: pg_cron is not installed in database {here:?}"),
        hint,
        function,
    );
}

fn schedule_job(client: &mut SpiClient, function: &'static str, job: &str, schedule: &str, command: &str) -> i64 {
    require_cron(client, function, Some(command), job, schedule);
    client
        .update(CRON_SCHEDULE, None, &[job.into(), schedule.into(), command.into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function}: pg_cron refused the job: {e}"))
        .first()
        .get::<i64>(1)
        .ok()
        .flatten()
        .expect("cron.schedule returns the job id")
}

fn unschedule_job(client: &mut SpiClient, function: &'static str, job: &str) -> bool {
    require_cron(client, function, None, job, "");
    client
        .update(CRON_UNSCHEDULE, None, &[job.into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function}: {e}"))
        .first()
        .get::<bool>(1)
        .ok()
        .flatten()
        .unwrap_or(false)
}
