//! SQL surface of reconcile_daytona: validate, then run the phase statements
//! in `sql/reconcile/` in the application's order, inside the caller's one
//! transaction, and build the result row.

use super::inventory::{parse_inventory_jsonb, InventoryColumns, InventoryItem};
use super::pairing;
use super::summary::{self, Phase, Status, Summary, PROVIDER};
use crate::args::{self, SchemaName};
use crate::pg_types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema};
use pgrx::datum::{Array, DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiTupleTable};
use pgrx::AllocatedByRust;
use std::time::Instant;

const OVERLAP_GUARD: &str = include_str!("../../sql/reconcile/overlap_guard.sql");
const RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../sql/reconcile/release_terminal_capacity.sql");
const RESERVED_LABELS: &str = include_str!("../../sql/reconcile/reserved_labels.sql");
const RECOVER_RESERVED: &str = include_str!("../../sql/reconcile/recover_reserved.sql");
const LEDGER_ROWS: &str = include_str!("../../sql/reconcile/ledger_rows.sql");
const ABSENT_OPERATIONS: &str = include_str!("../../sql/reconcile/absent_operations.sql");
const ABSENT_KEYS_PROBED: &str = include_str!("../../sql/reconcile/absent_keys_probed.sql");
const ABSENT_KEYS_SCANNED: &str = include_str!("../../sql/reconcile/absent_keys_scanned.sql");
const SEED_CAPACITY: &str = include_str!("../../sql/reconcile/seed_capacity.sql");
const MARK_ABSENT: &str = include_str!("../../sql/reconcile/mark_absent.sql");
const RECORD_RUN: &str = include_str!("../../sql/reconcile/record_run.sql");
const SETTINGS: &str = include_str!("../../sql/reconcile/settings.sql");
const SUMMARY_ROW: &str = include_str!("../../sql/reconcile/summary_row.sql");

extension_sql_file!("../../sql/reconcile/types.sql", name = "reconcile_types", requires = ["schema"]);
extension_sql_file!("../../sql/reconcile/api.sql", name = "reconcile_api", requires = [reconcile_daytona]);

/// The validated arguments of one call.
struct Request {
    items: Vec<InventoryItem>,
    captured_at: TimestampWithTimeZone,
    dry_run: bool,
    batch_size: i32,
    minimum_age: Interval,
    ledger: SchemaName,
}

/// Validate every argument before anything runs; each error names its argument.
fn validate(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    ledger_schema: Option<Name>,
) -> Request {
    let inventory = check(summary::required("inventory", inventory));
    let items = check(parse_inventory_jsonb(inventory.as_bytes()));
    let batch_size = check(args::batch_size(check(summary::required("batch_size", batch_size))));
    let captured_at = check(summary::required("inventory_captured_at", inventory_captured_at));
    check(summary::captured_at(pg_sys::TimestampTz::from(captured_at)));
    let minimum_age = check(summary::required("minimum_age", minimum_age));
    check(summary::minimum_age(minimum_age.months(), minimum_age.days(), minimum_age.micros()));
    let dry_run = check(summary::required("dry_run", dry_run));
    let ledger_schema = check(summary::required("ledger_schema", ledger_schema));
    let ledger = existing_schema("ledger_schema", ledger_schema.as_str());
    Request { items, captured_at, dry_run, batch_size, minimum_age, ledger }
}

/// Reconcile the sandbox ledger against one complete Daytona inventory.
#[pg_extern(volatile, parallel_unsafe, requires = ["reconcile_types"])]
#[search_path(pg_catalog, pg_temp)]
fn reconcile_daytona(
    inventory: Option<JsonbBytes>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: default!(Option<i32>, 500),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let request = validate(inventory, inventory_captured_at, dry_run, batch_size, minimum_age, ledger_schema);
    let summary = Spi::connect_mut(|client| {
        let previous = jit(client, "off");
        let summary = run(client, &request);
        jit(client, &previous);
        summary
    });
    result_row(&summary)
}

/// One phase statement: the SQL with the ledger schema substituted, timed.
struct Ledger<'a> {
    quoted: &'a str,
}

impl Ledger<'_> {
    fn sql(&self, template: &str) -> String {
        template.replace("@ledger@", self.quoted)
    }
}

fn execute<'conn>(client: &mut SpiClient<'conn>, sql: &str, params: &[DatumWithOid]) -> (SpiTupleTable<'conn>, f64) {
    let started = Instant::now();
    let table = client
        .update(sql, None, params)
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona statement failed: {e}"));
    (table, started.elapsed().as_secs_f64() * 1000.0)
}

/// Set `jit` for this transaction; returns the value it replaces.
fn jit(client: &mut SpiClient, value: &str) -> String {
    let (table, _) = execute(client, SETTINGS, &[value.into()]);
    table.first().get::<String>(1).ok().flatten().unwrap_or_else(|| "on".into())
}

fn count(table: &SpiTupleTable, column: usize) -> i64 {
    table.get::<i64>(column).ok().flatten().unwrap_or(0)
}

fn run(client: &mut SpiClient, request: &Request) -> Summary {
    let ledger = Ledger { quoted: &request.ledger.quoted };
    let items = &request.items;
    let mut summary =
        Summary::empty(items.len(), request.dry_run, if request.dry_run { Status::Planned } else { Status::Applied });

    // Apply only: a dry run writes nothing and reads one consistent view per
    // statement, so it never blocks (or is blocked by) a running apply.
    if !request.dry_run {
        let (guard, _) = execute(client, OVERLAP_GUARD, &[request.ledger.name.as_str().into(), PROVIDER.into()]);
        if !guard.first().get::<bool>(1).ok().flatten().unwrap_or(false) {
            return Summary::empty(items.len(), false, Status::SkippedConcurrent);
        }
    }
    let started_at = TimestampWithTimeZone::try_from(unsafe { pg_sys::GetCurrentTimestamp() })
        .unwrap_or_else(|_| error!("runtime_sandbox: the clock is out of range"));

    if !request.dry_run {
        let (released, ms) = execute(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[]);
        summary.released_terminal_leases = count(&released.first(), 1);
        summary.measured(Phase::ReleaseTerminalCapacity, ms, summary.released_terminal_leases);
    }

    // Items owned by a reserved create's unique operation label.
    let mut ownership = pairing::Ownership { owned: vec![false; items.len()], reserved_rows: 0 };
    if !items.is_empty() {
        let started = Instant::now();
        let (table, _) = execute(client, &ledger.sql(RESERVED_LABELS), &[]);
        let labels = table.first().get::<Array<&str>>(1).ok().flatten();
        let labels: Vec<&str> = labels.iter().flat_map(|a| a.iter().flatten()).collect();
        ownership = pairing::ownership(items, &labels);
        summary.measured(Phase::RecoverReservedOperations, elapsed_ms(started), ownership.reserved_rows);
    }

    if !request.dry_run && ownership.reserved_rows > 0 {
        // Only the owned items can recover (a unique label and a reserved
        // create holding an open lease): the statement re-checks both, but
        // needs to see only these few, not the whole inventory.
        let candidates = InventoryColumns::from_items(
            items.iter().zip(&ownership.owned).filter_map(|(item, &owned)| owned.then_some(item)),
        );
        let (table, ms) = execute(
            client,
            &ledger.sql(RECOVER_RESERVED),
            &[candidates.sandbox_ids.into(), candidates.routing_domains.into(), candidates.operation_keys.into()],
        );
        summary.recovered_reserved_operations = count(&table.first(), 1);
        summary.measured(Phase::RecoverReservedOperations, ms, summary.recovered_reserved_operations);
    }

    // Match: the ledger's operations, leases and terminal cleanups in one
    // read (one snapshot), paired with the inventory in Rust.
    let started = Instant::now();
    let (table, _) = execute(client, &ledger.sql(LEDGER_ROWS), &[]);
    let table = table.first();
    let column = |c: usize| table.get::<Array<&str>>(c).ok().flatten();
    let (keys, sandbox_ids, routing_domains) = (column(1), column(2), column(3));
    let live = table.get::<Array<bool>>(4).ok().flatten();
    let (lease_ids, lease_domains, terminal_ids, terminal_domains) = (column(5), column(6), column(7), column(8));
    let operations = pairing::Operations {
        operation_keys: texts(&keys).into_iter().map(|k| k.unwrap_or_default()).collect(),
        sandbox_ids: texts(&sandbox_ids),
        routing_domains: texts(&routing_domains),
        live: live.iter().flat_map(|a| a.iter().map(|v| v.unwrap_or(false))).collect(),
    };
    let pairs = pairing::pair(items, &ownership.owned, &operations);
    if !items.is_empty() {
        summary.matched_live_sandboxes = pairs.pairs.len() as i64;
        summary.unmatched_provider_sandbox_ids =
            pairs.unmatched.iter().map(|&i| items[i].sandbox_id.clone()).collect();
        summary.measured(Phase::MatchProviderInventory, elapsed_ms(started), summary.matched_live_sandboxes);
    }

    // Fail closed: a listed sandbox nobody owns cannot be assigned to an
    // organization, so nothing further is written.
    if !summary.unmatched_provider_sandbox_ids.is_empty() {
        summary.status = Status::BlockedUnownedSandboxes;
        record_run(client, &ledger, request, started_at, &summary);
        return summary;
    }

    let lone: Vec<&str> = pairs.lone_live.iter().map(|&i| operations.operation_keys[i]).collect();
    // Few lone keys (the usual case): probe each by primary key; many (an
    // inventory that lists little): one pass.
    let reach = if lone.len() * 16 <= operations.len() { ABSENT_KEYS_PROBED } else { ABSENT_KEYS_SCANNED };
    let (table, ms) = execute(
        client,
        &ledger.sql(&ABSENT_OPERATIONS.replace("@operations@", reach.trim_end())),
        &[
            lone.into(),
            request.captured_at.into(),
            request.minimum_age.into(),
            (request.batch_size as i64 + 1).into(),
        ],
    );
    let table = table.first();
    let found = count(&table, 1);
    summary.measured(Phase::FindAbsentOperations, ms, found);
    let absent = AbsentRows::from_table(&table, request.batch_size as usize);
    summary.has_more_absent_ledger_rows = found > request.batch_size as i64;
    summary.absent_ledger_rows = absent.sandbox_ids.len() as i64;

    let mut seed_keys = Vec::new();
    if summary.matched_live_sandboxes > 0 {
        let started = Instant::now();
        let leases = pairing::Identities { sandbox_ids: texts(&lease_ids), routing_domains: texts(&lease_domains) };
        let terminal =
            pairing::Identities { sandbox_ids: texts(&terminal_ids), routing_domains: texts(&terminal_domains) };
        let inspection = pairing::inspect(&pairs, &operations, &leases, &terminal);
        // The application inspects leases and terminal cleanups in two
        // statements; both counts are reported, the time goes to the first.
        summary.measured(Phase::InspectCapacityBindings, elapsed_ms(started), inspection.lease_identities);
        summary.measured(Phase::InspectCapacityBindings, 0.0, inspection.terminal_identities);
        summary.live_leases_to_seed = inspection.to_seed;
        seed_keys = inspection.seed_operations.iter().map(|&i| operations.operation_keys[i]).collect();
    }

    if request.dry_run {
        return summary;
    }

    if summary.live_leases_to_seed > 0 {
        let (seeded, ms) = execute(client, &ledger.sql(SEED_CAPACITY), &[seed_keys.into()]);
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
            ],
        );
        summary.marked_deleted = count(&table.first(), 1);
        summary.measured(Phase::MarkProviderConfirmedAbsent, ms, summary.marked_deleted);
    }

    // A cleanup that reached durable deletion while this run worked: release
    // its lease too. The application reports the running total here.
    let (released, ms) = execute(client, &ledger.sql(RELEASE_TERMINAL_CAPACITY), &[]);
    summary.released_terminal_leases += count(&released.first(), 1);
    summary.measured(Phase::ReleaseTerminalCapacity, ms, summary.released_terminal_leases);

    record_run(client, &ledger, request, started_at, &summary);
    summary
}

/// A text[] column as borrowed strings (NULL array: no rows).
fn texts<'a>(array: &'a Option<Array<'_, &str>>) -> Vec<Option<&'a str>> {
    array.iter().flat_map(|a| a.iter()).collect()
}

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// The absent operations absent_operations.sql returned, oldest first, cut to the batch.
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
            let mut values = table.get::<Vec<Option<String>>>(c).ok().flatten().unwrap_or_default();
            values.truncate(batch_size);
            values
        };
        let mut attempts = table.get::<Vec<Option<i32>>>(4).ok().flatten().unwrap_or_default();
        attempts.truncate(batch_size);
        Self { sandbox_ids: text(2), run_ids: text(3), attempts, environments: text(5), routing_domains: text(6) }
    }
}

/// Every apply that was not skipped leaves a history row; a dry run does not.
fn record_run(
    client: &mut SpiClient,
    ledger: &Ledger,
    request: &Request,
    started_at: TimestampWithTimeZone,
    summary: &Summary,
) {
    if request.dry_run {
        return;
    }
    let status = serde_json::to_value(summary.status).expect("status serializes");
    execute(
        client,
        &ledger.sql(RECORD_RUN),
        &[started_at.into(), status.as_str().unwrap_or_default().into(), summary.to_json().into()],
    );
}

fn result_row(summary: &Summary) -> PgHeapTuple<'static, AllocatedByRust> {
    Spi::get_one_with_args::<PgHeapTuple<'static, AllocatedByRust>>(SUMMARY_ROW, &[summary.to_json().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona could not build its result: {e}"))
        .expect("jsonb_populate_record returns a row")
}
