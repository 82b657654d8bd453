//! SQL surface of reconcile_daytona: validate, then run the phase statements
//! in `sql/reconcile/` in the application's order, inside the caller's one
//! transaction, and build the result row.

use super::inventory::{parse_inventory, recovery_candidates, InventoryItem};
use super::summary::{self, Phase, Status, Summary, PROVIDER};
use crate::args::{self, SchemaName};
use crate::pg_types::{JsonbText, Name};
use crate::shell::{check, existing_schema};
use pgrx::datum::{DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiTupleTable};
use pgrx::AllocatedByRust;
use std::time::Instant;

const OVERLAP_GUARD: &str = include_str!("../../sql/reconcile/overlap_guard.sql");
const RELEASE_TERMINAL_CAPACITY: &str = include_str!("../../sql/reconcile/release_terminal_capacity.sql");
const RESERVED_OWNED: &str = include_str!("../../sql/reconcile/reserved_owned.sql");
const RECOVER_RESERVED: &str = include_str!("../../sql/reconcile/recover_reserved.sql");
const PLAN: &str = include_str!("../../sql/reconcile/plan.sql");
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
    inventory: Option<JsonbText>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: Option<i32>,
    minimum_age: Option<Interval>,
    ledger_schema: Option<Name>,
) -> Request {
    let inventory = check(summary::required("inventory", inventory));
    let items = check(parse_inventory(&inventory.0));
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
    inventory: Option<JsonbText>,
    inventory_captured_at: Option<TimestampWithTimeZone>,
    dry_run: Option<bool>,
    batch_size: default!(Option<i32>, 500),
    minimum_age: default!(Option<Interval>, "'10 minutes'"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.reconciliation_summary") {
    let request = validate(inventory, inventory_captured_at, dry_run, batch_size, minimum_age, ledger_schema);
    let summary = Spi::connect_mut(|client| {
        let previous = settings(client, ["off", "on", "on"]);
        let summary = run(client, &request);
        settings(client, previous.each_ref().map(String::as_str));
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

/// Set (jit, enable_nestloop, enable_mergejoin) for this transaction; returns the old values.
fn settings(client: &mut SpiClient, values: [&str; 3]) -> [String; 3] {
    let (table, _) = execute(client, SETTINGS, &[values[0].into(), values[1].into(), values[2].into()]);
    let table = table.first();
    [1, 2, 3].map(|c| table.get::<String>(c).ok().flatten().unwrap_or_else(|| "on".into()))
}

/// Hash joins only, for the statements that join the whole inventory ...
fn hash_joins(client: &mut SpiClient) {
    settings(client, ["off", "off", "off"]);
}

/// ... and back for the small, index-friendly ones.
fn any_joins(client: &mut SpiClient) {
    settings(client, ["off", "on", "on"]);
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

    let sandbox_ids: Vec<Option<&str>> = items.iter().map(|i| Some(i.sandbox_id.as_str())).collect();
    let routing_domains: Vec<Option<&str>> = items.iter().map(|i| i.routing_domain.as_deref()).collect();
    let operation_keys: Vec<Option<&str>> = items.iter().map(|i| i.operation_key.as_deref()).collect();

    // Items owned by a reserved create's unique operation label.
    let mut owned = vec![false; items.len()];
    let mut reserved_rows = 0;
    if !items.is_empty() {
        let (table, ms) = execute(
            client,
            &ledger.sql(RESERVED_OWNED),
            &[operation_keys.into()],
        );
        let table = table.first();
        reserved_rows = count(&table, 1);
        summary.measured(Phase::RecoverReservedOperations, ms, reserved_rows);
        let unique = super::inventory::unique_operation_keys(items);
        for ordinal in table.get::<Vec<i64>>(2).ok().flatten().unwrap_or_default() {
            let index = (ordinal - 1) as usize;
            if items[index].operation_key.as_deref().is_some_and(|k| unique.contains(k)) {
                owned[index] = true;
            }
        }
    }

    if !request.dry_run && reserved_rows > 0 {
        let candidates = recovery_candidates(items);
        let (table, ms) = execute(
            client,
            &ledger.sql(RECOVER_RESERVED),
            &[candidates.sandbox_ids.into(), candidates.routing_domains.into(), candidates.operation_keys.into()],
        );
        summary.recovered_reserved_operations = count(&table.first(), 1);
        summary.measured(Phase::RecoverReservedOperations, ms, summary.recovered_reserved_operations);
    }

    // Match, fail-closed check, absent candidates and capacity inspection:
    // all reads, one statement, one snapshot. The application measures them
    // as separate statements; their diagnostics keep its phases and row
    // counts, and the statement's time goes to the first one reported.
    hash_joins(client);
    let plan = execute(
        client,
        &ledger.sql(PLAN),
        &[
            sandbox_ids.as_slice().into(),
            routing_domains.as_slice().into(),
            owned.into(),
            request.captured_at.into(),
            request.minimum_age.into(),
            (request.batch_size as i64 + 1).into(),
        ],
    );
    any_joins(client);
    let (table, mut plan_ms) = plan;
    let table = table.first();
    let mut take_ms = || std::mem::replace(&mut plan_ms, 0.0);
    if !items.is_empty() {
        summary.matched_live_sandboxes = count(&table, 1);
        summary.unmatched_provider_sandbox_ids = table.get::<Vec<String>>(2).ok().flatten().unwrap_or_default();
        summary.measured(Phase::MatchProviderInventory, take_ms(), summary.matched_live_sandboxes);
    }

    // Fail closed: a listed sandbox nobody owns cannot be assigned to an
    // organization, so nothing further is written.
    if !summary.unmatched_provider_sandbox_ids.is_empty() {
        summary.status = Status::BlockedUnownedSandboxes;
        record_run(client, &ledger, request, started_at, &summary);
        return summary;
    }

    let found = count(&table, 3);
    summary.measured(Phase::FindAbsentOperations, take_ms(), found);
    let absent = AbsentRows::from_plan(&table, request.batch_size as usize);
    summary.has_more_absent_ledger_rows = found > request.batch_size as i64;
    summary.absent_ledger_rows = absent.sandbox_ids.len() as i64;

    if summary.matched_live_sandboxes > 0 {
        summary.measured(Phase::InspectCapacityBindings, take_ms(), count(&table, 9));
        summary.measured(Phase::InspectCapacityBindings, take_ms(), count(&table, 10));
        summary.live_leases_to_seed = count(&table, 11);
    }

    if request.dry_run {
        return summary;
    }

    if summary.live_leases_to_seed > 0 {
        let text = |c: usize| table.get::<Vec<Option<String>>>(c).ok().flatten().unwrap_or_default();
        let (seeded, ms) = execute(
            client,
            &ledger.sql(SEED_CAPACITY),
            &[text(12).into(), text(13).into(), text(14).into(), text(15).into(), text(16).into()],
        );
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

/// The absent operations plan.sql returned, oldest first, cut to the batch.
struct AbsentRows {
    sandbox_ids: Vec<Option<String>>,
    run_ids: Vec<Option<String>>,
    attempts: Vec<Option<i32>>,
    environments: Vec<Option<String>>,
    routing_domains: Vec<Option<String>>,
}

impl AbsentRows {
    fn from_plan(table: &SpiTupleTable, batch_size: usize) -> Self {
        let text = |c: usize| {
            let mut values = table.get::<Vec<Option<String>>>(c).ok().flatten().unwrap_or_default();
            values.truncate(batch_size);
            values
        };
        let mut attempts = table.get::<Vec<Option<i32>>>(6).ok().flatten().unwrap_or_default();
        attempts.truncate(batch_size);
        Self { sandbox_ids: text(4), run_ids: text(5), attempts, environments: text(7), routing_domains: text(8) }
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
