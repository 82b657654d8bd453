//! The pgrx shell of managed environments: validate, lock and read over SPI,
//! ask the pure core (`rules`), write its answer. Every statement is in
//! `sql/queries/managed/` with `@app@` replaced by the validated, quoted app_schema.
//! Errors are `crate::error` kinds: 22023 arguments, 42P01 missing tables,
//! 23505 a name held by a non-sandbox row, 40001 a concurrent change (retry).

use self::app::*;
use super::input::{self, Desired, ReconcileArgs};
use super::js;
use super::rules::{self, Binding, BindingRehash, BindingWrite, Environment, Plan};
use super::vocabulary;
use crate::args::{schema_name, SchemaName};
use crate::error::{Error, Kind};
use crate::shell::types::{JsonbText, Name};
use crate::shell::spi::schema_exists;
use crate::shell::{OrRaise, Raise};
use crate::stock::status::StockStatus;
use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::{Datum, DatumWithOid};
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::pg_sys::panic::CaughtError;
use crate::shell::owner;
use pgrx::prelude::*;
use pgrx::spi::{self, SpiHeapTupleData};
use pgrx::{AllocatedByRust, FromDatum, IntoDatum, PgSqlErrorCode, PgTryBuilder};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

type Row = PgHeapTuple<'static, AllocatedByRust>;

macro_rules! sql {
    ($file:literal) => {
        include_str!(concat!("../../../sql/queries/managed/", $file))
    };
}

mod app;

/// A condition the code did not foresee (SQLSTATE XX000).
fn failed(what: &str, e: impl std::fmt::Display) -> ! {
    error!("runtime_sandbox: {what}: {e}")
}

const RETRY_HINT: &str = "Retry the call (it is idempotent); in a REPEATABLE READ or SERIALIZABLE transaction, retry the \
                          transaction, or call it in READ COMMITTED, where it waits for the concurrent change and reads it.";

fn concurrent_change(what: &str, detail: impl Into<String>) -> Error {
    Error::new(Kind::ConcurrentChange, format!("the managed sandbox environment changed concurrently: {what}"))
        .detail(detail)
        .hint(RETRY_HINT)
}

/// REPEATABLE READ and SERIALIZABLE read with the transaction's snapshot, taken
/// before this call waited for its row locks.
fn uses_transaction_snapshot() -> bool {
    // SAFETY: a backend global, read on the backend's own thread.
    unsafe { pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 }
}

/// Run a writer; PostgreSQL's own serialization failures inside it (a row
/// updated or a key inserted since the transaction's snapshot, SSI conflicts)
/// are reported as ours: the same SQLSTATE 40001, with what to do about it.
fn serialized<T>(app: &App, body: impl FnOnce() -> T) -> T {
    PgTryBuilder::new(AssertUnwindSafe(body))
        .catch_when(PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE, |caught| match caught {
            CaughtError::PostgresError(report) => {
                let detail = match report.detail() {
                    Some(more) => format!("{} ({more}) in app_schema {:?}", report.message(), app.schema.name),
                    None => format!("{} in app_schema {:?}", report.message(), app.schema.name),
                };
                concurrent_change("a row it locks or a binding it writes was committed after its snapshot", detail)
                    .raise()
            }
            ours => ours.rethrow(),
        })
        .execute()
}

fn json_arg(value: &serde_json::Value) -> Option<String> {
    (!value.is_null()).then(|| js::to_text(value))
}

struct Reconciled {
    environment_id: String,
    action: &'static str,
    stock_status: StockStatus,
    update_available: bool,
    stock_hash: String,
    provider_reactivated: bool,
    tracking_initialized: bool,
    company_ids: Vec<String>,
}

fn reconcile(app: &App, desired: &Desired, company_id: Option<pgrx::Uuid>) -> Reconciled {
    let company_ids = app.company_ids(company_id);
    // Lock before reading the bindings: a pass that waited here reads the
    // bindings the winning pass committed.
    let rows = app.lock_sandbox_rows();
    app.require_current_snapshot(&company_ids, Some(&desired.name));
    let mut bindings = app.bindings(&company_ids, None);
    let mut keys = rules::metadata_keys(&desired.metadata, &bindings);
    let done = |environment_id: String, action, stock_status, stock_hash, bindings: &[Binding], reactivated| Reconciled {
        environment_id,
        action,
        stock_status,
        update_available: action == "skipped",
        stock_hash,
        provider_reactivated: reactivated,
        tracking_initialized: bindings.len() < company_ids.len(),
        company_ids: company_ids.clone(),
    };

    let row = match rules::pick_row(&rows, &desired.name) {
        Some(row) => row.clone(),
        None => {
            if let Some((_, driver)) = app.name_owner(&desired.name).filter(|(_, d)| d != "sandbox") {
                Error::new(
                    Kind::Conflict,
                    format!(
                        "failed to ensure managed sandbox environment: environment {:?} already exists with driver {driver:?}",
                        desired.name
                    ),
                )
                .detail(format!(
                    "There is no managed sandbox environment in app_schema {:?}, and its name is held by a {driver:?} environment.",
                    app.schema.name
                ))
                .hint("Rename or remove that environment, or reconcile the managed one under another name.")
                .raise();
            }
            let insertion = rules::insertion(desired, &keys);
            let args: [DatumWithOid; 4] = [
                desired.name.as_str().into(),
                desired.description.clone().into(),
                js::to_text(&serde_json::Value::Object(desired.config.clone())).into(),
                json_arg(&insertion.metadata).into(),
            ];
            if let Some(id) = app.returning_id(sql!("insert_environment.sql"), &args) {
                app.write_bindings(&id, &company_ids, &bindings, &insertion.bindings);
                let hash = insertion.bindings.stock_hash.clone();
                return done(id, "added", StockStatus::Missing, hash, &bindings, false);
            }
            // A concurrent pass inserted first: take its row under lock, and
            // (unlike the seed) re-read the bindings it committed.
            let winner = app.lock_sandbox_rows().into_iter().find(Environment::is_managed);
            let Some(winner) = winner else {
                concurrent_change(
                    "another row took its name",
                    format!(
                        "A concurrent transaction inserted an environment named {:?} that is not the managed sandbox \
                         environment, while this call was inserting it.",
                        desired.name
                    ),
                )
                .raise()
            };
            bindings = app.bindings(&company_ids, None);
            keys = rules::metadata_keys(&desired.metadata, &bindings);
            winner
        }
    };

    let name_owner = app.name_owner(&desired.name).map(|(id, _)| id);
    let decision = rules::decide(&row, name_owner.as_deref(), desired, &bindings, &keys);
    let mut reactivated = false;
    match &decision.plan {
        Plan::Skip { reactivation, bindings: write } => {
            if let Some(reactivation) = reactivation {
                let args: [DatumWithOid; 2] = [row.id.as_str().into(), json_arg(&reactivation.metadata).into()];
                if app.returning_id(sql!("reactivate_environment.sql"), &args).is_none() {
                    concurrent_change("its row is no longer archived", format!("environment {} was locked", row.id))
                        .raise();
                }
                app.rehash_bindings(&row.id, &reactivation.bindings);
                reactivated = true;
            }
            app.write_bindings(&row.id, &company_ids, &bindings, write);
        }
        Plan::Unchanged { bindings: write } => app.write_bindings(&row.id, &company_ids, &bindings, write),
        Plan::Update { environment, bindings: write } => {
            let args: [DatumWithOid; 5] = [
                row.id.as_str().into(),
                environment.name.as_str().into(),
                environment.description.clone().into(),
                js::to_text(&environment.config).into(),
                json_arg(&environment.metadata).into(),
            ];
            if app.returning_id(sql!("update_environment.sql"), &args).is_none() {
                concurrent_change("its row is gone", format!("environment {} was locked", row.id)).raise();
            }
            app.write_bindings(&row.id, &company_ids, &bindings, write);
        }
    }
    done(row.id.clone(), decision.action(), decision.stock_status, decision.latest_hash.clone(), &bindings, reactivated)
}

/// Keep the platform-managed sandbox environment at stock without
/// overwriting operator edits (the application's ensureManagedSandboxEnvironment).
#[pg_extern(volatile, parallel_unsafe, requires = ["managed_types"])]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::too_many_arguments)]
fn reconcile_managed_environment(
    name: Option<String>,
    provider: Option<String>,
    config: default!(Option<JsonbText>, "'{}'"),
    description: default!(Option<String>, "NULL"),
    extra_metadata: default!(Option<JsonbText>, "'{}'"),
    company_id: default!(Option<pgrx::Uuid>, "NULL"),
    stock_version: default!(Option<String>, "NULL"),
    platform_fully_managed: default!(Option<bool>, "false"),
    app_schema: default!(Option<Name>, "'public'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.managed_environment_reconciliation") {
    let desired = input::desired(ReconcileArgs {
        name,
        provider,
        config: config.map(|j| j.0),
        description,
        extra_metadata: extra_metadata.map(|j| j.0),
        stock_version,
        platform_fully_managed,
    })
    .or_raise();
    let app = App::open(app_schema, "reconcile_managed_environment");
    crate::shell::standby::refuse_writes("reconcile_managed_environment");
    let r = app.as_owner(|| serialized(&app, || reconcile(&app, &desired, company_id)));
    let activity = rules::activity_action(r.action, r.tracking_initialized);
    let args: [DatumWithOid; 9] = [
        r.environment_id.into(),
        r.action.into(),
        r.stock_status.as_str().into(),
        r.update_available.into(),
        r.stock_hash.into(),
        r.provider_reactivated.into(),
        r.tracking_initialized.into(),
        activity.into(),
        uuids(&r.company_ids).into(),
    ];
    result_row(sql!("reconciliation_row.sql"), &args)
}

fn result_row(query: &str, args: &[DatumWithOid<'_>]) -> Row {
    crate::shell::spi::get_one_with_args::<Row>(query, args)
        .unwrap_or_else(|e| failed("building the result row", e))
        .unwrap_or_else(|| error!("runtime_sandbox: result row is NULL"))
}

/// Archive the managed row on provider outage (the application's archiveManagedSandboxEnvironment).
#[pg_extern(volatile, parallel_unsafe, requires = ["managed_types"])]
#[search_path(pg_catalog, pg_temp)]
fn archive_managed_environment(
    provider: Option<String>,
    company_id: default!(Option<pgrx::Uuid>, "NULL"),
    app_schema: default!(Option<Name>, "'public'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.managed_environment_archive") {
    let provider = match provider {
        None => Error::argument("provider", "must not be null").raise(),
        Some(p) if p.is_empty() => Error::argument("provider", "must not be empty").raise(),
        Some(p) => p,
    };
    let app = App::open(app_schema, "archive_managed_environment");
    crate::shell::standby::refuse_writes("archive_managed_environment");
    let not_archived = || {
        let args: [DatumWithOid; 5] =
            [None::<String>.into(), false.into(), None::<String>.into(), 0i32.into(), None::<String>.into()];
        result_row(sql!("archive_row.sql"), &args)
    };
    let archived = app.as_owner(|| serialized(&app, || {
        let rows = app.lock_sandbox_rows();
        let company_ids = app.company_ids(company_id);
        app.require_current_snapshot(&company_ids, None);
        let row = rules::archive_target(&rows, &provider)?;
        let bindings = app.bindings(&company_ids, Some(&row.id));
        let token = crate::shell::spi::get_one_with_args::<String>(sql!("archive_token.sql"), &[])
            .unwrap_or_else(|e| failed("gen_random_uuid", e))
            .unwrap_or_default();
        let (metadata, rehashed) = rules::archive(row, &bindings, &token);
        let args: [DatumWithOid; 2] = [row.id.as_str().into(), json_arg(&metadata).into()];
        app.returning_id(sql!("archive_environment.sql"), &args)?;
        app.rehash_bindings(&row.id, &rehashed);
        Some((row.id.clone(), token, rehashed.len() as i32))
    }));
    let Some((environment_id, token, bindings_updated)) = archived else { return not_archived() };
    let args: [DatumWithOid; 5] = [
        environment_id.into(),
        true.into(),
        token.into(),
        bindings_updated.into(),
        rules::ARCHIVED_ACTIVITY.into(),
    ];
    result_row(sql!("archive_row.sql"), &args)
}

/// Create the application's environment tables (idempotent).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn install_environment_tables(app_schema: default!(Name, "'public'")) {
    let schema = schema_name("app_schema", app_schema.as_str()).or_raise();
    crate::shell::standby::refuse_writes("install_environment_tables");
    if !schema_exists(&schema.name) {
        Spi::run(&include_str!("../../../sql/ddl/app_schema.sql").replace("@app@", &schema.quoted))
            .unwrap_or_else(|e| failed(&format!("creating schema {}", schema.name), e));
    }
    Spi::run(&include_str!("../../../sql/ddl/environment_tables.sql").replace("@app@", &schema.quoted))
        .unwrap_or_else(|e| failed(&format!("install_environment_tables({})", schema.name), e));
}

/// One row per managed-sandbox binding: recorded vs current stock hash, with
/// the reconciler's own key set, stock object and status rules (`rules::drift`).
#[pg_extern(stable, parallel_restricted, requires = ["managed_types"])]
#[search_path(pg_catalog, pg_temp)]
fn managed_environment_drift(app_schema: default!(Option<Name>, "'public'")) -> SetOfIterator<'static, DriftRow> {
    let app = App::open(app_schema, "managed_environment_drift");
    let (bindings, newest, environments) = app.as_owner(|| drift_inputs(&app));
    let report = rules::drift(&bindings, &newest, &environments);
    let args: [DatumWithOid; 5] = [
        uuids(report.iter().map(|d| &d.company_id)).into(),
        uuids(report.iter().map(|d| &d.environment_id)).into(),
        report.iter().map(|d| d.binding_stock_hash.clone()).collect::<Vec<_>>().into(),
        report.iter().map(|d| d.current_hash.clone()).collect::<Vec<Option<String>>>().into(),
        report.iter().map(|d| d.stock_status.as_str().to_owned()).collect::<Vec<_>>().into(),
    ];
    let rows: Vec<DriftRow> =
        app.rows(sql!("drift_rows.sql"), &args, |row| row.get::<DriftRow>(1)).into_iter().flatten().collect();
    SetOfIterator::new(rows)
}

/// What the drift report is made of, read from the application's tables.
fn drift_inputs(app: &App) -> (Vec<Binding>, Vec<bool>, Vec<Environment>) {
    let slot: [DatumWithOid; 3] =
        [vocabulary::BUNDLE_KEY.into(), vocabulary::RESOURCE_KIND.into(), vocabulary::RESOURCE_KEY.into()];
    let mut seen = HashMap::new();
    let mut rows =
        app.rows(sql!("drift_bindings.sql"), &slot, |row| Ok((timestamp(row, 7)?, app.binding(row, &mut seen)?)));
    // The report's order: company, then binding id (uuid text sorts as the uuid).
    rows.sort_unstable_by(|(_, a), (_, b)| a.company_id.cmp(&b.company_id).then_with(|| a.id.cmp(&b.id)));
    // Each environment's newest binding (updated_at DESC with NULLs first, as
    // ORDER BY puts them, then id DESC): its stock hash is "latest" for all of them.
    let mut newest_of: HashMap<&str, usize> = HashMap::new();
    let newer = |(a_at, a): &(Option<i64>, Binding), (b_at, b): &(Option<i64>, Binding)| {
        (a_at.is_none(), *a_at, &a.id) > (b_at.is_none(), *b_at, &b.id)
    };
    for (i, row) in rows.iter().enumerate() {
        let slot = newest_of.entry(row.1.resource_id.as_str()).or_insert(i);
        if newer(row, &rows[*slot]) {
            *slot = i;
        }
    }
    let mut newest = vec![false; rows.len()];
    newest_of.values().for_each(|&i| newest[i] = true);
    let bindings: Vec<Binding> = rows.into_iter().map(|(_, binding)| binding).collect();
    let mut ids: Vec<String> = bindings.iter().map(|b| b.resource_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    let environments = app.rows(sql!("environments.sql"), &[ids.into()], |row| app.environment(row));
    (bindings, newest, environments)
}

/// Ids read as `uuid::text`, handed back as uuids: an array of thousands of
/// ids in text was parsed again (`uuid_in`) while each query was planned.
fn uuids<'a>(ids: impl IntoIterator<Item = &'a String>) -> Vec<pgrx::Uuid> {
    ids.into_iter().map(|id| uuid(id)).collect()
}

fn uuid(text: &str) -> pgrx::Uuid {
    let mut bytes = [0u8; 16];
    let mut digits = text.bytes().filter(|&b| b != b'-').map(|b| (b as char).to_digit(16));
    for byte in &mut bytes {
        match (digits.next().flatten(), digits.next().flatten()) {
            (Some(high), Some(low)) => *byte = (high << 4 | low) as u8,
            _ => failed("reading an id", format!("{text:?} is not a uuid")),
        }
    }
    if digits.next().is_some() {
        failed("reading an id", format!("{text:?} is not a uuid"));
    }
    pgrx::Uuid::from_bytes(bytes)
}

/// A timestamptz column as PostgreSQL's microseconds (ordered as the values,
/// infinities included).
fn timestamp(row: &SpiHeapTupleData<'_>, ordinal: usize) -> spi::Result<Option<i64>> {
    Ok(row.get::<TimestampWithTimeZone>(ordinal)?.map(TimestampWithTimeZone::into_inner))
}

/// A `runtime_sandbox.managed_environment_drift` row: the composite datum the
/// query built, copied out of SPI's memory. Not a `PgHeapTuple`: each of those
/// pins the row type's descriptor until it is returned, and the resource owner
/// slows down quadratically with thousands of pins of one descriptor (drift of
/// 10,000 bindings spent most of its time there).
struct DriftRow(pg_sys::Datum);

impl FromDatum for DriftRow {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        // SAFETY: a non-null composite datum from the query; copied (a varlena)
        // into the current memory context, which pgrx's SPI `get` sets to the
        // one the result must live in.
        (!is_null).then(|| DriftRow(pg_sys::Datum::from(unsafe { pg_sys::pg_detoast_datum_copy(datum.cast_mut_ptr()) })))
    }
}

impl IntoDatum for DriftRow {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(self.0)
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::RECORDOID
    }

    /// Read only from drift_rows.sql, whose one column is this row type.
    fn is_compatible_with(_: pg_sys::Oid) -> bool {
        true
    }
}

unsafe impl BoxRet for DriftRow {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // SAFETY: the live call's fcinfo; the datum is a row of the declared result type.
        unsafe { fcinfo.return_raw_datum(self.0) }
    }
}

unsafe impl SqlTranslatable for DriftRow {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(DriftRow);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Err(ArgumentError::NotValidAsArgument("DriftRow"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("runtime_sandbox.managed_environment_drift")));
}
