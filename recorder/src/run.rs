//! The command line and the whole run: check the configuration, read the
//! ledger, list every organization, check the listing, record it.

use crate::daytona::{self, Credentials, Lister, Organization};
use crate::failure::Failure;
use crate::listing::{self, Item, RoutingDomain};
use crate::record;
use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoutingDomainFlag {
    /// Each item's routing domain is its sandbox's organizationId.
    Organization,
    /// No routing domain (the ledger's operations carry none).
    None,
}

/// List Daytona's sandboxes completely and record them as an inventory snapshot for runtime_sandbox.
///
/// One listing per run (for a systemd timer, a Kubernetes CronJob or cron). Credentials as Daytona's SDKs take
/// them: DAYTONA_API_KEY (or --api-key-file), or DAYTONA_JWT_TOKEN; DAYTONA_ORGANIZATION_ID names the organization,
/// always (every listed sandbox must belong to it). The database: --database, or libpq's PGHOST, PGPORT, PGUSER,
/// PGPASSWORD, PGDATABASE. Progress goes to stderr; --dry-run prints the inventory on stdout.
///
/// Exit codes: 0 recorded; 2 bad flags or configuration; 3 credentials refused; 4 listing incomplete or not
/// Daytona's (or outside the label scope); 5 listing refused (empty, no operation label, organizations missing); 6 database.
#[derive(Debug, Clone, Parser)]
#[command(name = "runtime-sandbox-recorder", version, verbatim_doc_comment, max_term_width = 110, args_override_self = true)]
pub struct Cli {
    /// The label scope: Daytona's `labels` filter, a JSON object of strings (the labels your scheduler puts on
    /// the sandboxes it creates), e.g. '{"app":"runtime-scheduler","env":"production"}'.
    #[arg(long, env = "RUNTIME_SANDBOX_LABELS", value_name = "JSON")]
    pub labels: String,

    /// List every sandbox of the organizations: allows --labels '{}' (the reconcile then fails closed on any
    /// sandbox the ledger does not own).
    #[arg(long)]
    pub unscoped: bool,

    /// The label whose value is the worker's provider operation token (the ledger's provider_operation_token).
    #[arg(long, env = "RUNTIME_SANDBOX_OPERATION_LABEL", value_name = "KEY")]
    pub operation_label: String,

    /// Record even when no listed sandbox carries --operation-label (otherwise a likely misconfiguration).
    #[arg(long)]
    pub allow_missing_operation_label: bool,

    /// Daytona's API base URL (http:// only for a loopback address); DAYTONA_SERVER_URL, the SDKs' deprecated
    /// name, is read when neither is set.
    #[arg(long, env = "DAYTONA_API_URL", default_value = DEFAULT_API_URL, value_name = "URL")]
    pub api_url: String,

    /// The organization listed with DAYTONA_API_KEY, --api-key-file or DAYTONA_JWT_TOKEN.
    #[arg(long, env = "DAYTONA_ORGANIZATION_ID", value_name = "ID")]
    pub organization_id: Option<String>,

    /// A file whose first line is the API key of --organization-id (used when DAYTONA_API_KEY is unset).
    #[arg(long, env = "DAYTONA_API_KEY_FILE", value_name = "PATH")]
    pub api_key_file: Option<PathBuf>,

    /// Another organization and the file holding its API key, ID=PATH; repeat for each. All are listed into one
    /// snapshot.
    #[arg(long = "organization", value_name = "ID=PATH")]
    pub organizations: Vec<String>,

    /// Accept an empty listing of this organization (repeat per organization); otherwise an empty listing is
    /// refused.
    #[arg(long = "allow-empty", value_name = "ID")]
    pub allow_empty: Vec<String>,

    /// How each sandbox's routing domain is set: its organizationId, or none (for a ledger whose operations
    /// carry no routing domain).
    #[arg(long, value_enum, default_value = "organization")]
    pub routing_domain: RoutingDomainFlag,

    /// Accepted for compatibility: errored sandboxes whose deletion failed are listed by default.
    #[arg(long, hide = true)]
    pub include_errored_deleted: bool,

    /// Leave out sandboxes in error or build_failed whose deletion failed (Daytona hides them unless asked).
    /// They still exist and may hold capacity: left out, the reconcile calls their operations absent.
    #[arg(long, conflicts_with = "include_errored_deleted")]
    pub exclude_errored_deleted: bool,

    /// The database: a connection string or postgres:// URL (default: libpq's PG* variables).
    #[arg(long, env = "RUNTIME_SANDBOX_DATABASE", value_name = "CONNINFO")]
    pub database: Option<String>,

    /// The ledger schema the snapshot is recorded in.
    #[arg(long, env = "RUNTIME_SANDBOX_LEDGER_SCHEMA", default_value = "runtime_scheduler", value_name = "SCHEMA")]
    pub ledger_schema: String,

    /// The ledger environment this listing is of (the label scope makes a listing one environment's).
    #[arg(long, env = "RUNTIME_SANDBOX_ENVIRONMENT", default_value = "production", value_name = "NAME")]
    pub environment: String,

    /// Snapshots of the environment kept (record_inventory_snapshot's keep_last, 1..1000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub keep_last: i32,

    /// Sandboxes per page (Daytona allows at most 200).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(1..=200))]
    pub page_size: u16,

    /// Most pages per organization before the listing counts as failed.
    #[arg(long, default_value_t = 10_000)]
    pub max_pages: usize,

    /// Seconds each request (and the database connection) may take.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub timeout: f64,

    /// Seconds the whole run may take (the listing's pages, retries and waits); past it nothing is recorded
    /// (exit 4). The default fits the shipped examples' 10-minute limits with room for the database.
    #[arg(long, env = "RUNTIME_SANDBOX_DEADLINE", default_value_t = 540.0, value_name = "SECONDS")]
    pub deadline: f64,

    /// Retries of a page after a 429, a 5xx, a timeout or a broken connection.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,

    /// The first retry's wait in milliseconds (doubling, at most --max-retry-wait; Retry-After-* wins).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pub backoff_ms: u64,

    /// The longest wait before a retry; a server asking for longer fails the run.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub max_retry_wait: f64,

    /// Walkers of a long listing: after its first pages, the rest is split by creation time into ranges walked
    /// at once (1: one sequential walk).
    #[arg(long, env = "RUNTIME_SANDBOX_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,

    /// The most requests a second over every walker (0: no limit). Daytona's rate limit is the whole
    /// organization's, shared with everything else that calls it (10,000 a minute on its first tier).
    #[arg(long, env = "RUNTIME_SANDBOX_REQUESTS_PER_SECOND", default_value_t = 60.0, value_name = "N")]
    pub requests_per_second: f64,

    /// Trust the CA certificates of this PEM file instead of the bundled roots (a proxy's CA); wins over
    /// SSL_CERT_FILE and SSL_CERT_DIR, which otherwise replace the bundled roots as they do OpenSSL's.
    #[arg(long, env = "RUNTIME_SANDBOX_CA_FILE", value_name = "PATH")]
    pub ca_file: Option<PathBuf>,

    /// Print the inventory (a JSON array of {sandboxId, operationKey, routingDomain}) and record nothing;
    /// no database is touched.
    #[arg(long)]
    pub dry_run: bool,
}

/// Daytona's hosted API (the SDKs' default).
pub const DEFAULT_API_URL: &str = "https://app.daytona.io/api";

/// The API URL: --api-url or DAYTONA_API_URL, else DAYTONA_SERVER_URL (the SDKs' deprecated name, which they
/// still read), else the hosted API. Clap fills the default when neither flag nor variable is set, so the default
/// value itself means "not set" here.
fn api_url(cli: &Cli, env: &dyn Fn(&str) -> Option<String>, log: &mut dyn FnMut(String)) -> String {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if cli.api_url != DEFAULT_API_URL || set("DAYTONA_API_URL").is_some() {
        return cli.api_url.clone();
    }
    match set("DAYTONA_SERVER_URL") {
        Some(url) => {
            log("DAYTONA_SERVER_URL is deprecated (Daytona's SDKs too): set DAYTONA_API_URL".into());
            url.trim().to_string()
        }
        None => cli.api_url.clone(),
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub snapshot_id: Option<i64>,
    pub sandboxes: usize,
    /// The inventory (what was, or with --dry-run would be, recorded).
    pub items: Vec<Item>,
}

impl Outcome {
    /// The inventory as JSON, an array of {sandboxId, operationKey, routingDomain} (what --dry-run prints).
    pub fn inventory(&self) -> String {
        serde_json::to_string(&self.items).expect("the inventory serializes")
    }
}

fn seconds(flag: &str, value: f64) -> Result<Duration, Failure> {
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(Failure::usage(format!("{flag} {value}: must be above 0 and at most 86400 seconds")))
    }
}

fn read_key(path: &std::path::Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::usage(format!("key file {}: {e}", path.display())))?;
    let key = text.lines().next().unwrap_or("").trim().to_string();
    if key.is_empty() {
        return Err(Failure::usage(format!("key file {}: its first line is empty", path.display())));
    }
    Ok(key)
}

/// The organizations to list, each with its credentials.
fn organizations(cli: &Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Organization>, Failure> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut orgs = Vec::new();
    let primary = cli.organization_id.clone().filter(|o| !o.trim().is_empty());
    let credentials = if let Some(key) = set("DAYTONA_API_KEY") {
        Some(Credentials::ApiKey(key.trim().to_string()))
    } else if let Some(path) = &cli.api_key_file {
        Some(Credentials::ApiKey(read_key(path)?))
    } else {
        set("DAYTONA_JWT_TOKEN").map(|token| Credentials::Jwt(token.trim().to_string()))
    };
    match (primary, credentials) {
        (Some(id), Some(credentials)) => orgs.push(Organization { id, credentials }),
        (None, Some(_)) => {
            return Err(Failure::usage(
                "no organization id: set DAYTONA_ORGANIZATION_ID or --organization-id (no Daytona endpoint tells a key \
                 its organization, and every listed sandbox must belong to it)",
            ))
        }
        (Some(id), None) => {
            return Err(Failure::usage(format!(
                "organization {id}: no credentials: set DAYTONA_API_KEY, --api-key-file or DAYTONA_JWT_TOKEN"
            )))
        }
        (None, None) => {}
    }
    for spec in &cli.organizations {
        let (id, path) = spec
            .split_once('=')
            .filter(|(id, path)| !id.trim().is_empty() && !path.trim().is_empty())
            .ok_or_else(|| Failure::usage(format!("--organization {spec:?}: expected ID=PATH (the key file)")))?;
        orgs.push(Organization { id: id.trim().to_string(), credentials: Credentials::ApiKey(read_key(path.trim().as_ref())?) });
    }
    if orgs.is_empty() {
        return Err(Failure::usage(
            "no organization to list: set DAYTONA_ORGANIZATION_ID with DAYTONA_API_KEY (or --api-key-file, or \
             DAYTONA_JWT_TOKEN), or --organization ID=PATH",
        ));
    }
    let mut ids: Vec<&str> = orgs.iter().map(|o| o.id.as_str()).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failure::usage(format!("organization {} is configured twice", w[0])));
    }
    for id in &cli.allow_empty {
        if !orgs.iter().any(|o| &o.id == id) {
            return Err(Failure::usage(format!("--allow-empty {id}: not a configured organization")));
        }
    }
    Ok(orgs)
}

/// http:// is for a server on this machine only (a test's, a local proxy's).
fn check_api_url(url: &str) -> Result<(), Failure> {
    if url.starts_with("https://") {
        return Ok(());
    }
    if let Some(rest) = url.strip_prefix("http://") {
        let host = rest.split(['/', '?']).next().unwrap_or("");
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        let name = if host.starts_with('[') { host.split(']').next().unwrap_or("").trim_start_matches('[') } else { host.split(':').next().unwrap_or("") };
        let loopback = name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if loopback {
            return Ok(());
        }
        return Err(Failure::usage(format!("--api-url {url:?}: http:// is allowed for a loopback address only")));
    }
    Err(Failure::usage(format!("--api-url {url:?}: not an https:// URL")))
}

/// The whole run: check the configuration, read the ledger (unless
/// --dry-run), list every organization, check the listing, record it.
/// `env` reads environment variables; `log` takes progress lines.
pub fn run(cli: &Cli, env: &dyn Fn(&str) -> Option<String>, log: &mut dyn FnMut(String)) -> Result<Outcome, Failure> {
    let started = std::time::Instant::now();
    let api_url = api_url(cli, env, log);
    check_api_url(&api_url)?;
    let scope = listing::label_scope(&cli.labels).map_err(|e| Failure::usage(format!("--labels {:?}: {e}", cli.labels)))?;
    if scope.is_empty() && !cli.unscoped {
        return Err(Failure::usage(
            "--labels '{}' lists every sandbox of the organizations, which the reconcile then fails closed on: \
             name your scheduler's labels, or pass --unscoped",
        ));
    }
    if cli.operation_label.trim().is_empty() {
        return Err(Failure::usage("--operation-label is empty"));
    }
    if cli.environment.is_empty() || cli.environment.trim() != cli.environment {
        return Err(Failure::usage(format!("--environment {:?}: empty or with surrounding white space", cli.environment)));
    }
    if !record::plain_identifier(&cli.ledger_schema) {
        return Err(Failure::usage(format!("--ledger-schema {:?}: not a plain identifier", cli.ledger_schema)));
    }
    if cli.max_pages == 0 {
        return Err(Failure::usage("--max-pages must be at least 1"));
    }
    if !(cli.requests_per_second.is_finite() && cli.requests_per_second >= 0.0) {
        return Err(Failure::usage(format!("--requests-per-second {}: not a number of requests, 0 or more", cli.requests_per_second)));
    }
    let timeout = seconds("--timeout", cli.timeout)?;
    let deadline = started + seconds("--deadline", cli.deadline)?;
    let max_wait = seconds("--max-retry-wait", cli.max_retry_wait)?;
    let orgs = organizations(cli, env)?;
    let routing = match cli.routing_domain {
        RoutingDomainFlag::Organization => RoutingDomain::Organization,
        RoutingDomainFlag::None => RoutingDomain::None,
    };
    let lister = Lister {
        api_url,
        deadline,
        deadline_seconds: cli.deadline,
        labels: (!scope.is_empty()).then(|| listing::labels_parameter(&scope)),
        scope: scope.clone(),
        include_errored_deleted: !cli.exclude_errored_deleted,
        page_size: cli.page_size,
        max_pages: cli.max_pages,
        timeout,
        retries: cli.retries,
        backoff: Duration::from_millis(cli.backoff_ms),
        max_wait,
        agent: daytona::agent(timeout, cli.ca_file.as_deref(), env)?,
        operation_label: cli.operation_label.trim().to_string(),
        routing,
        concurrency: usize::from(cli.concurrency),
        pacer: daytona::Pacer::new(cli.requests_per_second),
    };
    let target = record::Target {
        database: cli.database.clone(),
        ledger_schema: cli.ledger_schema.clone(),
        environment: cli.environment.clone(),
        keep_last: cli.keep_last,
        connect_timeout: timeout,
    };

    // The ledger first, on a short connection: what the listing must cover (the reconcile treats it as the
    // whole fleet). The snapshot is recorded on a fresh one after the listing, so an idle timeout or a pooler
    // dropping a connection held through a long listing never loses it.
    let mut stream = false;
    if !cli.dry_run {
        let mut c = record::connect(&target, env)?;
        let ledger = record::ledger(&mut c, &target)?;
        drop(c);
        stream = ledger.stream;
        let ids: Vec<String> = orgs.iter().map(|o| o.id.clone()).collect();
        listing::uncovered(&ledger.routing_domains, &ids, routing).map_err(|e| {
            Failure::refused(format!("ledger {} environment {:?}: {e}", cli.ledger_schema, cli.environment))
        })?;
    }

    // Just before the first request: a sandbox created while listing is then never called absent.
    let captured_at = SystemTime::now();
    let mut items = Vec::new();
    for org in &orgs {
        let listed = lister.list(org, captured_at, log)?;
        if listed.is_empty() && !cli.allow_empty.contains(&org.id) {
            return Err(Failure::refused(format!(
                "organization {}: Daytona listed no sandbox in the label scope {}: refused (check --labels and the \
                 credentials; --allow-empty {} if the fleet really is empty)",
                org.id,
                listing::labels_parameter(&scope),
                org.id
            )));
        }
        items.extend(listed);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = items.iter().find(|i| !seen.insert(&i.sandbox_id)) {
        return Err(Failure::incomplete(format!("sandbox {} was listed by two organizations", twice.sandbox_id)));
    }
    if !items.is_empty() && items.iter().all(|i| i.operation_key.is_none()) && !cli.allow_missing_operation_label {
        return Err(Failure::refused(format!(
            "none of the {} listed sandboxes carries the label {:?} (--operation-label): refused as a likely \
             misconfiguration (--allow-missing-operation-label if that is expected)",
            items.len(),
            cli.operation_label
        )));
    }
    let mut outcome = Outcome { snapshot_id: None, sandboxes: items.len(), items };
    if !cli.dry_run {
        let started = std::time::Instant::now();
        let mut client = record::connect(&target, env)?;
        outcome.snapshot_id = Some(record::record(&mut client, &target, &outcome.items, stream, captured_at)?);
        let how = if stream { "streamed by COPY" } else { "as one JSON value" };
        log(format!("recorded {} sandboxes {how} in {:.1} s", outcome.sandboxes, started.elapsed().as_secs_f64()));
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::exit;

    fn cli(args: &[&str]) -> Cli {
        let mut all = vec!["runtime-sandbox-recorder", "--labels", r#"{"app":"x"}"#, "--operation-label", "op"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).unwrap()
    }

    #[test]
    fn only_loopback_may_be_plain_http() {
        for ok in ["https://app.daytona.io/api", "http://127.0.0.1:3000/api", "http://localhost/api", "http://[::1]:8/api"] {
            assert!(check_api_url(ok).is_ok(), "{ok}");
        }
        for bad in ["http://example.com/api", "http://10.0.0.1/api", "ftp://x", "app.daytona.io"] {
            assert_eq!(check_api_url(bad).unwrap_err().code, exit::USAGE, "{bad}");
        }
    }

    #[test]
    fn organizations_need_an_id_and_credentials() {
        let none = |_: &str| None;
        let key = |name: &str| (name == "DAYTONA_API_KEY").then(|| "k".to_string());
        let jwt = |name: &str| (name == "DAYTONA_JWT_TOKEN").then(|| "t".to_string());
        assert!(organizations(&cli(&[]), &none).unwrap_err().message.contains("no organization to list"));
        assert!(organizations(&cli(&[]), &key).unwrap_err().message.contains("no organization id"));
        assert!(organizations(&cli(&["--organization-id", "o"]), &none).unwrap_err().message.contains("no credentials"));
        let orgs = organizations(&cli(&["--organization-id", "o"]), &key).unwrap();
        assert!(matches!(orgs[0].credentials, Credentials::ApiKey(ref k) if k == "k"));
        let orgs = organizations(&cli(&["--organization-id", "o"]), &jwt).unwrap();
        assert!(matches!(orgs[0].credentials, Credentials::Jwt(_)));
        assert!(organizations(&cli(&["--organization", "o2"]), &none).unwrap_err().message.contains("expected ID=PATH"));
        assert!(organizations(&cli(&["--organization-id", "o", "--allow-empty", "p"]), &key).unwrap_err().message.contains("--allow-empty p"));
        // A key is never in Debug output (nor, so, in a log line).
        assert_eq!(format!("{:?}", Credentials::ApiKey("secret-key".into())), "ApiKey(..)");
    }

    #[test]
    fn an_empty_scope_needs_saying_so() {
        let key = |name: &str| (name == "DAYTONA_API_KEY").then(|| "k".to_string());
        let mut c = cli(&["--organization-id", "o", "--dry-run"]);
        c.labels = "{}".into();
        assert!(run(&c, &key, &mut |_| {}).unwrap_err().message.contains("--unscoped"));
        c.labels = "[]".into();
        assert_eq!(run(&c, &key, &mut |_| {}).unwrap_err().code, exit::USAGE);
    }
}
