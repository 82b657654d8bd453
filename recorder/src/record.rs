//! The ledger side: connect (libpq's PG* variables or a connection string),
//! read what the listing must cover before listing, and record a complete
//! listing in one transaction: streamed by COPY and published
//! (`runtime_sandbox.publish_inventory_snapshot`) where the ledger and the
//! role allow it, else as one JSON value (`record_inventory_snapshot`).

use crate::failure::Failure;
use crate::listing::Item;
use crate::conninfo::{self, SslMode, TlsParams};
use crate::tls::{self, Verify};
use crate::vars::set;
use postgres::config::{Host, SslMode as PgSslMode};
use tokio_postgres_rustls::MakeRustlsConnect;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
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

/// libpq variables this program cannot honour: named, never silently dropped.
const UNSUPPORTED: &[&str] = &[
    "PGHOSTADDR",
    "PGSSLCRL",
    "PGSSLCRLDIR",
    "PGSSLPASSWORD",
    "PGREQUIRESSL",
    "PGSSLNEGOTIATION",
    "PGGSSENCMODE",
    "PGKRBSRVNAME",
    "PGGSSLIB",
    "PGREQUIREAUTH",
];

/// The connection parameters libpq takes from the environment, as
/// `key=value` pairs (the defaults of what a connection string and its
/// service leave out): PGHOST and PGPORT (lists, for several hosts), PGUSER
/// (else USER), PGDATABASE, PGAPPNAME, PGCONNECT_TIMEOUT, PGOPTIONS,
/// PGTARGETSESSIONATTRS, PGCHANNELBINDING, PGLOADBALANCEHOSTS. (PGPASSWORD and
/// the TLS ones are read where they are used.)
pub fn environment_pairs(env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, Failure> {
    let set = |name: &str| set(env, name);
    if let Some(name) = UNSUPPORTED.iter().find(|name| set(name).is_some()) {
        return Err(Failure::usage(format!(
            "{name} is set, which this program does not support: pass the settings in --database instead, or unset it"
        )));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut pair = |key: &str, value: String| pairs.push((key.to_string(), value));
    let host = set("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
    let hosts = host.split(',').count();
    pair("host", host);
    if let Some(ports) = set("PGPORT") {
        let list: Vec<&str> = ports.split(',').collect();
        if list.len() != 1 && list.len() != hosts {
            return Err(Failure::usage(format!("PGPORT {ports:?}: {} ports for {hosts} hosts (one port, or one per host)", list.len())));
        }
        if let Some(bad) = list.iter().find(|p| p.trim().parse::<u16>().is_err()) {
            return Err(Failure::usage(format!("PGPORT: {bad:?} is not a port")));
        }
        pair("port", ports);
    }
    if let Some(user) = set("PGUSER").or_else(|| set("USER")) {
        pair("user", user);
    }
    if let Some(dbname) = set("PGDATABASE") {
        pair("dbname", dbname);
    }
    if let Some(name) = set("PGAPPNAME") {
        pair("application_name", name);
    }
    if let Some(seconds) = set("PGCONNECT_TIMEOUT") {
        // libpq: whole seconds; 0 or less waits forever, and under 2 counts as 2.
        let n: i64 = seconds
            .trim()
            .parse()
            .map_err(|_| Failure::usage(format!("PGCONNECT_TIMEOUT {seconds:?}: not a number of seconds")))?;
        if n > 0 {
            pair("connect_timeout", n.max(2).to_string());
        }
    }
    if let Some(options) = set("PGOPTIONS") {
        pair("options", options);
    }
    for (name, key, allowed) in [
        ("PGTARGETSESSIONATTRS", "target_session_attrs", &["any", "read-write"][..]),
        ("PGCHANNELBINDING", "channel_binding", &["disable", "prefer", "require"][..]),
        ("PGLOADBALANCEHOSTS", "load_balance_hosts", &["disable", "random"][..]),
    ] {
        if let Some(value) = set(name) {
            if !allowed.contains(&value.as_str()) {
                return Err(Failure::usage(format!("{name}={value}: this program supports {}", allowed.join(", "))));
            }
            pair(key, value);
        }
    }
    Ok(pairs)
}

/// The parameters of a connection service (libpq's pg_service.conf): the
/// user's file (PGSERVICEFILE, else ~/.pg_service.conf) first, then the
/// system's (PGSYSCONFDIR/pg_service.conf, else Debian's
/// /etc/postgresql-common/pg_service.conf).
fn service_parameters(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, Failure> {
    let set = |name: &str| set(env, name);
    let user = set("PGSERVICEFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| set("HOME").map(|home| std::path::Path::new(&home).join(".pg_service.conf")));
    let system = std::path::Path::new(&set("PGSYSCONFDIR").unwrap_or_else(|| "/etc/postgresql-common".into())).join("pg_service.conf");
    let files: Vec<std::path::PathBuf> = user.into_iter().chain([system]).collect();
    for file in &files {
        if let Ok(contents) = std::fs::read_to_string(file) {
            if let Some(parameters) = conninfo::service(&contents, name) {
                return Ok(parameters);
            }
        }
    }
    Err(Failure::usage(format!(
        "service {name:?} is not defined in {}",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" nor in ")
    )))
}

/// The password libpq's password file holds for the connection's first host
/// (PGPASSFILE, else ~/.pgpass; a file others may read is ignored, as libpq
/// ignores it).
fn password_file(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let path = set(env, "PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| set(env, "HOME").map(|home| std::path::Path::new(&home).join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if !crate::pgpass::mode_allowed(std::fs::metadata(&path).ok()?.permissions().mode()) {
            return None;
        }
    }
    let contents = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => String::new(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user()?;
    let database = config.get_dbname().unwrap_or(user);
    crate::pgpass::lookup(&contents, &host, port, database, user)
}

/// The configuration a run connects with, by libpq's precedence: --database's
/// own parameters, then those of its service (`service=`, else PGSERVICE),
/// then libpq's variables (a URI takes no service); the password from
/// PGPASSWORD or the password file when none is given; PGAPPNAME or the
/// program's name; and its TLS.
pub fn configuration(target: &Target, env: &dyn Fn(&str) -> Option<String>) -> Result<(Config, Tls), Failure> {
    let usage = |e: String| Failure::usage(format!("--database: {e}"));
    let (mut config, params) = match target.database.as_deref() {
        Some(uri) if conninfo::is_uri(uri) => {
            let (rest, params) = conninfo::take_tls(uri).map_err(usage)?;
            (Config::from_str(&rest).map_err(|e| usage(e.to_string()))?, params)
        }
        conninfo => {
            let own = conninfo.map(conninfo::parse_pairs).transpose().map_err(usage)?.unwrap_or_default();
            let service = own.iter().find(|(k, _)| k == "service").map(|(_, v)| v.clone()).or_else(|| set(env, "PGSERVICE"));
            let mut pairs: Vec<(String, String)> = own.into_iter().filter(|(k, _)| k != "service").collect();
            if let Some(name) = service {
                pairs = conninfo::with_defaults(pairs, &service_parameters(&name, env)?);
            }
            pairs = conninfo::with_defaults(pairs, &environment_pairs(env)?);
            // libpq: the database defaults to the user's name.
            if !pairs.iter().any(|(k, _)| k == "dbname") {
                if let Some((_, user)) = pairs.iter().find(|(k, _)| k == "user").cloned() {
                    pairs.push(("dbname".into(), user));
                }
            }
            if !pairs.iter().any(|(k, _)| k == "user") {
                return Err(Failure::usage("no database user: set PGUSER (or user= in --database or the service)"));
            }
            let (rest, params) = conninfo::take_tls(&conninfo::render(&pairs)).map_err(usage)?;
            (Config::from_str(&rest).map_err(|e| usage(e.to_string()))?, params)
        }
    };
    if config.get_password().is_none() {
        if let Some(password) = set(env, "PGPASSWORD").or_else(|| password_file(&config, env)) {
            config.password(password);
        }
    }
    if config.get_application_name().is_none() {
        let name = set(env, "PGAPPNAME").unwrap_or_else(|| "runtime-sandbox-recorder".into());
        config.application_name(&name);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(target.connect_timeout);
    }
    let tls = tls_settings(&config, params, env)?;
    Ok((config, tls))
}

/// How a run uses TLS: libpq's sslmode, and the rustls configuration for it
/// (None with `disable`).
pub struct Tls {
    pub mode: SslMode,
    pub config: Option<rustls::ClientConfig>,
}

/// libpq's TLS settings: the connection's parameters, else PGSSLMODE,
/// PGSSLROOTCERT, PGSSLCERT, PGSSLKEY, else the defaults (`prefer`;
/// ~/.postgresql/root.crt, postgresql.crt and postgresql.key when they
/// exist). `require` with a root certificate verifies the chain, as libpq's
/// does; `verify-ca` and `verify-full` need one (`system`: the bundled roots).
/// A Unix socket never uses TLS, as in libpq.
fn tls_settings(config: &Config, params: TlsParams, env: &dyn Fn(&str) -> Option<String>) -> Result<Tls, Failure> {
    let value = |param: Option<String>, name: &str| param.filter(|v| !v.is_empty()).or_else(|| set(env, name));
    let sslmode = value(params.sslmode, "PGSSLMODE").unwrap_or_else(|| "prefer".into());
    let mut mode = SslMode::parse(&sslmode).map_err(Failure::usage)?;
    #[cfg(unix)]
    if !config.get_hosts().is_empty() && config.get_hosts().iter().all(|h| matches!(h, Host::Unix(_))) {
        mode = SslMode::Disable;
    }
    if mode == SslMode::Disable {
        return Ok(Tls { mode, config: None });
    }
    let dot = set(env, "HOME").map(|home| std::path::Path::new(&home).join(".postgresql"));
    let default = |name: &str| dot.as_ref().map(|d| d.join(name)).filter(|p| p.exists());
    let rootcert = value(params.sslrootcert, "PGSSLROOTCERT");
    let verifying = matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull);
    let roots = match rootcert.as_deref() {
        Some("system") => Some(tls::bundled_roots()),
        Some(path) if verifying || std::path::Path::new(path).exists() => {
            Some(tls::roots(path.as_ref()).map_err(|e| Failure::usage(format!("sslrootcert: {e}")))?)
        }
        Some(_) => None,
        None => match default("root.crt") {
            Some(path) => Some(tls::roots(&path).map_err(|e| Failure::usage(format!("sslrootcert: {e}")))?),
            None => None,
        },
    };
    let verify = match (mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => Verify::Full(roots),
        (SslMode::VerifyCa, Some(roots)) => Verify::Chain(roots),
        (SslMode::VerifyFull | SslMode::VerifyCa, None) => {
            return Err(Failure::usage(format!(
                "sslmode={sslmode} needs a root certificate: sslrootcert (PGSSLROOTCERT), or ~/.postgresql/root.crt"
            )))
        }
        (_, Some(roots)) => Verify::Chain(roots),
        (_, None) => Verify::Nothing,
    };
    let cert = value(params.sslcert, "PGSSLCERT");
    let key = value(params.sslkey, "PGSSLKEY");
    let identity = match (cert.map(std::path::PathBuf::from).or_else(|| default("postgresql.crt")), key.map(std::path::PathBuf::from).or_else(|| default("postgresql.key"))) {
        (Some(cert), Some(key)) => Some(tls::client_identity(&cert, &key).map_err(|e| Failure::usage(format!("sslcert/sslkey: {e}")))?),
        (Some(cert), None) => return Err(Failure::usage(format!("sslcert {}: no sslkey (PGSSLKEY) for it", cert.display()))),
        _ => None,
    };
    let config = tls::client_config(verify, identity).map_err(|e| Failure::usage(format!("TLS: {e}")))?;
    Ok(Tls { mode, config: Some(config) })
}

/// The first host and port, for messages.
fn first_host(config: &Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) => format!("{host}:{port}"),
        #[cfg(unix)]
        Some(Host::Unix(path)) => format!("{} (port {port})", path.display()),
        None => format!("localhost:{port}"),
    }
}

pub fn connect(target: &Target, env: &dyn Fn(&str) -> Option<String>) -> Result<Client, Failure> {
    let (mut config, tls) = configuration(target, env)?;
    let host = first_host(&config);
    let fail = |e: postgres::Error| {
        let why = match (e.as_db_error(), tls::find(&e)) {
            (Some(_), _) => text(&e),
            (None, Some(cause)) => tls::cause(cause),
            (None, None) => e.to_string(),
        };
        Failure::database(format!("connecting to the database at {host} failed: {why}"))
    };
    let make = |config: Option<rustls::ClientConfig>| MakeRustlsConnect::new(config.expect("a TLS mode has a configuration"));
    match tls.mode {
        SslMode::Disable => config.ssl_mode(PgSslMode::Disable).connect(NoTls).map_err(fail),
        // libpq's allow: without TLS first, with it when the server refuses that.
        SslMode::Allow => match config.ssl_mode(PgSslMode::Disable).connect(NoTls) {
            Ok(client) => Ok(client),
            Err(_) => config.ssl_mode(PgSslMode::Require).connect(make(tls.config)).map_err(fail),
        },
        SslMode::Prefer => config.ssl_mode(PgSslMode::Prefer).connect(make(tls.config)).map_err(fail),
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            config.ssl_mode(PgSslMode::Require).connect(make(tls.config)).map_err(fail)
        }
    }
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

/// What the ledger says before listing: what the listing must cover and how to record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// The routing domains of the ledger's live and deleting Daytona operations of the environment.
    pub routing_domains: Vec<Option<String>>,
    /// The ledger has provider_inventory_stream and the role may publish: record by COPY.
    pub stream: bool,
}

/// Before listing: the extension's recording function and the ledger are
/// there, the routing domains of the ledger's live and deleting Daytona
/// operations of the environment (what the listing must cover), and whether
/// the listing can be streamed (0.4.0's stream table, installed by
/// install_ledger, and EXECUTE on publish_inventory_snapshot; a role granted
/// only record_inventory_snapshot records as before).
pub fn ledger(client: &mut Client, target: &Target) -> Result<Ledger, Failure> {
    let fail = |e: postgres::Error| Failure::database(text(&e));
    let row = client
        .query_one(
            "SELECT pg_catalog.to_regprocedure('runtime_sandbox.record_inventory_snapshot(text, jsonb, timestamptz, integer, name, text)') IS NOT NULL,
                    pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.runtime_sandbox_operations') IS NOT NULL,
                    pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.provider_inventory_stream') IS NOT NULL
                    AND coalesce(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure(
                        'runtime_sandbox.publish_inventory_snapshot(text, integer, timestamptz, integer, name, text)')::oid,
                        'EXECUTE'), false)",
            &[&target.ledger_schema],
        )
        .map_err(fail)?;
    let (function, ledger, stream): (bool, bool, bool) = (row.get(0), row.get(1), row.get(2));
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
    Ok(Ledger { routing_domains: rows.iter().map(|r| r.get::<_, Option<String>>(0)).collect(), stream })
}

/// Record the listing captured at `captured_at`, in one transaction:
/// streamed (`stream`: COPY into the ledger's provider_inventory_stream, then
/// publish_inventory_snapshot with the count), else as one JSON array
/// (record_inventory_snapshot). Returns the snapshot id.
pub fn record(client: &mut Client, target: &Target, items: &[Item], stream: bool, captured_at: SystemTime) -> Result<i64, Failure> {
    let fail = |e: postgres::Error| Failure::database(format!("recording the snapshot failed, nothing recorded: {}", text(&e)));
    let mut tx = client.transaction().map_err(fail)?;
    let row = if stream {
        let count = i32::try_from(items.len())
            .map_err(|_| Failure::database(format!("{} sandboxes are more than a snapshot holds", items.len())))?;
        let copy = format!(
            "COPY \"{}\".provider_inventory_stream (sandbox_id, routing_domain, operation_key) FROM STDIN (FORMAT binary)",
            target.ledger_schema
        );
        let sink = tx.copy_in(&copy).map_err(fail)?;
        let mut writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::TEXT, Type::TEXT]);
        for item in items {
            writer.write(&[&item.sandbox_id, &item.routing_domain, &item.operation_key]).map_err(fail)?;
        }
        writer.finish().map_err(fail)?;
        tx.query_one(
            "SELECT runtime_sandbox.publish_inventory_snapshot('daytona', $1, $2, $3, $4::text::name, $5)",
            &[&count, &captured_at, &target.keep_last, &target.ledger_schema, &target.environment],
        )
        .map_err(fail)?
    } else {
        let inventory = serde_json::to_string(items).expect("the inventory serializes");
        tx.query_one(
            "SELECT runtime_sandbox.record_inventory_snapshot('daytona', $1::text::jsonb, $2, $3, $4::text::name, $5)",
            &[&inventory, &captured_at, &target.keep_last, &target.ledger_schema, &target.environment],
        )
        .map_err(fail)?
    };
    let id: i64 = row.get(0);
    tx.commit().map_err(fail)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(database: Option<&str>) -> Target {
        Target {
            database: database.map(String::from),
            ledger_schema: "runtime_scheduler".into(),
            environment: "production".into(),
            keep_last: 20,
            connect_timeout: Duration::from_secs(30),
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn libpqs_variables_configure_the_connection() {
        let env = vars(&[
            ("PGHOST", "db1.example,db2.example"),
            ("PGPORT", "5432,5433"),
            ("PGUSER", "recorder"),
            ("PGDATABASE", "app"),
            ("PGAPPNAME", "recorder-eu"),
            ("PGCONNECT_TIMEOUT", "1"),
            ("PGOPTIONS", "-c statement_timeout=5s"),
            ("PGTARGETSESSIONATTRS", "read-write"),
        ]);
        let config = configuration(&target(None), &env).unwrap().0;
        assert_eq!(config.get_hosts(), [Host::Tcp("db1.example".into()), Host::Tcp("db2.example".into())]);
        assert_eq!(config.get_ports(), [5432, 5433]);
        assert_eq!((config.get_user(), config.get_dbname()), (Some("recorder"), Some("app")));
        assert_eq!(config.get_application_name(), Some("recorder-eu"));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(2)), "libpq's minimum of 2 s");
        assert_eq!(config.get_options(), Some("-c statement_timeout=5s"));
        assert_eq!(config.get_target_session_attrs(), postgres::config::TargetSessionAttrs::ReadWrite);
        // Without PGAPPNAME, the program's name (pg_stat_activity shows it); --timeout without PGCONNECT_TIMEOUT.
        let config = configuration(&target(None), &vars(&[("PGUSER", "u")])).unwrap().0;
        assert_eq!(config.get_application_name(), Some("runtime-sandbox-recorder"));
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(30)));
    }

    #[test]
    fn what_the_program_cannot_honour_is_named() {
        for (name, value) in [("PGGSSENCMODE", "require"), ("PGSSLCRL", "/etc/crl.pem"), ("PGHOSTADDR", "10.0.0.1")] {
            let failure = configuration(&target(None), &vars(&[("PGUSER", "u"), (name, value)])).err().unwrap();
            assert!(failure.message.starts_with(&format!("{name} is set")), "{}", failure.message);
        }
        let failure = configuration(&target(None), &vars(&[("PGUSER", "u"), ("PGTARGETSESSIONATTRS", "standby")])).err().unwrap();
        assert!(failure.message.contains("PGTARGETSESSIONATTRS=standby"), "{}", failure.message);
        let failure = configuration(&target(None), &vars(&[("PGUSER", "u"), ("PGHOST", "a,b,c"), ("PGPORT", "1,2")])).err().unwrap();
        assert!(failure.message.contains("2 ports for 3 hosts"), "{}", failure.message);
    }

    #[test]
    fn a_service_gives_what_the_connection_string_leaves_out() {
        let dir = std::env::temp_dir().join(format!("recorder-service-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pg_service.conf");
        std::fs::write(&file, "[ledger]\nhost=db.example\nport=5433\ndbname=app\nuser=recorder\nsslmode=verify-full\nsslrootcert=system\n").unwrap();
        let path = file.display().to_string();
        // PGSERVICE, from PGSERVICEFILE; the environment only fills what the service leaves (PGHOST loses to it).
        let env = vars(&[("PGSERVICE", "ledger"), ("PGSERVICEFILE", &path), ("PGHOST", "ignored.example"), ("PGAPPNAME", "rec")]);
        let (config, tls) = configuration(&target(None), &env).unwrap();
        assert_eq!(config.get_hosts(), [Host::Tcp("db.example".into())]);
        assert_eq!((config.get_ports(), config.get_dbname(), config.get_user()), (&[5433][..], Some("app"), Some("recorder")));
        assert_eq!(config.get_application_name(), Some("rec"));
        assert_eq!(tls.mode, SslMode::VerifyFull, "the service's TLS settings apply");
        // service= in --database: its own parameters win over the service's.
        let (config, _) = configuration(&target(Some("service=ledger dbname=other")), &vars(&[("PGSERVICEFILE", &path)])).unwrap();
        assert_eq!((config.get_dbname(), config.get_ports()), (Some("other"), &[5433][..]));
        // An unknown service names the files looked in.
        let failure = configuration(&target(Some("service=nowhere")), &vars(&[("PGSERVICEFILE", &path), ("PGSYSCONFDIR", "/nonexistent")])).err().unwrap();
        assert!(failure.message.contains("service \"nowhere\" is not defined in") && failure.message.contains(&path), "{}", failure.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_password_file_is_read_as_libpq_reads_it() {
        let dir = std::env::temp_dir().join(format!("recorder-pgpass-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pgpass");
        std::fs::write(&file, "db.example:5432:app:recorder:from-file\nlocalhost:5432:*:sock:socket-pw\n").unwrap();
        let path = file.display().to_string();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let env = vars(&[("PGHOST", "db.example"), ("PGUSER", "recorder"), ("PGDATABASE", "app"), ("PGPASSFILE", &path)]);
        assert_eq!(configuration(&target(None), &env).unwrap().0.get_password(), Some(&b"from-file"[..]));
        // A connection string without a password reads it too; a Unix socket matches "localhost".
        let conninfo = "host=/var/run/postgresql user=sock dbname=x";
        let env = vars(&[("PGPASSFILE", &path)]);
        assert_eq!(configuration(&target(Some(conninfo)), &env).unwrap().0.get_password(), Some(&b"socket-pw"[..]));
        // PGPASSWORD wins; a file others may read is ignored, as libpq ignores it.
        let env = vars(&[("PGPASSFILE", &path), ("PGPASSWORD", "from-env")]);
        assert_eq!(configuration(&target(Some(conninfo)), &env).unwrap().0.get_password(), Some(&b"from-env"[..]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let env = vars(&[("PGPASSFILE", &path)]);
            assert_eq!(configuration(&target(Some(conninfo)), &env).unwrap().0.get_password(), None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
