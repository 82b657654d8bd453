//! SQL surface of the operations room. Inventory snapshots: recorded by
//! whoever can list Daytona, reconciled by a job that cannot (pg_cron):
//! record_inventory_snapshot and reconcile_daytona_latest. Then the pg_cron
//! jobs for the reconciliation (of the latest snapshot) and for the operation
//! backfill: created, replaced and removed by name.

mod jobs;
pub(super) mod stream;

use super::rules;
use crate::ledger::requirements::uses;
use crate::args::{self, ArgError, SchemaName};
use crate::reconcile::inventory::{parse_inventory_jsonb, InventoryColumns, InventoryItem};
use crate::reconcile::shell::{self as reconcile, Listing, Options};
use crate::shell::statement::{execute, execute_by_environment, jit, now, planned, Ledger};
use crate::reconcile::summary::{self, Status, Summary};
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema, raise_with_hint, Raise};
use pgrx::datum::{Interval, TimestampWithTimeZone};
use crate::shell::spi::ReadValue;
use pgrx::prelude::*;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::AllocatedByRust;
use pgrx::spi::SpiClient;
use pgrx::PgSqlErrorCode;

const INSERT_SNAPSHOT: &str = include_str!("../../../sql/queries/operations/insert_snapshot.sql");
const PRUNABLE_SNAPSHOTS: &str = include_str!("../../../sql/queries/operations/prunable_snapshots.sql");
const DELETE_SNAPSHOT: &str = include_str!("../../../sql/queries/operations/delete_snapshot.sql");
const NEWEST_SNAPSHOTS: &str = include_str!("../../../sql/queries/operations/newest_snapshots.sql");
const NEWEST_SNAPSHOTS_LOCKED: &str = include_str!("../../../sql/queries/operations/newest_snapshots_locked.sql");
const SNAPSHOT_ITEMS: &str = include_str!("../../../sql/queries/operations/snapshot_items.sql");
const RECORD_SNAPSHOT_RUN: &str = include_str!("../../../sql/queries/operations/record_snapshot_run.sql");
// The same statements for a ledger installed before 0.4.0 (no environment column; 'production' only).
const INSERT_SNAPSHOT_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../../sql/queries/operations/insert_snapshot_without_environment.sql");
const PRUNABLE_SNAPSHOTS_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../../sql/queries/operations/prunable_snapshots_without_environment.sql");
const NEWEST_SNAPSHOTS_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../../sql/queries/operations/newest_snapshots_without_environment.sql");
const NEWEST_SNAPSHOTS_LOCKED_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../../sql/queries/operations/newest_snapshots_locked_without_environment.sql");
const RECORD_SNAPSHOT_RUN_WITHOUT_ENVIRONMENT: &str =
    include_str!("../../../sql/queries/operations/record_snapshot_run_without_environment.sql");

/// A read whose aggregates must consume rows in the order they come in: no parallel workers.
const SERIAL: &[(&str, &str)] = &[("max_parallel_workers_per_gather", "0")];

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
    let Recording { captured_at, keep_last, schema, environment } =
        recording(captured_at, keep_last, ledger_schema, environment);

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
        prune(client, &ledger, provider, keep_last, snapshot_id, in_environment);
        snapshot_id
    }))
}

/// The arguments both ways of recording a listing take besides the listing, checked in this order.
pub(super) struct Recording {
    pub captured_at: TimestampWithTimeZone,
    pub keep_last: i32,
    pub schema: SchemaName,
    pub environment: args::Environment,
}

pub(super) fn recording(
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: Option<i32>,
    ledger_schema: Option<Name>,
    environment: Option<&str>,
) -> Recording {
    let captured_at = check(summary::required("captured_at", captured_at));
    let captured_micros = pg_sys::TimestampTz::from(captured_at);
    check(summary::captured_at(captured_micros).map_err(|e| ArgError::new("captured_at", e.reason)));
    check(rules::captured_not_ahead(captured_micros, unsafe { pg_sys::GetCurrentTimestamp() }));
    let keep_last = check(rules::keep_last(check(summary::required("keep_last", keep_last))));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let environment = check(args::environment("environment", check(summary::required("environment", environment))));
    let schema = existing_schema("ledger_schema", ledger_schema.as_str());
    Recording { captured_at, keep_last, schema, environment }
}

/// Delete all but the newest `keep_last` snapshots of the provider and
/// environment, never `recorded` (the one just recorded) nor one a running
/// reconciliation holds.
fn prune(client: &mut SpiClient, ledger: &Ledger, provider: &str, keep_last: i32, recorded: i64, environment: Option<&str>) {
    let params = vec![provider.into(), (keep_last as i64).into(), recorded.into()];
    let prunable = (PRUNABLE_SNAPSHOTS, PRUNABLE_SNAPSHOTS_WITHOUT_ENVIRONMENT);
    let (prunable, _) = execute_by_environment(client, ledger, prunable, params, environment);
    let prunable: Vec<i64> = prunable.filter_map(|row| row.get::<i64>(1).read_value()).collect();
    // One snapshot at a time: each delete is an index range of its items.
    for id in prunable {
        execute(client, &ledger.sql(DELETE_SNAPSHOT), &[id.into()]);
    }
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
    options.fit_ledger(&access);
    let function = "reconcile_daytona_latest";
    let snapshots_environment =
        access.environment_column(&options.ledger, "provider_inventory_snapshots", &options.environment, function);
    let runs_environment =
        !options.dry_run && access.environment_column(&options.ledger, "reconciliation_runs", &options.environment, function);
    if !options.dry_run {
        crate::shell::standby::refuse_writes("reconcile_daytona_latest");
    }
    let summary = access.run(|| Spi::connect_mut(|client| {
        let previous = jit(client, "off");
        let started_at = now();
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
        jit(client, &previous);
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

    // In item order by the primary key, consumed in that order by a serial aggregate (snapshot_items.sql).
    let (table, _) = planned(client, SERIAL, |client| execute(client, &ledger.sql(SNAPSHOT_ITEMS), &[newest.into()]));
    let table = table.first();
    let (sandbox_ids, routing_domains, operation_keys) =
        (reconcile::cut(&table, 1), reconcile::cut(&table, 3), reconcile::cut(&table, 5));
    let items: Vec<InventoryItem> = sandbox_ids
        .into_iter()
        .zip(routing_domains)
        .zip(operation_keys)
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
