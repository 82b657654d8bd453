//! SQL surface of reconcile_daytona: validate, then run the phase statements
//! in `sql/queries/reconcile/` in the application's order, inside the caller's one
//! transaction, and build the result row. `reconcile_daytona_latest`
//! (src/operations) runs the same phases against a recorded snapshot. The phases
//! are in phases.rs, the reads of the capacity leases and deleted cleanups in
//! capacity.rs, what an apply leaves behind in report.rs.

mod capacity;
mod phases;
mod report;

pub(crate) use capacity::cut;
pub(crate) use phases::run;
pub(crate) use report::{alert, record_run, result_row};

use crate::args::{self, Environment, SchemaName};
use crate::ledger::EnvironmentColumn;
use crate::reconcile::inventory::{parse_inventory_jsonb, InventoryItem};
use crate::reconcile::summary::{self, Status, Summary, PROVIDER};
use crate::shell::spi::ReadValue;
use crate::shell::statement::{execute, jit, now, Ledger};
use crate::shell::types::{JsonbBytes, Name};
use crate::shell::{check, existing_schema, Raise};
use pgrx::datum::{DatumWithOid, Interval, TimestampWithTimeZone};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::AllocatedByRust;

const ENVIRONMENT_LABEL: &str = include_str!("../../../sql/queries/reconcile/environment_label.sql");
const OVERLAP_GUARD: &str = include_str!("../../../sql/queries/reconcile/overlap_guard.sql");

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
    /// The ledger has the application's attempts table (a dry run does not
    /// require it; without it there is nothing an apply could recover).
    pub attempts: bool,
}

impl Options {
    pub fn ledger(&self) -> Ledger<'_> {
        let environment_eq = match &self.environment_column {
            EnvironmentColumn::Citext { operator, .. } => operator.as_str(),
            EnvironmentColumn::Text | EnvironmentColumn::Enum { .. } => "=",
        };
        Ledger { quoted: &self.ledger.quoted, environment_eq }
    }

    /// Fit the run to the ledger's shape (after the gate): compare
    /// `environment` as the operations' column needs, and note whether the
    /// application's attempts table is there. On an enum column, an
    /// environment that is not one of its values is an argument error (the
    /// application's literal would fail to convert).
    pub fn fit_ledger(&mut self, access: &crate::ledger::Access) {
        self.attempts = access.has_column("attempts", "run_id") && access.has_column("attempts", "attempt");
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
    Options { dry_run, batch_size, minimum_age, max_absent_ratio, ledger, environment, environment_column: EnvironmentColumn::Text, environment_label: pg_sys::InvalidOid, attempts: true }
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
    options.fit_ledger(&access);
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

/// A read of the rows a partial index holds (the current operations, the
/// open leases) goes through a bitmap of that index: never a scan of the
/// whole table, history included, which statistics make look cheaper.
pub(super) const THROUGH_PARTIAL_INDEX: &[(&str, &str)] = &[("enable_seqscan", "off"), ("enable_indexscan", "off")];

/// A statement that writes a known few rows of a large table finds each by
/// its key: never by hashing the whole table (which a table's low cost per
/// page can make look cheaper than the probes).
pub(super) const BY_KEY: &[(&str, &str)] =
    &[("enable_seqscan", "off"), ("enable_hashjoin", "off"), ("enable_mergejoin", "off")];

/// The released-lease probes are plain index probes, not a bitmap each.
pub(super) const PLAIN_PROBES: &[(&str, &str)] = &[("enable_bitmapscan", "off")];

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
