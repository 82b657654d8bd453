//! The parallel listing against the fake Daytona serving `createdAtAfter`/`createdAtBefore`: on a listing that
//! does not change it equals the sequential walk item for item, the ranges tile the time (adjacent ones share
//! their boundary, the first continues the sequential cursor, the last is open), and each fault the sequential
//! walk refuses is refused in whichever range it happens, as are a server that ignores the filters and a sandbox
//! without `createdAt`.

mod fake_daytona;

use clap::Parser;
use fake_daytona::{Fake, FakeSandbox, Quirk};
use runtime_sandbox_recorder::{exit, run, Cli, Failure, Outcome};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

const SCOPE: &str = r#"{"app":"runtime-scheduler"}"#;

/// `n` sandboxes created over the last two hours, oldest first, `createdAt` with sub-millisecond parts (Daytona
/// stores more than it prints), every fifth one sharing its predecessor's instant (ties sort by id).
fn fleet(n: usize) -> Vec<FakeSandbox> {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_micros() as i64;
    let start = now - 2 * 3_600_000_000;
    let mut created = start;
    (0..n)
        .map(|i| {
            if i % 5 != 4 {
                created = start + (i as i64) * 7_000_000_000 / (n as i64) + (i as i64 * 137) % 1_000;
            }
            FakeSandbox::new(
                &format!("sb-{i:05}"),
                "org-1",
                &[("app", "runtime-scheduler"), ("runtime-op", &format!("tok-{i}"))],
                "started",
            )
            .created(Some(created))
        })
        .collect()
}

fn list(fake: &Fake, extra: &[&str]) -> Result<Outcome, Failure> {
    let mut args = vec![
        "runtime-sandbox-recorder", "--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--dry-run", "--backoff-ms", "10", "--timeout", "2", "--page-size", "10",
        "--requests-per-second", "0",
    ];
    args.extend_from_slice(extra);
    let cli = Cli::try_parse_from(args).unwrap();
    run(&cli, &|name| (name == "DAYTONA_API_KEY").then(|| "key-1".to_string()), &mut |_| {})
}

fn serving(sandboxes: Vec<FakeSandbox>) -> Fake {
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(sandboxes);
    fake
}

#[test]
fn the_parallel_listing_equals_the_sequential_one_item_for_item() {
    for n in [120, 333] {
        let sequential = list(&serving(fleet(n)), &["--concurrency", "1"]).unwrap();
        let fake = serving(fleet(n));
        let parallel = list(&fake, &["--concurrency", "8"]).unwrap();
        assert_eq!(parallel.sandboxes, n);
        assert_eq!(parallel.inventory(), sequential.inventory(), "{n} sandboxes");

        // The split happened, and its ranges tile the time: the first pages are the sequential walk's, the
        // first range continues its cursor, adjacent ranges share a boundary, the last range is open.
        let requests = fake.requests();
        let filtered: Vec<_> = requests.iter().filter(|r| r.query.contains_key("createdAtAfter") || r.query.contains_key("createdAtBefore")).collect();
        assert!(!filtered.is_empty(), "{n}: no range was asked for");
        assert!(requests[..5].iter().all(|r| !r.query.contains_key("createdAtAfter") && !r.query.contains_key("createdAtBefore")));
        let afters: BTreeSet<&str> = filtered.iter().filter_map(|r| r.query.get("createdAtAfter").map(String::as_str)).collect();
        let befores: BTreeSet<&str> = filtered.iter().filter_map(|r| r.query.get("createdAtBefore").map(String::as_str)).collect();
        assert!(filtered.iter().all(|r| r.query.contains_key("createdAtAfter")), "only the first range has no createdAtAfter, and it continues a cursor");
        assert!(filtered.iter().any(|r| !r.query.contains_key("createdAtBefore")), "the last range is open");
        // Every boundary closes one range and opens the next; the first range's end opens the second only (the
        // first range continues the sequential cursor and stops there by itself).
        let unclosed: Vec<&&str> = afters.difference(&befores).collect();
        assert_eq!(unclosed.len(), 1, "{n}: {unclosed:?}");
        assert!(befores.is_subset(&afters), "{n}: a range ends where none begins");
        // The same sort, order and scope on every request.
        for r in &requests {
            assert_eq!(r.query.get("sort").map(String::as_str), Some("createdAt"));
            assert_eq!(r.query.get("order").map(String::as_str), Some("asc"));
            assert_eq!(r.query.get("labels").map(String::as_str), Some(SCOPE));
        }
    }
}

#[test]
fn a_short_listing_is_walked_exactly_as_before() {
    let fake = serving(fleet(45));
    let outcome = list(&fake, &["--concurrency", "8"]).unwrap();
    assert_eq!(outcome.sandboxes, 45);
    assert_eq!(fake.requests().len(), 5, "45 sandboxes in pages of 10, no range asked for");
}

#[test]
fn every_fault_the_sequential_walk_refuses_is_refused_in_a_range() {
    let faults: Vec<(&str, Box<dyn Fn(&Fake)>, Vec<&str>)> = vec![
        ("a malformed page", Box::new(|f: &Fake| { f.ranged_quirk(3, Quirk::Malformed); }), vec![]),
        ("an unknown shape", Box::new(|f: &Fake| { f.ranged_quirk(2, Quirk::UnknownShape); }), vec![]),
        ("an item of another organization", Box::new(|f: &Fake| { f.ranged_quirk(4, Quirk::ForeignItem); }), vec![]),
        (
            "a page failing past its retries",
            Box::new(|f: &Fake| { for n in 1..=40 { f.ranged_quirk(n, Quirk::Status(502)); } }),
            vec!["--retries", "1"],
        ),
        ("a server that ignores the createdAt filters", Box::new(|f: &Fake| { f.ignore_created(); }), vec![]),
    ];
    for (what, prepare, extra) in faults {
        let fake = serving(fleet(200));
        prepare(&fake);
        let mut args = vec!["--concurrency", "8"];
        args.extend(extra);
        let failure = match list(&fake, &args) {
            Ok(outcome) => panic!("{what}: recorded {} sandboxes", outcome.sandboxes),
            Err(failure) => failure,
        };
        assert_eq!(failure.code, exit::INCOMPLETE, "{what}: {}", failure.message);
    }
    // A sandbox without createdAt (the spec makes it optional) cannot be placed in a range: refused.
    let mut sandboxes = fleet(200);
    sandboxes[150] = sandboxes[150].clone().created(None);
    let failure = match list(&serving(sandboxes), &["--concurrency", "8"]) {
        Ok(outcome) => panic!("a sandbox without createdAt: recorded {} sandboxes", outcome.sandboxes),
        Err(failure) => failure,
    };
    assert_eq!(failure.code, exit::INCOMPLETE);
    assert!(failure.message.contains("no createdAt"), "{}", failure.message);
}

#[test]
fn the_ranges_overlap_their_page_delays() {
    // Not a timing assertion (benchmarks print figures): the walk finishes well inside a deadline the
    // sequential walk of the same pages could not meet.
    let fake = serving(fleet(400));
    fake.delay(Duration::from_millis(50));
    // 40 pages at 50 ms are 2 s sequentially.
    let outcome = list(&fake, &["--concurrency", "8", "--deadline", "1.5"]).unwrap();
    assert_eq!(outcome.sandboxes, 400);
    let failure = list(&fake, &["--concurrency", "1", "--deadline", "1.5"]).unwrap_err();
    assert_eq!(failure.code, exit::INCOMPLETE, "{}", failure.message);
}
