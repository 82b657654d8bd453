//! A fake Daytona on 127.0.0.1, serving `GET /api/sandbox` as the spec of
//! v0.190.0 defines it: `{items, nextCursor}` pages of SandboxListItems,
//! `limit` at most 200 (400 above), `labels` as one JSON object matched by
//! containment, a bearer key, `sort`/`order`, opaque base64-looking cursors
//! (holding `+`, `/` and `=`). Quirks make single requests misbehave: a
//! status, a 429 with `Retry-After-authenticated`, a slow answer, a
//! malformed or unknown body, a repeated id, an item of another organization,
//! the pre-v0.180 plain array. `createdAtAfter`/`createdAtBefore` filter by each sandbox's creation instant,
//! kept in microseconds and printed in milliseconds (Daytona stores it more finely than it prints it); the
//! sandboxes are served in the order given (give them in creation order, as Daytona sorts by `createdAt`).
//! Requests are served by several threads at once (a fixed per-page delay overlaps). Every request is logged.
//!
//! Shared by the recorder's own tests and the extension's end-to-end test
//! (tests/recorder_loop.rs includes this file).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct FakeSandbox {
    pub id: String,
    pub organization_id: String,
    pub labels: BTreeMap<String, String>,
    pub state: String,
    /// `desiredState`: an `error`/`build_failed` sandbox whose deletion failed has `destroyed` (fact a5).
    pub desired_state: String,
    /// `createdAt` in microseconds since the epoch (printed in milliseconds); None: the field is left out.
    pub created_us: Option<i64>,
}

/// 2026-12-01T00:00:00Z, the default creation instant.
pub const DEFAULT_CREATED_US: i64 = 1_796_083_200_000_000;

impl FakeSandbox {
    pub fn new(id: &str, org: &str, labels: &[(&str, &str)], state: &str) -> Self {
        FakeSandbox {
            id: id.into(),
            organization_id: org.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            state: state.into(),
            desired_state: if state == "destroyed" { "destroyed" } else { "started" }.into(),
            created_us: Some(DEFAULT_CREATED_US),
        }
    }

    /// Created at this instant (microseconds since the epoch; None: no `createdAt`).
    pub fn created(mut self, created_us: Option<i64>) -> Self {
        self.created_us = created_us;
        self
    }

    /// A sandbox whose deletion failed: in `state` (error, build_failed), desired state `destroyed`.
    pub fn deletion_failed(mut self) -> Self {
        self.desired_state = "destroyed".into();
        self
    }

    /// Hidden unless `includeErroredDeleted=true` (fact a5).
    fn errored_deleted(&self) -> bool {
        matches!(self.state.as_str(), "error" | "build_failed") && self.desired_state == "destroyed"
    }
}

/// How one request (by its number, from 1, over the whole server) misbehaves.
#[derive(Debug, Clone)]
pub enum Quirk {
    Status(u16),
    /// 429 with `Retry-After-authenticated: <seconds>`.
    Throttled(u32),
    /// Answer correctly after this long.
    Slow(Duration),
    /// Not JSON.
    Malformed,
    /// JSON of another shape (`{"sandboxes": [...], "next": null}`).
    UnknownShape,
    /// The page repeats the first sandbox of the previous page.
    RepeatId,
    /// The page holds a sandbox of another organization.
    ForeignItem,
}

#[derive(Debug, Clone, Default)]
pub struct Logged {
    pub query: BTreeMap<String, String>,
    pub authorization: Option<String>,
    pub organization_header: Option<String>,
}

#[derive(Default)]
struct State {
    /// Bearer credential -> the organization it lists.
    keys: HashMap<String, String>,
    sandboxes: Vec<FakeSandbox>,
    quirks: HashMap<usize, Quirk>,
    /// Answer the first request with the pre-v0.180 plain array of full Sandboxes.
    plain_array: bool,
    /// Fixed delay per page (the benchmark).
    delay: Duration,
    /// Serve every sandbox of the organization, whatever `labels` asks (a server or proxy that drops the filter).
    ignore_labels: bool,
    /// Ignore createdAtAfter/createdAtBefore (a server that drops the filters).
    ignore_created: bool,
    /// Quirks by the number of the request among those carrying a createdAt filter (from 1).
    ranged_quirks: HashMap<usize, Quirk>,
    ranged_requests: usize,
    requests: Vec<Logged>,
    /// The sandboxes one (organization, labels) lists, by index: filtered once, not on every page (the
    /// benchmark's 100,000 sandboxes in 500 pages).
    matching: Option<(String, BTreeMap<String, String>, Vec<usize>, bool)>,
    /// The same for each createdAt range asked (after, before in microseconds): its indexes.
    ranged: HashMap<(Option<i64>, Option<i64>), Vec<usize>>,
    /// Each sandbox's SandboxListItem, serialized once.
    rendered: Vec<String>,
}

pub struct Fake {
    pub url: String,
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Requests served at once.
const SERVING_THREADS: usize = 16;

impl Drop for Fake {
    fn drop(&mut self) {
        for _ in 0..self.threads.len() {
            self.server.unblock();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 3 <= bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A cursor as the Postgres adapter makes them: base64 of the position; this
/// one always holds `+`, `/` and `=`, so a client that does not encode it
/// (or decodes `+` as a space) breaks.
fn cursor(position: usize) -> String {
    format!("eyJ+/{position}/+==")
}

fn position(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("eyJ+/")?.strip_suffix("/+==")?.parse().ok()
}

impl Fake {
    pub fn start() -> Fake {
        // TCP_NODELAY on the listening socket, which Linux hands to every accepted one: tiny_http writes an
        // answer's last chunk apart, and with Nagle it would wait for the client's delayed ACK (~40 ms a page
        // on a kept-alive connection; a real Daytona's proxy has no such stall).
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
        socket.set_tcp_nodelay(true).expect("TCP_NODELAY");
        socket.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()).expect("a port on 127.0.0.1");
        socket.listen(128).expect("listen");
        let listener: std::net::TcpListener = socket.into();
        let server = Arc::new(tiny_http::Server::from_listener(listener, None).expect("a server on 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let threads = (0..SERVING_THREADS)
            .map(|_| {
                let (s, st) = (Arc::clone(&server), Arc::clone(&state));
                std::thread::spawn(move || {
                    while let Ok(request) = s.recv() {
                        serve(request, &st);
                    }
                })
            })
            .collect();
        Fake { url: format!("http://127.0.0.1:{port}/api"), state, server, threads }
    }

    pub fn key(&self, key: &str, org: &str) -> &Self {
        self.state.lock().unwrap().keys.insert(key.into(), org.into());
        self
    }

    pub fn sandboxes(&self, sandboxes: Vec<FakeSandbox>) -> &Self {
        let mut st = self.state.lock().unwrap();
        st.rendered = sandboxes.iter().map(|s| item(s, false).to_string()).collect();
        st.sandboxes = sandboxes;
        st.matching = None;
        st.ranged.clear();
        drop(st);
        self
    }

    pub fn quirk(&self, request: usize, quirk: Quirk) -> &Self {
        self.state.lock().unwrap().quirks.insert(request, quirk);
        self
    }

    pub fn plain_array(&self) -> &Self {
        self.state.lock().unwrap().plain_array = true;
        self
    }

    pub fn ignore_labels(&self) -> &Self {
        let mut st = self.state.lock().unwrap();
        st.ignore_labels = true;
        st.matching = None;
        drop(st);
        self
    }

    /// Ignore the createdAt filters (a server or proxy that drops them).
    pub fn ignore_created(&self) -> &Self {
        self.state.lock().unwrap().ignore_created = true;
        self
    }

    /// A quirk for the `request`th request (from 1) that carries a createdAt filter: a range of a parallel walk.
    pub fn ranged_quirk(&self, request: usize, quirk: Quirk) -> &Self {
        self.state.lock().unwrap().ranged_quirks.insert(request, quirk);
        self
    }

    pub fn delay(&self, delay: Duration) -> &Self {
        self.state.lock().unwrap().delay = delay;
        self
    }

    pub fn requests(&self) -> Vec<Logged> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn respond(request: tiny_http::Request, status: u16, body: String, headers: &[(&str, String)]) {
    let mut response = tiny_http::Response::from_string(body).with_status_code(status);
    response.add_header(tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap());
    for (name, value) in headers {
        response.add_header(tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap());
    }
    let _ = request.respond(response);
}

fn error(status: u16, message: &str) -> String {
    serde_json::json!({"path": "/api/sandbox", "timestamp": "2026-12-06T00:00:00.000Z", "statusCode": status,
                       "error": message, "message": message})
    .to_string()
}

fn item(s: &FakeSandbox, full: bool) -> serde_json::Value {
    let mut item = serde_json::json!({
        "id": s.id, "organizationId": s.organization_id, "name": s.id, "target": "eu", "user": "daytona",
        "public": false, "cpu": 1, "gpu": 0, "memory": 1, "disk": 3, "labels": s.labels,
        "toolboxProxyUrl": "https://proxy.example", "state": s.state, "desiredState": s.desired_state,
    });
    if let Some(us) = s.created_us {
        item["createdAt"] = serde_json::Value::from(print_instant(us));
    }
    if full {
        // The pre-v0.180 Sandbox: its environment variables too.
        item["env"] = serde_json::json!({"SECRET_TOKEN": "do-not-log"});
    }
    item
}

/// Microseconds since the epoch as Daytona prints them: UTC, milliseconds (truncated).
pub fn print_instant(us: i64) -> String {
    runtime_sandbox_recorder::ranges::format(us)
}

/// A filter's instant (ISO 8601, as the recorder sends it) in microseconds.
fn read_instant(text: &str) -> Option<i64> {
    runtime_sandbox_recorder::ranges::parse(text)
}

/// Wait until `deadline`: a sleep to within a millisecond of it, then a spin, so that a page's fixed delay is that
/// delay (a bare sleep overshoots by a fraction of a millisecond, which 500 pages add up).
fn wait_until(deadline: std::time::Instant) {
    let now = std::time::Instant::now();
    if deadline > now + Duration::from_millis(1) {
        std::thread::sleep(deadline - now - Duration::from_millis(1));
    }
    while std::time::Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

fn serve(request: tiny_http::Request, state: &Arc<Mutex<State>>) {
    let received = std::time::Instant::now();
    let url = request.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let query: BTreeMap<String, String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    let header = |name: &str| {
        request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.to_string())
    };
    let logged = Logged { query: query.clone(), authorization: header("Authorization"), organization_header: header("X-Daytona-Organization-ID") };
    let filtered = query.contains_key("createdAtAfter") || query.contains_key("createdAtBefore");
    let (quirk, delay) = {
        let mut st = state.lock().unwrap();
        st.requests.push(logged.clone());
        let number = st.requests.len();
        let mut quirk = st.quirks.get(&number).cloned();
        if filtered {
            st.ranged_requests += 1;
            let ranged = st.ranged_requests;
            quirk = quirk.or_else(|| st.ranged_quirks.get(&ranged).cloned());
        }
        (quirk, st.delay)
    };
    if path != "/api/sandbox" {
        return respond(request, 404, error(404, "Cannot GET"), &[]);
    }
    if !delay.is_zero() {
        // The delay counts from the request's arrival, the server's own work included.
        wait_until(received + delay);
    }
    match &quirk {
        Some(Quirk::Status(status)) => return respond(request, *status, error(*status, "quirk"), &[]),
        Some(Quirk::Throttled(seconds)) => {
            return respond(
                request,
                429,
                error(429, "ThrottlerException: Too Many Requests"),
                &[("Retry-After-authenticated", seconds.to_string()), ("X-RateLimit-Remaining-authenticated", "0".into())],
            )
        }
        Some(Quirk::Slow(d)) => std::thread::sleep(*d),
        Some(Quirk::Malformed) => return respond(request, 200, "{\"items\": [".into(), &[]),
        Some(Quirk::UnknownShape) => return respond(request, 200, r#"{"sandboxes": [], "next": null}"#.into(), &[]),
        _ => {}
    }
    let mut st = state.lock().unwrap();
    let organization = match logged.authorization.as_deref().and_then(|a| a.strip_prefix("Bearer ")) {
        Some(credential) => match st.keys.get(credential) {
            Some(org) => org.clone(),
            None => return respond(request, 401, error(401, "Unauthorized"), &[]),
        },
        None => return respond(request, 401, error(401, "Unauthorized"), &[]),
    };
    // A JWT-style credential lists the organization of the header when it names one.
    let organization = logged.organization_header.clone().unwrap_or(organization);
    let labels: BTreeMap<String, String> = match query.get("labels") {
        None => BTreeMap::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(labels) => labels,
            Err(_) => return respond(request, 400, error(400, "Invalid labels JSON format"), &[]),
        },
    };
    let limit: usize = query.get("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
    if limit == 0 || limit > 200 {
        return respond(request, 400, error(400, "limit must not be greater than 200"), &[]);
    }
    // includeErroredDeleted: only 'true' shows the errored sandboxes whose deletion failed (fact a5).
    let errored_deleted = query.get("includeErroredDeleted").map(String::as_str) == Some("true");
    let key = (organization.clone(), labels.clone(), errored_deleted);
    let cached = matches!(&st.matching, Some(k) if (k.0.clone(), k.1.clone(), k.3) == key);
    if !cached {
        let ignore_labels = st.ignore_labels;
        let indexes = (0..st.sandboxes.len())
            .filter(|&i| {
                let s = &st.sandboxes[i];
                s.organization_id == organization
                    && (ignore_labels || labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
                    && s.state != "destroyed"
                    && (errored_deleted || !s.errored_deleted())
            })
            .collect();
        st.matching = Some((organization.clone(), labels.clone(), indexes, errored_deleted));
        st.ranged.clear();
    }
    let bound = |name: &str| -> Result<Option<i64>, ()> {
        match query.get(name) {
            None => Ok(None),
            Some(text) => read_instant(text).map(Some).ok_or(()),
        }
    };
    let (Ok(after), Ok(before)) = (bound("createdAtAfter"), bound("createdAtBefore")) else {
        return respond(request, 400, error(400, "createdAtAfter/createdAtBefore must be ISO 8601 date-times"), &[]);
    };
    let range = if st.ignore_created { (None, None) } else { (after, before) };
    if range != (None, None) && !st.ranged.contains_key(&range) {
        let matching = &st.matching.as_ref().expect("just filled").2;
        // Filtered once per range (a walk asks for a range page after page). Inclusive on both sides; a sandbox
        // printed without createdAt still has one where Daytona stores it, which the fake does not know: it is
        // served by every range.
        let indexes = matching
            .iter()
            .copied()
            .filter(|&i| {
                let created = st.sandboxes[i].created_us;
                created.is_none_or(|c| range.0.is_none_or(|a| c >= a) && range.1.is_none_or(|b| c <= b))
            })
            .collect();
        st.ranged.insert(range, indexes);
    }
    let indexes = if range == (None, None) { &st.matching.as_ref().expect("just filled").2 } else { &st.ranged[&range] };
    let sandbox = |n: usize| &st.sandboxes[indexes[n]];
    if st.plain_array && !query.contains_key("cursor") {
        let body: Vec<serde_json::Value> = (0..indexes.len()).map(|n| item(sandbox(n), true)).collect();
        return respond(request, 200, serde_json::Value::Array(body).to_string(), &[]);
    }
    let start = match query.get("cursor") {
        None => 0,
        Some(c) => match position(c) {
            Some(p) => p,
            None => return respond(request, 400, error(400, "Invalid cursor"), &[]),
        },
    };
    let end = (start + limit).min(indexes.len());
    let mut items: Vec<&str> = (start.min(end)..end).map(|n| st.rendered[indexes[n]].as_str()).collect();
    let foreign = item(&FakeSandbox::new("foreign-1", "org-elsewhere", &[], "started"), false).to_string();
    match &quirk {
        Some(Quirk::RepeatId) if start > 0 => items.insert(0, st.rendered[indexes[start - 1]].as_str()),
        Some(Quirk::ForeignItem) => items.push(&foreign),
        _ => {}
    }
    let next = if end < indexes.len() { serde_json::Value::from(cursor(end)) } else { serde_json::Value::Null };
    let body = format!("{{\"items\":[{}],\"nextCursor\":{next}}}", items.join(","));
    drop(st);
    respond(request, 200, body, &[]);
}
