//! SQL surface of the operations room. Inventory snapshots: recorded by
//! whoever can list Daytona, reconciled by a job that cannot (pg_cron):
//! record_inventory_snapshot and reconcile_daytona_latest. Then the pg_cron
//! jobs for the reconciliation (of the latest snapshot) and for the operation
//! backfill: created, replaced and removed by name.

use super::rules;
use crate::ledger::requirements::uses;
use crate::args::{self, ArgError, SchemaName};
use crate::reconcile::inventory::{parse_inventory_jsonb, InventoryColumns, InventoryItem};
use crate::reconcile::shell::{self as reconcile, execute, execute_by_environment, Ledger, Listing, Options};
use crate::reconcile::summary::{self, Status, Summary};
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema, raise_with_hint, Raise};
use pgrx::datum::{Array, Interval, TimestampWithTimeZone};
use crate::shell::spi::ReadValue;
use pgrx::prelude::*;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::AllocatedByRust;
use pgrx::spi::SpiClient;
use pgrx::PgSqlErrorCode;

const INSERT_SNAPSHOT: &str = include_str!("../../sql/queries/operations/insert_snapshot.sql");
const PRUNABLE_SNAPSHOTS: &str = include_str!("../../sql/queries/operations/prunable_snapshots.sql");
const DELETE_SNAPSHOT: &str = include_str!("../../sql/queries/operations/delete_snapshot.sql");
const NEWEST_SNAPSHOTS: &str = include_str!("../../sql/queries/operations/newest_snapshots.sql");
const NEWEST_SNAPSHOTS_LOCKED: &str = include_str!("../../sql/queries/operations/newest_snapshots_locked.sql");
const SNAPSHOT_ITEMS: &str = include_str!("../../sql/queries/operations/snapshot_items.sql");
const RECORD_SNAPSHOT_RUN: &str = include_str!("../../sql/queries/operations/record_snapshot_run.sql");
// The same statements for a ledger installed before 0.4.0 (no environment column; 'production' only).
const INSERT_SNAPSHOT_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../sql/queries/operations/insert_snapshot_without_environment.sql");
const PRUNABLE_SNAPSHOTS_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../sql/queries/operations/prunable_snapshots_without_environment.sql");
const NEWEST_SNAPSHOTS_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../sql/queries/operations/newest_snapshots_without_environment.sql");
const NEWEST_SNAPSHOTS_LOCKED_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../sql/queries/operations/newest_snapshots_locked_without_environment.sql");
const RECORD_SNAPSHOT_RUN_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../sql/queries/operations/record_snapshot_run_without_environment.sql");

/// What reconcile_daytona_latest reads (a dry run) or also writes (an apply),
/// checked before any work (requirements::uses).
fn latest_needs(dry_run: bool) -> &'static [&'static str] {
    if dry_run {
        uses::LATEST_READ
    } else {
        uses::LATEST_APPLY
    }
}

/// Record one complete provider listing of one environment (validated and
/// normalized exactly as reconcile_daytona's inventory) and prune all but the
/// newest `keep_last` snapshots of the provider and environment. Returns the
/// snapshot id.
#[pg_extern(name = "record_inventory_snapshot", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn record_inventory_snapshot_of(
    provider: Option<&str>,
    items: Option<JsonbBytes>,
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: default!(Option<i32>, 20),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    environment: default!(Option<&str>, "'production'"),
) -> i64 {
    record_snapshot(provider, items, captured_at, keep_last, ledger_schema, environment)
}

/// The 0.2.0 and 0.3.0 signature (no `environment`), kept so such a catalog
/// works until `ALTER EXTENSION ... UPDATE`: it records 'production'.
#[pg_extern(sql = false)]
fn record_inventory_snapshot(
    provider: Option<&str>,
    items: Option<JsonbBytes>,
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: Option<i32>,
    ledger_schema: Option<Name>,
) -> i64 {
    record_snapshot(provider, items, captured_at, keep_last, ledger_schema, Some(args::DEFAULT_ENVIRONMENT))
}

fn record_snapshot(
    provider: Option<&str>,
    items: Option<JsonbBytes>,
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: Option<i32>,
    ledger_schema: Option<Name>,
    environment: Option<&str>,
) -> i64 {
    let provider = check(rules::provider(check(summary::required("provider", provider))));
    // The inventory's rules, under this argument's name.
    let items = check(summary::required("items", items));
    let items = check(parse_inventory_jsonb(items.as_bytes()).map_err(|e| ArgError::new("items", e.reason)));
    let items = InventoryColumns::from_items(&items);
    let captured_at = check(summary::required("captured_at", captured_at));
    let captured_micros = pg_sys::TimestampTz::from(captured_at);
    check(summary::captured_at(captured_micros).map_err(|e| ArgError::new("captured_at", e.reason)));
    check(rules::captured_not_ahead(captured_micros, unsafe { pg_sys::GetCurrentTimestamp() }));
    let keep_last = check(rules::keep_last(check(summary::required("keep_last", keep_last))));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let environment = check(args::environment("environment", check(summary::required("environment", environment))));
    let schema = existing_schema("ledger_schema", ledger_schema.as_str());

    let access = crate::ledger::require(&schema, uses::SNAPSHOT, "record_inventory_snapshot");
    let present = access.environment_column(&schema, "provider_inventory_snapshots", &environment, "record_inventory_snapshot");
    crate::shell::standby::refuse_writes("record_inventory_snapshot");
    access.run(|| Spi::connect_mut(|client| {
        let ledger = Ledger { quoted: &schema.quoted, environment_eq: "=" };
        // A ledger installed before 0.4.0 holds only 'production' snapshots, in a table without the column.
        let in_environment = present.then_some(environment.name.as_str());
        let params = vec![
            provider.into(),
            captured_at.into(),
            items.sandbox_ids.into(),
            items.routing_domains.into(),
            items.operation_keys.into(),
        ];
        let insert = (INSERT_SNAPSHOT, INSERT_SNAPSHOT_WITHOUT_ENVIRONMENT);
        let (table, _) = execute_by_environment(client, &ledger, insert, params, in_environment);
        let snapshot_id = table.first().get::<i64>(1).read_value().expect("INSERT ... RETURNING returns the id");
        let params = vec![provider.into(), (keep_last as i64).into(), snapshot_id.into()];
        let prunable = (PRUNABLE_SNAPSHOTS, PRUNABLE_SNAPSHOTS_WITHOUT_ENVIRONMENT);
        let (prunable, _) = execute_by_environment(client, &ledger, prunable, params, in_environment);
        let prunable: Vec<i64> = prunable.filter_map(|row| row.get::<i64>(1).read_value()).collect();
        // One snapshot at a time: each delete is an index range of its items.
        for id in prunable {
            execute(client, &ledger.sql(DELETE_SNAPSHOT), &[id.into()]);
        }
        snapshot_id
    }))
}

/// Reconcile the ledger's operations of one environment against the newest
/// recorded Daytona snapshot of that environment.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "reconcile_daytona_latest", volatile, parallel_unsafe, requires = ["reconcile_types"])]
#[search_path(pg_catalog, pg_temp)]
fn reconcile_daytona_latest_in(
    dry_run: default!(Option<bool>, false),
    batch_size: default!(Option<i32>, 500),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    max_snapshot_age: default!(Option<Interval>, "'15 minutes'"),
    absent_confirmations: default!(Option<i32>, 2),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    max_absent_ratio: default!(Option<f32>, 0.5),
    environment: default!(Option<&str>, "'production'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    reconcile_latest(dry_run, batch_size, minimum_age, max_snapshot_age, absent_confirmations, ledger_schema, max_absent_ratio, environment)
}

/// The 0.2.0 and 0.3.0 signature (no `environment`), kept so such a catalog
/// (and its pg_cron jobs) works until `ALTER EXTENSION ... UPDATE`: 'production'.
#[allow(clippy::too_many_arguments)]
#[pg_extern(sql = false)]
fn reconcile_daytona_latest(
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    max_snapshot_age: Option<Interval>,
    absent_confirmations: Option<i32>,
    ledger_schema: Option<Name>,
    max_absent_ratio: Option<f32>,
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let environment = Some(args::DEFAULT_ENVIRONMENT);
    reconcile_latest(dry_run, batch_size, minimum_age, max_snapshot_age, absent_confirmations, ledger_schema, max_absent_ratio, environment)
}

#[allow(clippy::too_many_arguments)]
fn reconcile_latest(
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    max_snapshot_age: Option<Interval>,
    absent_confirmations: Option<i32>,
    ledger_schema: Option<Name>,
    max_absent_ratio: Option<f32>,
    environment: Option<&str>,
) -> PgHeapTuple<'static, AllocatedByRust> {
    let max_snapshot_age = check(summary::required("max_snapshot_age", max_snapshot_age));
    check(rules::max_snapshot_age(max_snapshot_age.months(), max_snapshot_age.days(), max_snapshot_age.micros()));
    let confirmations =
        check(rules::absent_confirmations(check(summary::required("absent_confirmations", absent_confirmations))));
    let mut options = reconcile::validate_options(dry_run, batch_size, minimum_age, max_absent_ratio, ledger_schema, environment);
    let needs = latest_needs(options.dry_run);
    let access = if options.dry_run {
        crate::ledger::require_to_read(&options.ledger, needs, "reconcile_daytona_latest")
    } else {
        crate::ledger::require(&options.ledger, needs, "reconcile_daytona_latest")
    };
    options.compare_environment(&access);
    let function = "reconcile_daytona_latest";
    let snapshots_environment =
        access.environment_column(&options.ledger, "provider_inventory_snapshots", &options.environment, function);
    let runs_environment =
        !options.dry_run && access.environment_column(&options.ledger, "reconciliation_runs", &options.environment, function);
    if !options.dry_run {
        crate::shell::standby::refuse_writes("reconcile_daytona_latest");
    }
    let summary = access.run(|| Spi::connect_mut(|client| {
        let previous = reconcile::jit(client, "off");
        let started_at = reconcile::now();
        let (mut summary, reconciled) = if reconcile::take_guard(client, &options) {
            latest(client, &options, snapshots_environment, max_snapshot_age, confirmations)
        } else {
            (Summary::empty(0, false, Status::SkippedConcurrent), None)
        };
        summary.environment = options.environment.name.clone();
        if !options.dry_run {
            let params =
                vec![started_at.into(), summary.status.as_str().into(), summary.to_json().into(), reconciled.into()];
            let record = (RECORD_SNAPSHOT_RUN, RECORD_SNAPSHOT_RUN_WITHOUT_ENVIRONMENT);
            let environment = runs_environment.then_some(options.environment.name.as_str());
            let (table, _) = execute_by_environment(client, &options.ledger(), record, params, environment);
            let run_id = table.first().get::<i64>(1).read_value().unwrap_or(0);
            reconcile::alert(client, &options.ledger, run_id, &summary);
        }
        reconcile::jit(client, &previous);
        summary
    }));
    reconcile::result_row(&summary)
}

/// The newest snapshot, if fresh, reconciled; absences confirmed against the
/// `confirmations - 1` snapshots before it. Returns the summary and the
/// snapshot reconciled (None when none was).
fn latest(
    client: &mut SpiClient,
    options: &Options,
    snapshots_environment: bool,
    max_snapshot_age: Interval,
    confirmations: i32,
) -> (Summary, Option<i64>) {
    let ledger = options.ledger();
    let params = vec![(confirmations as i64).into(), max_snapshot_age.into()];
    let newest = if options.dry_run {
        (NEWEST_SNAPSHOTS, NEWEST_SNAPSHOTS_WITHOUT_ENVIRONMENT)
    } else {
        (NEWEST_SNAPSHOTS_LOCKED, NEWEST_SNAPSHOTS_LOCKED_WITHOUT_ENVIRONMENT)
    };
    let environment = snapshots_environment.then_some(options.environment.name.as_str());
    let (table, _) = execute_by_environment(client, &ledger, newest, params, environment);
    let snapshots: Vec<(i64, TimestampWithTimeZone, bool)> = table
        .filter_map(|row| {
            Some((
                row.get::<i64>(1).read_value()?,
                row.get::<TimestampWithTimeZone>(2).read_value()?,
                row.get::<bool>(3).read_value().unwrap_or(false),
            ))
        })
        .collect();
    let Some(&(newest, _, fresh)) = snapshots.first() else {
        return (Summary::empty(0, options.dry_run, Status::NoFreshSnapshot), None);
    };
    if !fresh {
        let mut summary = Summary::empty(0, options.dry_run, Status::NoFreshSnapshot);
        summary.snapshot_id = Some(newest);
        return (summary, None);
    }

    let (table, _) = execute(client, &ledger.sql(SNAPSHOT_ITEMS), &[newest.into()]);
    let table = table.first();
    let column = |c: usize| table.get::<Array<&str>>(c).read_value();
    let (sandbox_ids, routing_domains, operation_keys) = (column(1), column(2), column(3));
    let items: Vec<InventoryItem> = sandbox_ids
        .iter()
        .flat_map(|a| a.iter())
        .zip(routing_domains.iter().flat_map(|a| a.iter()))
        .zip(operation_keys.iter().flat_map(|a| a.iter()))
        .map(|((sandbox_id, domain), key)| InventoryItem::new(sandbox_id.unwrap_or_default(), domain, key))
        .collect();

    // Absence confirmed over the newest snapshots (rules::confirmation).
    let captured: Vec<(i64, TimestampWithTimeZone)> = snapshots.iter().map(|s| (s.0, s.1)).collect();
    let (absent_before, confirming) = rules::confirmation(&captured, confirmations as usize);
    let listing = Listing { items, absent_before, confirming };
    let mut summary = reconcile::run(client, options, &listing);
    summary.snapshot_id = Some(newest);
    summary.confirming_snapshots = Some(snapshots.len() as i64);
    (summary, Some(newest))
}

// ---- pg_cron jobs for the reconciliation (of the latest snapshot) and for the
// operation backfill: created, replaced and removed by name, in this database
// or, from the database pg_cron runs in, in another one (`database`).

const CRON_INSTALLED: &str = include_str!("../../sql/queries/operations/cron_installed.sql");
const CRON_SCHEDULE: &str = include_str!("../../sql/queries/operations/cron_schedule.sql");
const CRON_SCHEDULE_IN_DATABASE: &str = include_str!("../../sql/queries/operations/cron_schedule_in_database.sql");
const CRON_UNSCHEDULE: &str = include_str!("../../sql/queries/operations/cron_unschedule.sql");

const RECONCILE_JOB: &str = "reconcile_daytona";
const BACKFILL_JOB: &str = "sandbox_operation_backfill";

/// Where a job runs: this database (its ledger checked now), or another one
/// (scheduled from the database pg_cron runs in; its ledger is checked when
/// the job runs, and the job fails saying why).
struct Target {
    /// None: this database.
    database: Option<String>,
}

fn target(database: Option<Name>) -> Target {
    let here = current_database();
    Target { database: database.map(|d| d.0).filter(|d| *d != here) }
}

fn current_database() -> String {
    crate::shell::spi::get_one_with_args::<String>("SELECT pg_catalog.current_database()::text", &[])
        .unwrap_or_else(|e| error!("runtime_sandbox: current_database(): {e}"))
        .unwrap_or_default()
}

/// An interval argument as (months, days, microseconds).
fn parts(interval: Interval) -> (i32, i32, i64) {
    (interval.months(), interval.days(), interval.micros())
}

/// Schedule the reconciliation of the latest snapshot with pg_cron: a job that
/// runs `run_reconciliation_job` with these options, and fails when a run is
/// blocked or finds no fresh snapshot.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "schedule_reconciliation", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn schedule_reconciliation_of(
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
fn schedule_reconciliation_with(
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
fn schedule_reconciliation(schedule: Option<&str>, job_name: Option<&str>, ledger_schema: Option<Name>) -> i64 {
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
fn refuse_unrunnable(function: &str, needs: &[&str]) {
    let needs: Vec<String> = needs.iter().map(|n| n.to_string()).collect();
    let missing: Vec<String> = Spi::connect(|client| {
        let rows = client.select(include_str!("../../sql/queries/operations/routines_not_executable.sql"), None, &[needs.into()])?;
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
fn unschedule_reconciliation_of(
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
fn unschedule_reconciliation_in(job_name: Option<&str>, ledger_schema: Option<Name>, database: Option<Name>) -> bool {
    unschedule_reconciliation_of(job_name, ledger_schema, database, Some(args::DEFAULT_ENVIRONMENT))
}

/// The 0.2.0 signature (see schedule_reconciliation).
#[pg_extern(sql = false)]
fn unschedule_reconciliation(job_name: Option<&str>, ledger_schema: Option<Name>) -> bool {
    unschedule_reconciliation_of(job_name, ledger_schema, None, Some(args::DEFAULT_ENVIRONMENT))
}

/// Schedule `CALL run_sandbox_operation_backfill(...)` with pg_cron.
#[pg_extern(name = "schedule_sandbox_operation_backfill", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn schedule_sandbox_operation_backfill_in(
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
fn schedule_sandbox_operation_backfill(
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
fn unschedule_sandbox_operation_backfill_in(
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
fn unschedule_sandbox_operation_backfill(job_name: Option<&str>, ledger_schema: Option<Name>) -> bool {
    unschedule_sandbox_operation_backfill_in(job_name, ledger_schema, None)
}

/// The job's name: the caller's, or `<kind>:[<database>.]<ledger_schema>`
/// (with `:<environment>` for a reconciliation of an environment other than
/// 'production', which keeps the name of earlier releases).
fn job(job_name: Option<&str>, kind: &str, ledger: &SchemaName, target: &Target, environment: Option<&args::Environment>) -> String {
    let environment = environment.filter(|e| !e.is_default()).map(|e| e.name.as_str());
    match job_name {
        Some(name) => check(rules::job_name("job_name", name)),
        None => check(rules::default_job_name(kind, ledger, target.database.as_deref(), environment)),
    }
}

/// `cron.database_name`, read as the server does: the setting is superuser-only
/// for SQL (current_setting needs pg_read_all_settings), and scheduling must
/// work for the ledger's owner role, which rarely has it. None: pg_cron is not loaded.
fn cron_database_name() -> Option<String> {
    // SAFETY: GetConfigOption returns a pointer into the GUC's own storage, or NULL.
    unsafe {
        let value = pg_sys::GetConfigOption(c"cron.database_name".as_ptr(), true, false);
        (!value.is_null()).then(|| std::ffi::CStr::from_ptr(value).to_string_lossy().into_owned())
    }
}

/// pg_cron must be installed here (it can only be, in the database named by
/// cron.database_name); otherwise say where, and what to run there instead.
fn require_cron(client: &mut SpiClient, function: &'static str, command: Option<&str>, job: &str, schedule: &str, target: &Target) {
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

fn schedule_job(client: &mut SpiClient, function: &'static str, job: &str, schedule: &str, command: &str, target: &Target) -> i64 {
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

fn unschedule_job(client: &mut SpiClient, function: &'static str, job: &str, target: &Target) -> bool {
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
