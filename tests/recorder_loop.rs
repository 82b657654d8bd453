//! The whole loop with no application: the recorder lists a fake Daytona on
//! 127.0.0.1 (recorder/tests/fake_daytona) and records complete listings in a
//! real ledger, every incomplete or refused one recording nothing (the
//! snapshot table is read after each run); then a real pg_cron job reconciles
//! from the recorded snapshots.
//!
//! pg_cron schedules only from the database cron.database_name names
//! ('postgres' on the scratch cluster), so the ledger lives there, as in
//! tests/reconcile_cron.rs (the binaries run one after another).

mod common;
#[path = "../recorder/tests/fake_daytona/mod.rs"]
mod fake_daytona;

use clap::Parser;
use fake_daytona::{Fake, FakeSandbox, Quirk};
use postgres::Client;
use runtime_sandbox_recorder::{exit, run, Cli, Failure, Outcome};
use std::time::{Duration, Instant};

const LEDGER: &str = "recorder_ledger";
const SCOPE: &str = r#"{"app":"runtime-scheduler"}"#;

fn fleet(org: &str, n: usize) -> Vec<FakeSandbox> {
    (0..n)
        .map(|i| {
            FakeSandbox::new(
                &format!("{org}-sb-{i}"),
                org,
                &[("app", "runtime-scheduler"), ("runtime-op", &format!("tok-{i}"))],
                if i % 2 == 0 { "started" } else { "stopped" },
            )
        })
        .collect()
}

fn record(fake: &Fake, extra: &[&str]) -> Result<Outcome, Failure> {
    record_as("postgres", "postgres", LEDGER, fake, extra)
}

fn record_as(user: &str, dbname: &str, ledger: &str, fake: &Fake, extra: &[&str]) -> Result<Outcome, Failure> {
    let database = format!("host=127.0.0.1 port={} user={user} dbname={dbname}", common::port());
    let mut args = vec![
        "runtime-sandbox-recorder", "--api-url", &fake.url, "--labels", SCOPE, "--operation-label", "runtime-op",
        "--organization-id", "org-1", "--database", &database, "--ledger-schema", ledger, "--backoff-ms", "10",
        "--page-size", "2",
    ];
    args.extend_from_slice(extra);
    let cli = Cli::try_parse_from(args).unwrap();
    run(&cli, &|name| (name == "DAYTONA_API_KEY").then(|| "key-1".to_string()), &mut |_| {})
}

fn snapshots(db: &mut Client) -> Vec<(String, i32)> {
    db.query(&format!("SELECT environment, item_count FROM {LEDGER}.provider_inventory_snapshots ORDER BY snapshot_id"), &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn setup(db: &mut Client) {
    db.batch_execute(&format!(
        "SET client_min_messages = warning;
         CREATE EXTENSION IF NOT EXISTS pg_cron;
         SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname LIKE '%:{LEDGER}%';
         DROP SCHEMA IF EXISTS {LEDGER} CASCADE;
         DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;
         CREATE EXTENSION runtime_sandbox;
         SELECT runtime_sandbox.install_ledger('{LEDGER}');
         -- Five live sandboxes of org-1 the listing shows, one it no longer does; staging's one lives in org-2.
         INSERT INTO {LEDGER}.runtime_sandbox_operations
             (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
         SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org', 'production', 'org-1-sb-' || i, 'org-1',
                'live'::{LEDGER}.runtime_sandbox_operation_state, now() - interval '2 hours'
         FROM generate_series(0, 4) AS i
         UNION ALL
         SELECT 'op-gone', 'daytona', 'run-gone', 1, 'org', 'production', 'org-1-gone', 'org-1', 'live', now() - interval '2 hours'
         UNION ALL
         SELECT 'op-staging', 'daytona', 'run-s', 1, 'org', 'staging', 'org-2-sb-0', 'org-2', 'live', now() - interval '2 hours';"
    ))
    .unwrap();
}

fn teardown(db: &mut Client) {
    db.batch_execute(&format!(
        "SET client_min_messages = warning;
         SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname LIKE '%:{LEDGER}%';
         DROP SCHEMA IF EXISTS {LEDGER} CASCADE;
         DROP EXTENSION IF EXISTS runtime_sandbox CASCADE;"
    ))
    .unwrap();
}

#[test]
fn the_recorder_records_only_complete_listings_and_pg_cron_reconciles_them() {
    let mut db = common::connect("postgres");
    setup(&mut db);

    // Listings that must record nothing, each with its exit code.
    let cases: Vec<(&str, Box<dyn Fn(&Fake)>, Vec<&str>, u8)> = vec![
        ("a wrong key", Box::new(|f: &Fake| { f.key("other-key", "org-1").sandboxes(fleet("org-1", 5)); }), vec![], exit::AUTH),
        ("an item of another organization", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(2, Quirk::ForeignItem); }), vec![], exit::INCOMPLETE),
        ("a cursor that repeats an id", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(3, Quirk::RepeatId); }), vec![], exit::INCOMPLETE),
        ("a malformed page", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(2, Quirk::Malformed); }), vec![], exit::INCOMPLETE),
        ("an unknown shape", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(1, Quirk::UnknownShape); }), vec![], exit::INCOMPLETE),
        ("a page failing past its retries", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)).quirk(2, Quirk::Status(502)).quirk(3, Quirk::Status(502)); }), vec!["--retries", "1"], exit::INCOMPLETE),
        ("an empty listing", Box::new(|f: &Fake| { f.key("key-1", "org-1"); }), vec![], exit::REFUSED),
        ("staging's org-2 not listed", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)); }), vec!["--environment", "staging"], exit::REFUSED),
        ("no ledger", Box::new(|f: &Fake| { f.key("key-1", "org-1").sandboxes(fleet("org-1", 5)); }), vec!["--ledger-schema", "no_such_ledger"], exit::DATABASE),
    ];
    for (what, prepare, extra, code) in cases {
        let fake = Fake::start();
        prepare(&fake);
        let failure = record(&fake, &extra).unwrap_err();
        assert_eq!(failure.code, code, "{what}: {}", failure.message);
        assert_eq!(snapshots(&mut db), [], "{what}: nothing recorded");
    }
    // The coverage check reads the ledger before listing: nothing was asked of Daytona.
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 5));
    record(&fake, &["--environment", "staging"]).unwrap_err();
    assert!(fake.requests().is_empty());

    // Two complete listings (the second after a 503 and a 429), recorded whole: 5 sandboxes each.
    let fake = Fake::start();
    let mut sandboxes = fleet("org-1", 5);
    sandboxes.push(FakeSandbox::new("not-ours", "org-1", &[("app", "billing")], "started"));
    fake.key("key-1", "org-1").sandboxes(sandboxes);
    let first = record(&fake, &[]).unwrap();
    fake.quirk(5, Quirk::Status(503)).quirk(7, Quirk::Throttled(1));
    let second = record(&fake, &[]).unwrap();
    assert!(second.snapshot_id > first.snapshot_id);
    assert_eq!(snapshots(&mut db), [("production".to_string(), 5), ("production".to_string(), 5)]);
    let items: Vec<(String, Option<String>, Option<String>)> = db
        .query(
            &format!("SELECT sandbox_id, operation_key, routing_domain FROM {LEDGER}.provider_inventory_items
                      WHERE snapshot_id = $1 ORDER BY item_index"),
            &[&second.snapshot_id.unwrap()],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(items[3], ("org-1-sb-3".to_string(), Some("tok-3".to_string()), Some("org-1".to_string())));
    assert_eq!(items.len(), 5);

    // pg_cron reconciles the newest snapshot with no application: the gone sandbox is confirmed absent by
    // both snapshots, the listed ones get their leases.
    db.batch_execute(&format!("SELECT runtime_sandbox.schedule_reconciliation('* * * * *', ledger_schema => '{LEDGER}')")).unwrap();
    let started = Instant::now();
    while db.query_one(&format!("SELECT count(*) FROM {LEDGER}.reconciliation_runs"), &[]).unwrap().get::<_, i64>(0) == 0 {
        assert!(started.elapsed() < Duration::from_secs(75), "no pg_cron run within 75 s");
        std::thread::sleep(Duration::from_millis(500));
    }
    let run = db
        .query_one(
            &format!("SELECT status, environment, snapshot_id, (summary->>'marked_deleted')::int, (summary->>'seeded_leases')::int
                      FROM {LEDGER}.reconciliation_runs ORDER BY id LIMIT 1"),
            &[],
        )
        .unwrap();
    assert_eq!(
        (run.get::<_, String>(0), run.get::<_, String>(1), run.get::<_, Option<i64>>(2), run.get::<_, i32>(3), run.get::<_, i32>(4)),
        ("applied".to_string(), "production".to_string(), second.snapshot_id, 1, 5)
    );
    let gone: String = db
        .query_one(&format!("SELECT state::text FROM {LEDGER}.runtime_sandbox_operations WHERE operation_key = 'op-gone'"), &[])
        .unwrap()
        .get(0);
    assert_eq!(gone, "deleted");
    let staging: String = db
        .query_one(&format!("SELECT state::text FROM {LEDGER}.runtime_sandbox_operations WHERE operation_key = 'op-staging'"), &[])
        .unwrap()
        .get(0);
    assert_eq!(staging, "live", "production's job never touches staging");
    teardown(&mut db);
}

/// docs/privileges.md's recorder role, its block run for a fresh role beside a NOLOGIN ledger owner: without it the
/// recorder is refused and records nothing; with it the recorder records as that role.
#[test]
fn the_documented_recorder_role_records_and_nothing_less_does() {
    const ROLE: &str = "rs_recorder_role";
    const OWNER: &str = "rs_recorder_owner";
    const ROLE_LEDGER: &str = "role_ledger";
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/privileges.md")).unwrap();
    let section = text.split("\n## Recorder role").nth(1).unwrap().split("\n## ").next().unwrap();
    let block = section.split("```sql\n").nth(1).unwrap().split("```").next().unwrap();
    let block = block.replace("runtime_sandbox_recorder", ROLE).replace("runtime_sandbox_ledger", OWNER);
    let dbname = common::fresh_database("it_recorder_role");
    let mut admin = common::connect(&dbname);
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN
                 IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN DROP ROLE {ROLE}; END IF;
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{OWNER}') THEN CREATE ROLE {OWNER} NOLOGIN; END IF;
             END $$;
             CREATE SCHEMA {ROLE_LEDGER} AUTHORIZATION {OWNER};
             SELECT runtime_sandbox.install_ledger('{ROLE_LEDGER}');
             INSERT INTO {ROLE_LEDGER}.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_created_at)
             SELECT 'op-' || i, 'daytona', 'run-' || i, 1, 'org', 'production', 'org-1-sb-' || i, 'org-1', 'live', now()
             FROM generate_series(0, 2) AS i;
             -- Which recordings were streamed: a COPY into the stream table fires this once.
             CREATE TABLE public.rs_streamed (at timestamptz DEFAULT now());
             GRANT INSERT ON public.rs_streamed TO PUBLIC;
             CREATE FUNCTION public.rs_streamed() RETURNS trigger LANGUAGE plpgsql
                 AS $f$ BEGIN INSERT INTO public.rs_streamed DEFAULT VALUES; RETURN NULL; END $f$;
             CREATE TRIGGER streamed AFTER INSERT ON {ROLE_LEDGER}.provider_inventory_stream
                 FOR EACH STATEMENT EXECUTE FUNCTION public.rs_streamed();"
        ))
        .unwrap();
    let streamed = |admin: &mut Client| -> i64 { admin.query_one("SELECT count(*) FROM public.rs_streamed", &[]).unwrap().get(0) };
    let fake = Fake::start();
    fake.key("key-1", "org-1").sandboxes(fleet("org-1", 3));
    // A login role without the block: refused, nothing recorded.
    admin.batch_execute(&format!("CREATE ROLE {ROLE} LOGIN")).unwrap();
    let refused = record_as(ROLE, &dbname, ROLE_LEDGER, &fake, &[]).unwrap_err();
    assert_eq!(refused.code, exit::DATABASE, "{}", refused.message);
    assert!(refused.message.contains("permission denied"), "{}", refused.message);
    admin.batch_execute(&format!("DROP ROLE {ROLE}")).unwrap();
    admin.batch_execute(&block).unwrap_or_else(|e| panic!("docs/privileges.md's grants: {}", common::db_message(&e)));
    let recorded = record_as(ROLE, &dbname, ROLE_LEDGER, &fake, &[])
        .unwrap_or_else(|f| panic!("the recorder as {ROLE}: {}", f.message));
    let items: i32 = admin
        .query_one(&format!("SELECT item_count FROM {ROLE_LEDGER}.provider_inventory_snapshots WHERE snapshot_id = $1"), &[&recorded.snapshot_id.unwrap()])
        .unwrap()
        .get(0);
    assert_eq!(items, 3);
    assert_eq!(streamed(&mut admin), 1, "streamed by COPY and published");
    let left: i64 = admin.query_one(&format!("SELECT count(*) FROM {ROLE_LEDGER}.provider_inventory_stream"), &[]).unwrap().get(0);
    assert_eq!(left, 0, "the published rows are removed");
    // A role granted only record_inventory_snapshot (the grants before 0.4.0) records as one JSON value.
    admin.batch_execute(&format!("REVOKE EXECUTE ON FUNCTION runtime_sandbox.publish_inventory_snapshot FROM {ROLE}")).unwrap();
    let again = record_as(ROLE, &dbname, ROLE_LEDGER, &fake, &[]).unwrap_or_else(|f| panic!("without publish: {}", f.message));
    let items: Vec<(i32, String)> = admin
        .query(
            &format!("SELECT i.item_index, i.sandbox_id FROM {ROLE_LEDGER}.provider_inventory_items i WHERE i.snapshot_id = $1
                      EXCEPT SELECT i.item_index, i.sandbox_id FROM {ROLE_LEDGER}.provider_inventory_items i WHERE i.snapshot_id = $2"),
            &[&again.snapshot_id.unwrap(), &recorded.snapshot_id.unwrap()],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(items, [], "the same items either way");
    assert_eq!(streamed(&mut admin), 1, "not streamed without EXECUTE on publish_inventory_snapshot");
    drop(admin);
    common::drop_database(&dbname);
    common::connect("postgres").batch_execute(&format!("DROP ROLE {ROLE}; DROP OWNED BY {OWNER}; DROP ROLE {OWNER}")).unwrap();
}
