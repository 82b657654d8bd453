//! Inventory snapshots: recorded by whoever can list Daytona, reconciled by a
//! job that cannot (pg_cron): record_inventory_snapshot and
//! reconcile_daytona_latest.

use super::rules;
use crate::reconcile::inventory::{parse_inventory_jsonb, InventoryColumns, InventoryItem};
use crate::reconcile::sql::{self as reconcile, execute, Ledger, Listing, Options};
use crate::reconcile::summary::{self, Status, Summary};
use crate::pg_types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema};
use crate::args::ArgError;
use pgrx::datum::{Array, Interval, TimestampWithTimeZone};
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

const INSERT_SNAPSHOT: &str = include_str!("../../sql/operations/insert_snapshot.sql");
const PRUNABLE_SNAPSHOTS: &str = include_str!("../../sql/operations/prunable_snapshots.sql");
const DELETE_SNAPSHOT: &str = include_str!("../../sql/operations/delete_snapshot.sql");
const NEWEST_SNAPSHOTS: &str = include_str!("../../sql/operations/newest_snapshots.sql");
const SNAPSHOT_ITEMS: &str = include_str!("../../sql/operations/snapshot_items.sql");
const RECORD_SNAPSHOT_RUN: &str = include_str!("../../sql/operations/record_snapshot_run.sql");

/// What recording and reading snapshots need in the ledger.
pub(crate) const SNAPSHOT_NEEDS: &[&str] = &["provider_inventory_snapshots", "provider_inventory_items"];
/// What an apply of reconcile_daytona_latest needs (its history row names the snapshot).
pub(crate) const LATEST_APPLY_NEEDS: &[&str] = &[
    "provider_inventory_snapshots",
    "provider_inventory_items",
    "reconciliation_runs",
    "reconciliation_runs.snapshot_id",
];

/// Record one complete provider listing (validated and normalized exactly as
/// reconcile_daytona's inventory) and prune all but the newest `keep_last`
/// snapshots of the provider. Returns the snapshot id.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn record_inventory_snapshot(
    provider: Option<&str>,
    items: Option<JsonbBytes>,
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: default!(Option<i32>, 20),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> i64 {
    let provider = check(rules::provider(check(summary::required("provider", provider))));
    // The inventory's rules, under this argument's name.
    let items = check(
        parse_inventory_jsonb(check(summary::required("items", items)).as_bytes())
            .map_err(|e| ArgError::new("items", e.reason)),
    );
    let items = InventoryColumns::from_items(&items);
    let captured_at = check(summary::required("captured_at", captured_at));
    let captured_micros = pg_sys::TimestampTz::from(captured_at);
    check(summary::captured_at(captured_micros).map_err(|e| ArgError::new("captured_at", e.reason)));
    check(rules::captured_not_ahead(captured_micros, unsafe { pg_sys::GetCurrentTimestamp() }));
    let keep_last = check(rules::keep_last(check(summary::required("keep_last", keep_last))));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let schema = existing_schema("ledger_schema", ledger_schema.as_str());

    Spi::connect_mut(|client| {
        crate::ledger::require(client, &schema, SNAPSHOT_NEEDS, "record_inventory_snapshot");
        let ledger = Ledger { quoted: &schema.quoted };
        let (table, _) = execute(
            client,
            &ledger.sql(INSERT_SNAPSHOT),
            &[
                provider.into(),
                captured_at.into(),
                items.sandbox_ids.into(),
                items.routing_domains.into(),
                items.operation_keys.into(),
            ],
        );
        let snapshot_id = table.first().get::<i64>(1).ok().flatten().expect("INSERT ... RETURNING returns the id");
        let (prunable, _) =
            execute(client, &ledger.sql(PRUNABLE_SNAPSHOTS), &[provider.into(), (keep_last as i64).into(), snapshot_id.into()]);
        let prunable: Vec<i64> = prunable.filter_map(|row| row.get::<i64>(1).ok().flatten()).collect();
        // One snapshot at a time: each delete is an index range of its items.
        for id in prunable {
            execute(client, &ledger.sql(DELETE_SNAPSHOT), &[id.into()]);
        }
        snapshot_id
    })
}

/// Reconcile the ledger against the newest recorded Daytona snapshot.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe, requires = ["reconcile_types"])]
#[search_path(pg_catalog, pg_temp)]
fn reconcile_daytona_latest(
    dry_run: default!(Option<bool>, false),
    batch_size: default!(Option<i32>, 500),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    max_snapshot_age: default!(Option<Interval>, "'15 minutes'"),
    absent_confirmations: default!(Option<i32>, 2),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    max_absent_ratio: default!(Option<f32>, 0.5),
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let max_snapshot_age = check(summary::required("max_snapshot_age", max_snapshot_age));
    check(rules::max_snapshot_age(max_snapshot_age.months(), max_snapshot_age.days(), max_snapshot_age.micros()));
    let confirmations =
        check(rules::absent_confirmations(check(summary::required("absent_confirmations", absent_confirmations))));
    let options = reconcile::validate_options(dry_run, batch_size, minimum_age, max_absent_ratio, ledger_schema);
    let summary = Spi::connect_mut(|client| {
        let needs = if options.dry_run { SNAPSHOT_NEEDS } else { LATEST_APPLY_NEEDS };
        crate::ledger::require(client, &options.ledger, needs, "reconcile_daytona_latest");
        let previous = reconcile::jit(client, "off");
        let started_at = reconcile::now();
        let (summary, reconciled) = if reconcile::take_guard(client, &options) {
            latest(client, &options, max_snapshot_age, confirmations)
        } else {
            (Summary::empty(0, false, Status::SkippedConcurrent), None)
        };
        if !options.dry_run {
            let ledger = Ledger { quoted: &options.ledger.quoted };
            let (table, _) = execute(
                client,
                &ledger.sql(RECORD_SNAPSHOT_RUN),
                &[started_at.into(), summary.status.as_str().into(), summary.to_json().into(), reconciled.into()],
            );
            let run_id = table.first().get::<i64>(1).ok().flatten().unwrap_or(0);
            reconcile::alert(client, &options.ledger, run_id, &summary);
        }
        reconcile::jit(client, &previous);
        summary
    });
    reconcile::result_row(&summary)
}

/// The newest snapshot, if fresh, reconciled; absences confirmed against the
/// `confirmations - 1` snapshots before it. Returns the summary and the
/// snapshot reconciled (None when none was).
fn latest(
    client: &mut SpiClient,
    options: &Options,
    max_snapshot_age: Interval,
    confirmations: i32,
) -> (Summary, Option<i64>) {
    let ledger = Ledger { quoted: &options.ledger.quoted };
    let lock = if options.dry_run { "" } else { "FOR KEY SHARE OF snapshot" };
    let (table, _) = execute(
        client,
        &ledger.sql(&NEWEST_SNAPSHOTS.replace("@lock@", lock)),
        &[(confirmations as i64).into(), max_snapshot_age.into()],
    );
    let snapshots: Vec<(i64, TimestampWithTimeZone, bool)> = table
        .filter_map(|row| {
            Some((
                row.get::<i64>(1).ok().flatten()?,
                row.get::<TimestampWithTimeZone>(2).ok().flatten()?,
                row.get::<bool>(3).ok().flatten().unwrap_or(false),
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
    let column = |c: usize| table.get::<Array<&str>>(c).ok().flatten();
    let (sandbox_ids, routing_domains, operation_keys) = (column(1), column(2), column(3));
    let items: Vec<InventoryItem> = sandbox_ids
        .iter()
        .flat_map(|a| a.iter())
        .zip(routing_domains.iter().flat_map(|a| a.iter()))
        .zip(operation_keys.iter().flat_map(|a| a.iter()))
        .map(|((sandbox_id, domain), key)| InventoryItem::new(sandbox_id.unwrap_or_default(), domain, key))
        .collect();

    // An operation is called absent only when missing from each of the N
    // newest snapshots, and only if it was recorded before the oldest of them
    // was captured (otherwise that one could not have listed it). Fewer than
    // N snapshots: nothing is called absent yet.
    let enough = snapshots.len() == confirmations as usize;
    let oldest = snapshots.last().map(|s| s.1);
    let listing = Listing {
        items,
        absent_before: if enough { oldest } else { None },
        confirming: snapshots.iter().skip(1).map(|s| s.0).collect(),
    };
    let mut summary = reconcile::run(client, options, &listing);
    summary.snapshot_id = Some(newest);
    summary.confirming_snapshots = Some(snapshots.len() as i64);
    (summary, Some(newest))
}
