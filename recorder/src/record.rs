//! The ledger side: connect (libpq's PG* variables or a connection string),
//! read what the listing must cover before listing, and record a complete
//! listing with `runtime_sandbox.record_inventory_snapshot` in one
//! transaction.

use crate::Failure;
use postgres::{Client, Config, NoTls};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

/// Where and what to record.
#[derive(Debug, Clone)]
pub struct Target {
    /// A connection string or postgres:// URL; None: libpq's PG* variables.
    pub database: Option<String>,
    pub ledger_schema: String,
    pub environment: String,
    pub keep_last: i32,
    pub connect_timeout: Duration,
}

/// The connection settings libpq reads from the environment, for a run
/// without a connection string (`env`: the process's variables).
fn from_environment(env: &dyn Fn(&str) -> Option<String>) -> Result<Config, Failure> {
    let mut config = Config::new();
    let host = env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
    for host in host.split(',') {
        config.host(host);
    }
    if let Some(port) = env("PGPORT") {
        let port: u16 = port.parse().map_err(|_| Failure::usage(format!("PGPORT {port:?} is not a port")))?;
        config.port(port);
    }
    let user = env("PGUSER").or_else(|| env("USER")).ok_or_else(|| Failure::usage("no database user: set PGUSER"))?;
    config.dbname(&env("PGDATABASE").unwrap_or_else(|| user.clone()));
    config.user(&user);
    if let Some(password) = env("PGPASSWORD") {
        config.password(password);
    }
    if let Some(sslmode) = env("PGSSLMODE").filter(|m| m != "disable" && m != "prefer" && m != "allow") {
        return Err(Failure::usage(format!(
            "PGSSLMODE={sslmode}: this program connects without TLS; use the Unix socket or a trusted network"
        )));
    }
    Ok(config)
}

pub fn connect(target: &Target, env: &dyn Fn(&str) -> Option<String>) -> Result<Client, Failure> {
    let mut config = match &target.database {
        Some(conninfo) => Config::from_str(conninfo).map_err(|e| Failure::usage(format!("--database: {e}")))?,
        None => from_environment(env)?,
    };
    if config.get_password().is_none() {
        if let Some(password) = env("PGPASSWORD") {
            config.password(password);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name("runtime-sandbox-recorder");
    }
    config.connect_timeout(target.connect_timeout);
    config.connect(NoTls).map_err(|e| Failure::database(format!("connecting to the database failed: {}", text(&e))))
}

/// PostgreSQL's message, SQLSTATE and hint rather than the driver's "db error".
fn text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(hint) = db.hint() {
                s.push_str(&format!("; hint: {hint}"));
            }
            s
        }
        None => e.to_string(),
    }
}

/// A schema name as the extension takes it (a plain identifier).
pub fn plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
}

/// Before listing: the extension's recording function and the ledger are
/// there, and the routing domains of the ledger's live and deleting Daytona
/// operations of the environment (what the listing must cover).
pub fn ledger_routing_domains(client: &mut Client, target: &Target) -> Result<Vec<Option<String>>, Failure> {
    let fail = |e: postgres::Error| Failure::database(text(&e));
    let row = client
        .query_one(
            "SELECT pg_catalog.to_regprocedure('runtime_sandbox.record_inventory_snapshot(text, jsonb, timestamptz, integer, name, text)') IS NOT NULL,
                    pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.runtime_sandbox_operations') IS NOT NULL",
            &[&target.ledger_schema],
        )
        .map_err(fail)?;
    let (function, ledger): (bool, bool) = (row.get(0), row.get(1));
    if !function {
        return Err(Failure::database(
            "this database has no runtime_sandbox 0.4.0 or later (runtime_sandbox.record_inventory_snapshot with an \
             environment): CREATE EXTENSION runtime_sandbox, or ALTER EXTENSION runtime_sandbox UPDATE",
        ));
    }
    if !ledger {
        return Err(Failure::database(format!(
            "schema {:?} holds no sandbox ledger (no runtime_sandbox_operations table): check --ledger-schema",
            target.ledger_schema
        )));
    }
    let sql = format!(
        "SELECT DISTINCT routing_domain::text FROM \"{}\".runtime_sandbox_operations
         WHERE provider = 'daytona' AND environment = $1 AND state::text IN ('live', 'deleting')",
        target.ledger_schema
    );
    let rows = client.query(&sql, &[&target.environment]).map_err(fail)?;
    Ok(rows.iter().map(|r| r.get::<_, Option<String>>(0)).collect())
}

/// Record the inventory (a JSON array) captured at `captured_at`, in one
/// transaction. Returns the snapshot id.
pub fn record(client: &mut Client, target: &Target, inventory: &str, captured_at: SystemTime) -> Result<i64, Failure> {
    let fail = |e: postgres::Error| Failure::database(format!("recording the snapshot failed, nothing recorded: {}", text(&e)));
    let mut tx = client.transaction().map_err(fail)?;
    let row = tx
        .query_one(
            "SELECT runtime_sandbox.record_inventory_snapshot('daytona', $1::text::jsonb, $2, $3, $4::text::name, $5)",
            &[&inventory, &captured_at, &target.keep_last, &target.ledger_schema, &target.environment],
        )
        .map_err(fail)?;
    let id: i64 = row.get(0);
    tx.commit().map_err(fail)?;
    Ok(id)
}
