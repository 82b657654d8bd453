//! Chaos on one 20,000-sandbox ledger: 8 connections apply (and dry-run)
//! `reconcile_daytona` in a loop, 4 connections act as cleanup workers (claim
//! pending cleanup rows with a lease, later delete them and release their
//! capacity, or give them up, writing their own events), and the backfill
//! procedure runs beside them. Between rounds the application adds sandboxes
//! and asks for cleanups, and the provider's listing changes (sandboxes appear,
//! vanish, lost creates show up by label, now and then a stray nobody owns).
//! After every round, in one snapshot:
//! - no live operation has a deleted cleanup row for its identity;
//! - one `reconciled_provider_confirmed_absent` event per cleanup row the
//!   reconciler changed: the events equal the sum of `marked_deleted` over the
//!   history, at most one per identity, each on a row the reconciler completed;
//! - no lease seeded twice: no identity with two open Daytona leases, and the
//!   leases added equal the sum of `seeded_leases`;
//! - no worker-owned cleanup row changed: every row a worker holds is exactly
//!   as the worker last wrote it (its own log);
//! - the history (`reconciliation_runs`) equals the summaries the callers received.
//!
//! Absent candidates stay far below half of the live ledger (the coming
//! mass-absence valve would not trip); calls use named arguments.
//! `RUNTIME_SANDBOX_CHAOS_ROUNDS` (default 15), `RUNTIME_SANDBOX_CHAOS_SANDBOXES`
//! (default 20,000) and `RUNTIME_SANDBOX_CHAOS_SEED` run it longer or otherwise.
//! `RUNTIME_SANDBOX_CHAOS_CITUS_PORT` runs the chaos on a Citus coordinator
//! (database citus_app, the ledger in a distributed schema on a worker; `make
//! test-citus` runs it so, after tests/citus.rs has made the cluster).

mod common;

use postgres::{Client, IsolationLevel};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

const RECONCILERS: usize = 8;
const WORKERS: usize = 4;
/// Calls per reconciler per round.
const CALLS: usize = 3;

/// The application between rounds: `$1` new sandboxes appear in the ledger
/// (half of them younger than the minimum age), and it asks to delete `$2`
/// listed sandboxes (a pending cleanup row each; the provider no longer lists them).
const APPLICATION_STEP: &str = "
    WITH new AS (
        SELECT 'r' || $2::int || '-' || g AS id, g FROM generate_series(1, $1::int) g
    ), runs AS (
        INSERT INTO runtime_scheduler.runs (run_id, org_id) SELECT 'run-' || id, 'org-new' FROM new
    )
    INSERT INTO runtime_scheduler.runtime_sandbox_operations
        (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_operation_token, provider_created_at)
    SELECT 'op-' || id, 'daytona', 'run-' || id, 1, 'org-new', 'sb-' || id, CASE WHEN g % 2 = 0 THEN 'eu' END, 'live',
           'label-' || id, now() - CASE WHEN g % 2 = 0 THEN interval '1 hour' ELSE interval '0' END
    FROM new;
    ";
const CLEANUP_REQUESTS: &str = "
    INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, available_at)
    SELECT o.provider, o.sandbox_id, o.run_id, o.attempt, o.routing_domain, 'pending', now() - interval '1 second'
    FROM runtime_scheduler.runtime_sandbox_operations o
    WHERE o.provider = 'daytona' AND o.state = 'live'
      AND NOT EXISTS (SELECT 1 FROM runtime_scheduler.sandbox_cleanup_jobs_v2 c
                      WHERE c.provider = o.provider AND c.sandbox_id = o.sandbox_id AND c.routing_domain_key = o.routing_domain_key)
    ORDER BY md5(o.operation_key || $2::text)
    LIMIT $1::int";

/// The provider's listing for a round (random choices seeded by `setseed`):
/// every live or deleting Daytona sandbox without a cleanup row except about
/// 1% that vanished, a fifth of the lost creates (by label, under a new
/// sandbox id), and with `$2` one stray no one owns.
const LISTING: &str = "
    INSERT INTO public.chaos_inventory (round, captured_at, items)
    SELECT $1::int, now(), coalesce(jsonb_agg(item), '[]') FROM (
        SELECT jsonb_build_object('sandboxId', o.sandbox_id, 'operationKey', o.provider_operation_token,
                                  'routingDomain', o.routing_domain) AS item
        FROM runtime_scheduler.runtime_sandbox_operations o
        WHERE o.provider = 'daytona' AND o.state IN ('live', 'deleting')
          AND NOT EXISTS (SELECT 1 FROM runtime_scheduler.sandbox_cleanup_jobs_v2 c
                          WHERE c.provider = o.provider AND c.sandbox_id = o.sandbox_id AND c.routing_domain_key = o.routing_domain_key)
          AND random() >= 0.01
        UNION ALL
        SELECT jsonb_build_object('sandboxId', 'late-' || o.operation_key, 'operationKey', o.provider_operation_token)
        FROM runtime_scheduler.runtime_sandbox_operations o
        WHERE o.provider = 'daytona' AND o.state = 'reserved' AND random() < 0.2
        UNION ALL
        SELECT jsonb_build_object('sandboxId', 'stray-' || $1::int) WHERE $2::bool
    ) listed";

const RECONCILE: &str = "
    SELECT r.status, to_jsonb(r)::text, r.absent_ledger_rows, r.marked_deleted
    FROM runtime_sandbox.reconcile_daytona(
        (SELECT items FROM public.chaos_inventory WHERE round = $1),
        (SELECT captured_at FROM public.chaos_inventory WHERE round = $1),
        dry_run => $2, batch_size => $3, ledger_schema => 'runtime_scheduler') r";

/// A worker claims up to two pending, unowned cleanup rows that were waiting
/// before the round began, the way a worker leases a job (SKIP LOCKED).
/// The workers' statements take the clock as `$3` (the worker's own), so that
/// they also run on Citus (no volatile function in a distributed UPDATE).
const CLAIM: &str = "
    WITH claimed AS (
        UPDATE runtime_scheduler.sandbox_cleanup_jobs_v2 AS job
        SET lease_owner = $1, lease_expires_at = $3::timestamptz + interval '5 minutes',
            cleanup_attempt = job.cleanup_attempt + 1, updated_at = $3::timestamptz
        WHERE job.id IN (
            SELECT id FROM runtime_scheduler.sandbox_cleanup_jobs_v2
            WHERE provider = 'daytona' AND status = 'pending' AND lease_owner IS NULL AND available_at <= $2
            ORDER BY md5(id::text || $1) LIMIT 2
            FOR UPDATE SKIP LOCKED)
        RETURNING job.*
    ), events AS (
        INSERT INTO runtime_scheduler.sandbox_cleanup_events_v2
            (provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, event_type)
        SELECT provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, 'worker_claimed'
        FROM claimed
    )
    SELECT id, claimed::text FROM claimed";

/// The worker deleted the sandbox: the row becomes deleted (still owned), the
/// capacity lease of its run is released, the operation is deleted.
const FINISH: &str = "
    WITH done AS (
        UPDATE runtime_scheduler.sandbox_cleanup_jobs_v2
        SET status = 'deleted', deleted_at = $3::timestamptz, updated_at = $3::timestamptz
        WHERE id = ANY($1) AND lease_owner = $2 AND status = 'pending'
        RETURNING *
    ), released AS (
        UPDATE runtime_scheduler.runtime_sandbox_capacity_leases AS lease
        SET released_at = $3::timestamptz
        FROM done
        WHERE lease.provider = 'daytona' AND lease.sandbox_id = done.sandbox_id
          AND lease.routing_domain IS NOT DISTINCT FROM done.routing_domain
          AND lease.run_id = done.run_id AND lease.released_at IS NULL
    ), operation AS (
        UPDATE runtime_scheduler.runtime_sandbox_operations AS o
        SET state = 'deleted', delete_confirmed_at = coalesce(o.delete_confirmed_at, $3::timestamptz),
            updated_at = $3::timestamptz
        FROM done
        WHERE o.provider = 'daytona' AND o.sandbox_id = done.sandbox_id
          AND o.routing_domain IS NOT DISTINCT FROM done.routing_domain AND o.state IN ('live', 'deleting')
    ), events AS (
        INSERT INTO runtime_scheduler.sandbox_cleanup_events_v2
            (provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, event_type)
        SELECT provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, 'worker_deleted'
        FROM done
    )
    SELECT id, done::text FROM done";

/// The worker gives the job up: unowned and pending again (the reconciler may
/// complete it now).
const GIVE_UP: &str = "
    WITH released AS (
        UPDATE runtime_scheduler.sandbox_cleanup_jobs_v2
        SET lease_owner = NULL, lease_expires_at = NULL, available_at = $3::timestamptz,
            updated_at = $3::timestamptz, last_error = 'worker_gave_up'
        WHERE id = ANY($1) AND lease_owner = $2 AND status = 'pending'
        RETURNING *
    ), events AS (
        INSERT INTO runtime_scheduler.sandbox_cleanup_events_v2
            (provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, event_type)
        SELECT provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, $2, 'worker_gave_up'
        FROM released
    )
    SELECT id FROM released";

/// What the callers saw, and what the workers hold.
#[derive(Default)]
struct Shared {
    /// Summaries of every apply (skipped ones included), as jsonb text.
    summaries: Vec<String>,
    statuses: HashMap<String, u32>,
    /// absent_ledger_rows - marked_deleted over applies: candidates the
    /// reconciler found but had to leave (a worker held their cleanup row).
    left_to_workers: i64,
    errors: Vec<String>,
    /// Cleanup row id -> its text as the owning worker last wrote it.
    owned: HashMap<i64, String>,
    claims: u32,
    finished: u32,
    given_up: u32,
}

struct Round {
    number: AtomicUsize,
    /// When the round's listing was taken: workers claim only jobs waiting
    /// since before it (a job the round's own recovery creates waits a round).
    began: Mutex<std::time::SystemTime>,
    reconcilers_done: AtomicUsize,
    stop: AtomicBool,
    start: Barrier,
    end: Barrier,
}

/// The Citus coordinator's port, when the chaos runs there.
fn citus_port() -> Option<u16> {
    std::env::var("RUNTIME_SANDBOX_CHAOS_CITUS_PORT").ok().and_then(|p| p.parse().ok())
}

/// The database the chaos runs in: the scratch cluster's, or the Citus coordinator's.
fn connect(db: &str) -> Client {
    match citus_port() {
        Some(port) => common::connect_at(port, db),
        None => common::connect(db),
    }
}

fn session(db: &str) -> Client {
    let mut c = connect(db);
    // A stuck lock fails the test instead of hanging it.
    c.batch_execute("SET lock_timeout = '30s'").unwrap();
    c
}

fn reconciler(db: String, index: usize, seed: u64, round: Arc<Round>, shared: Arc<Mutex<Shared>>) {
    let mut rng = common::Rng::new(seed ^ (0x1000 + index as u64));
    let mut c = session(&db);
    loop {
        round.start.wait();
        if round.stop.load(Ordering::SeqCst) {
            return;
        }
        let number = round.number.load(Ordering::SeqCst) as i32;
        for _ in 0..CALLS {
            thread::sleep(Duration::from_millis(rng.below(150)));
            let dry_run = rng.chance(0.25);
            let batch_size = *rng.pick(&[200i32, 500, 1000]);
            match c.query_one(RECONCILE, &[&number, &dry_run, &batch_size]) {
                Ok(row) => {
                    let status: String = row.get(0);
                    let summary: String = row.get(1);
                    let mut s = shared.lock().unwrap();
                    *s.statuses.entry(format!("{}{status}", if dry_run { "dry " } else { "" })).or_default() += 1;
                    if status == "skipped_concurrent" {
                        let counts: i64 = row.get::<_, i64>(2) + row.get::<_, i64>(3);
                        if counts != 0 {
                            s.errors.push(format!("a skipped call reported counts: {summary}"));
                        }
                    }
                    // Every apply writes its history row, a skipped one too (the health view counts them).
                    if !dry_run {
                        s.left_to_workers += row.get::<_, i64>(2) - row.get::<_, i64>(3);
                        s.summaries.push(summary);
                    }
                }
                Err(e) => shared.lock().unwrap().errors.push(format!("reconciler {index}: {}", common::db_message(&e))),
            }
        }
        round.reconcilers_done.fetch_add(1, Ordering::SeqCst);
        round.end.wait();
    }
}

fn worker(db: String, index: usize, seed: u64, round: Arc<Round>, shared: Arc<Mutex<Shared>>) {
    let me = format!("worker-{index}");
    let mut rng = common::Rng::new(seed ^ (0x2000 + index as u64));
    let mut c = session(&db);
    // Claimed rows by the round they were claimed in.
    let mut held: Vec<(i64, usize)> = Vec::new();
    loop {
        round.start.wait();
        if round.stop.load(Ordering::SeqCst) {
            return;
        }
        let number = round.number.load(Ordering::SeqCst);
        let began = *round.began.lock().unwrap();
        thread::sleep(Duration::from_millis(rng.below(100)));
        while round.reconcilers_done.load(Ordering::SeqCst) < RECONCILERS {
            // Finish (or give up) a job claimed in an earlier round, one job per
            // transaction (two in one transaction beside an apply are
            // reconcile_finishing_two_held_jobs_does_not_deadlock's case).
            let older: Vec<i64> = held.iter().filter(|(_, r)| *r < number).map(|(id, _)| *id).take(1).collect();
            if !older.is_empty() && rng.chance(0.3) {
                let give_up = rng.chance(0.15);
                let result = c.query(if give_up { GIVE_UP } else { FINISH }, &[&older, &me, &std::time::SystemTime::now()]);
                match result {
                    Ok(rows) => {
                        let mut s = shared.lock().unwrap();
                        for row in rows {
                            let id: i64 = row.get(0);
                            if give_up {
                                s.owned.remove(&id);
                                s.given_up += 1;
                            } else {
                                s.owned.insert(id, row.get(1));
                                s.finished += 1;
                            }
                        }
                        held.retain(|(id, _)| !older.contains(id));
                    }
                    Err(e) => shared.lock().unwrap().errors.push(format!("{me} finish: {}", common::db_message(&e))),
                }
            }
            if rng.chance(0.5) {
                // Claim, and hold the claim's transaction open a moment (the
                // reconciler's mark waits on the row, then must leave it).
                let hold = Duration::from_millis(rng.below(25));
                let claimed = (|| -> Result<Vec<(i64, String)>, postgres::Error> {
                    let mut tx = c.transaction()?;
                    let rows = tx.query(CLAIM, &[&me, &began, &std::time::SystemTime::now()])?;
                    thread::sleep(hold);
                    tx.commit()?;
                    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                })();
                match claimed {
                    Ok(rows) => {
                        let mut s = shared.lock().unwrap();
                        for (id, text) in rows {
                            s.owned.insert(id, text);
                            s.claims += 1;
                            held.push((id, number));
                        }
                    }
                    Err(e) => shared.lock().unwrap().errors.push(format!("{me} claim: {}", common::db_message(&e))),
                }
            }
            thread::sleep(Duration::from_millis(20 + rng.below(40)));
        }
        round.end.wait();
    }
}

fn count(c: &mut impl postgres::GenericClient, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
}

/// The invariants, in one snapshot (the backfill keeps committing meanwhile).
fn check(c: &mut Client, round: usize, shared: &Shared, initial_leases: i64) {
    let mut tx = c.build_transaction().isolation_level(IsolationLevel::RepeatableRead).start().unwrap();
    let at = format!("after round {round}");

    let live_with_deleted_cleanup = count(
        &mut tx,
        "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations o
         JOIN runtime_scheduler.sandbox_cleanup_jobs_v2 c
           ON c.provider = o.provider AND c.sandbox_id = o.sandbox_id AND c.routing_domain_key = o.routing_domain_key
         WHERE o.state = 'live' AND c.status = 'deleted'",
    );
    assert_eq!(live_with_deleted_cleanup, 0, "{at}: live operations with a deleted cleanup row");

    let events = count(
        &mut tx,
        "SELECT count(*) FROM runtime_scheduler.sandbox_cleanup_events_v2 WHERE event_type = 'reconciled_provider_confirmed_absent'",
    );
    let marked = count(
        &mut tx,
        "SELECT coalesce(sum((summary->>'marked_deleted')::bigint), 0)::bigint FROM runtime_scheduler.reconciliation_runs",
    );
    assert_eq!(events, marked, "{at}: confirmed-absent events vs the history's marked_deleted");
    let twice = count(
        &mut tx,
        "SELECT count(*) FROM (SELECT 1 FROM runtime_scheduler.sandbox_cleanup_events_v2
                               WHERE event_type = 'reconciled_provider_confirmed_absent'
                               GROUP BY sandbox_id, coalesce(routing_domain, '') HAVING count(*) > 1) twice",
    );
    assert_eq!(twice, 0, "{at}: an identity with two confirmed-absent events");
    let not_completed = count(
        &mut tx,
        "SELECT count(*) FROM runtime_scheduler.sandbox_cleanup_events_v2 e
         LEFT JOIN runtime_scheduler.sandbox_cleanup_jobs_v2 c
           ON c.provider = e.provider AND c.sandbox_id = e.sandbox_id AND c.routing_domain_key = coalesce(e.routing_domain, '')
         WHERE e.event_type = 'reconciled_provider_confirmed_absent'
           AND NOT (c.status = 'deleted' AND c.lease_owner IS NULL AND c.last_error = 'reconciled_provider_confirmed_absent')",
    );
    assert_eq!(not_completed, 0, "{at}: a confirmed-absent event whose cleanup row the reconciler did not complete");

    let doubly_leased = count(
        &mut tx,
        "SELECT count(*) FROM (SELECT 1 FROM runtime_scheduler.runtime_sandbox_capacity_leases
                               WHERE provider = 'daytona' AND released_at IS NULL
                               GROUP BY sandbox_id, coalesce(routing_domain, '') HAVING count(*) > 1) twice",
    );
    assert_eq!(doubly_leased, 0, "{at}: an identity with two open Daytona leases");
    let leases = count(&mut tx, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_capacity_leases");
    let seeded = count(
        &mut tx,
        "SELECT coalesce(sum((summary->>'seeded_leases')::bigint), 0)::bigint FROM runtime_scheduler.reconciliation_runs",
    );
    assert_eq!(leases - initial_leases, seeded, "{at}: leases added vs the history's seeded_leases");

    let ids: Vec<i64> = shared.owned.keys().copied().collect();
    let now: HashMap<i64, String> = tx
        .query("SELECT id, t::text FROM runtime_scheduler.sandbox_cleanup_jobs_v2 t WHERE id = ANY($1)", &[&ids])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (id, written) in &shared.owned {
        assert_eq!(now.get(id), Some(written), "{at}: worker-owned cleanup row {id} changed by someone else");
    }

    let row = tx
        .query_one(
            "WITH callers AS (SELECT s::jsonb AS j, count(*) AS n FROM unnest($1::text[]) s GROUP BY 1),
                  history AS (SELECT summary AS j, count(*) AS n FROM runtime_scheduler.reconciliation_runs GROUP BY 1)
             SELECT (SELECT coalesce(sum(n), 0) FROM callers)::bigint, (SELECT coalesce(sum(n), 0) FROM history)::bigint,
                    (SELECT count(*) FROM callers FULL JOIN history ON callers.j = history.j AND callers.n = history.n
                     WHERE callers.j IS NULL OR history.j IS NULL),
                    (SELECT count(*) FROM runtime_scheduler.reconciliation_runs
                     WHERE status <> summary->>'status' OR dry_run OR finished_at < started_at)",
            &[&shared.summaries],
        )
        .unwrap();
    let (callers, history, differing, inconsistent): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((callers, differing, inconsistent), (history, 0, 0), "{at}: history vs the summaries the callers received");
    tx.commit().unwrap();
}

#[test]
fn fault_reconcile_chaos_keeps_the_ledger_invariants() {
    let n = common::env_number("RUNTIME_SANDBOX_CHAOS_SANDBOXES", 20_000);
    let rounds = common::env_number("RUNTIME_SANDBOX_CHAOS_ROUNDS", 15) as usize;
    let seed = common::env_number("RUNTIME_SANDBOX_CHAOS_SEED", 2026);
    let mut rng = common::Rng::new(seed);
    println!("fault_reconcile_chaos: seed {seed}, {n} sandboxes, {rounds} rounds");

    let (db, mut main) = match citus_port() {
        Some(_) => {
            // The ledger in a distributed schema: every reconcile statement routed to the worker that holds it.
            let mut main = connect("citus_app");
            main.batch_execute(
                "SET client_min_messages = warning;
                 DROP SCHEMA IF EXISTS runtime_scheduler CASCADE;
                 DROP TABLE IF EXISTS public.chaos_inventory;",
            )
            .unwrap();
            ("citus_app".to_string(), main)
        }
        None => {
            let db = common::fresh_database("fault_reconcile_chaos");
            let main = connect(&db);
            (db, main)
        }
    };
    main.batch_execute(&common::sandbox_ledger_sql(n)).unwrap();
    if citus_port().is_some() {
        // Loaded on the coordinator, then distributed (the loading statements' INSERT ... SELECTs with
        // sub-selects are the shape Citus 13 mis-plans on single-shard tables: docs/design/citus.md).
        main.batch_execute("SELECT citus_schema_distribute('runtime_scheduler')").unwrap();
        let distributed = count(
            &mut main,
            "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::regclass::text LIKE 'runtime_scheduler.%'",
        );
        assert_eq!(distributed, 11, "the chaos ledger is distributed");
        println!("fault_reconcile_chaos: on Citus, the ledger distributed");
    }
    main.batch_execute("CREATE TABLE public.chaos_inventory (round int PRIMARY KEY, captured_at timestamptz, items jsonb)")
        .unwrap();
    let initial_leases = count(&mut main, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_capacity_leases");
    let live = count(&mut main, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations WHERE state = 'live'");

    let round = Arc::new(Round {
        number: AtomicUsize::new(0),
        began: Mutex::new(std::time::SystemTime::UNIX_EPOCH),
        reconcilers_done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        start: Barrier::new(1 + RECONCILERS + WORKERS),
        end: Barrier::new(1 + RECONCILERS + WORKERS),
    });
    let shared = Arc::new(Mutex::new(Shared::default()));
    let mut threads = Vec::new();
    for i in 0..RECONCILERS {
        let (db, round, shared) = (db.clone(), Arc::clone(&round), Arc::clone(&shared));
        threads.push(thread::spawn(move || reconciler(db, i, seed, round, shared)));
    }
    for i in 0..WORKERS {
        let (db, round, shared) = (db.clone(), Arc::clone(&round), Arc::clone(&shared));
        threads.push(thread::spawn(move || worker(db, i, seed, round, shared)));
    }
    // The backfill, beside everything, in small pages.
    let backfill = {
        let mut c = session(&db);
        thread::spawn(move || c.batch_execute("CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 50, pause => '100 ms', ledger_schema => 'runtime_scheduler')"))
    };

    let mut backfill_seen_pending = 0;
    for r in 1..=rounds {
        round.number.store(r, Ordering::SeqCst);
        round.reconcilers_done.store(0, Ordering::SeqCst);
        main.execute(APPLICATION_STEP, &[&30i32, &(r as i32)]).unwrap();
        main.execute(CLEANUP_REQUESTS, &[&100i32, &format!("{seed}-{r}")]).unwrap();
        main.execute("SELECT setseed($1)", &[&(rng.unit() * 2.0 - 1.0)]).unwrap();
        // Every fourth listing has a sandbox nobody owns: those rounds' applies fail closed.
        let stray = r % 4 == 3;
        main.execute(LISTING, &[&(r as i32), &stray]).unwrap();
        // Candidates for absence stay far below half of the live ledger.
        let listed = count(&mut main, &format!("SELECT jsonb_array_length(items)::bigint FROM public.chaos_inventory WHERE round = {r}"));
        let live_now = count(&mut main, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations WHERE provider = 'daytona' AND state = 'live'");
        assert!(live_now - listed < live_now / 5, "round {r}: {listed} listed of {live_now} live");

        *round.began.lock().unwrap() = main.query_one("SELECT now()", &[]).unwrap().get(0);
        round.start.wait();
        round.end.wait();
        let s = shared.lock().unwrap();
        check(&mut main, r, &s, initial_leases);
        if !s.errors.is_empty() {
            panic!("round {r}: calls failed: {:#?}", s.errors);
        }
        if main.query_one(
            "SELECT coalesce((SELECT value->>'phase' FROM runtime_scheduler.control WHERE key = 'runtime_sandbox_operation_backfill_v1'), 'none') = 'pending'",
            &[],
        ).unwrap().get::<_, bool>(0) {
            backfill_seen_pending += 1;
        }
        println!(
            "round {r}: listed {listed}{}, statuses {:?}, claims {} finished {} given up {}, owned now {}",
            if stray { " + a stray" } else { "" },
            s.statuses,
            s.claims,
            s.finished,
            s.given_up,
            s.owned.len()
        );
    }
    round.stop.store(true, Ordering::SeqCst);
    round.start.wait();
    for t in threads {
        t.join().unwrap();
    }
    backfill.join().unwrap().unwrap();
    let s = shared.lock().unwrap();
    check(&mut main, rounds + 1, &s, initial_leases);

    // The backfill ran to completion beside the chaos, inserting only what
    // the ledger lacked: the Modal sandboxes and the unknown Daytona ones.
    let phase: String = main
        .query_one("SELECT value->>'phase' FROM runtime_scheduler.control WHERE key = 'runtime_sandbox_operation_backfill_v1'", &[])
        .unwrap()
        .get(0);
    assert_eq!(phase, "complete");
    let backfilled = count(&mut main, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations WHERE operation_key LIKE 'backfill:%'");
    assert_eq!(backfilled as u64, n / 10 + n / 50);

    // The chaos did what it was for.
    let applied = s.statuses.get("applied").copied().unwrap_or(0);
    let marked = count(&mut main, "SELECT count(*) FROM runtime_scheduler.sandbox_cleanup_events_v2 WHERE event_type = 'reconciled_provider_confirmed_absent'");
    println!(
        "fault_reconcile_chaos: {applied} applies, {marked} rows completed as absent, {} candidates left to their workers, {} claims, {} finished, {} given up, backfill pending at {backfill_seen_pending} checks, {live} live at start",
        s.left_to_workers, s.claims, s.finished, s.given_up
    );
    assert!(applied >= rounds as u32, "too few applies: {:?}", s.statuses);
    assert!(s.statuses.get("skipped_concurrent").copied().unwrap_or(0) > 0, "no apply overlapped another: {:?}", s.statuses);
    if rounds >= 3 {
        assert!(s.statuses.get("blocked_unowned_sandboxes").copied().unwrap_or(0) > 0, "{:?}", s.statuses);
    }
    assert!(marked > 0 && s.claims > 0 && s.finished > 0 && s.given_up > 0);
    assert!(s.left_to_workers > 0, "no apply met a worker-owned absent row");
    assert!(backfill_seen_pending > 0, "the backfill finished before the first round ended");
}

/// Two jobs a worker holds are absent candidates of one apply. An
/// `ON CONFLICT DO UPDATE ... WHERE lease_owner IS NULL` (the application's
/// statement) locks each conflicting row before its WHERE leaves it unchanged,
/// and keeps the lock to the end of the call: it locks the older job, then
/// waits for the worker's transaction on the newer one, while the worker,
/// finishing both jobs in one transaction, waits for the older one, and
/// PostgreSQL fails one of them (40P01). The apply locks only rows it changes:
/// it may wait for the worker (its insert must know whether the worker's row
/// still conflicts) but holds nothing the worker needs, and both succeed.
#[test]
fn reconcile_finishing_two_held_jobs_does_not_deadlock() {
    let db = common::fresh_database("fault_reconcile_deadlock");
    let mut setup = common::connect(&db);
    setup
        .batch_execute(
            "SELECT runtime_sandbox.install_ledger();
             INSERT INTO runtime_scheduler.runs VALUES ('run-a', 'org'), ('run-b', 'org');
             INSERT INTO runtime_scheduler.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             VALUES ('op-a', 'daytona', 'run-a', 1, 'org', 'sb-a', 'live', now() - interval '2 days'),
                    ('op-b', 'daytona', 'run-b', 1, 'org', 'sb-b', 'live', now() - interval '3 days');
             INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2
                 (provider, sandbox_id, run_id, attempt, status, lease_owner, lease_expires_at)
             VALUES ('daytona', 'sb-a', 'run-a', 1, 'pending', 'worker-1', now() + interval '5 minutes'),
                    ('daytona', 'sb-b', 'run-b', 1, 'pending', 'worker-1', now() + interval '5 minutes');",
        )
        .unwrap();
    let job = |c: &mut Client, sandbox: &str| -> i64 {
        c.query_one("SELECT id FROM runtime_scheduler.sandbox_cleanup_jobs_v2 WHERE sandbox_id = $1", &[&sandbox])
            .unwrap()
            .get(0)
    };
    let (a, b) = (job(&mut setup, "sb-a"), job(&mut setup, "sb-b"));
    let finish = "UPDATE runtime_scheduler.sandbox_cleanup_jobs_v2
                  SET status = 'deleted', deleted_at = clock_timestamp(), updated_at = clock_timestamp()
                  WHERE id = $1 AND lease_owner = 'worker-1'";

    // The worker finishes job a first ...
    let mut worker = common::connect(&db);
    let mut tx = worker.transaction().unwrap();
    tx.execute(finish, &[&a]).unwrap();
    // ... while an apply finds both absent (b is older, so it comes first; an
    // empty listing is believed only with max_absent_ratio 1).
    let mut reconciler = common::connect(&db);
    let pid: i32 = reconciler.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let apply = thread::spawn(move || {
        reconciler
            .query_one(
                "SELECT status, marked_deleted FROM runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => 1, ledger_schema => 'runtime_scheduler')",
                &[],
            )
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
            .map_err(|e| common::db_message(&e))
    });
    let mut watcher = common::connect(&db);
    let started = std::time::Instant::now();
    while watcher
        .query_one("SELECT coalesce(wait_event_type, '') <> 'Lock' FROM pg_stat_activity WHERE pid = $1", &[&pid])
        .unwrap()
        .get::<_, bool>(0)
    {
        assert!(started.elapsed() < Duration::from_secs(30), "the apply never waited for the worker");
        thread::sleep(Duration::from_millis(10));
    }
    // Then job b, in the same transaction.
    let worker_result = tx.execute(finish, &[&b]).map_err(|e| common::db_message(&e));
    let worker_result = worker_result.and_then(|n| tx.commit().map(|_| n).map_err(|e| common::db_message(&e)));
    let apply_result = apply.join().unwrap();
    assert_eq!(worker_result, Ok(1), "the worker's transaction");
    assert_eq!(apply_result, Ok(("applied".to_string(), 0)), "the apply");
}

/// A cleanup worker holds a lease whose id the apply's seeding meets (op-a's id, a lease of another
/// sandbox, released: the application's ON CONFLICT DO UPDATE locks it and then leaves it alone), and then
/// waits for a lease the apply's first release pass holds. The application's statement would wait for the
/// worker and the worker for it (a deadlock, one of them failed); here seeding does not lock a lease it
/// does not change, so the apply completes and the worker goes on after it.
#[test]
fn seeding_does_not_lock_a_lease_it_leaves_alone() {
    let db = common::fresh_database("fault_reconcile_seed_lock");
    let mut setup = common::connect(&db);
    setup
        .batch_execute(
            "SELECT runtime_sandbox.install_ledger();
             INSERT INTO runtime_scheduler.runs VALUES ('run-a', 'org'), ('run-t', 'org');
             INSERT INTO runtime_scheduler.runtime_sandbox_operations
                 (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_created_at)
             VALUES ('op-a', 'daytona', 'run-a', 1, 'org', 'sb-a', 'live', now() - interval '2 days'),
                    ('op-t', 'daytona', 'run-t', 1, 'org', 'sb-t', 'live', now() - interval '2 days');
             -- op-a's identity has no lease, but its id is taken by a released lease of an older sandbox.
             INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases
                 (lease_id, org_id, run_id, provider, sandbox_id, released_at)
             VALUES ('op-a', 'org', 'run-a', 'daytona', 'sb-old', now() - interval '1 day'),
             -- op-t's open lease: its cleanup is durably deleted, so the first release pass takes it.
                    ('op-t', 'org', 'run-t', 'daytona', 'sb-t', NULL);
             INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status, deleted_at)
             VALUES ('daytona', 'sb-t', 'run-t', 1, 'deleted', now() - interval '1 hour');",
        )
        .unwrap();
    let touch = "UPDATE runtime_scheduler.runtime_sandbox_capacity_leases SET expires_at = clock_timestamp() WHERE lease_id = $1";

    // The worker takes lease op-a ...
    let mut worker = common::connect(&db);
    let mut tx = worker.transaction().unwrap();
    tx.execute(touch, &[&"op-a"]).unwrap();
    // ... while an apply lists both sandboxes.
    let mut reconciler = common::connect(&db);
    let pid: i32 = reconciler.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let apply = thread::spawn(move || {
        reconciler
            .query_one(
                "SELECT status, live_leases_to_seed, seeded_leases, released_terminal_leases
                 FROM runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-a\"}, {\"sandboxId\": \"sb-t\"}]', now(), dry_run => false)",
                &[],
            )
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1), r.get::<_, i64>(2), r.get::<_, i64>(3)))
            .map_err(|e| common::db_message(&e))
    });
    // Until the apply is done, or waits for a lock (the application's statement would, for op-a).
    let mut watcher = common::connect(&db);
    let started = std::time::Instant::now();
    // (No row: the apply's session has already ended.)
    while !apply.is_finished()
        && watcher
            .query_opt("SELECT coalesce(wait_event_type, '') <> 'Lock' FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .is_some_and(|row| row.get::<_, bool>(0))
    {
        assert!(started.elapsed() < Duration::from_secs(30), "the apply neither finished nor waited");
        thread::sleep(Duration::from_millis(10));
    }
    // Then the worker touches op-t, which the apply's first pass released (and holds until it commits).
    let worker_result = tx.execute(touch, &[&"op-t"]).map_err(|e| common::db_message(&e));
    let worker_result = worker_result.and_then(|n| tx.commit().map(|_| n).map_err(|e| common::db_message(&e)));
    let apply_result = apply.join().unwrap();
    assert_eq!(worker_result, Ok(1), "the worker's transaction");
    // op-a: to seed, but its id belongs to a released lease: nothing seeded (as the application); op-t released.
    assert_eq!(apply_result, Ok(("applied".to_string(), 1, 0, 1)), "the apply");
    let leases: Vec<(String, String, bool)> = setup
        .query(
            "SELECT lease_id, sandbox_id, released_at IS NOT NULL FROM runtime_scheduler.runtime_sandbox_capacity_leases ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(leases, [("op-a".into(), "sb-old".into(), true), ("op-t".into(), "sb-t".into(), true)]);
}
