//! The one call the recorder makes to Daytona: `GET {api}/sandbox`
//! (operationId listSandboxes), walked by cursor for one organization. Every
//! request has a timeout; 429, 5xx, timeouts and broken connections are
//! retried within a bound, waiting as `Retry-After-*` asks; 400, 401, 403 and
//! 404 fail at once. No body is ever logged (a pre-v0.180 item carries the
//! sandbox's environment variables).
//!
//! A long listing is walked in parallel (`--concurrency`): after the first pages of the sequential walk, the
//! time from the last sandbox reached to the capture is split into `createdAt` ranges (`ranges`), walked at once,
//! each to its null cursor, at most `--requests-per-second` over all of them (Daytona's rate limit is the whole
//! organization's, fact d1); the union is checked as one listing, and any range that fails fails the listing.

use crate::listing::{self, Item, Next, Page, RoutingDomain, Walk};
use crate::failure::Failure;
use crate::ranges::{self, Range};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use ureq::Agent;

/// Pages the sequential walk takes before a listing is split (a small fleet is walked exactly as before).
pub const SPLIT_AFTER_PAGES: usize = 5;
/// Ranges per concurrent walker: a walker that finishes a short range takes the next (creation is uneven).
const RANGES_PER_WALKER: usize = 4;

/// At most one request per `interval` over every walker of the run.
#[derive(Debug)]
pub struct Pacer {
    interval: Option<Duration>,
    next: Mutex<Instant>,
}

impl Pacer {
    /// `per_second`: the most requests a second (0: no limit).
    pub fn new(per_second: f64) -> Self {
        let interval = (per_second > 0.0).then(|| Duration::from_secs_f64(1.0 / per_second));
        Pacer { interval, next: Mutex::new(Instant::now()) }
    }

    /// Wait for this request's turn.
    fn wait(&self) {
        let Some(interval) = self.interval else { return };
        let at = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let at = (*next).max(Instant::now());
            *next = at + interval;
            at
        };
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
    }
}

/// How a request proves whose sandboxes it lists (as Daytona's SDKs take it).
#[derive(Clone)]
pub enum Credentials {
    /// `DAYTONA_API_KEY`: the key's own organization.
    ApiKey(String),
    /// `DAYTONA_JWT_TOKEN`: the organization is sent as X-Daytona-Organization-ID.
    Jwt(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credentials::ApiKey(_) => "ApiKey(..)",
            Credentials::Jwt(_) => "Jwt(..)",
        })
    }
}

/// One organization to list.
#[derive(Debug, Clone)]
pub struct Organization {
    pub id: String,
    pub credentials: Credentials,
}

/// The parameters identical on every page of every walk.
#[derive(Debug)]
pub struct Lister {
    pub api_url: String,
    /// The `labels` parameter (a JSON object), None: unscoped.
    pub labels: Option<String>,
    /// The scope every listed item must carry (empty: unscoped).
    pub scope: std::collections::BTreeMap<String, String>,
    /// `includeErroredDeleted=true`: sandboxes whose deletion failed still exist (fact a5). False: the
    /// parameter is left out (Daytona reads the string "false" as true on its older endpoint).
    pub include_errored_deleted: bool,
    pub page_size: u16,
    pub max_pages: usize,
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub max_wait: Duration,
    /// When the whole run must have ended (--deadline): past it the listing fails.
    pub deadline: Instant,
    pub deadline_seconds: f64,
    pub agent: Agent,
    /// How items are mapped (listing::item).
    pub operation_label: String,
    pub routing: RoutingDomain,
    /// Walkers of a long listing (1: the sequential walk only).
    pub concurrency: usize,
    pub pacer: Pacer,
}

const USER_AGENT: &str = concat!("runtime-sandbox-recorder/", env!("CARGO_PKG_VERSION"));

/// The HTTP client: rustls, the given timeout per request, and the roots it
/// trusts: `ca_file` (--ca-file) if given, else SSL_CERT_FILE and
/// SSL_CERT_DIR when set (as OpenSSL reads them: they replace the defaults),
/// else the bundled roots.
pub fn agent(timeout: Duration, ca_file: Option<&std::path::Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Agent, Failure> {
    let mut config = Agent::config_builder().timeout_global(Some(timeout)).http_status_as_error(false).user_agent(USER_AGENT);
    let pem_certs = |pem: &[u8]| -> Vec<ureq::tls::Certificate<'static>> {
        ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                _ => None,
            })
            .collect()
    };
    let set = |name: &str| crate::vars::set(env, name);
    let certs = if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| Failure::usage(format!("--ca-file {}: {e}", path.display())))?;
        let certs = pem_certs(&pem);
        if certs.is_empty() {
            return Err(Failure::usage(format!("--ca-file {}: no PEM certificate in it", path.display())));
        }
        Some(certs)
    } else if set("SSL_CERT_FILE").is_some() || set("SSL_CERT_DIR").is_some() {
        let mut certs = Vec::new();
        if let Some(file) = set("SSL_CERT_FILE") {
            let pem = std::fs::read(&file).map_err(|e| Failure::usage(format!("SSL_CERT_FILE {file}: {e}")))?;
            certs.extend(pem_certs(&pem));
        }
        // OpenSSL's SSL_CERT_DIR: directories separated by ':', every PEM file in them, each file once (a
        // c_rehash directory links every certificate under its hash too).
        let mut read = std::collections::HashSet::new();
        if let Some(file) = set("SSL_CERT_FILE").and_then(|f| std::fs::canonicalize(f).ok()) {
            read.insert(file);
        }
        for dir in set("SSL_CERT_DIR").iter().flat_map(|d| d.split(':').map(str::to_string).collect::<Vec<_>>()) {
            let entries = std::fs::read_dir(&dir).map_err(|e| Failure::usage(format!("SSL_CERT_DIR {dir}: {e}")))?;
            for entry in entries.flatten() {
                let Ok(path) = std::fs::canonicalize(entry.path()) else { continue };
                if read.insert(path.clone()) {
                    if let Ok(pem) = std::fs::read(&path) {
                        certs.extend(pem_certs(&pem));
                    }
                }
            }
        }
        if certs.is_empty() {
            return Err(Failure::usage("SSL_CERT_FILE / SSL_CERT_DIR: no PEM certificate in them"));
        }
        Some(certs)
    } else {
        None
    };
    if let Some(certs) = certs {
        let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::new_with_certs(&certs)).build();
        config = config.tls_config(tls);
    }
    Ok(config.build().into())
}

/// One request's outcome before retries.
enum Answer {
    Page(Page),
    Retry(String, Vec<String>),
    Fail(Failure),
}

impl Lister {
    /// Walk one organization's sandboxes, oldest first, to the null cursor; a long listing (more than
    /// SPLIT_AFTER_PAGES pages, `concurrency` above 1) in parallel ranges from there to `captured_at`.
    /// `log` takes progress lines (pages, items, elapsed), never a body or key.
    pub fn list(&self, org: &Organization, captured_at: SystemTime, log: &mut dyn FnMut(String)) -> Result<Vec<Item>, Failure> {
        let started = Instant::now();
        let mut walk = Walk::new(&org.id, self.max_pages, &self.operation_label, self.routing).scoped(&self.scope);
        let mut cursor: Option<String> = None;
        let mut reported = Instant::now();
        loop {
            let next = self.step(org, &mut walk, cursor.as_deref(), None, log)?;
            if reported.elapsed() >= Duration::from_secs(5) {
                log(format!(
                    "organization {}: {} pages, {} sandboxes, {:.1} s",
                    org.id,
                    walk.pages(),
                    walk.listed(),
                    started.elapsed().as_secs_f64()
                ));
                reported = Instant::now();
            }
            match next {
                Next::Page(next) => {
                    if self.concurrency > 1 && walk.pages() == SPLIT_AFTER_PAGES {
                        let captured = captured_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
                        match walk.last_created() {
                            Some(last) => {
                                let ranges = ranges::split(last, captured, self.concurrency * RANGES_PER_WALKER);
                                if ranges.len() > 1 {
                                    return self.list_ranges(org, walk, next, ranges, started, log);
                                }
                            }
                            None => log(format!(
                                "organization {}: the sandboxes carry no createdAt: listed sequentially",
                                org.id
                            )),
                        }
                    }
                    cursor = Some(next);
                }
                Next::Done => {
                    log(format!(
                        "organization {}: {} sandboxes in {} pages, {:.1} s",
                        org.id,
                        walk.listed(),
                        walk.pages(),
                        started.elapsed().as_secs_f64()
                    ));
                    return Ok(walk.finish());
                }
            }
        }
    }

    /// One page of a walk (of `range`, None: unfiltered), taken by the walk's checks.
    fn step(
        &self,
        org: &Organization,
        walk: &mut Walk,
        cursor: Option<&str>,
        range: Option<&Range>,
        log: &mut dyn FnMut(String),
    ) -> Result<Next, Failure> {
        let number = walk.pages() + 1;
        let at = range.map(|r| format!(" range {}", ranges::describe(r))).unwrap_or_default();
        let page = self.page(org, cursor, range, number, log).map_err(|mut failure| {
            if failure.message.starts_with(DEADLINE) {
                failure.message = format!(
                    "{DEADLINE} (--deadline {} s) passed while listing organization {}{at}: {} pages and {} sandboxes \
                     listed so far, page {number} not; nothing recorded",
                    self.deadline_seconds,
                    org.id,
                    walk.pages(),
                    walk.listed()
                );
            }
            failure
        })?;
        if page.plain_array {
            log(format!("organization {}: the server answered a plain array (Daytona before v0.180, no paging)", org.id));
        }
        walk.take(page).map_err(|e| Failure::incomplete(format!("organization {}{at}: {e}", org.id)))
    }

    /// The rest of a long listing in parallel: `first` (the sequential walk, continued from `cursor` up to the
    /// first range's end) and the other ranges, each walked to its null cursor by `concurrency` walkers; the
    /// union checked as one listing (ranges::merge). The first failure (in range order) fails the listing.
    fn list_ranges(
        &self,
        org: &Organization,
        mut first: Walk,
        cursor: String,
        ranges: Vec<Range>,
        started: Instant,
        log: &mut dyn FnMut(String),
    ) -> Result<Vec<Item>, Failure> {
        let count = ranges.len();
        log(format!(
            "organization {}: {} sandboxes in {} pages, {:.1} s; the rest in {count} ranges by createdAt, {} at a time",
            org.id,
            first.listed(),
            first.pages(),
            started.elapsed().as_secs_f64(),
            self.concurrency.min(count)
        ));
        first.until(ranges[0].before.expect("a split has a first boundary"));
        let first = Mutex::new(Some((first, cursor)));
        // Each range's outcome; None: not walked to its end (another range failed first).
        let results: Vec<Mutex<Option<Result<Walk, Failure>>>> = (0..count).map(|_| Mutex::new(None)).collect();
        let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::scope(|scope| {
            for _ in 0..self.concurrency.min(count) {
                let tx = tx.clone();
                let (ranges, first, results, next, failed) = (&ranges, &first, &results, &next, &failed);
                scope.spawn(move || {
                    let mut log = |line: String| {
                        let _ = tx.send(line);
                    };
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= count || failed.load(Ordering::SeqCst) {
                            break;
                        }
                        let (mut walk, mut cursor, filter) = match first.lock().unwrap_or_else(|e| e.into_inner()).take() {
                            Some((walk, cursor)) if i == 0 => (walk, Some(cursor), None),
                            _ => (
                                Walk::new(&org.id, self.max_pages, &self.operation_label, self.routing).scoped(&self.scope),
                                None,
                                Some(&ranges[i]),
                            ),
                        };
                        let result = loop {
                            if failed.load(Ordering::SeqCst) {
                                break None;
                            }
                            match self.step(org, &mut walk, cursor.as_deref(), filter, &mut log) {
                                Ok(Next::Page(next)) => cursor = Some(next),
                                Ok(Next::Done) => break Some(Ok(walk)),
                                Err(failure) => {
                                    failed.store(true, Ordering::SeqCst);
                                    break Some(Err(failure));
                                }
                            }
                        };
                        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = result;
                    }
                });
            }
            drop(tx);
            for line in rx {
                log(line);
            }
        });
        let mut walks = Vec::with_capacity(count);
        let mut failure = None;
        for result in results {
            match result.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(walk)) => walks.push(walk),
                Some(Err(f)) if failure.is_none() => failure = Some(f),
                _ => {}
            }
        }
        if let Some(failure) = failure {
            return Err(failure);
        }
        if walks.len() != count {
            return Err(Failure::incomplete(format!("organization {}: a range of the listing was not walked", org.id)));
        }
        let pages: usize = walks.iter().map(Walk::pages).sum();
        if pages > self.max_pages {
            return Err(Failure::incomplete(format!(
                "organization {}: more than {} pages (--max-pages): the listing did not end",
                org.id, self.max_pages
            )));
        }
        let (items, created): (Vec<Vec<Item>>, Vec<Vec<Option<ranges::Instant>>>) = walks.into_iter().map(Walk::finish_placed).unzip();
        let placed: Vec<ranges::Walked> = items
            .iter()
            .zip(created)
            .map(|(items, created)| ranges::Walked { ids: items.iter().map(|i| i.sandbox_id.as_str()).collect(), created })
            .collect();
        let keep = ranges::merge(&ranges, &placed).map_err(|e| Failure::incomplete(format!("organization {}: {e}", org.id)))?;
        drop(placed);
        let listed: Vec<Item> = items
            .into_iter()
            .zip(keep)
            .flat_map(|(items, keep)| items.into_iter().zip(keep).filter_map(|(item, keep)| keep.then_some(item)))
            .collect();
        log(format!(
            "organization {}: {} sandboxes in {pages} pages, {:.1} s",
            org.id,
            listed.len(),
            started.elapsed().as_secs_f64()
        ));
        Ok(listed)
    }

    fn page(
        &self,
        org: &Organization,
        cursor: Option<&str>,
        range: Option<&Range>,
        number: usize,
        log: &mut dyn FnMut(String),
    ) -> Result<Page, Failure> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            // Each request gets what is left of the run, at most --timeout.
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::incomplete(DEADLINE));
            }
            self.pacer.wait();
            let (why, retry_after) = match self.request(org, cursor, range, number, left.min(self.timeout)) {
                Answer::Retry(_, _) if Instant::now() >= self.deadline => return Err(Failure::incomplete(DEADLINE)),
                Answer::Page(page) => return Ok(page),
                Answer::Fail(failure) => return Err(failure),
                Answer::Retry(why, retry_after) => (why, retry_after),
            };
            if attempt > self.retries {
                return Err(Failure::incomplete(format!(
                    "organization {}: page {number} failed {attempt} times (--retries {}), the last: {why}",
                    org.id, self.retries
                )));
            }
            let asked: Vec<&str> = retry_after.iter().map(String::as_str).collect();
            let Some(wait) = listing::retry_wait(attempt, self.backoff, self.max_wait, &asked) else {
                return Err(Failure::incomplete(format!(
                    "organization {}: page {number}: {why}, and the server asks to wait longer than --max-retry-wait {} s",
                    org.id,
                    self.max_wait.as_secs_f64()
                )));
            };
            if Instant::now() + wait >= self.deadline {
                return Err(Failure::incomplete(DEADLINE));
            }
            log(format!("organization {}: page {number}: {why}; retry {attempt}/{} in {} ms", org.id, self.retries, wait.as_millis()));
            std::thread::sleep(wait);
        }
    }

    fn request(&self, org: &Organization, cursor: Option<&str>, range: Option<&Range>, number: usize, timeout: Duration) -> Answer {
        let url = format!("{}/sandbox", self.api_url.trim_end_matches('/'));
        let mut request = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("Accept", "application/json")
            .query("sort", "createdAt")
            .query("order", "asc")
            .query("limit", self.page_size.to_string());
        request = match &org.credentials {
            Credentials::ApiKey(key) => request.header("Authorization", format!("Bearer {key}")),
            Credentials::Jwt(token) => {
                request.header("Authorization", format!("Bearer {token}")).header("X-Daytona-Organization-ID", &org.id)
            }
        };
        if let Some(labels) = &self.labels {
            request = request.query("labels", labels);
        }
        if self.include_errored_deleted {
            request = request.query("includeErroredDeleted", "true");
        }
        if let Some(after) = range.and_then(|r| r.after) {
            request = request.query("createdAtAfter", ranges::format(after));
        }
        if let Some(before) = range.and_then(|r| r.before) {
            request = request.query("createdAtBefore", ranges::format(before));
        }
        if let Some(cursor) = cursor {
            request = request.query("cursor", cursor);
        }
        let at = format!("organization {}: page {number}", org.id);
        match request.call() {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let retry_after: Vec<String> = response
                    .headers()
                    .iter()
                    .filter(|(name, _)| name.as_str().starts_with("retry-after"))
                    .filter_map(|(_, value)| value.to_str().ok().map(String::from))
                    .collect();
                let body = response.body_mut().with_config().limit(256 << 20).read_to_string();
                match (status, body) {
                    (200, Ok(body)) => match listing::parse_page(&body, cursor.is_none()) {
                        Ok(page) => Answer::Page(page),
                        Err(e) => Answer::Fail(Failure::incomplete(format!("{at}: {e}"))),
                    },
                    (200, Err(e)) => Answer::Retry(format!("the body could not be read ({e})"), Vec::new()),
                    (401, _) => Answer::Fail(Failure::auth(format!(
                        "{at}: 401 Unauthorized: Daytona refused the credentials (DAYTONA_API_KEY, the key file, or \
                         DAYTONA_JWT_TOKEN)"
                    ))),
                    (403, _) => Answer::Fail(Failure::auth(format!(
                        "{at}: 403 Forbidden: the credentials may not list this organization's sandboxes"
                    ))),
                    (404, _) => Answer::Fail(Failure::incomplete(format!(
                        "{at}: 404 Not Found at {url}: not a Daytona API (DAYTONA_API_URL / --api-url should end in /api)"
                    ))),
                    (400, body) => Answer::Fail(Failure::incomplete(format!(
                        "{at}: 400 Bad Request ({}): the server refused the listing's parameters",
                        message(body)
                    ))),
                    (429, _) => Answer::Retry("429 Too Many Requests".into(), retry_after),
                    (500..=599, _) => Answer::Retry(format!("{status} from the server"), retry_after),
                    (_, _) => Answer::Fail(Failure::incomplete(format!("{at}: unexpected HTTP {status}"))),
                }
            }
            Err(ureq::Error::Timeout(_)) => {
                let within = if timeout < self.timeout {
                    format!("the {:.1} s left of --deadline", timeout.as_secs_f64())
                } else {
                    format!("--timeout {} s", self.timeout.as_secs_f64())
                };
                Answer::Retry(format!("no answer within {within}"), Vec::new())
            }
            Err(e) => {
                let host = host_of(&url);
                match cause(&e) {
                    Cause::Permanent(why) => Answer::Fail(Failure::incomplete(format!("{at}: {host}: {why} (not retried)"))),
                    Cause::Transient(why) => Answer::Retry(format!("{host}: {why}"), Vec::new()),
                }
            }
        }
    }
}

/// The start of the message of a run past its --deadline (`list` completes it).
const DEADLINE: &str = "the run's deadline";

/// The host (and port) of a URL, for messages.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_string()
}

/// A failed request's cause, and whether another try could help.
#[derive(Debug, PartialEq, Eq)]
enum Cause {
    /// TLS refused (an unknown issuer, a name mismatch, an expired certificate), or a host name that does not exist.
    Permanent(String),
    /// A refused or broken connection, a DNS server that did not answer.
    Transient(String),
}

fn cause(error: &ureq::Error) -> Cause {
    let tls = match error {
        ureq::Error::Io(io) => crate::tls::find(io),
        other => crate::tls::find(other),
    };
    if let Some(tls) = tls {
        return Cause::Permanent(format!("{} (trusted roots: --ca-file, SSL_CERT_FILE, SSL_CERT_DIR)", crate::tls::cause(tls)));
    }
    let text = error.to_string();
    if matches!(error, ureq::Error::HostNotFound) || text.contains("Name or service not known") || text.contains("No address associated") {
        return Cause::Permanent(format!("the host name does not resolve (DNS: {text})"));
    }
    match error {
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Cause::Transient("connection refused".into()),
        ureq::Error::Io(e) => Cause::Transient(format!("connection failed ({e})")),
        _ => Cause::Transient(format!("the request failed ({text})")),
    }
}

/// Daytona's error `message` (its AllExceptionsFilter body), short; never
/// the body itself.
fn message(body: Result<String, ureq::Error>) -> String {
    body.ok()
        .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(|m| m.chars().take(200).collect()))
        .unwrap_or_else(|| "no message".into())
}
