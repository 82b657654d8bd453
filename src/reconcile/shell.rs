//! SQL surface of reconcile_daytona: validate, then run the phase statements
//! in `sql/queries/reconcile/` in the application's order, inside the caller's one
//! transaction, and build the result row. `reconcile_daytona_latest`
//! (src/operations) runs the same phases against a recorded snapshot. The
//! run's reads of the capacity leases and deleted cleanups (`Capacity`) are
//! at the end.

use super::inventory::{parse_inventory_jsonb, InventoryColumns, InventoryItem};
use super::pairing;
use super::reach::{self, DeletedReach};
use super::summary::{self, Phase, Status, Summary, PROVIDER};
use crate::args::{self, Environment, SchemaName};
use crate::fast_hash::FastSet;
use crate::ledger::EnvironmentColumn;
use crate::shell::spi::clock;
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema, Raise};
use pgrx::datum::{Array, DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::heap_tuple::PgHeapTuple;
use crate::shell::spi::ReadValue;
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiTupleTable};
use pgrx::AllocatedByRust;
use std::time::Instant;

const ENVIRONMENT_LABEL: &str = include_str!("../../sql/queries/reconcile/environment_label.sql");
const OVERLAP_GUARD: &str = include_str!("../../sql/queries/reconcile/overlap_guard.sql");
const RESERVED_LABELS: &str = include_str!("../../sql/queries/reconcile/reserved_labels.sql");
const RECOVER_RESERVED: &str = include_str!("../../sql/queries/reconcile/recover_reserved.sql");
const RECOVER_PROMOTE: &str = include_str!("../../sql/queries/reconcile/recover_promote.sql");
const RECOVER_ATTEMPTS: &str = include_str!("../../sql/queries/reconcile/recover_attempts.sql");
const RECOVER_BIND: &str = include_str!("../../sql/queries/reconcile/recover_bind.sql");
const RECOVER_CLEANUPS: &str = include_str!("../../sql/queries/reconcile/recover_cleanups.sql");
const OPERATIONS: &str = include_str!("../../sql/queries/reconcile/operations.sql");
const OPERATIONS_REACH: &str = include_str!("../../sql/queries/reconcile/operations_reach.sql");
/// Absent candidates by how their keys are reached (probed, scanned) and
/// whether older snapshots must confirm the absence.
const ABSENT_PROBED: &str = include_str!("../../sql/queries/reconcile/absent_probed.sql");
const ABSENT_SCANNED: &str = include_str!("../../sql/queries/reconcile/absent_scanned.sql");
const SEED_CAPACITY: &str = include_str!("../../sql/queries/reconcile/seed_capacity.sql");
const MARK_ABSENT: &str = include_str!("../../sql/queries/reconcile/mark_absent.sql");
const RECORD_RUN: &str = include_str!("../../sql/queries/reconcile/record_run.sql");
const RECORD_RUN_WITHOUT_ENVIRONMENT: &str = include_str!("../../sql/queries/reconcile/record_run_without_environment.sql");
const NOTIFY: &str = include_str!("../../sql/queries/reconcile/notify.sql");
const SETTINGS: &str = include_str!("../../sql/queries/reconcile/settings.sql");
const SUMMARY_ROW: &str = include_str!("../../sql/queries/reconcile/summary_row.sql");
const UNOWNED_ELSEWHERE: &str = include_str!("../../sql/queries/reconcile/unowned_elsewhere.sql");
const WOULD_RECOVER: &str = include_str!("../../sql/queries/reconcile/would_recover.sql");

/// What an apply of `reconcile_daytona` needs in the ledger beyond the
/// application's tables (a dry run needs nothing more).
/// What a dry run reads, and what an apply also writes: checked before any
/// work, so a schema without the ledger is an error naming ledger_schema.
pub(crate) const READ_NEEDS: &[&str] = crate::ledger::requirements::uses::RECONCILE_READ;
pub(crate) const APPLY_NEEDS: &[&str] = crate::ledger::requirements::uses::RECONCILE_APPLY;

/// The validated arguments every reconciliation takes.
pub(crate) struct Options {
    pub dry_run: bool,
    pub batch_size: i32,
    pub minimum_age: Interval,
    pub max_absent_ratio: f32,
    pub ledger: SchemaName,
    /// The operations' `environment` this run reconciles.
    pub environment: Environment,
    /// How `environment` is compared with the operations' column
    /// (Access::operations_environment).
    pub environment_column: EnvironmentColumn,
    /// On an enum column: the environment's value of the enum (its label's oid).
    pub environment_label: pg_sys::Oid,
}

impl Options {
    pub fn ledger(&self) -> Ledger<'_> {
        let environment_eq = match &self.environment_column {
            EnvironmentColumn::Citext { operator, .. } => operator.as_str(),
            EnvironmentColumn::Text | EnvironmentColumn::Enum { .. } => "=",
        };
        Ledger { quoted: &self.ledger.quoted, environment_eq }
    }

    /// Compare `environment` as the ledger's column needs (after the gate).
    /// On an enum column, an environment that is not one of its values is an
    /// argument error (the application's literal would fail to convert).
    pub fn compare_environment(&mut self, access: &crate::ledger::Access) {
        self.environment_column = access.operations_environment();
        if let EnvironmentColumn::Enum { oid, name } = &self.environment_column {
            let (label, values) = Spi::connect(|client| {
                let rows = client.select(ENVIRONMENT_LABEL, Some(1), &[(*oid).into(), self.environment.name.as_str().into()])?;
                let row = rows.first();
                Ok::<_, pgrx::spi::SpiError>((row.get::<pg_sys::Oid>(1)?, row.get::<String>(2)?))
            })
            .unwrap_or_else(|e| pgrx::error!("runtime_sandbox: reading the values of {name}: {e}"));
            self.environment_label = label.unwrap_or_else(|| {
                crate::error::Error::argument(
                    "environment",
                    format!(
                        "{:?} is not a value of {name}, the type of the operations' environment (its values: {})",
                        self.environment.name,
                        values.unwrap_or_default()
                    ),
                )
                .raise()
            });
        }
    }

    /// `environment` as a parameter compared with the operations' column.
    pub fn environment_param(&self) -> DatumWithOid<'static> {
        // SAFETY: citext stores its value as text does; an enum's value is the
        // oid of its label, of the enum's type.
        unsafe {
            match &self.environment_column {
                EnvironmentColumn::Text => DatumWithOid::new(self.environment.name.as_str(), pg_sys::TEXTOID),
                EnvironmentColumn::Citext { oid, .. } => DatumWithOid::new(self.environment.name.as_str(), *oid),
                EnvironmentColumn::Enum { oid, .. } => DatumWithOid::new(self.environment_label, *oid),
            }
        }
    }
}

/// Validate the shared arguments (after the caller's own, in signature order;
/// the ledger schema last, as it is looked up).
pub(crate) fn validate_options(
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    max_absent_ratio: Option<f32>,
    ledger_schema: Option<Name>,
    environment: Option<&str>,
) -> Options {
    let batch_size = check(args::batch_size(check(summary::required("batch_size", batch_size))));
    let minimum_age = check(summary::required("minimum_age", minimum_age));
    check(summary::minimum_age(minimum_age.months(), minimum_age.days(), minimum_age.micros()));
    let dry_run = check(summary::required("dry_run", dry_run));
    let max_absent_ratio = check(summary::max_absent_ratio(check(summary::required("max_absent_ratio", max_absent_ratio))));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let environment = check(args::environment("environment", check(summary::required("environment", environment))));
    let ledger = existing_schema("ledger_schema", ledger_schema.as_str());
    Options { dry_run, batch_size, minimum_age, max_absent_ratio, ledger, environment, environment_column: EnvironmentColumn::Text, environment_label: pg_sys::InvalidOid }
}

/// The listing a run reconciles the ledger against.
pub(crate) struct Listing<'a> {
    pub items: Vec<InventoryItem<'a>>,
    /// Operations recorded after this are never called absent; None: absence
    /// is not looked at (too few snapshots to confirm it).
    pub absent_before: Option<TimestampWithTimeZone>,
    /// Older snapshots an absent operation must be missing from as well.
    pub confirming: Vec<i64>,
}

/// Validate the inventory (given: `required` checked it) and its capture time, before anything runs.
fn validate_listing(inventory: &JsonbBytes, inventory_captured_at: Option<TimestampWithTimeZone>) -> Listing<'_> {
    let items = check(parse_inventory_jsonb(inventory.as_bytes()));
    let captured_at = check(summary::required("inventory_captured_at", inventory_captured_at));
    check(summary::captured_at(pg_sys::TimestampTz::from(captured_at)));
    Listing { items, absent_before: Some(captured_at), confirming: Vec::new() }
}

/// Reconcile the sandbox ledger's operations of one environment against one
/// complete Daytona inventory.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "reconcile_daytona", volatile, parallel_unsafe, requires = ["reconcile_types"])]
#[search_path(pg_catalog, pg_temp)]
fn reconcile_daytona_in(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: default!(Option<i32>, 500),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    max_absent_ratio: default!(Option<f32>, 0.5),
    environment: default!(Option<&str>, "'production'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    reconcile(inventory, inventory_captured_at, dry_run, batch_size, minimum_age, ledger_schema, max_absent_ratio, environment)
}

/// The 0.2.0 and 0.3.0 signature (no `environment`), kept in the library only
/// so such a catalog keeps working between installing this library and `ALTER
/// EXTENSION runtime_sandbox UPDATE`: it reconciles 'production'.
#[pg_extern(sql = false)]
fn reconcile_daytona_guarded(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    ledger_schema: Option<Name>,
    max_absent_ratio: Option<f32>,
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let environment = Some(args::DEFAULT_ENVIRONMENT);
    reconcile(inventory, inventory_captured_at, dry_run, batch_size, minimum_age, ledger_schema, max_absent_ratio, environment)
}

/// The 0.1.0 signature (no `max_absent_ratio`), kept in the library only so a
/// 0.1.0 catalog keeps working between installing this library and `ALTER
/// EXTENSION runtime_sandbox UPDATE`: it reconciles with the default valve.
#[pg_extern(sql = false)]
fn reconcile_daytona(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    ledger_schema: Option<Name>,
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let environment = Some(args::DEFAULT_ENVIRONMENT);
    reconcile(inventory, inventory_captured_at, dry_run, batch_size, minimum_age, ledger_schema, Some(0.5), environment)
}

fn reconcile(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    ledger_schema: Option<Name>,
    max_absent_ratio: Option<f32>,
    environment: Option<&str>,
) -> PgHeapTuple<'static, AllocatedByRust> {
    let inventory = check(summary::required("inventory", inventory));
    let listing = validate_listing(&inventory, inventory_captured_at);
    let mut options = validate_options(dry_run, batch_size, minimum_age, max_absent_ratio, ledger_schema, environment);
    let needs = if options.dry_run { READ_NEEDS } else { APPLY_NEEDS };
    let access = if options.dry_run {
        crate::ledger::require_to_read(&options.ledger, needs, "reconcile_daytona")
    } else {
        crate::ledger::require(&options.ledger, needs, "reconcile_daytona")
    };
    options.compare_environment(&access);
    let runs_environment =
        !options.dry_run && access.environment_column(&options.ledger, "reconciliation_runs", &options.environment, "reconcile_daytona");
    if !options.dry_run {
        crate::shell::standby::refuse_writes("reconcile_daytona");
    }
    let summary = access.run(|| Spi::connect_mut(|client| {
        let previous = jit(client, "off");
        let started_at = now();
        let mut summary = if take_guard(client, &options) {
            run(client, &options, &listing)
        } else {
            Summary::empty(listing.items.len(), false, Status::SkippedConcurrent)
        };
        summary.environment = options.environment.name.clone();
        if !options.dry_run {
            let run_id = record_run(client, &options, runs_environment, started_at, &summary);
            alert(client, &options.ledger, run_id, &summary);
        }
        jit(client, &previous);
        summary
    }));
    result_row(&summary)
}

pub(crate) fn now() -> TimestampWithTimeZone {
    TimestampWithTimeZone::try_from(unsafe { pg_sys::GetCurrentTimestamp() })
        .unwrap_or_else(|_| error!("runtime_sandbox: the clock is out of range"))
}

/// One phase statement: the SQL with the ledger schema and the environment's
/// comparison operator substituted, timed.
pub(crate) struct Ledger<'a> {
    pub quoted: &'a str,
    pub environment_eq: &'a str,
}

impl Ledger<'_> {
    pub fn sql(&self, template: &str) -> String {
        template.replace("@ledger@", self.quoted).replace("@environment_eq@", self.environment_eq)
    }
}

pub(crate) fn execute<'conn>(
    client: &mut SpiClient<'conn>,
    sql: &str,
    params: &[DatumWithOid],
) -> (SpiTupleTable<'conn>, f64) {
    let started = Instant::now();
    let table = crate::shell::spi::execute(client, sql, None, params)
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona statement failed: {e}"));
    (table, started.elapsed().as_secs_f64() * 1000.0)
}

/// A statement on a table that may lack `environment` (a ledger installed
/// before 0.4.0 holds only 'production' rows there): `with` and the
/// environment as its last parameter when the column is there (`environment`
/// Some), else its `_without_environment` twin `without` and `params` alone.
pub(crate) fn execute_by_environment<'conn, 'p>(
    client: &mut SpiClient<'conn>,
    ledger: &Ledger,
    (with, without): (&str, &str),
    mut params: Vec<DatumWithOid<'p>>,
    environment: Option<&'p str>,
) -> (SpiTupleTable<'conn>, f64) {
    let statement = match environment {
        Some(environment) => {
            params.push(environment.into());
            with
        }
        None => without,
    };
    execute(client, &ledger.sql(statement), &params)
}

/// Set `jit` for this transaction; returns the value it replaces.
pub(crate) fn jit(client: &mut SpiClient, value: &str) -> String {
    setting(client, "jit", value)
}

/// Set a planner setting for this transaction; returns the value it replaces.
fn setting(client: &mut SpiClient, name: &str, value: &str) -> String {
    let (table, _) = execute(client, SETTINGS, &[name.into(), value.into()]);
    table.first().get::<String>(1).read_value().unwrap_or_else(|| "on".into())
}

/// Run `read` under these planner settings, then put the previous values
/// back (settings.sql says why each is used).
fn planned<'conn, R>(
    client: &mut SpiClient<'conn>,
    settings: &[(&str, &str)],
    read: impl FnOnce(&mut SpiClient<'conn>) -> R,
) -> R {
    let before: Vec<String> = settings.iter().map(|&(name, value)| setting(client, name, value)).collect();
    let result = read(client);
    for (&(name, _), value) in settings.iter().zip(&before) {
        setting(client, name, value);
    }
    result
}

/// A read of the rows a partial index holds (the current operations, the
/// open leases) goes through a bitmap of that index: never a scan of the
/// whole table, history included, which statistics make look cheaper.
const THROUGH_PARTIAL_INDEX: &[(&str, &str)] = &[("enable_seqscan", "off"), ("enable_indexscan", "off")];

/// The released-lease probes are plain index probes, not a bitmap each.
const PLAIN_PROBES: &[(&str, &str)] = &[("enable_bitmapscan", "off")];

fn count(table: &SpiTupleTable, column: usize) -> i64 {
    table.get::<i64>(column).read_value().unwrap_or(0)
}

/// Apply only: one apply per ledger at a time; false means another holds it
/// (released when its transaction ends). A dry run writes nothing and reads
/// one consistent view per statement, so it never blocks (or is blocked by) a
/// running apply.
pub(crate) fn take_guard(client: &mut SpiClient, options: &Options) -> bool {
    if options.dry_run {
        return true;
    }
    let (guard, _) = execute(
        client,
        OVERLAP_GUARD,
        &[
            options.ledger.name.as_str().into(),
            PROVIDER.into(),
            options.environment.name.as_str().into(),
            // A citext column makes 'Production' and 'production' one environment: one guard.
            matches!(options.environment_column, EnvironmentColumn::Citext { .. }).into(),
        ],
    );
    guard.first().get::<bool>(1).read_value().unwrap_or(false)
}

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
        let candidates = InventoryColumns::from_items(
            items.iter().zip(&ownership.owned).filter_map(|(item, &owned)| owned.then_some(item)),
        );
        let started = Instant::now();
        let bound = recover(client, &ledger, options, candidates);
        summary.recovered_reserved_operations = bound.len() as i64;
        summary.measured(Phase::RecoverReservedOperations, elapsed_ms(started), summary.recovered_reserved_operations);
        capacity.bound(bound);
    } else if ownership.reserved_rows > 0 {
        let owned = InventoryColumns::from_items(
            items.iter().zip(&ownership.owned).filter_map(|(item, &owned)| owned.then_some(item)),
        );
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
    let (table, _) = execute(
        client,
        &ledger.sql(RECOVER_BIND),
        &[
            column(&written, |p| &p.key).into(),
            column(&written, |p| &p.sandbox_id).into(),
            column(&written, |p| &p.routing_domain).into(),
        ],
    );
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

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
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

/// The history row of an apply (skipped and blocked ones included); returns its id.
/// `runs_environment`: the table has its environment column (Access::environment_column).
fn record_run(client: &mut SpiClient, options: &Options, runs_environment: bool, started_at: TimestampWithTimeZone, summary: &Summary) -> i64 {
    let params = vec![started_at.into(), summary.status.as_str().into(), summary.to_json().into()];
    let environment = runs_environment.then_some(options.environment.name.as_str());
    let (table, _) =
        execute_by_environment(client, &options.ledger(), (RECORD_RUN, RECORD_RUN_WITHOUT_ENVIRONMENT), params, environment);
    count(&table.first(), 1)
}

/// An apply that did not go through says so: a WARNING to the caller (pg_cron
/// logs it) and a notification on channel `runtime_sandbox` for listeners.
/// Whether the call runs inside run_reconciliation_job, which raises the
/// reason as the job's error (one message per blocked run, not two).
fn in_scheduled_job() -> bool {
    // SAFETY: GetConfigOption returns a pointer into the GUC's storage, or NULL.
    unsafe {
        let value = pg_sys::GetConfigOption(c"runtime_sandbox.scheduled_job".as_ptr(), true, false);
        !value.is_null() && std::ffi::CStr::from_ptr(value).to_bytes() == b"on"
    }
}

pub(crate) fn alert(client: &mut SpiClient, ledger: &SchemaName, run_id: i64, summary: &Summary) {
    if !summary.status.alerts() {
        return;
    }
    let reason = match summary.status {
        Status::BlockedMassAbsence => format!(
            "{} absent candidates among {} live operations are too many to believe (an empty or partial listing?); \
             nothing was seeded or marked absent",
            summary.absent_candidates.unwrap_or(0),
            summary.live_operations.unwrap_or(0)
        ),
        Status::BlockedUnownedSandboxes => format!(
            "{} listed sandboxes are owned by no operation of environment {:?} (first: {}); nothing was seeded or marked absent{}",
            summary.unmatched_provider_sandbox_ids.len(),
            summary.environment,
            crate::args::prefix(summary.unmatched_provider_sandbox_ids.first().map(String::as_str).unwrap_or(""), 100),
            summary.other_environment_hint().map(|hint| format!(" ({hint})")).unwrap_or_default()
        ),
        _ => match summary.snapshot_id {
            Some(id) => format!("the newest Daytona snapshot ({id}) is older than max_snapshot_age; nothing was reconciled"),
            None => "there is no Daytona snapshot; nothing was reconciled".to_string(),
        },
    };
    if !in_scheduled_job() {
        warning!("runtime_sandbox: reconciliation of ledger {:?} {}: {reason}", ledger.name, summary.status.as_str());
    }
    let payload = serde_json::json!({
        "ledger_schema": ledger.name,
        "provider": PROVIDER,
        "environment": summary.environment,
        "status": summary.status.as_str(),
        "run_id": run_id,
        "snapshot_id": summary.snapshot_id,
        "provider_sandbox_count": summary.provider_sandbox_count,
        "unmatched_provider_sandboxes": summary.unmatched_provider_sandbox_ids.len(),
        "absent_candidates": summary.absent_candidates,
        "live_operations": summary.live_operations,
        "released_terminal_leases": summary.released_terminal_leases,
        "recovered_reserved_operations": summary.recovered_reserved_operations,
        "would_release_terminal_leases": summary.would_release_terminal_leases,
        "would_recover_reserved_operations": summary.would_recover_reserved_operations,
    });
    execute(client, NOTIFY, &[payload.to_string().into()]);
}

pub(crate) fn result_row(summary: &Summary) -> PgHeapTuple<'static, AllocatedByRust> {
    crate::shell::spi::get_one_with_args::<PgHeapTuple<'static, AllocatedByRust>>(SUMMARY_ROW, &[summary.to_json().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona could not build its result: {e}"))
        .expect("jsonb_populate_record returns a row")
}

// ---- Capacity: The run's reads of the Daytona capacity leases and the durably deleted
// cleanups: the two release passes and the capacity inspection.
//
// Both tables keep history forever (released leases, deleted cleanups), so
// how they are read depends on how large they are next to the listing (their
// size estimated from their pages: no statistics needed, `capacity_sizes.sql`):
//
// - deleted cleanups few (at most a quarter of the listing): the first
//   release pass is one statement driven by them, as the application's;
// - at most twice the listing: read whole, once, at the first pass;
// - more (a long history): only those of the sandboxes the run looks at,
//   probed sandbox by sandbox from the open leases (a partial index holds
//   them) and the matched sandboxes.
//
// The leases likewise: read whole while the table is at most three times the
// listing, else the open ones plus, probed, the released ones of the matched
// sandboxes. Everything read at the first pass is reused by the inspection.
// Either way a run's reads stay proportional to the listing, not to the
// ledger's age, and no statement's plan can turn one probe into a scan.
// The thresholds are reach::capacity_reach.

const SIZES: &str = include_str!("../../sql/queries/reconcile/capacity_sizes.sql");
const RELEASE_FROM_CLEANUPS: &str = include_str!("../../sql/queries/reconcile/release_from_cleanups.sql");
const RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../sql/queries/reconcile/release_terminal_capacity.sql");
const WOULD_RELEASE_FROM_CLEANUPS: &str = include_str!("../../sql/queries/reconcile/would_release_from_cleanups.sql");
const WOULD_RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../sql/queries/reconcile/would_release_terminal_capacity.sql");
const OPEN_LEASES: &str = include_str!("../../sql/queries/reconcile/open_leases.sql");
const LEASE_IDENTITIES: &str = include_str!("../../sql/queries/reconcile/lease_identities.sql");
const LEASE_IDENTITIES_OPEN: &str = include_str!("../../sql/queries/reconcile/lease_identities_open.sql");
const RELEASED_LEASE_IDENTITIES: &str = include_str!("../../sql/queries/reconcile/released_lease_identities.sql");
const BOUND_LEASE_IDENTITIES: &str = include_str!("../../sql/queries/reconcile/bound_lease_identities.sql");
const DELETED: &str = include_str!("../../sql/queries/reconcile/deleted.sql");
const DELETED_PROBED: &str = include_str!("../../sql/queries/reconcile/deleted_probed.sql");
const DELETED_BY_KEY: &str = include_str!("../../sql/queries/reconcile/deleted_by_key.sql");
const RELEASED_BY_KEY: &str = include_str!("../../sql/queries/reconcile/released_by_key.sql");

/// One read's N text columns, each written by the statement as two result
/// columns (`cut` reads them).
struct Columns<'t, const N: usize>([Vec<Option<&'t str>>; N]);

impl<'t, const N: usize> Columns<'t, N> {
    fn read(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> Self {
        let (table, _) = execute(client, sql, params);
        let table = table.first();
        Columns(std::array::from_fn(|c| cut(&table, 2 * c + 1)))
    }

    fn columns(&self) -> &[Vec<Option<&'t str>>; N] {
        &self.0
    }
}

/// A text column read as `string_agg(x, ''), array_agg(octet_length(x))`
/// (result columns `c` and `c + 1`): its values cut from the one string by
/// their lengths, NULL where the length is. PostgreSQL builds that string and
/// an array of integers for a third of what an array of 100k texts costs it
/// (each element copied twice). The string is copied out of SPI's memory
/// into the call's, where it stays until the call returns.
fn cut<'t>(table: &SpiTupleTable, c: usize) -> Vec<Option<&'t str>> {
    let joined: &'t str = table.get::<&'t str>(c).read_value().unwrap_or_default();
    let lengths = table.get::<Array<i32>>(c + 1).read_value();
    reach::cut_by_lengths(joined, lengths.iter().flat_map(|l| l.iter())).unwrap_or_else(|| {
        error!("runtime_sandbox: a statement's result could not be read: column {c} does not fit its lengths")
    })
}

/// Distinct sandbox ids, in byte order (neighbouring probes share index pages).
fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn run_count(client: &mut SpiClient, sql: &str, params: &[DatumWithOid]) -> i64 {
    let (table, _) = execute(client, sql, params);
    table.first().get::<i64>(1).read_value().unwrap_or(0)
}

/// Read history rows of `sandboxes` by one index scan keyed by all of them
/// (`sql.0`) where the ledger has install_ledger's index (`by_key`) and the
/// planner keys that scan by them, else by one probe per sandbox (`sql.1`);
/// plain index scans either way. The plan is looked at first: without
/// statistics the planner may rather walk another index of the table (the
/// application's own, or the one on (provider, sandbox_id)) and test every
/// entry against the whole array, one comparison per key (2.2 s for 10k keys
/// on a never-analyzed 22k-row table).
fn by_key_or_probed<'t, const N: usize>(
    client: &mut SpiClient,
    ledger: &Ledger,
    by_key: bool,
    sql: (&str, &str),
    sandboxes: Vec<&str>,
) -> Columns<'t, N> {
    planned(client, PLAIN_PROBES, |client| {
        let keyed = by_key && {
            let (plan, _) = execute(client, &format!("EXPLAIN (COSTS OFF) {}", ledger.sql(sql.0)), &[sandboxes.clone().into()]);
            let lines: Vec<String> = plan.filter_map(|row| row.get::<String>(1).read_value()).collect();
            reach::keyed_by_the_array(&lines)
        };
        Columns::read(client, &ledger.sql(if keyed { sql.0 } else { sql.1 }), &[sandboxes.into()])
    })
}

/// Whether the deleted cleanups and the released leases are probed by one
/// index scan keyed by all the sandboxes (capacity_sizes.sql).
#[derive(Default, Clone, Copy)]
struct ByKey {
    deleted: bool,
    released: bool,
}

pub(crate) struct Capacity<'t> {
    /// The listing's size: the fleet a run looks at.
    listed: usize,
    /// (the lease table is read whole, how deleted cleanups are read), decided on first use.
    reach: Option<(bool, DeletedReach)>,
    /// Which history tables have install_ledger's bytewise index (decided with `reach`).
    by_key: ByKey,
    /// The open leases (lease id, sandbox, routing domain), when the first
    /// pass read them.
    open: Option<Columns<'t, 3>>,
    /// Deleted cleanups read (sandbox, routing domain, run): all of them, or
    /// those of the open leases' sandboxes and of `probed`.
    deleted: Vec<Columns<'t, 3>>,
    probed: FastSet<String>,
    /// The sandboxes whose deleted cleanups the first pass probed, distinct, in byte order.
    first_probed: Vec<&'t str>,
    /// The leases recovery bound (the second pass re-checks them; rows read
    /// before recovery are stale for them).
    bound: Vec<String>,
}

impl<'t> Capacity<'t> {
    pub fn new(listed: usize) -> Self {
        Capacity {
            listed,
            reach: None,
            by_key: ByKey::default(),
            open: None,
            deleted: Vec::new(),
            probed: FastSet::default(),
            first_probed: Vec::new(),
            bound: Vec::new(),
        }
    }

    /// Whether the lease table is read whole and how deleted cleanups are
    /// read, from the tables' estimated sizes (reach::capacity_reach).
    fn reach(&mut self, client: &mut SpiClient, ledger: &Ledger) -> (bool, DeletedReach) {
        if self.reach.is_none() {
            let (table, _) = execute(client, &ledger.sql(SIZES), &[]);
            let table = table.first();
            let rows = |c: usize| table.get::<i64>(c).read_value().unwrap_or(i64::MAX);
            self.reach = Some(reach::capacity_reach(self.listed, rows(1), rows(2)));
            let flag = |c: usize| table.get::<bool>(c).read_value().unwrap_or(false);
            self.by_key = ByKey { deleted: flag(3), released: flag(4) };
        }
        self.reach.expect("decided above")
    }

    /// The first release pass: leases whose cleanup (same sandbox, routing
    /// domain and run) is durably deleted. Returns how many were released.
    /// `count_only`: a dry run's count of the same leases, read only (the
    /// rows read are kept for the inspection as an apply's are).
    pub fn release_first(&mut self, client: &mut SpiClient, ledger: &Ledger, count_only: bool) -> i64 {
        let deleted_reach = self.reach(client, ledger).1;
        if deleted_reach == DeletedReach::Few {
            if count_only {
                return run_count(client, &ledger.sql(WOULD_RELEASE_FROM_CLEANUPS), &[]);
            }
            return run_count(client, &ledger.sql(RELEASE_FROM_CLEANUPS), &[clock()]);
        }
        let open = planned(client, THROUGH_PARTIAL_INDEX, |client| Columns::<3>::read(client, &ledger.sql(OPEN_LEASES), &[]));
        let deleted = if deleted_reach == DeletedReach::Whole {
            Columns::<3>::read(client, &ledger.sql(DELETED), &[])
        } else {
            let [_, sandboxes, ..] = open.columns();
            self.first_probed = distinct(sandboxes.iter().map(|s| s.unwrap_or_default()));
            self.deleted_of(client, ledger, self.first_probed.clone())
        };
        let terminal: Vec<&str> = {
            let ([ids, sandboxes, domains], [deleted_sandboxes, deleted_domains, _]) = (open.columns(), deleted.columns());
            pairing::terminal_candidates([ids, sandboxes, domains], [deleted_sandboxes, deleted_domains])
        };
        self.open = Some(open);
        self.deleted.push(deleted);
        if terminal.is_empty() {
            return 0;
        }
        if count_only {
            return run_count(client, &ledger.sql(WOULD_RELEASE_TERMINAL_CAPACITY), &[terminal.into()]);
        }
        run_count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[terminal.into(), clock()])
    }

    /// Recovery bound these leases to their new sandboxes.
    pub fn bound(&mut self, bound: Vec<String>) {
        self.bound = bound;
    }

    /// The second release pass: of this run's own writes only recovery can
    /// bind a lease to a sandbox whose cleanup is already deleted (seeding
    /// never does, marking releases what it marks); those are re-checked.
    pub fn release_second(&mut self, client: &mut SpiClient, ledger: &Ledger) -> i64 {
        if self.bound.is_empty() {
            return 0;
        }
        run_count(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[self.bound.clone().into(), clock()])
    }

    /// The durably deleted cleanups of these sandboxes (distinct): one index
    /// scan keyed by all of them where the ledger has install_ledger's
    /// bytewise index, else a probe per sandbox; plain index scans either way.
    fn deleted_of(&self, client: &mut SpiClient, ledger: &Ledger, sandboxes: Vec<&str>) -> Columns<'t, 3> {
        by_key_or_probed(client, ledger, self.by_key.deleted, (DELETED_BY_KEY, DELETED_PROBED), sandboxes)
    }

    /// The capacity inspection: the open leases of the matched sandboxes;
    /// `to_inspect` names, from them, the sandboxes whose history decides
    /// (an identity without an open lease); their released leases and durably
    /// deleted cleanups are read (probed, on a long history), and `inspect` is
    /// handed the open leases, the released ones and the deleted cleanups as
    /// (sandbox, routing domain) identities.
    pub fn inspect(
        &mut self,
        client: &mut SpiClient,
        ledger: &Ledger,
        pairs: &pairing::Pairing,
        operations: &pairing::Operations,
    ) -> pairing::Inspection {
        let (leases_whole, deleted_reach) = self.reach(client, ledger);

        // Open leases: the whole table's rows, flagged (a small table); or the
        // open ones as the first pass read them, with the ones recovery bound
        // re-read; or read now (a dry run).
        let reuse_open = !leases_whole && self.open.is_some();
        let whole = leases_whole.then(|| Columns::<4>::read(client, &ledger.sql(LEASE_IDENTITIES), &[]));
        let mut open_reads: Vec<Columns<2>> = Vec::new();
        if reuse_open && !self.bound.is_empty() {
            open_reads.push(Columns::read(client, &ledger.sql(BOUND_LEASE_IDENTITIES), &[self.bound.clone().into()]));
        } else if !leases_whole && !reuse_open {
            open_reads.push(planned(client, THROUGH_PARTIAL_INDEX, |client| {
                Columns::read(client, &ledger.sql(LEASE_IDENTITIES_OPEN), &[])
            }));
        }
        let first_pass = if reuse_open { self.open.as_ref().map(Columns::columns) } else { None };
        let whole_columns = whole.as_ref().map(Columns::columns);
        let bound: FastSet<&str> = self.bound.iter().map(String::as_str).collect();
        let mut open = pairing::Identities::default();
        let mut released = pairing::Identities::default();
        if let Some([ids, sandboxes, domains]) = first_pass {
            for i in (0..ids.len()).filter(|&i| !bound.contains(ids[i].unwrap_or_default())) {
                open.sandbox_ids.push(sandboxes[i]);
                open.routing_domains.push(domains[i]);
            }
        }
        for [sandboxes, domains] in open_reads.iter().map(Columns::columns) {
            open.sandbox_ids.extend(sandboxes);
            open.routing_domains.extend(domains);
        }
        if let Some([open_sandboxes, open_domains, released_sandboxes, released_domains]) = &whole_columns {
            open.sandbox_ids.extend(open_sandboxes);
            open.routing_domains.extend(open_domains);
            released.sandbox_ids.extend(released_sandboxes);
            released.routing_domains.extend(released_domains);
        }
        let inspector = pairing::Inspector::new(pairs, operations, &open);
        let inspected = inspector.inspected();

        // Released leases of the inspected sandboxes, probed (a long history).
        let released_read = (!leases_whole && !inspected.is_empty()).then(|| {
            // Plain index probes, not a bitmap each (settings.sql).
            let sql = (RELEASED_BY_KEY, RELEASED_LEASE_IDENTITIES);
            by_key_or_probed::<2>(client, ledger, self.by_key.released, sql, inspected.clone())
        });

        // Deleted cleanups: as the first pass read them (recovery only adds
        // pending ones), or read now; probed: those of inspected sandboxes not
        // yet probed.
        let mut deleted_reads: Vec<Columns<3>> = Vec::new();
        match deleted_reach {
            DeletedReach::Few => deleted_reads.push(Columns::read(client, &ledger.sql(DELETED), &[])),
            DeletedReach::Whole if self.deleted.is_empty() => {
                deleted_reads.push(Columns::read(client, &ledger.sql(DELETED), &[]))
            }
            DeletedReach::Whole => {}
            DeletedReach::Probed => {
                let missing: Vec<&str> = {
                    let first = &self.first_probed;
                    let covered = |id: &str| first.binary_search(&id).is_ok() || self.probed.contains(id);
                    inspected.iter().copied().filter(|id| !covered(id)).collect()
                };
                if !missing.is_empty() {
                    deleted_reads.push(self.deleted_of(client, ledger, missing.clone()));
                    self.probed.extend(missing.iter().map(|id| id.to_string()));
                }
            }
        }

        let released_columns = released_read.as_ref().map(Columns::columns);
        if let Some([sandboxes, domains]) = &released_columns {
            released.sandbox_ids.extend(sandboxes);
            released.routing_domains.extend(domains);
        }
        let mut deleted = pairing::Identities::default();
        for [sandboxes, domains, _] in self.deleted.iter().chain(&deleted_reads).map(Columns::columns) {
            deleted.sandbox_ids.extend(sandboxes);
            deleted.routing_domains.extend(domains);
        }
        inspector.finish(&released, &deleted)
    }
}
