//! The tests' fake Daytona as a program, for `make demo` and `make bench`:
//! serves N sandboxes of one organization under /api on 127.0.0.1, prints
//! its base URL on stdout, and runs until stdin closes. The sandboxes were created over the last 30 days,
//! oldest first, as a fleet is (the recorder's parallel listing splits by creation time).
//!
//!   fake_daytona <sandboxes> <organization> <api key> [delay per page, ms] [first sandbox index]

#[path = "../tests/fake_daytona/mod.rs"]
mod fake_daytona;

use fake_daytona::{Fake, FakeSandbox};
use std::io::{Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: fake_daytona <sandboxes> <organization> <api key> [delay per page, ms] [first index]";
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let org = args.get(2).expect(usage);
    let key = args.get(3).expect(usage);
    let delay: u64 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(0);
    let first: usize = args.get(5).and_then(|a| a.parse().ok()).unwrap_or(0);
    let states = ["started", "stopped", "archived", "error"];
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    let month: i64 = 30 * 86_400_000_000;
    let sandboxes = (first..first + n)
        .map(|i| {
            let created = now - month + ((i - first) as i64) * (month / n.max(1) as i64);
            FakeSandbox::new(
                &format!("sb-{i}"),
                org,
                &[("app", "runtime-scheduler"), ("runtime-op", &format!("op-{i}"))],
                states[i % states.len()],
            )
            .created(Some(created))
        })
        .collect();
    let fake = Fake::start();
    fake.key(key, org).sandboxes(sandboxes).delay(std::time::Duration::from_millis(delay));
    println!("{}", fake.url);
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
