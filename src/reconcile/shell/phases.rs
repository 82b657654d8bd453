//! The phases of one run in the application's order (release, recover, match, fail closed, absence, inspect,
//! the valve, seed, mark, the second release), each a statement of `sql/queries/reconcile/`.

use super::capacity::Capacity;
use super::{Listing, Options, BY_KEY, THROUGH_PARTIAL_INDEX};
use crate::reconcile::inventory::{InventoryColumns, InventoryItem};
use crate::reconcile::pairing;
use crate::reconcile::reach;
use crate::reconcile::summary::{self, Phase, Status, Summary};
use crate::shell::spi::clock;
use crate::shell::spi::ReadValue;
use super::capacity::cut;
use crate::fast_hash::FastSet;
use crate::shell::statement::{count, elapsed_ms, execute, planned, Ledger};
use pgrx::datum::{Array, DatumWithOid, TimestampWithTimeZone};
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiTupleTable};
use std::time::Instant;

const RESERVED_LABELS: &str = include_str!("../../../sql/queries/reconcile/reserved_labels.sql");
const RECOVER_RESERVED: &str = include_str!("../../../sql/queries/reconcile/recover_reserved.sql");
const RECOVER_PROMOTE: &str = include_str!("../../../sql/queries/reconcile/recover_promote.sql");
const RECOVER_ATTEMPTS: &str = include_str!("../../../sql/queries/reconcile/recover_attempts.sql");
const RECOVER_BIND: &str = include_str!("../../../sql/queries/reconcile/recover_bind.sql");
const RECOVER_CLEANUPS: &str = include_str!("../../../sql/queries/reconcile/recover_cleanups.sql");
const OPERATIONS: &str = include_str!("../../../sql/queries/reconcile/operations.sql");
const OPERATIONS_REACH: &str = include_str!("../../../sql/queries/reconcile/operations_reach.sql");
/// Absent candidates by how their keys are reached (probed, scanned) and
/// whether older snapshots must confirm the absence.
const ABSENT_PROBED: &str = include_str!("../../../sql/queries/reconcile/absent_probed.sql");
const ABSENT_SCANNED: &str = include_str!("../../../sql/queries/reconcile/absent_scanned.sql");
const SEED_CAPACITY: &str = include_str!("../../../sql/queries/reconcile/seed_capacity.sql");
const MARK_ABSENT: &str = include_str!("../../../sql/queries/reconcile/mark_absent.sql");
const UNOWNED_ELSEWHERE: &str = include_str!("../../../sql/queries/reconcile/unowned_elsewhere.sql");
const WOULD_RECOVER: &str = include_str!("../../../sql/queries/reconcile/would_recover.sql");

pub(crate) fn run(client: &mut SpiClient, options: &Options, listing: &Listing) -> Summary {
    let mut second_release = 0;
    let mut summary = phases(client, options, listing, &mut second_release);
    summary.settle(second_release);
    summary
}

/// The phases in the application's order. A dry run counts in
/// `would_*` what the apply's release and recovery would write
/// (`second_release`: the apply's second pass, which `Summary::settle` adds
/// when the run is not blocked).
fn phases(client: &mut SpiClient, options: &Options, listing: &Listing, second_release: &mut i64) -> Summary {
    let ledger = options.ledger();
    let items = &listing.items;
    let mut summary =
        Summary::empty(items.len(), options.dry_run, if options.dry_run { Status::Planned } else { Status::Applied });
    summary.environment = options.environment.name.clone();
    let mut capacity = Capacity::new(items.len());

    // Leases whose sandbox cleanup is durably deleted (same run) are released.
    if !options.dry_run {
        let started = Instant::now();
        let released = capacity.release_first(client, &ledger, false);
        summary.released_terminal_leases = released;
        summary.measured(Phase::ReleaseTerminalCapacity, elapsed_ms(started), released);
    } else {
        // Counted, not measured: the application's dry run has no such phase.
        summary.would_release_terminal_leases = capacity.release_first(client, &ledger, true);
    }

    // Items owned by a reserved create's unique operation label.
    let mut ownership = pairing::Ownership { owned: vec![false; items.len()], reserved_rows: 0 };
    if !items.is_empty() {
        let started = Instant::now();
        let (table, _) = execute(client, &ledger.sql(RESERVED_LABELS), &[options.environment_param()]);
        let labels = table.first().get::<Array<&str>>(1).read_value();
        let labels: Vec<&str> = labels.iter().flat_map(|a| a.iter().flatten()).collect();
        ownership = pairing::ownership(items, &labels);
        summary.measured(Phase::RecoverReservedOperations, elapsed_ms(started), ownership.reserved_rows);
    }

    if !options.dry_run && ownership.reserved_rows > 0 {
        // Only the owned items can recover (a unique label and a reserved
        // create holding an open lease): the statement re-checks both, but
        // needs to see only these few, not the whole inventory.
        let candidates = owned_items(items, &ownership);
        let started = Instant::now();
        let bound = recover(client, &ledger, options, candidates);
        summary.recovered_reserved_operations = bound.len() as i64;
        summary.measured(Phase::RecoverReservedOperations, elapsed_ms(started), summary.recovered_reserved_operations);
        capacity.bound(bound);
    } else if ownership.reserved_rows > 0 && options.attempts {
        // (Without an attempts table a dry run still runs, as the application's does; an apply is refused
        // there, so there is no recovery to predict.)
        let owned = owned_items(items, &ownership);
        let params = [
            owned.sandbox_ids.into(),
            owned.routing_domains.into(),
            owned.operation_keys.into(),
            options.environment_param(),
        ];
        let (table, _) = execute(client, &ledger.sql(WOULD_RECOVER), &params);
        let table = table.first();
        summary.would_recover_reserved_operations = count(&table, 1);
        *second_release = count(&table, 2);
    }

    // Match: the current operations in one read, paired with the inventory in Rust.
    let started = Instant::now();
    // Read through a bitmap of the current-operations index, in heap order.
    let (table, _) =
        planned(client, THROUGH_PARTIAL_INDEX, |client| execute(client, &ledger.sql(OPERATIONS), &[options.environment_param()]));
    let table = table.first();
    let live = table.get::<Array<bool>>(7).read_value();
    let operations = pairing::Operations {
        operation_keys: cut(&table, 1).into_iter().map(|k| k.unwrap_or_default()).collect(),
        sandbox_ids: cut(&table, 3),
        routing_domains: cut(&table, 5),
        live: live.iter().flat_map(|a| a.iter().map(|v| v.unwrap_or(false))).collect(),
    };
    let live_operations = operations.live.iter().filter(|&&live| live).count() as i64;
    summary.live_operations = Some(live_operations);
    let pairs = pairing::pair(items, &ownership.owned, &operations);
    if !items.is_empty() {
        summary.matched_live_sandboxes = pairs.pairs.len() as i64;
        summary.unmatched_provider_sandbox_ids =
            pairs.unmatched.iter().map(|&i| items[i].sandbox_id.to_owned()).collect();
        summary.measured(Phase::MatchProviderInventory, elapsed_ms(started), summary.matched_live_sandboxes);
    }

    // Fail closed: a listed sandbox nobody owns cannot be assigned to an
    // organization, so nothing further is written.
    if !summary.unmatched_provider_sandbox_ids.is_empty() {
        summary.status = Status::BlockedUnownedSandboxes;
        owned_elsewhere(client, &ledger, options, items, &pairs.unmatched, &mut summary);
        return summary;
    }

    let mut absent = AbsentRows::default();
    if let Some(absent_before) = listing.absent_before {
        let lone: Vec<&str> = pairs.lone_live.iter().map(|&i| operations.operation_keys[i]).collect();
        let (table, ms) = find_absent(client, &ledger, options, listing, absent_before, &lone, operations.len());
        let table = table.first();
        let found = count(&table, 2);
        summary.absent_candidates = Some(count(&table, 1));
        // The application's row count: at most batch size + 1.
        summary.measured(Phase::FindAbsentOperations, ms, found);
        absent = AbsentRows::from_table(&table, options.batch_size as usize);
        summary.has_more_absent_ledger_rows = found > options.batch_size as i64;
        summary.absent_ledger_rows = absent.sandbox_ids.len() as i64;
    }

    let mut seed_keys = Vec::new();
    if summary.matched_live_sandboxes > 0 {
        let started = Instant::now();
        // History is read only for the matched sandboxes whose decision depends on it.
        let inspection = capacity.inspect(client, &ledger, &pairs, &operations);
        // The application inspects leases and terminal cleanups in two
        // statements; both counts are reported, the time goes to the first.
        summary.measured(Phase::InspectCapacityBindings, elapsed_ms(started), inspection.lease_identities);
        summary.measured(Phase::InspectCapacityBindings, 0.0, inspection.terminal_identities);
        summary.live_leases_to_seed = inspection.to_seed;
        seed_keys = inspection.seed_operations.iter().map(|&i| operations.operation_keys[i]).collect();
    }

    // The valve: a listing that calls too much of the fleet absent is not
    // believed. A dry run reports what it would block, with every count.
    if summary.absent_candidates.is_some_and(|candidates| {
        summary::mass_absence(candidates, live_operations, items.is_empty(), options.max_absent_ratio)
    }) {
        summary.status = Status::BlockedMassAbsence;
        return summary;
    }

    if options.dry_run {
        return summary;
    }

    if summary.live_leases_to_seed > 0 {
        let (seeded, ms) = execute(client, &ledger.sql(SEED_CAPACITY), &[seed_keys.into(), clock()]);
        summary.seeded_leases = count(&seeded.first(), 1);
        summary.measured(Phase::SeedCapacityBindings, ms, summary.seeded_leases);
    }

    if !absent.sandbox_ids.is_empty() {
        let (table, ms) = execute(
            client,
            &ledger.sql(MARK_ABSENT),
            &[
                absent.sandbox_ids.into(),
                absent.run_ids.into(),
                absent.attempts.into(),
                absent.environments.into(),
                absent.routing_domains.into(),
                clock(),
            ],
        );
        summary.marked_deleted = count(&table.first(), 1);
        summary.measured(Phase::MarkProviderConfirmedAbsent, ms, summary.marked_deleted);
    }

    // The application's second pass: leases that became terminal during the
    // run. Seeding never binds over a deleted cleanup and marking releases
    // its own, so of this run's writes only recovery can bind one (a
    // recovered sandbox whose cleanup was already deleted); those are
    // re-checked. Cleanups others finish meanwhile are released by the next
    // run's first pass. The application reports the running total here.
    let started = Instant::now();
    summary.released_terminal_leases += capacity.release_second(client, &ledger);
    summary.measured(Phase::ReleaseTerminalCapacity, elapsed_ms(started), summary.released_terminal_leases);
    summary
}

/// The items a reserved create's unique label owns: the only ones recovery can bind (an apply recovers them, a
/// dry run counts them).
fn owned_items(items: &[InventoryItem], ownership: &pairing::Ownership) -> InventoryColumns {
    InventoryColumns::from_items(items.iter().zip(&ownership.owned).filter_map(|(item, &owned)| owned.then_some(item)))
}

/// A run blocked by unowned sandboxes: which other environments' live
/// operations own some of them (the likely mistake: the wrong environment),
/// in the summary and as a NOTICE. Read only on this path.
fn owned_elsewhere(
    client: &mut SpiClient,
    ledger: &Ledger,
    options: &Options,
    items: &[InventoryItem],
    unmatched: &[usize],
    summary: &mut Summary,
) {
    let unowned = InventoryColumns::from_items(unmatched.iter().map(|&i| &items[i]));
    let params = [unowned.sandbox_ids.into(), unowned.routing_domains.into(), options.environment_param()];
    let (table, _) = execute(client, &ledger.sql(UNOWNED_ELSEWHERE), &params);
    let table = table.first();
    let environments = table.get::<Vec<String>>(1).read_value().unwrap_or_default();
    let owned = table.get::<Vec<i64>>(2).read_value().unwrap_or_default();
    let owners: Vec<(String, i64)> = environments.into_iter().zip(owned).collect();
    summary.owned_elsewhere(&owners);
    if let Some(hint) = summary.other_environment_hint() {
        notice!("runtime_sandbox: {hint}");
    }
}

/// Recover reserved creates by their unique label (`candidates`: the owned
/// items). Returns the leases bound: one per recovered create (a create whose
/// attempt row is missing is promoted but not bound nor counted, as in the
/// application).
fn recover(client: &mut SpiClient, ledger: &Ledger, options: &Options, candidates: InventoryColumns) -> Vec<String> {
    if candidates.sandbox_ids.len() <= reach::RECOVER_IN_ONE_STATEMENT {
        let (table, _) = execute(
            client,
            &ledger.sql(RECOVER_RESERVED),
            &[
                candidates.sandbox_ids.into(),
                candidates.routing_domains.into(),
                candidates.operation_keys.into(),
                clock(),
                options.environment_param(),
            ],
        );
        return table.first().get::<Vec<String>>(2).read_value().unwrap_or_default();
    }
    recover_in_steps(client, ledger, options, candidates)
}

/// The four steps of sql/queries/reconcile/recover_*.sql, each handed the rows the
/// one before returned.
fn recover_in_steps(client: &mut SpiClient, ledger: &Ledger, options: &Options, candidates: InventoryColumns) -> Vec<String> {
    /// A promoted operation, as step 1 returns it.
    struct Promoted {
        key: Option<String>,
        run_id: Option<String>,
        attempt: Option<i32>,
        environment: Option<String>,
        sandbox_id: Option<String>,
        routing_domain: Option<String>,
        /// The item's position in the inventory.
        position: i64,
    }
    fn column(rows: &[&Promoted], field: fn(&Promoted) -> &Option<String>) -> Vec<Option<String>> {
        rows.iter().map(|row| field(row).clone()).collect()
    }
    let (table, _) = execute(
        client,
        &ledger.sql(RECOVER_PROMOTE),
        &[
            candidates.sandbox_ids.into(),
            candidates.routing_domains.into(),
            candidates.operation_keys.into(),
            clock(),
            options.environment_param(),
        ],
    );
    let mut promoted: Vec<Promoted> = table
        .map(|row| {
            let text = |c: usize| row.get::<String>(c).read_value();
            Promoted {
                key: text(1),
                run_id: text(2),
                attempt: row.get::<i32>(3).read_value(),
                environment: text(4),
                sandbox_id: text(5),
                routing_domain: text(6),
                position: row.get::<i64>(7).read_value().unwrap_or(i64::MAX),
            }
        })
        .collect();
    if promoted.is_empty() {
        return Vec::new();
    }
    // Inventory order (then operation key): the rows each step writes, the
    // cleanup rows above all, are written in the order the application's
    // statement writes them.
    promoted.sort_by(|a, b| (a.position, &a.key).cmp(&(b.position, &b.key)));
    let all: Vec<&Promoted> = promoted.iter().collect();
    let (table, _) = execute(
        client,
        &ledger.sql(RECOVER_ATTEMPTS),
        &[
            column(&all, |p| &p.key).into(),
            column(&all, |p| &p.run_id).into(),
            all.iter().map(|p| p.attempt).collect::<Vec<_>>().into(),
            column(&all, |p| &p.environment).into(),
            column(&all, |p| &p.sandbox_id).into(),
            column(&all, |p| &p.routing_domain).into(),
            clock(),
        ],
    );
    let recorded: FastSet<(String, i32)> =
        table.filter_map(|row| Some((row.get::<String>(1).read_value()?, row.get::<i32>(2).read_value()?))).collect();
    let written: Vec<&Promoted> = all
        .into_iter()
        .filter(|p| matches!((&p.run_id, p.attempt), (Some(run), Some(attempt)) if recorded.contains(&(run.clone(), attempt))))
        .collect();
    let params = [
        column(&written, |p| &p.key).into(),
        column(&written, |p| &p.sandbox_id).into(),
        column(&written, |p| &p.routing_domain).into(),
    ];
    let (table, _) = planned(client, BY_KEY, |client| execute(client, &ledger.sql(RECOVER_BIND), &params));
    // lease id -> where the lease was stored: the cleanup rows follow that
    // order (as a scan of the leases would give them).
    let bound: crate::fast_hash::FastMap<String, (f64, f64)> = table
        .filter_map(|row| {
            let place = (row.get::<f64>(2).read_value()?, row.get::<f64>(3).read_value()?);
            Some((row.get::<String>(1).read_value()?, place))
        })
        .collect();
    let mut recovered: Vec<(&Promoted, (f64, f64))> = written
        .into_iter()
        .filter_map(|p| p.key.as_ref().and_then(|key| bound.get(key)).map(|&place| (p, place)))
        .collect();
    recovered.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
    let recovered: Vec<&Promoted> = recovered.into_iter().map(|(p, _)| p).collect();
    execute(
        client,
        &ledger.sql(RECOVER_CLEANUPS),
        &[
            column(&recovered, |p| &p.sandbox_id).into(),
            column(&recovered, |p| &p.run_id).into(),
            recovered.iter().map(|p| p.attempt).collect::<Vec<_>>().into(),
            column(&recovered, |p| &p.environment).into(),
            column(&recovered, |p| &p.routing_domain).into(),
        ],
    );
    recovered.iter().filter_map(|p| p.key.clone()).collect()
}

/// The absent candidates among the lone live operations: every one counted,
/// the oldest batch + 1 returned.
fn find_absent<'conn>(
    client: &mut SpiClient<'conn>,
    ledger: &Ledger,
    options: &Options,
    listing: &Listing,
    absent_before: TimestampWithTimeZone,
    lone: &[&str],
    current: usize,
) -> (SpiTupleTable<'conn>, f64) {
    let started = Instant::now();
    // Probe each lone key, or scan once when they are many (reach.rs).
    let scan = reach::absent_scan_cap(lone.len(), current).is_some_and(|cap| {
        let (table, _) = execute(client, &ledger.sql(OPERATIONS_REACH), &[(cap + 1).into()]);
        count(&table.first(), 1) <= cap
    });
    let sql = if scan { ABSENT_SCANNED } else { ABSENT_PROBED };
    let params: Vec<DatumWithOid> = vec![
        lone.to_vec().into(),
        absent_before.into(),
        options.minimum_age.into(),
        (options.batch_size as i64 + 1).into(),
        // The older snapshots that must confirm the absence (none outside
        // reconcile_daytona_latest).
        listing.confirming.clone().into(),
        options.environment_param(),
    ];
    let (table, _) = execute(client, &ledger.sql(sql), &params);
    (table, elapsed_ms(started))
}

/// The absent operations absent_*.sql returned, oldest first, cut to the batch.
#[derive(Default)]
struct AbsentRows {
    sandbox_ids: Vec<Option<String>>,
    run_ids: Vec<Option<String>>,
    attempts: Vec<Option<i32>>,
    environments: Vec<Option<String>>,
    routing_domains: Vec<Option<String>>,
}

impl AbsentRows {
    fn from_table(table: &SpiTupleTable, batch_size: usize) -> Self {
        let text = |c: usize| {
            let mut values = table.get::<Vec<Option<String>>>(c).read_value().unwrap_or_default();
            values.truncate(batch_size);
            values
        };
        let mut attempts = table.get::<Vec<Option<i32>>>(5).read_value().unwrap_or_default();
        attempts.truncate(batch_size);
        Self { sandbox_ids: text(3), run_ids: text(4), attempts, environments: text(6), routing_domains: text(7) }
    }
}
