//! `CALL runtime_sandbox.run_sandbox_operation_backfill(...)` over real
//! connections: commits per batch, resumes after its backend is terminated,
//! refuses to run twice at once, and releases its lock on errors and cancels.

mod common;

use common::{backfill_operations as operations, backfill_phase as phase, connect_with_notices, count, wait_until};
use postgres::Client;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const CALL: &str = "CALL runtime_sandbox.run_sandbox_operation_backfill";

/// A ledger with `runs` runs of two attempts each, 1–3 sandbox resources per
/// attempt, ties on updated_at, and sandbox ids that repeat across attempts.
fn seeded(db: &str, runs: i32) -> String {
    let db = common::fresh_database(db);
    let mut c = common::connect(&db);
    c.batch_execute(&common::backfill_attempts_sql(runs, 4)).unwrap();
    db
}

fn backend_running_call(c: &mut Client, db: &str) -> Option<i32> {
    c.query_opt(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'CALL runtime_sandbox.run_sandbox_operation_backfill%' AND pid <> pg_backend_pid()",
        &[&db],
    )
    .unwrap()
    .map(|r| r.get(0))
}

/// The state an uninterrupted run reaches on the same data.
fn reference(db: &str, runs: i32) -> String {
    let db = seeded(db, runs);
    let mut c = common::connect(&db);
    c.batch_execute(&format!("{CALL}(1000)")).unwrap();
    operations(&mut c)
}

#[test]
fn backfill_procedure_commits_each_batch() {
    let db = seeded("backfill_procedure_commits", 150);
    let expected = reference("backfill_procedure_commits_ref", 150);
    let (mut runner, notices) = connect_with_notices(&db);
    let call = thread::spawn(move || runner.batch_execute(&format!("{CALL}(40, NULL, '60 ms')")));
    let mut watcher = common::connect(&db);
    let mut seen = Vec::new();
    while !call.is_finished() {
        let n = count(&mut watcher, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations");
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        thread::sleep(Duration::from_millis(15));
    }
    call.join().unwrap().unwrap();
    let total = count(&mut watcher, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations");
    let mid_run: Vec<_> = seen.iter().filter(|&&n| n > 0 && n < total).collect();
    assert!(mid_run.len() >= 3, "another connection saw progress only as {seen:?} of {total}");
    assert_eq!(phase(&mut watcher).as_deref(), Some("complete"));
    assert_eq!(operations(&mut watcher), expected);
    // A short run (well under 10 seconds) reports once, at the end.
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("runtime_sandbox backfill on ledger runtime_scheduler: phase complete, 16 pages, 600 attempts scanned, 500 operations inserted "),
        "{notices:?}"
    );
}

#[test]
fn backfill_procedure_resumes_after_its_backend_is_terminated() {
    let db = seeded("backfill_procedure_resume", 200);
    let expected = reference("backfill_procedure_resume_ref", 200);
    let (mut runner, _) = connect_with_notices(&db);
    let call = thread::spawn(move || runner.batch_execute(&format!("{CALL}(30, NULL, '50 ms')")));
    let mut watcher = common::connect(&db);
    wait_until("a few committed batches", Duration::from_secs(30), || {
        count(&mut watcher, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations") > 60
    });
    let pid = backend_running_call(&mut watcher, &db).expect("the CALL is running");
    assert!(watcher.query_one("SELECT pg_terminate_backend($1)", &[&pid]).unwrap().get::<_, bool>(0));
    assert!(call.join().unwrap().is_err(), "the terminated CALL reports an error");
    let partial = count(&mut watcher, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations");
    assert_eq!(phase(&mut watcher).as_deref(), Some("pending"));
    assert!(partial > 0);
    // The session lock died with the backend: a new CALL runs and resumes.
    let (mut again, notices) = connect_with_notices(&db);
    again.batch_execute(&format!("{CALL}(30)")).unwrap();
    assert!(notices.lock().unwrap().iter().all(|n| !n.contains("already running")));
    assert_eq!(phase(&mut watcher).as_deref(), Some("complete"));
    assert_eq!(operations(&mut watcher), expected);
    assert_eq!(
        count(
            &mut watcher,
            "SELECT count(*) - count(DISTINCT (provider, sandbox_id, routing_domain_key)) FROM runtime_scheduler.runtime_sandbox_operations"
        ),
        0
    );
}

#[test]
fn backfill_procedure_runs_once_per_ledger() {
    let db = seeded("backfill_procedure_once", 150);
    let expected = reference("backfill_procedure_once_ref", 150);
    let (mut first, first_notices) = connect_with_notices(&db);
    let call = thread::spawn(move || first.batch_execute(&format!("{CALL}(25, NULL, '80 ms')")));
    let mut watcher = common::connect(&db);
    wait_until("the first CALL to hold its lock", Duration::from_secs(30), || {
        count(&mut watcher, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())") == 1
    });
    let (mut second, second_notices) = connect_with_notices(&db);
    let started = Instant::now();
    second.batch_execute(&format!("{CALL}(25)")).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!call.is_finished(), "the first CALL should still be running");
    {
        let notices = second_notices.lock().unwrap();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("already running on ledger runtime_scheduler"), "{}", notices[0]);
    }
    call.join().unwrap().unwrap();
    // The first run applied every page itself: no other run interleaved with it.
    let notices = first_notices.lock().unwrap();
    assert!(notices.last().unwrap().contains("phase complete, 25 pages, 600 attempts scanned, 500 operations inserted"), "{notices:?}");
    assert_eq!(operations(&mut watcher), expected);
    // Once the first run is done, the lock is free again.
    second_notices.lock().unwrap().clear();
    second.batch_execute(&format!("{CALL}(25)")).unwrap();
    assert!(second_notices.lock().unwrap()[0].contains("phase complete, 0 pages"), "{:?}", second_notices.lock().unwrap());
}

/// Inside a transaction block (a migration tool's default, or several statements sent in one request) the
/// procedure refuses at once, with the fix in its HINT; complete_sandbox_operation_backfill does the work there,
/// and waits for a backfill another session is running, so it returns complete only when the backfill is.
#[test]
fn backfill_in_a_transaction_is_refused_with_a_hint_or_completed_by_the_function() {
    let db = seeded("backfill_procedure_in_transaction", 150);
    let expected = reference("backfill_procedure_in_transaction_ref", 150);
    let mut c = common::connect(&db);
    for script in [format!("BEGIN; {CALL}(25); COMMIT"), format!("SELECT 1; {CALL}(25)")] {
        let err = c.batch_execute(&script).unwrap_err();
        let db_error = err.as_db_error().unwrap();
        assert_eq!(db_error.code().code(), "2D000", "{script}: {err:?}");
        assert!(db_error.message().contains("cannot run inside a transaction block"), "{}", db_error.message());
        assert!(db_error.hint().unwrap_or_default().contains("complete_sandbox_operation_backfill"), "{db_error:?}");
        c.batch_execute("ROLLBACK").ok();
    }
    assert_eq!(count(&mut c, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations"), 0);

    // A procedure running in another session: the function waits for it, then finds nothing left.
    let (mut runner, _) = connect_with_notices(&db);
    let call = thread::spawn(move || runner.batch_execute(&format!("{CALL}(25, NULL, '100 ms')")));
    let mut watcher = common::connect(&db);
    wait_until("the procedure to hold its lock", Duration::from_secs(30), || {
        count(&mut watcher, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())") == 1
    });
    let mut tx = c.transaction().unwrap();
    let row = tx
        .query_one("SELECT phase, batches FROM runtime_sandbox.complete_sandbox_operation_backfill(25)", &[])
        .unwrap();
    // Nothing left for it (0 pages applied here): it waited for the procedure's run to end. (Whether the
    // procedure's client has read its last reply yet is a race of its own, not asserted.)
    assert_eq!((row.get::<_, String>(0).as_str(), row.get::<_, i64>(1)), ("complete", 0));
    tx.commit().unwrap();
    call.join().unwrap().unwrap();
    assert_eq!(operations(&mut c), expected);

    // From scratch, in one transaction with other statements.
    let db = seeded("backfill_procedure_in_transaction_2", 150);
    let mut c = common::connect(&db);
    c.batch_execute("BEGIN; SET LOCAL statement_timeout = '10min';
                     SELECT * FROM runtime_sandbox.complete_sandbox_operation_backfill(25); COMMIT").unwrap();
    assert_eq!(phase(&mut c).as_deref(), Some("complete"));
    assert_eq!(operations(&mut c), expected);
}

#[test]
fn backfill_procedure_releases_its_lock_on_errors_and_cancels() {
    let db = seeded("backfill_procedure_errors", 20);
    let mut c = common::connect(&db);
    // Two sandbox identities whose operation keys collide (backfill:daytona:a:b:)
    // make the second page fail, as the application's INSERT fails.
    c.batch_execute(
        r#"TRUNCATE runtime_scheduler.attempts;
           INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
             ('run-1', 1, '2026-01-01', '{"kind":"daytona_sandbox","sandboxId":"a:b"}'),
             ('run-2', 1, '2026-01-02', '{"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"b:"}')"#,
    )
    .unwrap();
    let err = c.batch_execute(&format!("{CALL}(1)")).unwrap_err();
    assert!(common::db_message(&err).contains("runtime_sandbox_operations_pkey"), "{err:?}");
    let held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()";
    assert_eq!(count(&mut c, held), 0, "the lock outlived the error");
    // The first page was committed before the failing one.
    assert_eq!(count(&mut c, "SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations"), 1);
    assert_eq!(phase(&mut c).as_deref(), Some("pending"));

    // Cancel during the pause between batches.
    c.batch_execute("DELETE FROM runtime_scheduler.attempts WHERE run_id = 'run-2';
                     INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json)
                     SELECT 'run-3', g, '2026-01-03', jsonb_build_object('kind', 'modal_sandbox', 'sandboxId', 'm' || g)
                     FROM generate_series(1, 20) g").unwrap();
    let (runner, _) = connect_with_notices(&db);
    let runner = Arc::new(Mutex::new(runner));
    let inner = Arc::clone(&runner);
    let call = thread::spawn(move || inner.lock().unwrap().batch_execute(&format!("{CALL}(1, NULL, '400 ms')")));
    wait_until("the CALL to hold its lock", Duration::from_secs(30), || {
        count(&mut c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())") == 1
    });
    thread::sleep(Duration::from_millis(500));
    let pid = backend_running_call(&mut c, &db).expect("the CALL is running");
    assert!(c.query_one("SELECT pg_cancel_backend($1)", &[&pid]).unwrap().get::<_, bool>(0));
    let err = call.join().unwrap().unwrap_err();
    assert!(common::db_message(&err).contains("canceling statement"), "{err:?}");
    let mut runner = runner.lock().unwrap();
    assert_eq!(count(&mut runner, held), 0, "the lock outlived the cancel");
    assert_eq!(count(&mut c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"), 0);
    // And the session can run it again, to completion.
    runner.batch_execute(&format!("{CALL}(1000)")).unwrap();
    assert_eq!(phase(&mut runner).as_deref(), Some("complete"));
}

/// Two attempts, one sandbox each (`first`, then `second` a day later), and a
/// deferred constraint trigger that runs `at_commit` when the operation of
/// `second` is inserted: it runs inside the procedure's COMMIT of page 2.
fn failing_at_commit(name: &str, at_commit: &str) -> String {
    let db = seeded(name, 2);
    let mut c = common::connect(&db);
    c.batch_execute(&format!(
        r#"TRUNCATE runtime_scheduler.attempts;
           INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
             ('run-1', 1, '2026-01-01', '{{"kind":"daytona_sandbox","sandboxId":"first"}}'),
             ('run-2', 1, '2026-01-02', '{{"kind":"daytona_sandbox","sandboxId":"second"}}');
           CREATE FUNCTION public.at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               IF NEW.sandbox_id = 'second' THEN {at_commit}; END IF;
               RETURN NULL;
           END $$;
           CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON runtime_scheduler.runtime_sandbox_operations
           DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.at_commit();"#
    ))
    .unwrap();
    db
}

const HELD: &str = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()";

#[test]
fn backfill_procedure_releases_its_lock_when_commit_fails() {
    let db = failing_at_commit("backfill_procedure_commit_fails", "RAISE EXCEPTION 'refused at commit'");
    let mut c = common::connect(&db);
    let err = c.batch_execute(&format!("{CALL}(1)")).unwrap_err();
    assert!(common::db_message(&err).contains("refused at commit"), "{err:?}");
    assert_eq!(count(&mut c, HELD), 0, "the lock outlived the failed COMMIT");
    // Page 1 committed; page 2 rolled back with its COMMIT; the checkpoint is after page 1.
    assert_eq!(operations(&mut c).lines().count(), 1);
    assert_eq!(phase(&mut c).as_deref(), Some("pending"));
    // Another session can take the run over at once.
    let (mut other, notices) = connect_with_notices(&db);
    other.batch_execute("DROP TRIGGER at_commit ON runtime_scheduler.runtime_sandbox_operations").unwrap();
    other.batch_execute(&format!("{CALL}(1)")).unwrap();
    assert!(notices.lock().unwrap().iter().all(|n| !n.contains("already running")));
    assert_eq!(phase(&mut other).as_deref(), Some("complete"));
    assert_eq!(operations(&mut other).lines().count(), 2);
}

#[test]
fn backfill_procedure_releases_its_lock_when_a_cancel_lands_in_its_commit() {
    let db = failing_at_commit("backfill_procedure_cancel_in_commit", "PERFORM pg_sleep(30)");
    let runner = Arc::new(Mutex::new(common::connect(&db)));
    let inner = Arc::clone(&runner);
    let call = thread::spawn(move || inner.lock().unwrap().batch_execute(&format!("{CALL}(1)")));
    let mut watcher = common::connect(&db);
    // Page 2's COMMIT runs the deferred trigger, which sleeps: cancel it there.
    let mut pid = None;
    wait_until("the COMMIT of page 2 to sleep", Duration::from_secs(30), || {
        pid = watcher
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'",
                &[],
            )
            .unwrap()
            .map(|r| r.get::<_, i32>(0));
        pid.is_some()
    });
    assert!(watcher.query_one("SELECT pg_cancel_backend($1)", &[&pid.unwrap()]).unwrap().get::<_, bool>(0));
    let err = call.join().unwrap().unwrap_err();
    assert!(common::db_message(&err).contains("canceling statement"), "{err:?}");
    let mut runner = runner.lock().unwrap();
    assert_eq!(count(&mut runner, HELD), 0, "the lock outlived the cancel");
    assert_eq!(phase(&mut runner).as_deref(), Some("pending"));
    assert_eq!(operations(&mut runner).lines().count(), 1);
}
