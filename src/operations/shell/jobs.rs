//! pg_cron jobs for the reconciliation (of the latest snapshot) and for the
//! operation backfill: created, replaced and removed by name, in this database
//! or, from the database pg_cron runs in, in another one (`database`).

use super::*;


pub(super) const CRON_INSTALLED: &str = include_str!("../../../sql/queries/operations/cron_installed.sql");
pub(super) const CRON_SCHEDULE: &str = include_str!("../../../sql/queries/operations/cron_schedule.sql");
pub(super) const CRON_SCHEDULE_IN_DATABASE: &str = include_str!("../../../sql/queries/operations/cron_schedule_in_database.sql");
pub(super) const CRON_UNSCHEDULE: &str = include_str!("../../../sql/queries/operations/cron_unschedule.sql");

pub(super) const RECONCILE_JOB: &str = "reconcile_daytona";
pub(super) const BACKFILL_JOB: &str = "sandbox_operation_backfill";

/// Where a job runs: this database (its ledger checked now), or another one
/// (scheduled from the database pg_cron runs in; its ledger is checked when
/// the job runs, and the job fails saying why).
pub(super) struct Target {
    /// None: this database.
    database: Option<String>,
}

pub(super) fn target(database: Option<Name>) -> Target {
    let here = current_database();
    Target { database: database.map(|d| d.0).filter(|d| *d != here) }
}

pub(super) fn current_database() -> String {
    crate::shell::spi::get_one_with_args::<String>("SELECT pg_catalog.current_database()::text", &[])
        .unwrap_or_else(|e| error!("runtime_sandbox: current_database(): {e}"))
        .unwrap_or_default()
}

/// An interval argument as (months, days, microseconds).
pub(super) fn parts(interval: Interval) -> (i32, i32, i64) {
    (interval.months(), interval.days(), interval.micros())
}

/// Schedule the reconciliation of the latest snapshot with pg_cron: a job that
/// runs `run_reconciliation_job` with these options, and fails when a run is
/// blocked or finds no fresh snapshot.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "schedule_reconciliation", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn schedule_reconciliation_of(
    schedule: default!(Option<&str>, "'*/5 * * * *'"),
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    absent_confirmations: default!(Option<i32>, 2),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    max_snapshot_age: default!(Option<Interval>, "'15 minutes'"),
    max_absent_ratio: default!(Option<f32>, 0.5),
    batch_size: default!(Option<i32>, 500),
    database: default!(Option<Name>, "NULL"),
    environment: default!(Option<&str>, "'production'"),
) -> i64 {
    let schedule = check(rules::cron_schedule(check(summary::required("schedule", schedule))));
    let confirmations = check(rules::absent_confirmations(check(summary::required("absent_confirmations", absent_confirmations))));
    let minimum_age = check(summary::required("minimum_age", minimum_age));
    check(summary::minimum_age(minimum_age.months(), minimum_age.days(), minimum_age.micros()));
    let max_snapshot_age = check(summary::required("max_snapshot_age", max_snapshot_age));
    check(rules::max_snapshot_age(max_snapshot_age.months(), max_snapshot_age.days(), max_snapshot_age.micros()));
    let max_absent_ratio = check(summary::max_absent_ratio(check(summary::required("max_absent_ratio", max_absent_ratio))));
    let batch_size = check(args::batch_size(check(summary::required("batch_size", batch_size))));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let environment = check(args::environment("environment", check(summary::required("environment", environment))));
    check(rules::job_environment(&environment.name));
    let target = target(database);
    let ledger = match target.database {
        None => existing_schema("ledger_schema", ledger_schema.as_str()),
        Some(_) => check(args::schema_name("ledger_schema", ledger_schema.as_str())),
    };
    let job = job(job_name, RECONCILE_JOB, &ledger, &target, Some(&environment));
    let options = rules::ReconcileJob {
        batch_size,
        minimum_age: parts(minimum_age),
        max_snapshot_age: parts(max_snapshot_age),
        absent_confirmations: confirmations,
        max_absent_ratio,
        environment: environment.name.clone(),
    };
    let command = rules::reconcile_command(&job, &ledger, &options);
    if target.database.is_none() {
        // The job will run as whoever schedules it: that role must be able to act as the ledger's owner, and
        // to execute what the job calls.
        let access = crate::ledger::require(&ledger, latest_needs(false), "schedule_reconciliation");
        for table in ["provider_inventory_snapshots", "reconciliation_runs"] {
            access.environment_column(&ledger, table, &environment, "schedule_reconciliation");
        }
        refuse_unrunnable("schedule_reconciliation", rules::reconcile_job_needs(&environment.name));
    }
    crate::shell::standby::refuse_writes("schedule_reconciliation");
    Spi::connect_mut(|client| schedule_job(client, "schedule_reconciliation", &job, &schedule, &command, &target))
}

/// The 0.3.0 signature (no `environment`), kept so a 0.3.0 catalog works until `ALTER EXTENSION ... UPDATE`.
#[allow(clippy::too_many_arguments)]
#[pg_extern(sql = false)]
pub(super) fn schedule_reconciliation_with(
    schedule: Option<&str>,
    job_name: Option<&str>,
    ledger_schema: Option<Name>,
    absent_confirmations: Option<i32>,
    minimum_age: Option<Interval>,
    max_snapshot_age: Option<Interval>,
    max_absent_ratio: Option<f32>,
    batch_size: Option<i32>,
    database: Option<Name>,
) -> i64 {
    schedule_reconciliation_of(
        schedule,
        job_name,
        ledger_schema,
        absent_confirmations,
        minimum_age,
        max_snapshot_age,
        max_absent_ratio,
        batch_size,
        database,
        Some(args::DEFAULT_ENVIRONMENT),
    )
}

/// The 0.2.0 signature, kept so a 0.2.0 catalog works until `ALTER EXTENSION ... UPDATE`.
#[pg_extern(sql = false)]
pub(super) fn schedule_reconciliation(schedule: Option<&str>, job_name: Option<&str>, ledger_schema: Option<Name>) -> i64 {
    let day = |micros: i64| Interval::new(0, 0, micros).ok();
    schedule_reconciliation_of(
        schedule,
        job_name,
        ledger_schema,
        Some(2),
        day(600_000_000),
        day(900_000_000),
        Some(0.5),
        Some(500),
        None,
        Some(args::DEFAULT_ENVIRONMENT),
    )
}

/// Refuse (42501, with the GRANTs) a job whose role — the current user, who
/// schedules it — may not execute `needs` (routines of this catalog; one an
/// older catalog lacks is not asked about).
pub(super) fn refuse_unrunnable(function: &str, needs: &[&str]) {
    let needs: Vec<String> = needs.iter().map(|n| n.to_string()).collect();
    let missing: Vec<String> = Spi::connect(|client| {
        let rows = client.select(include_str!("../../../sql/queries/operations/routines_not_executable.sql"), None, &[needs.into()])?;
        rows.into_iter().map(|row| row.get::<String>(1).map(Option::unwrap_or_default)).collect::<Result<Vec<_>, _>>()
    })
    .unwrap_or_else(|e: pgrx::spi::SpiError| error!("runtime_sandbox: {function}: reading the job role's privileges: {e}"));
    if !missing.is_empty() {
        let role = crate::shell::owner::role_name(crate::shell::owner::current_user());
        crate::error::Error::job_not_runnable(function, &role, &missing).raise();
    }
}

/// Remove the reconciliation job; false when there was none.
#[pg_extern(name = "unschedule_reconciliation", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn unschedule_reconciliation_of(
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    database: default!(Option<Name>, "NULL"),
    environment: default!(Option<&str>, "'production'"),
) -> bool {
    let ledger = check(args::schema_name("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str()));
    let environment = check(args::environment("environment", check(summary::required("environment", environment))));
    let target = target(database);
    let job = job(job_name, RECONCILE_JOB, &ledger, &target, Some(&environment));
    crate::shell::standby::refuse_writes("unschedule_reconciliation");
    Spi::connect_mut(|client| unschedule_job(client, "unschedule_reconciliation", &job, &target))
}

/// The 0.3.0 signature (see schedule_reconciliation_with).
#[pg_extern(sql = false)]
pub(super) fn unschedule_reconciliation_in(job_name: Option<&str>, ledger_schema: Option<Name>, database: Option<Name>) -> bool {
    unschedule_reconciliation_of(job_name, ledger_schema, database, Some(args::DEFAULT_ENVIRONMENT))
}

/// The 0.2.0 signature (see schedule_reconciliation).
#[pg_extern(sql = false)]
pub(super) fn unschedule_reconciliation(job_name: Option<&str>, ledger_schema: Option<Name>) -> bool {
    unschedule_reconciliation_of(job_name, ledger_schema, None, Some(args::DEFAULT_ENVIRONMENT))
}

/// Schedule `CALL run_sandbox_operation_backfill(...)` with pg_cron.
#[pg_extern(name = "schedule_sandbox_operation_backfill", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn schedule_sandbox_operation_backfill_in(
    schedule: default!(Option<&str>, "'* * * * *'"),
    job_name: default!(Option<&str>, "NULL"),
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    database: default!(Option<Name>, "NULL"),
) -> i64 {
    let schedule = check(rules::cron_schedule(check(summary::required("schedule", schedule))));
    let batch_size = check(args::batch_size(check(summary::required("batch_size", batch_size))));
    let max_batches = check(rules::max_batches(max_batches));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let target = target(database);
    let ledger = match target.database {
        None => existing_schema("ledger_schema", ledger_schema.as_str()),
        Some(_) => check(args::schema_name("ledger_schema", ledger_schema.as_str())),
    };
    let job = job(job_name, BACKFILL_JOB, &ledger, &target, None);
    let command = rules::backfill_command(&job, batch_size, max_batches, &ledger);
    if target.database.is_none() {
        crate::ledger::require(&ledger, uses::BACKFILL, "schedule_sandbox_operation_backfill");
        refuse_unrunnable("schedule_sandbox_operation_backfill", rules::BACKFILL_JOB_NEEDS);
    }
    crate::shell::standby::refuse_writes("schedule_sandbox_operation_backfill");
    Spi::connect_mut(|client| schedule_job(client, "schedule_sandbox_operation_backfill", &job, &schedule, &command, &target))
}

/// The 0.2.0 signature (see schedule_reconciliation).
#[pg_extern(sql = false)]
pub(super) fn schedule_sandbox_operation_backfill(
    schedule: Option<&str>,
    job_name: Option<&str>,
    batch_size: Option<i32>,
    max_batches: Option<i32>,
    ledger_schema: Option<Name>,
) -> i64 {
    schedule_sandbox_operation_backfill_in(schedule, job_name, batch_size, max_batches, ledger_schema, None)
}

/// Remove the backfill job; false when there was none.
#[pg_extern(name = "unschedule_sandbox_operation_backfill", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn unschedule_sandbox_operation_backfill_in(
    job_name: default!(Option<&str>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    database: default!(Option<Name>, "NULL"),
) -> bool {
    let ledger = check(args::schema_name("ledger_schema", check(summary::required("ledger_schema", ledger_schema)).as_str()));
    let target = target(database);
    let job = job(job_name, BACKFILL_JOB, &ledger, &target, None);
    crate::shell::standby::refuse_writes("unschedule_sandbox_operation_backfill");
    Spi::connect_mut(|client| unschedule_job(client, "unschedule_sandbox_operation_backfill", &job, &target))
}

/// The 0.2.0 signature (see schedule_reconciliation).
#[pg_extern(sql = false)]
pub(super) fn unschedule_sandbox_operation_backfill(job_name: Option<&str>, ledger_schema: Option<Name>) -> bool {
    unschedule_sandbox_operation_backfill_in(job_name, ledger_schema, None)
}

/// The job's name: the caller's, or `<kind>:[<database>.]<ledger_schema>`
/// (with `:<environment>` for a reconciliation of an environment other than
/// 'production', which keeps the name of earlier releases).
pub(super) fn job(job_name: Option<&str>, kind: &str, ledger: &SchemaName, target: &Target, environment: Option<&args::Environment>) -> String {
    let environment = environment.filter(|e| !e.is_default()).map(|e| e.name.as_str());
    match job_name {
        Some(name) => check(rules::job_name("job_name", name)),
        None => check(rules::default_job_name(kind, ledger, target.database.as_deref(), environment)),
    }
}

/// `cron.database_name`, read as the server does: the setting is superuser-only
/// for SQL (current_setting needs pg_read_all_settings), and scheduling must
/// work for the ledger's owner role, which rarely has it. None: pg_cron is not loaded.
pub(super) fn cron_database_name() -> Option<String> {
    // SAFETY: GetConfigOption returns a pointer into the GUC's own storage, or NULL.
    unsafe {
        let value = pg_sys::GetConfigOption(c"cron.database_name".as_ptr(), true, false);
        (!value.is_null()).then(|| std::ffi::CStr::from_ptr(value).to_string_lossy().into_owned())
    }
}

/// pg_cron must be installed here (it can only be, in the database named by
/// cron.database_name); otherwise say where, and what to run there instead.
pub(super) fn require_cron(client: &mut SpiClient, function: &'static str, command: Option<&str>, job: &str, schedule: &str, target: &Target) {
    let table = client
        .select(CRON_INSTALLED, None, &[])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function} could not read the catalog: {e}"))
        .first();
    if table.get::<bool>(1).read_value().unwrap_or(false) {
        return;
    }
    let cron_database = cron_database_name();
    let here = table.get::<String>(2).read_value().unwrap_or_default();
    let hint = match (cron_database, command) {
        (None, _) => "pg_cron is not loaded: add it to shared_preload_libraries, set cron.database_name, restart, \
                      then CREATE EXTENSION pg_cron in that database."
            .to_string(),
        (Some(cron), _) if cron == here => format!("Run CREATE EXTENSION pg_cron in database {here:?} first."),
        (Some(cron), Some(command)) => {
            let runs_in = target.database.as_deref().unwrap_or(&here);
            format!(
                "pg_cron runs in database {cron:?} (cron.database_name): schedule from there. With runtime_sandbox \
                 installed there, run the same call there with database => {}; without it, run there: \
                 SELECT cron.schedule_in_database({}, {}, {}, {});",
                rules::literal(runs_in),
                rules::literal(job),
                rules::literal(schedule),
                rules::literal(command),
                rules::literal(runs_in)
            )
        }
        (Some(cron), None) => format!(
            "pg_cron runs in database {cron:?} (cron.database_name): unschedule from there (with runtime_sandbox \
             installed there, the same call with database => {}), or there: SELECT cron.unschedule({});",
            rules::literal(target.database.as_deref().unwrap_or(&here)),
            rules::literal(job)
        ),
    };
    raise_with_hint(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("runtime_sandbox: {function}: pg_cron is not installed in database {here:?}"),
        hint,
        function,
    );
}

pub(super) fn schedule_job(client: &mut SpiClient, function: &'static str, job: &str, schedule: &str, command: &str, target: &Target) -> i64 {
    require_cron(client, function, Some(command), job, schedule, target);
    let table = match &target.database {
        None => client.update(CRON_SCHEDULE, None, &[job.into(), schedule.into(), command.into()]),
        Some(database) => {
            client.update(CRON_SCHEDULE_IN_DATABASE, None, &[job.into(), schedule.into(), command.into(), database.as_str().into()])
        }
    };
    table
        .unwrap_or_else(|e| error!("runtime_sandbox: {function}: pg_cron refused the job: {e}"))
        .first()
        .get::<i64>(1)
        .read_value()
        .expect("cron.schedule returns the job id")
}

pub(super) fn unschedule_job(client: &mut SpiClient, function: &'static str, job: &str, target: &Target) -> bool {
    require_cron(client, function, None, job, "", target);
    let database = target.database.clone().unwrap_or_else(current_database);
    client
        .update(CRON_UNSCHEDULE, None, &[job.into(), database.into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: {function}: {e}"))
        .first()
        .get::<bool>(1)
        .read_value()
        .unwrap_or(false)
}
