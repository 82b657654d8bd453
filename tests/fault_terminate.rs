//! `pg_terminate_backend` of a running `reconcile_daytona` apply, at moments
//! drawn from a seeded generator between 0 and a little past the call's
//! duration: the ledger is always exactly as before the call (the call is one
//! transaction) or as the same call leaves a twin database when it completes.
//! The test counts the terminations that landed mid-call and requires some.
//!
//! `RUNTIME_SANDBOX_TERMINATE_ROUNDS` (default 24), `RUNTIME_SANDBOX_TERMINATE_SANDBOXES`
//! (default 20,000) and `RUNTIME_SANDBOX_TERMINATE_SEED` run it longer or otherwise.

mod common;

use postgres::Client;
use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const LEDGER: &str = "runtime_scheduler";

/// The listing: every live or deleting sandbox without a cleanup row except
/// one in 40 (absent), the lost creates of one in three reserved operations
/// (recovered by label), nothing unowned.
const INVENTORY: &str = "CREATE TABLE public.terminate_inventory AS
    SELECT now() AS captured_at,
           (SELECT jsonb_agg(item ORDER BY ord) FROM (
                SELECT jsonb_build_object('sandboxId', o.sandbox_id, 'operationKey', o.provider_operation_token,
                                          'routingDomain', o.routing_domain) AS item,
                       substr(o.operation_key, 4)::int AS ord
                FROM runtime_scheduler.runtime_sandbox_operations o
                WHERE o.state IN ('live', 'deleting')
                  AND NOT EXISTS (SELECT 1 FROM runtime_scheduler.sandbox_cleanup_jobs_v2 c
                                  WHERE c.provider = o.provider AND c.sandbox_id = o.sandbox_id
                                    AND c.routing_domain_key = o.routing_domain_key)
                  AND substr(o.operation_key, 4)::int % 40 <> 1
                UNION ALL
                SELECT jsonb_build_object('sandboxId', 'late-' || o.operation_key, 'operationKey', o.provider_operation_token,
                                          'routingDomain', 'eu'),
                       substr(o.operation_key, 4)::int
                FROM runtime_scheduler.runtime_sandbox_operations o
                WHERE o.state = 'reserved' AND substr(o.operation_key, 4)::int % 3 = 0) listed) AS items";

const APPLY: &str = "SELECT r.status FROM runtime_sandbox.reconcile_daytona(
        (SELECT items FROM public.terminate_inventory), (SELECT captured_at FROM public.terminate_inventory),
        dry_run => false, batch_size => 1000, ledger_schema => 'runtime_scheduler') r";

/// Checksums of the ledger without what only the clock decides: timestamps by
/// NULL-ness, identity ids (sequences advance in rolled-back calls too), the
/// diagnostics' durations and a recovered attempt's billingStartedAt. Rows in
/// text order.
fn clock_free_checksums(c: &mut Client, schema: &str) -> BTreeMap<String, String> {
    common::user_tables(c, schema)
        .into_iter()
        .map(|table| {
            let columns: Vec<String> = c
                .query(
                    "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attidentity <> ''
                     FROM pg_attribute a
                     WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass AND a.attnum > 0 AND NOT a.attisdropped
                     ORDER BY a.attnum",
                    &[&schema, &table],
                )
                .unwrap()
                .iter()
                .filter(|r| !r.get::<_, bool>(2))
                .map(|r| {
                    let (name, ty): (String, String) = (r.get(0), r.get(1));
                    match (table.as_str(), name.as_str(), ty.as_str()) {
                        (_, _, "timestamp with time zone") => format!("t.{name} IS NULL"),
                        ("reconciliation_runs", "summary", _) => "t.summary || jsonb_build_object('diagnostics',
                            (SELECT coalesce(jsonb_agg(d - 'duration_ms' ORDER BY o), '[]') FROM jsonb_array_elements(t.summary->'diagnostics') WITH ORDINALITY x(d, o)))".into(),
                        ("attempts", "resource_json", _) => "CASE WHEN jsonb_typeof(t.resource_json) = 'array' THEN
                            (SELECT jsonb_agg(CASE WHEN jsonb_typeof(e) = 'object' THEN e - 'billingStartedAt' ELSE e END ORDER BY o)
                             FROM jsonb_array_elements(t.resource_json) WITH ORDINALITY x(e, o)) ELSE t.resource_json END".into(),
                        _ => format!("t.{name}"),
                    }
                })
                .collect();
            let sum: String = c
                .query_one(
                    &format!(
                        "SELECT count(*) || ':' || md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), ''))
                         FROM (SELECT ROW({}) AS r FROM \"{schema}\".\"{table}\" t) rows",
                        columns.join(", ")
                    ),
                    &[],
                )
                .unwrap()
                .get(0);
            (format!("{schema}.{table}"), sum)
        })
        .collect()
}

/// Run the apply to completion in `db`; its duration and the ledger afterwards.
fn completed_twin(base: &str, name: &str) -> (Duration, BTreeMap<String, String>) {
    let db = common::copy_database(base, name);
    let mut c = common::connect(&db);
    let started = Instant::now();
    let status: String = c.query_one(APPLY, &[]).unwrap().get(0);
    let took = started.elapsed();
    assert_eq!(status, "applied");
    (took, clock_free_checksums(&mut c, LEDGER))
}

/// Wait until the backend `pid` has exited (its locks and transaction with it).
fn wait_gone(c: &mut Client, pid: i32) {
    let started = Instant::now();
    while c.query_one("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", &[&pid]).unwrap().get::<_, i64>(0) > 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "backend {pid} did not exit");
        thread::sleep(Duration::from_millis(5));
    }
}

#[derive(Debug, Default)]
struct Tally {
    /// Terminated while running the call: the ledger is as before.
    mid_call: u32,
    /// Terminated before the call started (idle backend): as before.
    before_start: u32,
    /// The call committed and returned first: as the twin.
    completed: u32,
    /// The call committed, then the termination cut the connection before
    /// the client read the result: as the twin.
    committed_unseen: u32,
}

#[test]
fn fault_terminate_reconcile_leaves_the_ledger_before_or_after() {
    let n = common::env_number("RUNTIME_SANDBOX_TERMINATE_SANDBOXES", 20_000);
    let rounds = common::env_number("RUNTIME_SANDBOX_TERMINATE_ROUNDS", 24);
    let seed = common::env_number("RUNTIME_SANDBOX_TERMINATE_SEED", 11);
    let mut rng = common::Rng::new(seed);

    let base = common::fresh_database("fault_terminate_base");
    let (before_exact, before_free) = {
        let mut c = common::connect(&base);
        c.batch_execute(&common::sandbox_ledger_sql(n)).unwrap();
        c.batch_execute(INVENTORY).unwrap();
        (common::schema_checksums(&mut c, LEDGER), clock_free_checksums(&mut c, LEDGER))
    };
    // The same call on two twins: the after-state is one state, and the
    // twins give the call's typical duration.
    let (took_1, after) = completed_twin(&base, "fault_terminate_twin_1");
    let (took_2, after_2) = completed_twin(&base, "fault_terminate_twin_2");
    assert_eq!(after, after_2, "the apply is not deterministic apart from the clock");
    let changed: Vec<_> = after.iter().filter(|(t, s)| before_free.get(*t) != Some(*s)).map(|(t, _)| t.as_str()).collect();
    assert!(changed.len() >= 5, "the apply should write most ledger tables, wrote {changed:?}");
    let typical = (took_1 + took_2) / 2;

    let mut victim = common::copy_database(&base, "fault_terminate_victim");
    let mut killer = common::connect("postgres");
    let mut tally = Tally::default();
    for round in 0..rounds {
        // 0 .. 1.2 × the typical duration: most land inside the call, some before or after it.
        let delay = typical.mul_f64(rng.unit() * 1.2);
        let mut caller = common::connect(&victim);
        let pid: i32 = caller.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        let go = Arc::new(Barrier::new(2));
        let kill = {
            let go = Arc::clone(&go);
            let mut c = common::connect("postgres");
            thread::spawn(move || {
                go.wait();
                thread::sleep(delay);
                let row = c
                    .query_one("SELECT state, query, pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1", &[&pid])
                    .unwrap();
                let active = row.get::<_, Option<String>>(0).as_deref() == Some("active")
                    && row.get::<_, Option<String>>(1).is_some_and(|q| q.contains("reconcile_daytona"));
                (active, row.get::<_, bool>(2))
            })
        };
        go.wait();
        let result = caller.query_one(APPLY, &[]);
        let (was_active, terminated) = kill.join().unwrap();
        assert!(terminated, "round {round}: pg_terminate_backend found no backend {pid}");
        wait_gone(&mut killer, pid);

        let mut c = common::connect(&victim);
        let exact = common::schema_checksums(&mut c, LEDGER);
        let as_before = exact == before_exact;
        let as_after = !as_before && clock_free_checksums(&mut c, LEDGER) == after;
        let what = match &result {
            Ok(row) => format!("returned {}", row.get::<_, String>(0)),
            Err(e) => format!("failed: {}", common::db_message(e)),
        };
        assert!(
            as_before || as_after,
            "seed {seed} round {round}: after a termination {delay:?} into the call ({what}) the ledger is neither as before nor as after"
        );
        match (&result, as_before, was_active) {
            (Ok(row), _, _) => {
                assert!(as_after, "seed {seed} round {round}: the call returned but the ledger is as before");
                assert_eq!(row.get::<_, String>(0), "applied", "round {round}: a terminated call left its guard behind");
                tally.completed += 1;
            }
            (Err(_), true, true) => tally.mid_call += 1,
            (Err(_), true, false) => tally.before_start += 1,
            (Err(_), false, _) => tally.committed_unseen += 1,
        }
        drop(c);
        if as_after {
            victim = common::copy_database(&base, "fault_terminate_victim");
        }
    }
    println!("fault_terminate: {rounds} rounds, seed {seed}, call ≈ {typical:?} ({n} sandboxes): {tally:?}");
    assert!(tally.mid_call >= (rounds as u32 / 6).max(1), "too few terminations landed mid-call: {tally:?}");

    // Nothing is left behind: the call runs to the twin's state on the victim.
    let mut c = common::connect(&victim);
    assert_eq!(c.query_one(APPLY, &[]).unwrap().get::<_, String>(0), "applied");
    assert_eq!(clock_free_checksums(&mut c, LEDGER), after);
}
