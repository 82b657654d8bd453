//! SQL surface of managed environments: validate, lock and read over SPI, ask
//! the pure core (`rules`), write its answer. Every statement is in
//! `sql/managed/` with `@app@` replaced by the validated, quoted app_schema.

use super::input::{self, Desired, ReconcileArgs};
use super::js;
use super::rules::{self, Binding, BindingRehash, BindingWrite, Environment, Plan};
use super::vocabulary;
use crate::args::{schema_name, ArgError, SchemaName};
use crate::pg_types::{JsonbText, Name};
use crate::shell::{check, raise_arg};
use crate::stock::status::StockStatus;
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::{self, SpiHeapTupleData};
use pgrx::{AllocatedByRust, PgSqlErrorCode};

type Row = PgHeapTuple<'static, AllocatedByRust>;

macro_rules! sql {
    ($file:literal) => {
        include_str!(concat!("../../sql/managed/", $file))
    };
}

fn failed(what: &str, e: impl std::fmt::Display) -> ! {
    error!("runtime_sandbox: {what}: {e}")
}

/// The application's schema, validated: a plain identifier that holds the three tables.
struct App {
    schema: SchemaName,
}

impl App {
    fn open(app_schema: Option<Name>) -> App {
        let Some(value) = app_schema else { raise_arg(ArgError::new("app_schema", "must not be null")) };
        let schema = check(schema_name("app_schema", value.as_str()));
        let missing = Spi::get_one_with_args::<String>(sql!("missing_tables.sql"), &[schema.name.as_str().into()])
            .unwrap_or_else(|e| failed("checking app_schema", e));
        if let Some(missing) = missing {
            raise_arg(ArgError::new(
                "app_schema",
                format!("schema {:?} lacks the application's table(s) {missing}", schema.name),
            ));
        }
        App { schema }
    }

    fn sql(&self, template: &str) -> String {
        template.replace("@app@", &self.schema.quoted)
    }

    fn rows<T>(
        &self,
        template: &str,
        args: &[DatumWithOid<'_>],
        read: impl Fn(&SpiHeapTupleData<'_>) -> spi::Result<T>,
    ) -> Vec<T> {
        let query = self.sql(template);
        Spi::connect_mut(|client| {
            let table = client.update(query.as_str(), None, args)?;
            table.map(|row| read(&row)).collect::<spi::Result<Vec<T>>>()
        })
        .unwrap_or_else(|e| failed(&format!("query on app_schema {:?}", self.schema.name), e))
    }

    /// The id the statement returned, if it touched a row.
    fn returning_id(&self, template: &str, args: &[DatumWithOid<'_>]) -> Option<String> {
        self.rows(template, args, |row| row.get::<String>(1)).into_iter().next().flatten()
    }

    fn run(&self, template: &str, args: &[DatumWithOid<'_>]) {
        Spi::run_with_args(&self.sql(template), args)
            .unwrap_or_else(|e| failed(&format!("write to app_schema {:?}", self.schema.name), e));
    }

    fn company_ids(&self, company_id: Option<pgrx::Uuid>) -> Vec<String> {
        match company_id {
            Some(id) => vec![id.to_string()],
            None => self.rows(sql!("companies.sql"), &[], |row| row.get::<String>(1)).into_iter().flatten().collect(),
        }
    }

    fn lock_sandbox_rows(&self) -> Vec<Environment> {
        self.rows(sql!("lock_sandbox_rows.sql"), &[], |row| {
            Ok(Environment {
                id: row.get::<String>(1)?.unwrap_or_default(),
                name: row.get::<String>(2)?.unwrap_or_default(),
                description: row.get::<String>(3)?,
                status: row.get::<String>(4)?.unwrap_or_default(),
                config: json_column(row.get::<String>(5)?),
                metadata: json_column(row.get::<String>(6)?),
            })
        })
    }

    fn bindings(&self, company_ids: &[String], resource_id: Option<&str>) -> Vec<Binding> {
        if company_ids.is_empty() {
            return Vec::new();
        }
        let args: [DatumWithOid; 5] = [
            company_ids.to_vec().into(),
            vocabulary::BUNDLE_KEY.into(),
            vocabulary::RESOURCE_KIND.into(),
            vocabulary::RESOURCE_KEY.into(),
            resource_id.map(str::to_owned).into(),
        ];
        self.rows(sql!("bindings.sql"), &args, |row| {
            Ok(Binding {
                id: row.get::<String>(1)?.unwrap_or_default(),
                company_id: row.get::<String>(2)?.unwrap_or_default(),
                resource_id: row.get::<String>(3)?.unwrap_or_default(),
                stock_version: row.get::<String>(4)?,
                stock_hash: row.get::<String>(5)?.unwrap_or_default(),
                defaults: json_column(row.get::<String>(6)?),
            })
        })
    }

    /// (id, driver) of the row holding `name`.
    fn name_owner(&self, name: &str) -> Option<(String, String)> {
        self.rows(sql!("name_owner.sql"), &[name.into()], |row| {
            Ok((row.get::<String>(1)?.unwrap_or_default(), row.get::<String>(2)?.unwrap_or_default()))
        })
        .into_iter()
        .next()
    }

    fn write_bindings(&self, environment_id: &str, company_ids: &[String], bindings: &[Binding], write: &BindingWrite) {
        let targets = rules::binding_targets(company_ids, bindings, write.replace);
        if targets.is_empty() {
            return;
        }
        let args: [DatumWithOid; 8] = [
            targets.into(),
            vocabulary::BUNDLE_KEY.into(),
            vocabulary::RESOURCE_KIND.into(),
            vocabulary::RESOURCE_KEY.into(),
            environment_id.into(),
            write.stock_version.as_str().into(),
            write.stock_hash.as_str().into(),
            js::to_text(&write.defaults).into(),
        ];
        let template = if write.replace { sql!("upsert_bindings.sql") } else { sql!("insert_missing_bindings.sql") };
        self.run(template, &args);
    }

    fn rehash_bindings(&self, environment_id: &str, rehashed: &[BindingRehash]) {
        if rehashed.is_empty() {
            return;
        }
        let args: [DatumWithOid; 4] = [
            rehashed.iter().map(|r| r.binding_id.clone()).collect::<Vec<_>>().into(),
            environment_id.into(),
            rehashed.iter().map(|r| r.stock_hash.clone()).collect::<Vec<_>>().into(),
            rehashed.iter().map(|r| js::to_text(&r.defaults)).collect::<Vec<_>>().into(),
        ];
        self.run(sql!("rehash_bindings.sql"), &args);
    }
}

/// A jsonb column as the application's `JSON.parse` sees it (SQL NULL → null).
fn json_column(text: Option<String>) -> serde_json::Value {
    text.map_or(serde_json::Value::Null, |t| {
        js::parse(&t).unwrap_or_else(|e| failed("reading a jsonb column", e))
    })
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
                ereport!(
                    PgLogLevel::ERROR,
                    PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
                    format!(
                        "runtime_sandbox: failed to ensure managed sandbox environment: environment {:?} already exists with driver {driver:?}",
                        desired.name
                    )
                );
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
            let Some(winner) = winner else { error!("runtime_sandbox: failed to ensure managed sandbox environment") };
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
                    error!("runtime_sandbox: managed sandbox environment changed during reactivation");
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
                error!("runtime_sandbox: managed sandbox environment changed during reconciliation");
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
    let desired = check(input::desired(ReconcileArgs {
        name,
        provider,
        config: config.map(|j| j.0),
        description,
        extra_metadata: extra_metadata.map(|j| j.0),
        stock_version,
        platform_fully_managed,
    }));
    let app = App::open(app_schema);
    let r = reconcile(&app, &desired, company_id);
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
        r.company_ids.into(),
    ];
    result_row(sql!("reconciliation_row.sql"), &args)
}

fn result_row(query: &str, args: &[DatumWithOid<'_>]) -> Row {
    Spi::get_one_with_args::<Row>(query, args)
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
        None => raise_arg(ArgError::new("provider", "must not be null")),
        Some(p) if p.is_empty() => raise_arg(ArgError::new("provider", "must not be empty")),
        Some(p) => p,
    };
    let app = App::open(app_schema);
    let not_archived = || {
        let args: [DatumWithOid; 5] =
            [None::<String>.into(), false.into(), None::<String>.into(), 0i32.into(), None::<String>.into()];
        result_row(sql!("archive_row.sql"), &args)
    };
    let rows = app.lock_sandbox_rows();
    let Some(row) = rules::archive_target(&rows, &provider) else { return not_archived() };
    let company_ids = app.company_ids(company_id);
    let bindings = app.bindings(&company_ids, Some(&row.id));
    let token = Spi::get_one::<String>("SELECT pg_catalog.gen_random_uuid()::text")
        .unwrap_or_else(|e| failed("gen_random_uuid", e))
        .unwrap_or_default();
    let (metadata, rehashed) = rules::archive(row, &bindings, &token);
    let args: [DatumWithOid; 2] = [row.id.as_str().into(), json_arg(&metadata).into()];
    if app.returning_id(sql!("archive_environment.sql"), &args).is_none() {
        return not_archived();
    }
    app.rehash_bindings(&row.id, &rehashed);
    let args: [DatumWithOid; 5] = [
        row.id.as_str().into(),
        true.into(),
        token.into(),
        (rehashed.len() as i32).into(),
        rules::ARCHIVED_ACTIVITY.into(),
    ];
    result_row(sql!("archive_row.sql"), &args)
}

/// Create the application's environment tables (idempotent).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn install_environment_tables(app_schema: default!(Name, "'public'")) {
    let schema = check(schema_name("app_schema", app_schema.as_str()));
    let exists = Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)",
        &[schema.name.as_str().into()],
    )
    .unwrap_or_else(|e| failed("checking app_schema", e))
    .unwrap_or(false);
    if !exists {
        Spi::run(&format!("CREATE SCHEMA {}", schema.quoted))
            .unwrap_or_else(|e| failed(&format!("creating schema {}", schema.name), e));
    }
    Spi::run(&sql!("install.sql").replace("@app@", &schema.quoted))
        .unwrap_or_else(|e| failed(&format!("install_environment_tables({})", schema.name), e));
}

/// One row per managed-sandbox binding: recorded vs current stock hash.
#[pg_extern(stable, parallel_restricted, requires = ["managed_types", "stock_status", stock_hash])]
#[search_path(pg_catalog, pg_temp)]
fn managed_environment_drift(
    app_schema: default!(Option<Name>, "'public'"),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "runtime_sandbox.managed_environment_drift")> {
    let app = App::open(app_schema);
    let args: [DatumWithOid; 3] = [vocabulary::BUNDLE_KEY.into(), vocabulary::RESOURCE_KIND.into(), vocabulary::RESOURCE_KEY.into()];
    let rows: Vec<Row> = app.rows(sql!("drift.sql"), &args, |row| row.get::<Row>(1)).into_iter().flatten().collect();
    SetOfIterator::new(rows)
}
