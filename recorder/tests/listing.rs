//! The recorder against a fake Daytona on 127.0.0.1 (tests/fake_daytona):
//! complete listings come out whole, in order, with exactly the parameters the
//! API defines; everything else fails with its exit code and records nothing.
//! These runs use --dry-run (no database); tests/recorder_loop.rs at the
//! repository's root records into a real ledger and lets pg_cron reconcile.

mod fake_daytona;

use clap::Parser;
use fake_daytona::{Fake, FakeSandbox, Quirk};
use runtime_sandbox_recorder::{exit, run, Cli, Failure, Outcome};
use std::time::{Duration, Instant};

const SCOPE: &str = r#"{"app":"runtime-scheduler"}"#;

fn fleet(org: &str, n: usize) -> Vec<FakeSandbox> {
    let states = ["started", "stopped", "archived", "error", "build_failed", "creating", "destroying", "paused", "unknown"];
    (0..n)
        .map(|i| {
            FakeSandbox::new(
                &format!("{org}-sb-{i:04}"),
                org,
                &[("app", "runtime-scheduler"), ("runtime-op", &format!("tok-{org}-{i}"))],
                states[i % states.len()],
            )
        })
        .collect()
}

fn cli(fake: &Fake, extra: &[&str]) -> Cli {
    let mut args = vec![
        "runtime-sandbox-recorder", "--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--dry-run", "--backoff-ms", "10", "--timeout", "2",
    ];
    args.extend_from_slice(extra);
    Cli::try_parse_from(args).unwrap()
}

fn with_key(name: &str) -> Option<String> {
    (name == "DAYTONA_API_KEY").then(|| "key-1".to_string())
}

fn list(fake: &Fake, extra: &[&str]) -> (Result<Outcome, Failure>, Vec<String>) {
    let mut log = Vec::new();
    let result = run(&cli(fake, extra), &with_key, &mut |line| log.push(line));
    (result, log)
}

fn ids(outcome: &Outcome) -> Vec<String> {
    let items: Vec<serde_json::Value> = serde_json::from_str(&outcome.inventory()).unwrap();
    items.iter().map(|i| i["sandboxId"].as_str().unwrap().to_string()).collect()
}

#[test]
fn many_pages_with_base64_cursors_come_out_whole_with_identical_parameters() {
    let fake = Fake::start();
    let mut sandboxes = fleet("org-1", 450);
    // Outside the label scope: never listed.
    sandboxes.push(FakeSandbox::new("other-app", "org-1", &[("app", "billing")], "started"));
    fake.key("key-1", "org-1").sandboxes(sandboxes);
    let (outcome, _) = list(&fake, &["--page-size", "100"]);
    let outcome = outcome.unwrap();
    let expected: Vec<String> = (0..450).map(|i| format!("org-1-sb-{i:04}")).collect();
    assert_eq!(ids(&outcome), expected);
    let items: Vec<serde_json::Value> = serde_json::from_str(&outcome.inventory()).unwrap();
    assert_eq!(items[7], serde_json::json!({"sandboxId": "org-1-sb-0007", "operationKey": "tok-org-1-7", "routingDomain": "org-1"}));

    let requests = fake.requests();
    assert_eq!(requests.len(), 5, "450 sandboxes in pages of 100");
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(r.authorization.as_deref(), Some("Bearer key-1"));
        assert_eq!(r.organization_header, None, "an API key carries its organization");
        assert_eq!(r.query.get("sort").map(String::as_str), Some("createdAt"));
        assert_eq!(r.query.get("order").map(String::as_str), Some("asc"));
        assert_eq!(r.query.get("limit").map(String::as_str), Some("100"));
        assert_eq!(r.query.get("labels").map(String::as_str), Some(SCOPE));
        // Sandboxes whose deletion failed still exist and may hold capacity (fact a5): asked for.
        assert_eq!(r.query.get("includeErroredDeleted").map(String::as_str), Some("true"));
        assert!(!r.query.keys().any(|k| k.starts_with("states") || k.contains("Cpu") || k.contains("GiB")));
        // The cursor comes back verbatim: + / and = survive the round trip.
        let cursor = r.query.get("cursor").cloned();
        assert_eq!(cursor, (i > 0).then(|| format!("eyJ+/{}/+==", i * 100)));
    }
}

#[test]
fn a_jwt_lists_with_the_organization_header() {
    let fake = Fake::start();
    fake.key("jwt-1", "org-unused").sandboxes(fleet("org-1", 3));
    let mut log = Vec::new();
    let jwt = |name: &str| (name == "DAYTONA_JWT_TOKEN").then(|| "jwt-1".to_string());
    let outcome = run(&cli(&fake, &[]), &jwt, &mut |l| log.push(l)).unwrap();
    assert_eq!(outcome.sandboxes, 3);
    assert_eq!(fake.requests()[0].organization_header.as_deref(), Some("org-1"));
}

#[test]
fn several_organizations_go_into_one_listing() {
    let fake = Fake::start();
    let dir = std::env::temp_dir().join(format!("recorder-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key2 = dir.join("org-2.key");
    std::fs::write(&key2, "key-2\n").unwrap();
    let mut sandboxes = fleet("org-1", 3);
    sandboxes.extend(fleet("org-2", 2));
    fake.key("key-1", "org-1").key("key-2", "org-2").sandboxes(sandboxes);
    let spec = format!("org-2={}", key2.display());
    let outcome = list(&fake, &["--organization", &spec]).0.unwrap();
    assert_eq!(ids(&outcome), ["org-1-sb-0000", "org-1-sb-0001", "org-1-sb-0002", "org-2-sb-0000", "org-2-sb-0001"]);
    let items: Vec<serde_json::Value> = serde_json::from_str(&outcome.inventory()).unwrap();
    assert_eq!(items[4]["routingDomain"], "org-2");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_page_that_fails_once_and_a_throttled_page_are_retried() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 30)).quirk(2, Quirk::Status(503)).quirk(4, Quirk::Throttled(1));
    let started = Instant::now();
    let (outcome, log) = list(&fake, &["--page-size", "10"]);
    assert_eq!(outcome.unwrap().sandboxes, 30);
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After-authenticated: 1 was honoured");
    assert!(log.iter().any(|l| l.contains("page 2: 503 from the server; retry 1/5")), "{log:?}");
    assert!(log.iter().any(|l| l.contains("429 Too Many Requests; retry 1/5 in 1000 ms")), "{log:?}");
    // The retried requests asked for the same page again.
    let requests = fake.requests();
    assert_eq!(requests[1].query.get("cursor"), requests[2].query.get("cursor"));
}

#[test]
fn a_server_asking_to_wait_too_long_or_failing_past_the_retries_is_incomplete() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(1, Quirk::Throttled(120));
    let failure = list(&fake, &[]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains("longer than --max-retry-wait"), "{}", failure.message);

    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 5));
    for n in 1..=3 {
        fake.quirk(n, Quirk::Status(500));
    }
    let failure = list(&fake, &["--retries", "2"]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains("page 1 failed 3 times (--retries 2)"), "{}", failure.message);
}

#[test]
fn a_response_slower_than_the_timeout_is_retried_then_fails() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(1, Quirk::Slow(Duration::from_millis(1500)));
    let (outcome, log) = list(&fake, &["--timeout", "0.5"]);
    assert_eq!(outcome.unwrap().sandboxes, 5, "the retry was answered in time");
    assert!(log.iter().any(|l| l.contains("no answer within --timeout 0.5 s")), "{log:?}");

    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 5));
    for n in 1..=2 {
        fake.quirk(n, Quirk::Slow(Duration::from_millis(800)));
    }
    let failure = list(&fake, &["--timeout", "0.3", "--retries", "1"]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
}

#[test]
fn what_a_whole_listing_cannot_show_ends_the_walk() {
    for (quirk, code, why) in [
        (Quirk::RepeatId, exit::INCOMPLETE, "was already listed"),
        (Quirk::ForeignItem, exit::INCOMPLETE, "belongs to organization \"org-elsewhere\", not \"org-1\""),
        (Quirk::Malformed, exit::INCOMPLETE, "not JSON"),
        (Quirk::UnknownShape, exit::INCOMPLETE, "Daytona v0.190.0"),
        (Quirk::Status(404), exit::INCOMPLETE, "not a Daytona API"),
        (Quirk::Status(400), exit::INCOMPLETE, "400 Bad Request"),
        (Quirk::Status(401), exit::AUTH, "401 Unauthorized"),
        (Quirk::Status(403), exit::AUTH, "403 Forbidden"),
    ] {
        let fake = Fake::start();
        fake.key("key-1", "org-1").sandboxes(fleet("org-1", 25)).quirk(2, quirk.clone());
        let failure = list(&fake, &["--page-size", "10"]).0.unwrap_err();
        assert_eq!(failure.code, code, "{quirk:?}: {}", failure.message);
        assert!(failure.message.contains(why), "{quirk:?}: {}", failure.message);
        assert!(fake.requests().len() <= 2, "{quirk:?}: failed at once, no retry");
    }
}

#[test]
fn a_wrong_key_an_unknown_url_and_bad_configuration_fail_clearly() {
    let fake = Fake::start();
    fake.key("key-other", "org-1").sandboxes(fleet("org-1", 3));
    let failure = list(&fake, &[]).0.unwrap_err();
    assert_eq!(failure.code, exit::AUTH);
    assert!(!failure.message.contains("key-1"), "never print a key: {}", failure.message);

    let fake = Fake::start();
    fake.key("key-1", "org-1");
    let mut c = cli(&fake, &[]);
    c.api_url = format!("{}/v2", fake.url);
    let failure = run(&c, &with_key, &mut |_| {}).unwrap_err();
    assert_eq!((failure.code, failure.message.contains("404")), (exit::INCOMPLETE, true), "{}", failure.message);

    let sent = fake.requests().len();
    for (labels, why) in [("{}", "--unscoped"), ("app=x", "not JSON"), (r#"{"app": 1}"#, "not a string")] {
        let mut c = cli(&fake, &[]);
        c.labels = labels.into();
        let failure = run(&c, &with_key, &mut |_| {}).unwrap_err();
        assert_eq!(failure.code, exit::USAGE);
        assert!(failure.message.contains(why), "{labels}: {}", failure.message);
    }
    let mut c = cli(&fake, &[]);
    c.organization_id = None;
    assert!(run(&c, &with_key, &mut |_| {}).unwrap_err().message.contains("no organization id"));
    assert_eq!(fake.requests().len(), sent, "bad configuration sends nothing");
}

#[test]
fn the_old_plain_array_is_the_listing_of_a_server_without_paging() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 4)).plain_array();
    let (outcome, log) = list(&fake, &[]);
    let outcome = outcome.unwrap();
    assert_eq!(outcome.sandboxes, 4);
    assert!(!outcome.inventory().contains("SECRET") && !log.concat().contains("do-not-log"), "only id, organizationId and labels are read");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn an_empty_listing_and_a_missing_operation_label_are_refused_unless_expected() {
    let fake = Fake::start();
    fake.key("key-1", "org-1");
    let failure = list(&fake, &[]).0.unwrap_err();
    assert_eq!(failure.code, exit::REFUSED);
    assert!(failure.message.contains("--allow-empty org-1"), "{}", failure.message);
    assert_eq!(list(&fake, &["--allow-empty", "org-1"]).0.unwrap().inventory(), "[]");

    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 3));
    let failure = list(&fake, &["--operation-label", "no-such-label"]).0.unwrap_err();
    assert_eq!(failure.code, exit::REFUSED);
    let outcome = list(&fake, &["--operation-label", "no-such-label", "--allow-missing-operation-label"]).0.unwrap();
    assert!(outcome.inventory().contains(r#""operationKey":null"#));
}

#[test]
fn sandboxes_whose_deletion_failed_are_listed_unless_excluded() {
    let fake = Fake::start();
    let mut sandboxes = fleet("org-1", 4);
    for (id, state) in [("failed-delete-1", "error"), ("failed-delete-2", "build_failed")] {
        sandboxes.push(FakeSandbox::new(id, "org-1", &[("app", "runtime-scheduler")], state).deletion_failed());
    }
    fake.key("key-1", "org-1").sandboxes(sandboxes);
    // By default: they still exist, so they are listed (and their operations are not called absent).
    let listed = ids(&list(&fake, &[]).0.unwrap());
    assert_eq!(listed.len(), 6);
    assert!(listed.contains(&"failed-delete-1".to_string()) && listed.contains(&"failed-delete-2".to_string()));
    // The old flag is still accepted and means the same.
    assert_eq!(ids(&list(&fake, &["--include-errored-deleted"]).0.unwrap()), listed);
    // Left out when told: the parameter is not sent at all (the old endpoint reads "false" as true).
    let before = fake.requests().len();
    let without = ids(&list(&fake, &["--exclude-errored-deleted"]).0.unwrap());
    assert_eq!(without.len(), 4);
    assert!(!fake.requests()[before].query.contains_key("includeErroredDeleted"));
}

#[test]
fn an_item_outside_the_label_scope_fails_the_listing() {
    // A server (or a proxy) that ignores the labels filter: the foreign item is caught, nothing is listed.
    let fake = Fake::start();
    let mut sandboxes = fleet("org-1", 5);
    sandboxes.insert(3, FakeSandbox::new("billing-7", "org-1", &[("app", "billing")], "started"));
    sandboxes.push(FakeSandbox::new("unlabelled-1", "org-1", &[], "started"));
    fake.key("key-1", "org-1").sandboxes(sandboxes).ignore_labels();
    let failure = list(&fake, &[]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
    assert!(failure.message.contains("sandbox billing-7 is outside the label scope"), "{}", failure.message);
    assert!(failure.message.contains(r#"its label "app" is "billing", not "runtime-scheduler""#), "{}", failure.message);
    // A missing label is named too (a scope of two labels, the second missing on every item).
    let failure = list(&fake, &["--labels", r#"{"app":"runtime-scheduler","env":"production"}"#]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains(r#"it has no label "env""#), "{}", failure.message);
    // --unscoped asks for every sandbox: nothing is outside.
    let outcome = list(&fake, &["--labels", "{}", "--unscoped"]).0.unwrap();
    assert_eq!(outcome.sandboxes, 7);
    // A server that filters: the same scope lists the five.
    let fake = Fake::start();
    let mut sandboxes = fleet("org-1", 5);
    sandboxes.push(FakeSandbox::new("billing-7", "org-1", &[("app", "billing")], "started"));
    fake.key("key-1", "org-1").sandboxes(sandboxes);
    assert_eq!(list(&fake, &[]).0.unwrap().sandboxes, 5);
}

#[test]
fn the_binary_prints_the_inventory_and_exits_with_the_documented_codes() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 2));
    let bin = env!("CARGO_BIN_EXE_runtime-sandbox-recorder");
    let out = std::process::Command::new(bin)
        .args(["--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op", "--dry-run"])
        .env("DAYTONA_API_KEY", "key-1")
        .env("DAYTONA_ORGANIZATION_ID", "org-1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let items: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(items.len(), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("organization org-1: 2 sandboxes in 1 pages"), "{stderr}");
    assert!(!stderr.contains("key-1"));

    let out = std::process::Command::new(bin)
        .args(["--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op", "--dry-run"])
        .env("DAYTONA_API_KEY", "wrong")
        .env("DAYTONA_ORGANIZATION_ID", "org-1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(exit::AUTH as i32));
    assert!(out.stdout.is_empty());
    let help = std::process::Command::new(bin).arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit codes"));
}

#[test]
fn a_run_past_its_deadline_records_nothing_and_says_how_far_it_got() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 40)).delay(Duration::from_millis(150));
    let started = Instant::now();
    let failure = list(&fake, &["--page-size", "2", "--deadline", "1"]).0.unwrap_err();
    let took = started.elapsed();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
    assert!(failure.message.starts_with("the run's deadline (--deadline 1 s) passed while listing organization org-1: "), "{}", failure.message);
    assert!(failure.message.contains("sandboxes listed so far") && failure.message.ends_with("nothing recorded"), "{}", failure.message);
    assert!(took < Duration::from_millis(1900), "{took:?}");
    // One stalled page: the request gets only what is left of the run, not --timeout.
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 3)).quirk(1, Quirk::Slow(Duration::from_secs(5)));
    let started = Instant::now();
    let failure = list(&fake, &["--deadline", "1", "--timeout", "30"]).0.unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
    assert!(failure.message.contains("0 pages and 0 sandboxes listed so far"), "{}", failure.message);
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
    // Within it, the same listing completes.
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 40));
    assert_eq!(list(&fake, &["--page-size", "2", "--deadline", "30"]).0.unwrap().sandboxes, 40);
}

#[test]
fn daytona_server_url_is_read_as_the_sdks_read_it() {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 2));
    let args = [
        "runtime-sandbox-recorder", "--labels", SCOPE, "--operation-label", "runtime-op", "--organization-id", "org-1",
        "--dry-run",
    ];
    let url = fake.url.clone();
    let env = move |name: &str| match name {
        "DAYTONA_API_KEY" => Some("key-1".to_string()),
        "DAYTONA_SERVER_URL" => Some(url.clone()),
        _ => None,
    };
    let mut log = Vec::new();
    let outcome = run(&Cli::try_parse_from(args).unwrap(), &env, &mut |l| log.push(l)).unwrap();
    assert_eq!(outcome.sandboxes, 2);
    assert!(log.iter().any(|l| l.contains("DAYTONA_SERVER_URL is deprecated")), "{log:?}");
    // --api-url (or DAYTONA_API_URL) wins over it.
    let other = Fake::start();
    other.key("key-1", "org-1").sandboxes(fleet("org-1", 5));
    let mut with_flag = args.to_vec();
    with_flag.extend(["--api-url", &other.url]);
    assert_eq!(run(&Cli::try_parse_from(with_flag).unwrap(), &env, &mut |_| {}).unwrap().sandboxes, 5);
}

#[test]
fn a_refused_connection_names_the_host() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/api");
    let mut log = Vec::new();
    let c = Cli::try_parse_from([
        "runtime-sandbox-recorder", "--api-url", &url, "--labels", SCOPE, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--dry-run", "--retries", "1", "--backoff-ms", "10",
    ])
    .unwrap();
    let failure = run(&c, &with_key, &mut |l| log.push(l)).unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains(&format!("127.0.0.1:{port}: connection refused")), "{}", failure.message);
}
