// SQL-level tests of the backfill (run by `cargo pgrx test`). Each test uses
// its own ledger schema.

use pgrx::prelude::*;

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn one<T: IntoDatum + FromDatum>(sql: &str) -> Option<T> {
    Spi::get_one::<T>(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn text(sql: &str) -> String {
    one::<String>(sql).unwrap_or_else(|| panic!("{sql}: NULL"))
}

fn int(sql: &str) -> i64 {
    one::<i64>(sql).unwrap_or_else(|| panic!("{sql}: NULL"))
}

/// A ledger with runs r1..r9 (org = 'org-' || run).
fn ledger(schema: &str) {
    run(&format!("SELECT runtime_sandbox.install_ledger('{schema}')"));
    run(&format!(
        "INSERT INTO {schema}.runs (run_id, org_id) SELECT 'r' || g, 'org-r' || g FROM generate_series(1, 9) g"
    ));
}

fn attempt(schema: &str, run_id: &str, attempt: i32, updated_at: &str, resources: &str) {
    run(&format!(
        "INSERT INTO {schema}.attempts (run_id, attempt, updated_at, resource_json) VALUES ('{run_id}', {attempt}, '{updated_at}', {resources})"
    ));
}

fn daytona(id: &str) -> String {
    format!(r#"{{"kind":"daytona_sandbox","sandboxId":"{id}"}}"#)
}

/// The error (SQLSTATE and message) a statement raises, or None.
fn error_of(sql: &str) -> Option<String> {
    run(r#"CREATE OR REPLACE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
           BEGIN EXECUTE q; RETURN NULL;
           EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM; END $$"#);
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_of($1)", &[sql.into()]).expect("error_of runs")
}

type PageText = (i64, i64, bool, String);

/// One page as (scanned, inserted, has_more, targets text) from the cursor in walk_cursor; `advance` moves it.
fn page(schema: &str, function: &str, batch: i32, advance: bool) -> PageText {
    let update = if advance { "UPDATE walk_cursor SET c = (SELECT next_cursor FROM p)" } else { "SELECT 1" };
    let sql = format!(
        "WITH p AS (SELECT * FROM runtime_sandbox.{function}({batch}, (SELECT c FROM walk_cursor), '{schema}')),
              u AS ({update})
         SELECT scanned_attempts, inserted_operations, has_more, targets::text FROM p"
    );
    Spi::connect_mut(|c| {
        let row = c.update(&sql, Some(1), &[])?.first();
        Ok::<_, pgrx::spi::SpiError>((
            row.get::<i64>(1)?.unwrap(),
            row.get::<i64>(2)?.unwrap(),
            row.get::<bool>(3)?.unwrap(),
            row.get::<String>(4)?.unwrap(),
        ))
    })
    .unwrap()
}

fn start_walk() {
    run("CREATE TEMP TABLE IF NOT EXISTS walk_cursor (c runtime_sandbox.backfill_cursor)");
    run("TRUNCATE walk_cursor; INSERT INTO walk_cursor VALUES (NULL)");
}

/// Every applied page from the start, chained by next_cursor.
fn walk(schema: &str, batch: i32) -> Vec<PageText> {
    start_walk();
    let mut pages = Vec::new();
    loop {
        let p = page(schema, "backfill_sandbox_operations", batch, true);
        let more = p.2;
        pages.push(p);
        if !more || pages.len() > 100 {
            return pages;
        }
    }
}

#[pg_test]
fn backfill_pages_end_after_an_exact_multiple_with_one_empty_page() {
    ledger("bf_multiple");
    for (i, run_id) in ["r1", "r2"].iter().enumerate() {
        let resources = format!("'[{}, {}]'", daytona(&format!("a{i}")), daytona(&format!("b{i}")));
        attempt("bf_multiple", run_id, 1, "2026-01-01 00:00:00+00", &resources);
    }
    let pages = walk("bf_multiple", 2);
    let shape: Vec<_> = pages.iter().map(|p| (p.0, p.1, p.2)).collect();
    // A full page says has_more (the application's conservative rule); the
    // empty page after it ends the walk.
    assert_eq!(shape, vec![(2, 2, true), (2, 2, true), (0, 0, false)]);
    assert_eq!(pages[2].3, "{}");
    assert_eq!(int("SELECT count(*) FROM bf_multiple.runtime_sandbox_operations"), 4);
}

#[pg_test]
fn backfill_keyset_orders_ties_and_splits_attempts_between_pages() {
    ledger("bf_ties");
    // Same updated_at for r2/1, r1/2, r1/1; r3 a microsecond later; one earlier.
    let t = "2026-01-01 00:00:00.000001+00";
    attempt("bf_ties", "r2", 1, t, &format!("'[{}, {}, {}]'", daytona("r2-1a"), daytona("r2-1b"), daytona("r2-1c")));
    attempt("bf_ties", "r1", 2, t, &format!("'{}'", daytona("r1-2a")));
    attempt("bf_ties", "r1", 1, t, &format!("'[{}, {}]'", daytona("r1-1a"), daytona("r1-1b")));
    attempt("bf_ties", "r3", 1, "2026-01-01 00:00:00.000002+00", &format!("'[{}]'", daytona("r3-1a")));
    attempt("bf_ties", "r4", 1, "2026-01-01 00:00:00+00", &format!("'[{}]'", daytona("r4-1a")));
    let pages = walk("bf_ties", 2);
    let order: Vec<String> = pages.iter().map(|p| p.3.clone()).collect();
    assert_eq!(
        order,
        vec![
            r#"{"(r4,1,1,daytona,r4-1a,t)","(r1,1,1,daytona,r1-1a,t)"}"#,
            r#"{"(r1,1,2,daytona,r1-1b,t)","(r1,2,1,daytona,r1-2a,t)"}"#,
            r#"{"(r2,1,1,daytona,r2-1a,t)","(r2,1,2,daytona,r2-1b,t)"}"#,
            r#"{"(r2,1,3,daytona,r2-1c,t)","(r3,1,1,daytona,r3-1a,t)"}"#,
            "{}",
        ]
    );
    // Batch size 1 visits the same resources one by one.
    run("TRUNCATE bf_ties.runtime_sandbox_operations");
    let singles = walk("bf_ties", 1);
    assert_eq!(singles.len(), 9);
    assert_eq!(singles.iter().map(|p| p.1).sum::<i64>(), 8);
    // The cursor keeps microseconds: a page after r1/2 at t starts at r2/1.
    let next = text(&format!(
        "SELECT (targets[1]).sandbox_id FROM runtime_sandbox.preview_sandbox_operation_backfill(1, ('{t}', 'r1', 2, 1), 'bf_ties')"
    ));
    assert_eq!(next, "r2-1a");
}

#[pg_test]
fn backfill_first_resource_of_an_identity_wins() {
    ledger("bf_rank");
    let dup = r#"{"kind":"daytona_sandbox","sandboxId":"s1","daytonaOrganizationId":"o1"}"#;
    let other_domain = r#"{"kind":"daytona_sandbox","sandboxId":"s1","daytonaOrganizationId":"o2"}"#;
    let modal_same_id = r#"{"kind":"modal_sandbox","sandboxId":"s1","modalAppId":"o1"}"#;
    attempt("bf_rank", "r2", 1, "2026-01-01 00:00:01+00", &format!("'[{dup}, {dup}, {other_domain}, {modal_same_id}]'"));
    attempt("bf_rank", "r1", 1, "2026-01-01 00:00:00+00", &format!("'{dup}'"));
    attempt("bf_rank", "r3", 1, "2026-01-01 00:00:02+00", &format!("'{dup}'"));
    let page = walk("bf_rank", 3);
    // Page 1: r1's resource wins; r2's first copy and its duplicate lose.
    assert_eq!(page[0].3, r#"{"(r1,1,1,daytona,s1,t)","(r2,1,1,daytona,s1,f)","(r2,1,2,daytona,s1,f)"}"#);
    // Page 2: another routing domain and another provider are other identities; r3 conflicts with the stored row.
    assert_eq!(page[1].3, r#"{"(r2,1,3,daytona,s1,t)","(r2,1,4,modal,s1,t)","(r3,1,1,daytona,s1,f)"}"#);
    assert_eq!((page[0].1, page[1].1), (1, 2));
    assert_eq!(
        text("SELECT string_agg(operation_key || '@' || run_id, ' ' ORDER BY operation_key) FROM bf_rank.runtime_sandbox_operations"),
        "backfill:daytona:s1:o1@r1 backfill:daytona:s1:o2@r2 backfill:modal:s1:o1@r2"
    );
    // Within one page the winner is the first in keyset order, not in the array.
    run("TRUNCATE bf_rank.runtime_sandbox_operations");
    let all = walk("bf_rank", 10);
    assert_eq!(all[0].1, 3);
    assert_eq!(text("SELECT run_id FROM bf_rank.runtime_sandbox_operations WHERE routing_domain = 'o1' AND provider = 'daytona'"), "r1");
}

#[pg_test]
fn backfill_rerun_changes_nothing() {
    ledger("bf_rerun");
    for i in 1..=5 {
        attempt("bf_rerun", &format!("r{i}"), 1, "2026-01-01 00:00:00+00", &format!("'[{}, {}]'", daytona(&format!("x{i}")), daytona(&format!("y{i}"))));
    }
    let snapshot = "SELECT string_agg(o::text, ';' ORDER BY operation_key) FROM bf_rerun.runtime_sandbox_operations o";
    let first = walk("bf_rerun", 3);
    assert_eq!(first.iter().map(|p| p.1).sum::<i64>(), 10);
    let before = text(snapshot);
    // An operation the application changed since is left alone too.
    run("UPDATE bf_rerun.runtime_sandbox_operations SET state = 'deleted' WHERE sandbox_id = 'x1'");
    let changed = text(snapshot);
    let second = walk("bf_rerun", 3);
    assert_eq!(second.iter().map(|p| p.1).sum::<i64>(), 0);
    assert!(second.iter().all(|p| !p.3.contains(",t)")));
    assert_eq!(text(snapshot), changed);
    assert_ne!(before, changed);
}

#[pg_test]
fn backfill_preview_is_the_applied_page_without_writes() {
    ledger("bf_preview");
    attempt("bf_preview", "r1", 1, "2026-01-01 00:00:00+00", &format!("'[{}, {}, {}]'", daytona("a"), daytona("b"), daytona("a")));
    attempt("bf_preview", "r2", 1, "2026-01-01 00:00:01+00", &format!("'[{}, {}]'", daytona("c"), daytona("b")));
    attempt("bf_preview", "r99", 1, "2026-01-01 00:00:00.5+00", &format!("'[{}]'", daytona("orphan")));
    // One identity exists already.
    run("INSERT INTO bf_preview.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id) VALUES ('k', 'daytona', 'rx', 1, 'o', 'c')");
    // Page by page: the preview, then the same page applied.
    start_walk();
    let mut applied = Vec::new();
    loop {
        let previewed = page("bf_preview", "preview_sandbox_operation_backfill", 2, false);
        let writes = int("SELECT count(*) FROM bf_preview.runtime_sandbox_operations");
        let done = page("bf_preview", "backfill_sandbox_operations", 2, true);
        assert_eq!(previewed.1, 0);
        assert_eq!((previewed.0, previewed.2, &previewed.3), (done.0, done.2, &done.3));
        assert_eq!(done.1, done.3.matches(",t)").count() as i64);
        assert_eq!(int("SELECT count(*) FROM bf_preview.runtime_sandbox_operations"), writes + done.1);
        let more = done.2;
        applied.push(done);
        if !more {
            break;
        }
    }
    assert_eq!(applied.len(), 3);
    // The orphan attempt (no run) is skipped by both.
    assert!(!applied.iter().any(|p| p.3.contains("orphan")));
    assert_eq!(int("SELECT count(*) FROM bf_preview.runtime_sandbox_operations"), 3);
}

#[pg_test]
fn backfill_maps_modal_and_daytona_resources() {
    ledger("bf_map");
    attempt(
        "bf_map",
        "r1",
        3,
        "2026-01-02 03:04:05.678901+00",
        r#"'[{"kind":"modal_sandbox","sandboxId":"m1","modalAppId":"app-1","daytonaOrganizationId":"ignored","runtimeEnvironment":"","daytonaEnvironment":"staging"},
             {"kind":"daytona_sandbox","sandboxId":"d1","daytonaOrganizationId":"","modalAppId":"ignored","runtimeEnvironment":"dev","daytonaEnvironment":"staging"},
             {"kind":"daytona_sandbox","sandboxId":"d2"},
             {"kind":"modal_sandbox","sandboxId":"m2","modalAppId":""},
             {"kind":"daytona_sandbox","sandboxId":""}, {"kind":"daytona_sandbox"}, {"sandboxId":"nokind"},
             {"kind":"kubernetes","sandboxId":"k1"}, 7, "text", null, [1], {"kind":"daytona_sandbox","sandboxId":42}]'"#,
    );
    // A single object counts as a one-element array; JSON null and SQL NULL hold nothing.
    attempt("bf_map", "r2", 1, "2026-01-02 03:04:06+00", r#"'{"kind":"daytona_sandbox","sandboxId":"single","daytonaEnvironment":"eu"}'"#);
    attempt("bf_map", "r3", 1, "2026-01-02 03:04:06+00", "'null'");
    attempt("bf_map", "r4", 1, "2026-01-02 03:04:06+00", "NULL");
    attempt("bf_map", "r5", 1, "2026-01-02 03:04:06+00", r#"'"just text"'"#);
    let pages = walk("bf_map", 100);
    assert_eq!(pages[0].0, 6);
    assert!(!pages[0].2);
    let rows = text(
        "SELECT string_agg(concat_ws('|', operation_key, provider, run_id, attempt, org_id, environment, sandbox_id,
                 coalesce(routing_domain, '<null>'), routing_domain_key, state, provider_created_at = '2026-01-02 03:04:05.678901+00'),
                 E'\\n' ORDER BY operation_key)
         FROM bf_map.runtime_sandbox_operations",
    );
    assert_eq!(
        rows,
        [
            "backfill:daytona:42:|daytona|r1|3|org-r1|production|42|<null>||live|t",
            "backfill:daytona:d1:|daytona|r1|3|org-r1|dev|d1|<null>||live|t",
            "backfill:daytona:d2:|daytona|r1|3|org-r1|production|d2|<null>||live|t",
            "backfill:daytona:single:|daytona|r2|1|org-r2|eu|single|<null>||live|f",
            "backfill:modal:m1:app-1|modal|r1|3|org-r1|staging|m1|app-1|app-1|live|t",
            "backfill:modal:m2:|modal|r1|3|org-r1|production|m2|<null>||live|t",
        ]
        .join("\n")
    );
    // Ordinals count every array element, skipped ones included.
    assert!(pages[0].3.contains("(r1,3,13,daytona,42,t)"));
}

fn control(schema: &str) -> Option<String> {
    one::<String>(&format!(
        "SELECT value::text FROM {schema}.control WHERE key = 'runtime_sandbox_operation_backfill_v1'"
    ))
}

#[pg_test]
fn backfill_checkpoint_has_the_application_shape_both_ways() {
    ledger("bf_ckpt");
    for i in 1..=3 {
        attempt("bf_ckpt", &format!("r{i}"), 1, &format!("2026-01-01 00:00:0{i}.123456+00"), &format!("'[{}, {}]'", daytona(&format!("a{i}")), daytona(&format!("b{i}"))));
    }
    run("SET LOCAL TimeZone = 'UTC'");
    let p = text("SELECT (p.phase, p.batches, p.scanned_attempts, p.inserted_operations, p.projected_operations, p.next_cursor)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 3, 1, 'bf_ckpt') p");
    assert_eq!(p, r#"(pending,1,3,3,3,"(""2026-01-01 00:00:02.123456+00"",r2,1,1)")"#);
    assert_eq!(
        control("bf_ckpt").unwrap(),
        r#"{"phase": "pending", "cursor": {"runId": "r2", "attempt": 1, "updatedAt": "2026-01-01 00:00:02.123456+00", "resourceOrdinal": 1}}"#
    );
    // The application wrote this one (its JSON.stringify key order): resume from it.
    run(r#"UPDATE bf_ckpt.control SET value = '{"phase":"pending","cursor":{"updatedAt":"2026-01-01 00:00:02.123456+00","runId":"r2","attempt":1,"resourceOrdinal":2}}'
           WHERE key = 'runtime_sandbox_operation_backfill_v1'"#);
    let p = text("SELECT (p.phase, p.batches, p.scanned_attempts, p.inserted_operations, p.next_cursor)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 3, 5, 'bf_ckpt') p");
    assert_eq!(p, "(complete,1,2,2,)");
    assert_eq!(control("bf_ckpt").unwrap(), r#"{"phase": "complete", "cursor": null}"#);
    // r2's first resource was before the handed-over cursor: never inserted.
    assert_eq!(int("SELECT count(*) FROM bf_ckpt.runtime_sandbox_operations"), 5);
    // Completed stays complete, in both modes.
    for dry in ["true", "false"] {
        let p = text(&format!("SELECT (p.*)::text FROM runtime_sandbox.advance_sandbox_operation_backfill({dry}, 3, 5, 'bf_ckpt') p"));
        assert_eq!(p, format!("(complete,{},0,0,0,0,{{}},)", &dry[..1]));
    }
    // A cursor with wrong JSON types restarts from the oldest attempt.
    run(r#"UPDATE bf_ckpt.control SET value = '{"phase":"pending","cursor":{"updatedAt":"x","runId":"r2","attempt":"1","resourceOrdinal":2}}'"#);
    let p = text("SELECT (p.scanned_attempts, (p.next_cursor).run_id)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_ckpt') p");
    assert_eq!(p, "(1,r1)");
    // A cursor the application would refuse is refused, naming the checkpoint.
    run(r#"UPDATE bf_ckpt.control SET value = '{"phase":"pending","cursor":{"updatedAt":"2026-01-01","runId":" ","attempt":1,"resourceOrdinal":2}}'"#);
    let err = error_of("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_ckpt')").unwrap();
    assert!(err.starts_with("22000 runtime_sandbox: the backfill checkpoint in \"bf_ckpt\".control"), "{err}");
    assert!(err.contains("run_id is blank"), "{err}");
}

#[pg_test]
fn backfill_dry_run_writes_nothing_and_reports_like_the_application() {
    ledger("bf_dry");
    attempt("bf_dry", "r1", 1, "2026-01-01 00:00:00+00", &format!("'[{}, {}]'", daytona("a"), daytona("a")));
    // An attempt without a run: the application's preview counts it.
    attempt("bf_dry", "r404", 1, "2026-01-01 00:00:01+00", &format!("'[{}]'", daytona("b")));
    attempt("bf_dry", "r2", 1, "2026-01-01 00:00:02+00", &format!("'[{}]'", daytona("c")));
    run("SET LOCAL TimeZone = 'UTC'");
    let before = "SELECT (SELECT count(*) FROM bf_dry.runtime_sandbox_operations) + (SELECT count(*) FROM bf_dry.control)";
    let p = text("SELECT (p.*)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 3, 50, 'bf_dry') p");
    assert_eq!(
        p,
        r#"(pending,t,1,3,0,2,"{""(r1,1,1,daytona,a,t)"",""(r1,1,2,daytona,a,f)"",""(r404,1,1,daytona,b,t)""}","(""2026-01-01 00:00:01+00"",r404,1,1)")"#
    );
    assert_eq!(int(before), 0);
    // From a stored cursor, past the end: nothing to preview, zero batches, still pending.
    run(r#"INSERT INTO bf_dry.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
           '{"phase":"pending","cursor":{"updatedAt":"2026-01-01 00:00:02+00","runId":"r2","attempt":1,"resourceOrdinal":1}}')"#);
    let p = text("SELECT (p.*)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 3, 1, 'bf_dry') p");
    assert_eq!(p, "(pending,t,0,0,0,0,{},)");
    let stored = control("bf_dry");
    let _ = text("SELECT (p.*)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 1, 1, 'bf_dry') p");
    assert_eq!(control("bf_dry"), stored);
    assert_eq!(int("SELECT count(*) FROM bf_dry.runtime_sandbox_operations"), 0);
}

#[pg_test]
fn backfill_advance_clamps_max_batches_and_sums_pages() {
    ledger("bf_clamp");
    run(&format!(
        "INSERT INTO bf_clamp.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'r1', g, '2026-01-01'::timestamptz + g * interval '1 second', jsonb_build_array({}) FROM generate_series(1, 205) g",
        r#"jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 's' || g)"#
    ));
    let call = |max: &str| text(&format!("SELECT (p.phase, p.batches, p.scanned_attempts, p.inserted_operations, p.projected_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, {max}, 'bf_clamp') p"));
    assert_eq!(call("NULL"), "(pending,1,1,1,1)");
    assert_eq!(call("0"), "(pending,1,1,1,1)");
    assert_eq!(call("-7"), "(pending,1,1,1,1)");
    assert_eq!(call("100000"), "(pending,200,200,200,200)");
    // 2 left, then the empty page: complete after 3 pages.
    assert_eq!(call("10"), "(complete,3,2,2,2)");
    assert_eq!(int("SELECT count(*) FROM bf_clamp.runtime_sandbox_operations"), 205);
}

#[pg_test]
fn backfill_status_shows_phase_cursor_and_what_is_left() {
    ledger("bf_status");
    for i in 1..=4 {
        attempt("bf_status", &format!("r{i}"), 1, &format!("2026-01-01 00:00:0{i}+00"), &format!("'[{}]'", daytona(&format!("s{i}"))));
    }
    let status = || text("SELECT (s.*)::text FROM runtime_sandbox.backfill_status('bf_status') s");
    assert_eq!(status(), "(pending,,4)");
    run("SET LOCAL TimeZone = 'UTC'");
    run("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 3, 1, 'bf_status')");
    assert_eq!(status(), r#"(pending,"(""2026-01-01 00:00:03+00"",r3,1,1)",1)"#);
    run("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 3, 1, 'bf_status')");
    assert_eq!(status(), "(complete,,0)");
}

#[pg_test]
fn backfill_bad_input_names_the_argument_and_writes_nothing() {
    ledger("bf_bad");
    attempt("bf_bad", "r1", 1, "2026-01-01 00:00:00+00", &format!("'[{}]'", daytona("a")));
    let cases = [
        ("SELECT runtime_sandbox.backfill_sandbox_operations(0, NULL, 'bf_bad')", "batch_size: must be an integer from 1 through 1000, got 0"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1001, NULL, 'bf_bad')", "batch_size: must be an integer from 1 through 1000, got 1001"),
        ("SELECT runtime_sandbox.preview_sandbox_operation_backfill(NULL, NULL, 'bf_bad')", "batch_size: must not be NULL"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, (NULL, 'r1', 1, 1), 'bf_bad')", "after: updated_at is NULL"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('2026-01-01', NULL, 1, 1), 'bf_bad')", "after: run_id is NULL"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('2026-01-01', 'r1', NULL, 1), 'bf_bad')", "after: attempt is NULL"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('2026-01-01', 'r1', 1, NULL), 'bf_bad')", "after: resource_ordinal is NULL"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('2026-01-01', '  ', 1, 1), 'bf_bad')", "after: run_id is blank"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('2026-01-01', 'r1', 0, 1), 'bf_bad')", "after: attempt must be at least 1, got 0"),
        ("SELECT runtime_sandbox.preview_sandbox_operation_backfill(1, ('2026-01-01', 'r1', 1, -1), 'bf_bad')", "after: resource_ordinal must be at least 1, got -1"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, ('infinity', 'r1', 1, 1), 'bf_bad')", "after: updated_at infinity is not a timestamp the application accepts"),
        ("SELECT runtime_sandbox.preview_sandbox_operation_backfill(1, ('2026-01-01 00:00:00+00 BC', 'r1', 1, 1), 'bf_bad')", "after: updated_at 2026-01-01 00:00:00+00 BC is not a timestamp the application accepts"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, NULL, 'bf_missing')", "ledger_schema: schema \"bf_missing\" does not exist"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, NULL, 'bf-bad')", "ledger_schema: \"bf-bad\" is not a plain identifier"),
        ("SELECT runtime_sandbox.backfill_sandbox_operations(1, NULL, NULL)", "ledger_schema: must not be NULL"),
        ("SELECT runtime_sandbox.advance_sandbox_operation_backfill(NULL, 1, 1, 'bf_bad')", "dry_run: must not be NULL"),
        ("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 5000, 1, 'bf_bad')", "batch_size: must be an integer from 1 through 1000, got 5000"),
        ("SELECT runtime_sandbox.advance_sandbox_operation_backfill(true, 0, 1, 'bf_bad')", "batch_size: must be an integer from 1 through 1000, got 0"),
        ("SELECT runtime_sandbox.backfill_status('bf_missing')", "ledger_schema: schema \"bf_missing\" does not exist"),
        ("SELECT runtime_sandbox._backfill_run_lock_key(1, 0, '0', 'bf_bad')", "max_batches: must be NULL (until complete) or at least 1, got 0"),
        ("SELECT runtime_sandbox._backfill_run_lock_key(1, NULL, '-1 second', 'bf_bad')", "pause: must not be negative"),
        ("SELECT runtime_sandbox._backfill_run_lock_key(1, NULL, NULL, 'bf_bad')", "pause: must not be NULL"),
        (&format!("SELECT runtime_sandbox._backfill_run_lock_key(1, NULL, {}, 'bf_bad')", crate::reconcile::tests::INFINITE_INTERVAL), "pause: must be a finite interval"),
        ("SELECT runtime_sandbox._backfill_run_lock_key(1001, NULL, '0', 'bf_bad')", "batch_size: must be an integer from 1 through 1000"),
    ];
    for (sql, expected) in cases {
        let err = error_of(sql).unwrap_or_else(|| panic!("{sql} did not fail"));
        assert!(err.starts_with(&format!("22023 runtime_sandbox: invalid argument {expected}")), "{sql}: {err}");
    }
    assert_eq!(int("SELECT count(*) FROM bf_bad.runtime_sandbox_operations"), 0);
    assert_eq!(int("SELECT count(*) FROM bf_bad.control"), 0);
    // Malformed resources never stop the backfill.
    attempt("bf_bad", "r2", 1, "2026-01-01 00:00:01+00", r#"'[null, 1, "x", {"kind": {"nested": true}}, {"kind":"daytona_sandbox","sandboxId":null}]'"#);
    let p = text("SELECT (p.phase, p.scanned_attempts, p.inserted_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'bf_bad') p");
    assert_eq!(p, "(complete,1,1)");
}

/// The SQLSTATE, message, DETAIL and HINT `sql` raises.
fn error_report(sql: &str) -> Option<String> {
    run(r#"CREATE OR REPLACE FUNCTION pg_temp.error_report(q text) RETURNS text LANGUAGE plpgsql AS $$
           DECLARE d text; h text;
           BEGIN EXECUTE q; RETURN NULL;
           EXCEPTION WHEN OTHERS THEN
               GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
               RETURN SQLSTATE || ' ' || SQLERRM || ' | DETAIL: ' || d || ' | HINT: ' || h;
           END $$"#);
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_report($1)", &[sql.into()]).expect("error_report runs")
}

#[pg_test]
fn backfill_a_missing_ledger_says_how_to_install_it() {
    run("CREATE SCHEMA bf_not_a_ledger");
    run("CREATE TABLE bf_not_a_ledger.attempts (run_id text)");
    let tables_missing = "42P01 runtime_sandbox: ledger_schema \"bf_not_a_ledger\" lacks the ledger's table(s) attempts.attempt, \
                          attempts.resource_json, attempts.updated_at, control, runs, runtime_sandbox_operations | DETAIL: The backfill reads attempts and runs, inserts into \
                          runtime_sandbox_operations and keeps its checkpoint in control. | HINT: Point ledger_schema at \
                          the ledger's schema, or run SELECT runtime_sandbox.install_ledger('bf_not_a_ledger') to create the tables.";
    let schema_missing = "22023 runtime_sandbox: invalid argument ledger_schema: schema \"bf_nowhere\" does not exist | \
                          DETAIL:  | HINT: SELECT runtime_sandbox.install_ledger('bf_nowhere') creates it with the ledger's tables.";
    for function in ["backfill_sandbox_operations(1, NULL, '{}')", "preview_sandbox_operation_backfill(1, NULL, '{}')",
                     "advance_sandbox_operation_backfill(false, 1, 1, '{}')", "advance_sandbox_operation_backfill(true, 1, 1, '{}')",
                     "backfill_status('{}')", "_backfill_run_lock_key(1, NULL, '0', '{}')"] {
        let call = |schema: &str| format!("SELECT runtime_sandbox.{}", function.replace("{}", schema));
        assert_eq!(error_report(&call("bf_not_a_ledger")).as_deref(), Some(tables_missing), "{function}");
        assert_eq!(error_report(&call("bf_nowhere")).as_deref(), Some(schema_missing), "{function}");
    }
    // The checkpoint's advice is a HINT.
    ledger("bf_odd_checkpoint");
    run(r#"INSERT INTO bf_odd_checkpoint.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
           '{"phase": "pending", "cursor": {"updatedAt": " ", "runId": "r", "attempt": 1, "resourceOrdinal": 1}}')"#);
    let report = error_report("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_odd_checkpoint')").unwrap();
    assert!(report.starts_with("22000 runtime_sandbox: the backfill checkpoint in \"bf_odd_checkpoint\".control"), "{report}");
    assert!(report.ends_with(" | HINT: Fix the value, or delete the row to restart the backfill from the oldest attempt."), "{report}");
}

/// 20,000 attempts with one sandbox each, 1 ms apart from 2026-01-01, analyzed.
fn keyset_ledger(schema: &str) {
    ledger(schema);
    run(&format!(
        "INSERT INTO {schema}.runs (run_id, org_id) SELECT 'run-' || g, 'o' FROM generate_series(1, 20000) g;
         INSERT INTO {schema}.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'run-' || g, 1, '2026-01-01'::timestamptz + g * interval '1 ms',
                jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 's' || g))
         FROM generate_series(1, 20000) g;
         ANALYZE {schema}.attempts; ANALYZE {schema}.runs"
    ));
}

/// Attempt tuples read so far in this transaction (index fetches and sequential reads).
fn attempt_tuples_read(schema: &str) -> i64 {
    int(&format!(
        "SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) FROM pg_stat_xact_user_tables \
         WHERE relid = '{schema}.attempts'::regclass"
    ))
}

#[pg_test]
fn backfill_pages_start_at_the_cursor_in_the_keyset_index() {
    keyset_ledger("bf_index");
    // Half-way through: the attempts read are the page's, not everything before or after it.
    let before = attempt_tuples_read("bf_index");
    let p = text("SELECT (p.scanned_attempts, (p.next_cursor).run_id)::text FROM runtime_sandbox.backfill_sandbox_operations(100, ('2026-01-01'::timestamptz + interval '10000 ms', 'run-10000', 1, 1), 'bf_index') p");
    assert_eq!(p, "(100,run-10100)");
    let read = attempt_tuples_read("bf_index") - before;
    assert!(read <= 150, "read {read} attempt tuples for a 100-resource page");
}

/// Attempts whose JSON exercises every rule of the page: non-array values,
/// non-objects, kinds and ids that are not strings (numbers and containers
/// print as the server prints them), empty strings, duplicates within an
/// attempt, a page and across pages, an attempt without a run, NULL JSON,
/// ties, long runs of attempts without sandbox resources, and an identity
/// that already has an operation.
fn awkward_ledger(schema: &str) {
    ledger(schema);
    run(&format!(
        "INSERT INTO {schema}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id)
         VALUES ('pre', 'daytona', 'r1', 1, 'o', 'dup')"
    ));
    let t = |s: &str| format!("2026-01-01 00:00:0{s}+00");
    attempt(schema, "r1", 1, &t("1"), r#"'[{"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"o1","runtimeEnvironment":"","daytonaEnvironment":"dev"}, {"kind":"modal_sandbox","sandboxId":"a","modalAppId":""}, 7, "x", null, [1], {"kind":"docker","sandboxId":"d"}]'"#);
    attempt(schema, "r2", 1, &t("1"), r#"'{"kind":"modal_sandbox","sandboxId":"m1","modalAppId":"app","runtimeEnvironment":"staging"}'"#);
    attempt(schema, "r1", 2, &t("1"), r#"'"scalar"'"#);
    attempt(schema, "r99", 1, &t("2"), r#"'[{"kind":"daytona_sandbox","sandboxId":"norun"}]'"#);
    attempt(schema, "r3", 1, &t("2"), "NULL");
    attempt(schema, "r3", 2, &t("3"), r#"'[{"kind":"daytona_sandbox","sandboxId":123.50,"daytonaOrganizationId":1e3}, {"kind":"modal_sandbox","sandboxId":true,"modalAppId":{"b":[1, 2],"a":null}}, {"kind":"daytona_sandbox","sandboxId":"","daytonaOrganizationId":"o"}, {"kind":1,"sandboxId":"k"}, {"kind":"daytona_sandbox","sandboxId":"dup"}, {"kind":"modal_sandbox","sandboxId":false,"modalAppId":null}]'"#);
    attempt(schema, "r4", 1, &t("3.5"), r#"'[{"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"o1"}, {"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"o2"}, {"kind":"modal_sandbox","sandboxId":"a"}, {"kind":"daytona_sandbox","sandboxId":"ü-ñ","runtimeEnvironment":["e"]}]'"#);
    attempt(schema, "r5", 1, &t("4"), "'[]'");
    attempt(schema, "r5", 2, &t("4"), r#"'[{"kind":"modal_sandbox","sandboxId":"x","modalAppId":"m","daytonaEnvironment":false}]'"#);
    run(&format!(
        r#"INSERT INTO {schema}.attempts (run_id, attempt, updated_at, resource_json)
           SELECT 'r7', g, '2026-01-01 00:00:04.5+00', '[{{"kind":"docker","sandboxId":"d"}}]' FROM generate_series(1, 40) g"#
    ));
    attempt(schema, "r6", 1, &t("5"), r#"'[{"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"o2"}, {"kind":"daytona_sandbox","sandboxId":"a","daytonaOrganizationId":"o2"}, {"kind":"daytona_sandbox","sandboxId":42}]'"#);
    attempt(schema, "r8", 1, &t("6"), r#"'[{"kind":"modal_sandbox","sandboxId":-1.00e-7,"modalAppId":-0.0}, {"kind":"daytona_sandbox","sandboxId":{"u":"é\u0001","\"q\"":"tab\there"}}, {"kind":"daytona_sandbox","sandboxId":"","daytonaOrganizationId":7}, {"kind":"modal_sandbox","sandboxId":[1e-7]}]'"#);
}

fn operations_text(schema: &str) -> String {
    text(&format!(
        "SELECT string_agg((operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain,
                            routing_domain_key, state, provider_operation_token, provider_created_at, delete_confirmed_at)::text,
                           E'\\n' ORDER BY operation_key)
         FROM {schema}.runtime_sandbox_operations"
    ))
}

/// A test oracle (src/backfill/testdata): the page in the application's own
/// terms, as one SQL statement, at the cursor in walk_cursor.
fn oracle_sql(file: &str, schema: &str, batch: i32) -> String {
    let sql = match file {
        "applied" => include_str!("testdata/applied_page.sql"),
        "preview" => include_str!("testdata/preview_page.sql"),
        "application_preview" => include_str!("testdata/application_preview.sql"),
        _ => unreachable!(),
    };
    sql.replace("@ledger@", &format!("\"{schema}\""))
        .replace("$1", "(SELECT (c).updated_at FROM pg_temp.walk_cursor)")
        .replace("$2", "(SELECT (c).run_id FROM pg_temp.walk_cursor)")
        .replace("$3", "(SELECT (c).attempt FROM pg_temp.walk_cursor)")
        .replace("$4", "(SELECT (c).resource_ordinal FROM pg_temp.walk_cursor)")
        .replace("$5", &batch.to_string())
}

/// The oracle's page (or progress) row as text.
fn oracle(file: &str, schema: &str, batch: i32) -> String {
    let sql = oracle_sql(file, schema, batch);
    Spi::connect_mut(|c| c.update(sql.as_str(), None, &[])?.first().get_one::<String>())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .expect("a row")
}

/// Every entry point walks the awkward ledger page by page exactly as the
/// application's page SQL does: backfill_sandbox_operations (rows, counts,
/// targets), the orchestrator's pages (counts and cursors, rows), the preview
/// of each page, and the application's dry run from each cursor.
#[pg_test]
fn backfill_pages_equal_the_application_page_sql() {
    run("SET LOCAL TimeZone = 'UTC'");
    for batch in [1, 2, 3, 7, 1000] {
        let (single, reference, orchestrated) =
            (format!("bf_eq_single_{batch}"), format!("bf_eq_ref_{batch}"), format!("bf_eq_orch_{batch}"));
        for schema in [&single, &reference, &orchestrated] {
            awkward_ledger(schema);
        }
        start_walk();
        for pages in 1.. {
            assert!(pages < 200, "batch {batch}: the walk does not end");
            // Before applying: the preview of the page, and the application's dry run from the same cursor.
            let preview = text(&format!(
                "SELECT p::text FROM runtime_sandbox.preview_sandbox_operation_backfill({batch}, (SELECT c FROM walk_cursor), '{single}') p"
            ));
            assert_eq!(preview, oracle("preview", &single, batch), "batch {batch}, page {pages}: preview");
            run(&format!(
                "DELETE FROM {single}.control;
                 INSERT INTO {single}.control (key, value)
                 SELECT 'runtime_sandbox_operation_backfill_v1', jsonb_build_object('phase', 'pending', 'cursor',
                        CASE WHEN c IS NOT NULL THEN jsonb_build_object('updatedAt', (c).updated_at::text, 'runId', (c).run_id,
                             'attempt', (c).attempt, 'resourceOrdinal', (c).resource_ordinal) END)
                 FROM walk_cursor"
            ));
            let dry = text(&format!("SELECT p::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, {batch}, 1, '{single}') p"));
            assert_eq!(dry, oracle("application_preview", &single, batch), "batch {batch}, page {pages}: dry run");
            run(&format!("DELETE FROM {single}.control"));

            let expected = oracle("applied", &reference, batch);
            let applied = text(&format!(
                "SELECT p::text FROM runtime_sandbox.backfill_sandbox_operations({batch}, (SELECT c FROM walk_cursor), '{single}') p"
            ));
            assert_eq!(applied, expected, "batch {batch}, page {pages}: backfill_sandbox_operations");
            let (progress, phase) = Spi::get_two::<String, String>(&format!(
                "SELECT (p.scanned_attempts, p.inserted_operations, p.next_cursor)::text, p.phase
                 FROM runtime_sandbox.advance_sandbox_operation_backfill(false, {batch}, 1, '{orchestrated}') p"
            ))
            .unwrap();
            let reported = text(&format!(
                "SELECT (p.scanned_attempts, p.inserted_operations, CASE WHEN p.has_more THEN p.next_cursor END)::text
                 FROM (SELECT ('{}'::text::runtime_sandbox.backfill_page).*) p",
                expected.replace('\'', "''")
            ));
            assert_eq!(progress, Some(reported), "batch {batch}, page {pages}: orchestrator");
            run(&format!("UPDATE walk_cursor SET c = ('{}'::text::runtime_sandbox.backfill_page).next_cursor", expected.replace('\'', "''")));
            if phase.as_deref() == Some("complete") {
                break;
            }
        }
        assert_eq!(operations_text(&single), operations_text(&reference), "batch {batch}");
        assert_eq!(operations_text(&orchestrated), operations_text(&reference), "batch {batch}");
    }
    // Numbers and containers print as the server prints them.
    let odd = text(r#"SELECT string_agg(sandbox_id || '/' || routing_domain_key || '/' || environment, ' ' ORDER BY sandbox_id COLLATE "C") FROM bf_eq_orch_1000.runtime_sandbox_operations WHERE sandbox_id NOT IN ('a', 'dup', 'm1', 'x')"#);
    assert_eq!(
        odd,
        r#"-0.000000100/0.0/production 123.50/1000/production 42//production [0.0000001]//production false//production true/{"a": null, "b": [1, 2]}/production {"u": "é\u0001", "\"q\"": "tab\there"}//production ü-ñ//["e"]"#
    );
}

/// The resources of every jsonb value the reader meets, against the server's `->>`.
#[pg_test]
fn backfill_reads_numbers_and_containers_as_the_server_prints_them() {
    let values = [
        "0", "-0", "-0.0", "1e3", "1.0e-5", "123.50", "1e100", "-12345678901234567890.123456789", "0.000001",
        "99999999999999999999999999.999999999999", "3.14159265358979323846264338327950288419716939937510",
        "[]", "{}", "[1, [2, [3.0]]]", r#"{"b": {"c": [true, false, null]}, "a": "x"}"#, r#"["\"\\/\b\f\n\r\t\u0001\u001f é €"]"#,
        r#"{"longer key": 1, "k": 2, "kk": {"": []}}"#,
    ];
    for value in values {
        let sql = format!(r#"SELECT jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', '{value}'::jsonb, 'runtimeEnvironment', 'e')) AS doc"#);
        let server = text(&format!("SELECT d -> 0 ->> 'sandboxId' FROM ({sql}) AS q(d)"));
        let read = Spi::connect(|c| {
            c.select(sql.as_str(), None, &[])?;
            // SAFETY: the one row of the statement just run; column 1 is a non-NULL jsonb.
            let doc = unsafe {
                let table = &*pg_sys::SPI_tuptable;
                let mut is_null = false;
                let datum = pg_sys::SPI_getbinval(*table.vals, table.tupdesc, 1, &mut is_null);
                crate::shell::types::JsonbBytes::from_polymorphic_datum(datum, is_null, pg_sys::JSONBOID).expect("a document")
            };
            Ok::<_, pgrx::spi::SpiError>(crate::backfill::resources::from_jsonb(doc.as_bytes()))
        })
        .unwrap()
        .unwrap_or_else(|| panic!("{value}: not read in place"));
        assert_eq!(String::from_utf8(read[0].sandbox_id.clone()).unwrap(), server, "{value}");
    }
}

#[pg_test]
fn backfill_orchestrator_pages_start_at_the_cursor_in_the_keyset_index() {
    keyset_ledger("bf_index_orch");
    run(
        "INSERT INTO bf_index_orch.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
           '{\"phase\":\"pending\",\"cursor\":{\"updatedAt\":\"2026-01-01 00:00:10+00\",\"runId\":\"run-10000\",\"attempt\":1,\"resourceOrdinal\":1}}')",
    );
    let before = attempt_tuples_read("bf_index_orch");
    let p = text("SELECT (p.scanned_attempts, (p.next_cursor).run_id)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 100, 1, 'bf_index_orch') p");
    assert_eq!(p, "(100,run-10100)");
    let read = attempt_tuples_read("bf_index_orch") - before;
    // One fetch sized from the resources per attempt seen last (at most ten attempts a resource).
    assert!(read <= 1100, "read {read} attempt tuples for a 100-resource page");
}

#[pg_test]
fn backfill_pages_raise_what_the_application_page_sql_raises_and_write_nothing() {
    // An operation already holds the key a backfilled daytona "zz" would get,
    // under another identity: no ON CONFLICT covers that, so every path fails
    // (the optimistic insert rolls back and falls back first).
    for schema in ["bf_pk_orch", "bf_pk_single", "bf_pk_ref"] {
        ledger(schema);
        run(&format!(
            "INSERT INTO {schema}.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id)
             VALUES ('backfill:daytona:zz:', 'daytona', 'r1', 1, 'o', 'other')"
        ));
        attempt(schema, "r1", 1, "2026-01-01 00:00:00+00", &format!("'[{}, {}]'", daytona("yy"), daytona("zz")));
    }
    start_walk();
    let expected = error_of(&oracle_sql("applied", "bf_pk_ref", 10)).expect("an error");
    assert!(expected.starts_with("23505 duplicate key value violates unique constraint"), "{expected}");
    let single = error_of("SELECT runtime_sandbox.backfill_sandbox_operations(10, NULL, 'bf_pk_single')");
    assert_eq!(single.as_deref(), Some(expected.as_str()));
    assert_eq!(int("SELECT count(*) FROM bf_pk_single.runtime_sandbox_operations"), 1);
    for _ in 0..2 {
        let orchestrated = error_of("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'bf_pk_orch')");
        assert_eq!(orchestrated.as_deref(), Some(expected.as_str()));
        assert_eq!(int("SELECT count(*) FROM bf_pk_orch.runtime_sandbox_operations"), 1);
        assert_eq!(int("SELECT count(*) FROM bf_pk_orch.control"), 0);
    }
    // The session goes on: after the key is freed, the page applies.
    run("DELETE FROM bf_pk_orch.runtime_sandbox_operations");
    let p = text("SELECT (p.phase, p.scanned_attempts, p.inserted_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'bf_pk_orch') p");
    assert_eq!(p, "(complete,2,2)");
}

/// A stored checkpoint whose cursor the application itself refuses to resume
/// from (its `Date.parse` of updatedAt is NaN) stops the applied backfill with
/// an error naming the value; nothing is written and the row stays as it was.
/// The dry run previews from it as the application's preview does.
#[pg_test]
fn backfill_checkpoint_timestamps_the_application_refuses_are_errors() {
    run("SET LOCAL TimeZone = 'UTC'");
    ledger("bf_refused");
    attempt("bf_refused", "r1", 1, "2026-01-01 00:00:00+00", &format!("'[{}]'", daytona("a")));
    attempt("bf_refused", "r2", 1, "2026-01-02 00:00:00+00", &format!("'[{}]'", daytona("b")));
    let store = |updated_at: &str| {
        let value = serde_json::json!({"phase": "pending", "cursor": {"updatedAt": updated_at, "runId": "r1", "attempt": 1, "resourceOrdinal": 1}});
        Spi::run_with_args(
            "INSERT INTO bf_refused.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1', $1::text::jsonb)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[value.to_string().into()],
        )
        .unwrap();
    };
    // PostgreSQL reads every one of these; the application's Date.parse does not.
    for refused in ["infinity", "-infinity", "epoch", "now", "today", "2026-01-01 00:00:00+00 BC", "J2461042",
                    "275760-09-13 00:00:00.001+00", "2026-01-01 00:00:00+05:30:15", "2026-01-01 00:00:00 Europe/Berlin"] {
        store(refused);
        let stored = control("bf_refused");
        let err = error_of("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 5, 'bf_refused')")
            .unwrap_or_else(|| panic!("{refused}: the backfill ran"));
        assert!(err.starts_with("22000 runtime_sandbox: the backfill checkpoint in \"bf_refused\".control"), "{refused}: {err}");
        assert!(err.contains(&format!("cursor.updatedAt {:?} is not a timestamp the application accepts", refused)), "{err}");
        assert_eq!(control("bf_refused"), stored, "{refused}");
        assert_eq!(int("SELECT count(*) FROM bf_refused.runtime_sandbox_operations"), 0, "{refused}");
        // backfill_status shows it as it is; the dry run previews after it, as the application's preview does.
        let status = text("SELECT s.phase FROM runtime_sandbox.backfill_status('bf_refused') s");
        assert_eq!(status, "pending", "{refused}");
    }
    store("infinity");
    let p = text("SELECT (p.phase, p.batches, p.scanned_attempts)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 10, 1, 'bf_refused') p");
    assert_eq!(p, "(pending,0,0)");
    // Odd texts the application accepts resume as PostgreSQL reads them.
    for accepted in ["Jan 1 2026", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00.000000+00"] {
        store(accepted);
        let p = text("SELECT (p.phase, p.scanned_attempts, (p.next_cursor).run_id)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'bf_refused') p");
        assert_eq!(p, "(complete,1,)", "{accepted}");
        run("TRUNCATE bf_refused.runtime_sandbox_operations");
    }
}

/// The checkpoint's updatedAt is written in ISO style with every microsecond
/// whatever the session's DateStyle, and a stored text is read as the
/// application's session reads it (DateStyle ISO, MDY) whatever this
/// session's DateStyle.
#[pg_test]
fn backfill_checkpoint_timestamps_do_not_depend_on_the_session_datestyle() {
    ledger("bf_style");
    for (i, at) in ["2026-01-02 03:04:05.123456+00", "2026-01-02 03:04:05.5+00", "2026-02-01 00:00:00+00"].iter().enumerate() {
        attempt("bf_style", &format!("r{}", i + 1), 1, at, &format!("'[{}]'", daytona(&format!("s{i}"))));
    }
    run("SET LOCAL TimeZone = 'UTC'");
    for style in ["SQL, DMY", "German", "Postgres, MDY", "ISO, YMD"] {
        run(&format!("SET LOCAL DateStyle = '{style}'"));
        run("DELETE FROM bf_style.control; TRUNCATE bf_style.runtime_sandbox_operations");
        run("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_style')");
        let stored = text("SELECT value #>> '{cursor,updatedAt}' FROM bf_style.control");
        assert_eq!(stored, "2026-01-02 03:04:05.123456+00", "{style}");
        run("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_style')");
        assert_eq!(text("SELECT value #>> '{cursor,updatedAt}' FROM bf_style.control"), "2026-01-02 03:04:05.5+00", "{style}");
    }
    // Written by a session whose DateStyle said otherwise: 01/02 is January 2 to the application (MDY).
    run("SET LOCAL DateStyle = 'SQL, DMY'");
    run(r#"UPDATE bf_style.control SET value = '{"phase":"pending","cursor":{"updatedAt":"01/02/2026 03:04:05.123456 UTC","runId":"r1","attempt":1,"resourceOrdinal":1}}'"#);
    let p = text("SELECT (p.scanned_attempts, (p.next_cursor).run_id)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_style') p");
    assert_eq!(p, "(1,r2)");
    run("RESET DateStyle");
}

/// Every statement of a call sees what earlier calls wrote, also within one
/// SQL statement: the second call resumes from the first one's checkpoint.
#[pg_test]
fn backfill_calls_in_one_statement_resume_from_each_other() {
    ledger("bf_same_statement");
    for i in 1..=3 {
        attempt("bf_same_statement", &format!("r{i}"), 1, &format!("2026-01-01 00:00:0{i}+00"), &format!("'[{}]'", daytona(&format!("s{i}"))));
    }
    let pages = text(
        "SELECT string_agg(coalesce(((p).next_cursor).run_id, (p).phase), ',' ORDER BY g)
         FROM (SELECT g, runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, 'bf_same_statement') AS p
               FROM generate_series(1, 4) AS g OFFSET 0) AS calls",
    );
    assert_eq!(pages, "r1,r2,r3,complete");
    assert_eq!(int("SELECT count(*) FROM bf_same_statement.runtime_sandbox_operations"), 3);
}

/// An attempt of 30,000 resources (over a megabyte: kept detoasted between
/// pages), between two small ones, is paged through in full, every resource
/// once and in ordinal order; an attempt whose value changes between pages is
/// read anew (the cache is keyed by the stored value, not the attempt).
#[pg_test]
fn backfill_pages_through_a_large_attempt_in_order() {
    ledger("bf_large");
    attempt("bf_large", "r1", 1, "2026-01-01", &format!("'[{}]'", daytona("before")));
    run("INSERT INTO bf_large.attempts (run_id, attempt, updated_at, resource_json)
         SELECT 'r2', 1, '2026-01-02', jsonb_agg(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'big-' || g,
                                                               'daytonaOrganizationId', repeat('o', 20)) ORDER BY g)
         FROM generate_series(1, 30000) g");
    attempt("bf_large", "r3", 1, "2026-01-03", &format!("'[{}]'", daytona("after")));
    assert!(int("SELECT pg_column_size(resource_json)::bigint FROM bf_large.attempts WHERE run_id = 'r2'") > 0);
    assert!(int("SELECT octet_length(resource_json::text)::bigint FROM bf_large.attempts WHERE run_id = 'r2'") > 1 << 20);
    // Ten pages of 1000, then the value changes under the backfill: the rest comes from the new value.
    assert_eq!(text("SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1000, 10, 'bf_large')"), "pending");
    run("UPDATE bf_large.attempts SET resource_json = jsonb_set(resource_json, '{9999,sandboxId}', '\"changed\"')
         WHERE run_id = 'r2'");
    assert_eq!(text("SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1000, 100, 'bf_large')"), "complete");
    assert_eq!(int("SELECT count(*) FROM bf_large.runtime_sandbox_operations"), 30_002);
    assert_eq!(int("SELECT count(*) FROM bf_large.runtime_sandbox_operations WHERE sandbox_id = 'changed'"), 1);
    assert_eq!(int("SELECT count(*) FROM bf_large.runtime_sandbox_operations WHERE sandbox_id LIKE 'big-%'"), 29_999);
}

/// Org ids of type uuid in runs and operations (the application's backfill
/// copies them from runs): every form of the insert (optimistic, after a
/// conflict, the single-page functions) writes the run's uuid, and the
/// reconcile seeds the lease with its text. uuid operations over text runs
/// are refused (the application's insert fails there too), before any work.
#[pg_test]
fn backfill_copies_uuid_org_ids_from_runs_into_operations() {
    let s = "bf_uuid_org";
    run(&format!("SELECT runtime_sandbox.install_ledger('{s}')"));
    run(&format!(
        "ALTER TABLE {s}.runs ALTER COLUMN org_id TYPE uuid USING md5(run_id)::uuid;
         ALTER TABLE {s}.runtime_sandbox_operations ALTER COLUMN org_id TYPE uuid USING org_id::uuid;
         INSERT INTO {s}.runs (run_id, org_id) SELECT 'r' || g, md5('r' || g)::uuid FROM generate_series(1, 4) g"
    ));
    assert_eq!(int(&format!("SELECT count(*) FROM runtime_sandbox.check_ledger('{s}') WHERE severity = 'error'")), 0);
    attempt(s, "r1", 1, "2026-01-01", &format!("'[{}]'", daytona("sb-1")));
    attempt(s, "r2", 1, "2026-01-02", &format!("'[{}]'", daytona("sb-2")));
    attempt(s, "r3", 1, "2026-01-03", &format!("'[{}, {}]'", daytona("sb-3"), daytona("sb-1")));
    attempt(s, "r4", 1, "2026-01-04", &format!("'[{}]'", daytona("sb-4")));
    run(&format!("SELECT runtime_sandbox.backfill_sandbox_operations(1, NULL, '{s}')"));
    assert_eq!(text(&format!("SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 2, 10, '{s}')")), "complete");
    assert_eq!(
        text(&format!(
            "SELECT string_agg(o.sandbox_id || '=' || (o.org_id = r.org_id)::text, ',' ORDER BY o.sandbox_id)
             FROM {s}.runtime_sandbox_operations o JOIN {s}.runs r USING (run_id)"
        )),
        "sb-1=true,sb-2=true,sb-3=true,sb-4=true"
    );
    run(&format!(
        r#"SELECT runtime_sandbox.reconcile_daytona('[{{"sandboxId": "sb-1"}}, {{"sandboxId": "sb-2"}}, {{"sandboxId": "sb-3"}}, {{"sandboxId": "sb-4"}}]',
               now(), false, ledger_schema => '{s}')"#
    ));
    assert_eq!(
        int(&format!(
            "SELECT count(*) FROM {s}.runtime_sandbox_capacity_leases l JOIN {s}.runs r USING (run_id) WHERE l.org_id = r.org_id::text"
        )),
        4
    );

    let t = "bf_uuid_over_text";
    run(&format!("SELECT runtime_sandbox.install_ledger('{t}')"));
    run(&format!("ALTER TABLE {t}.runtime_sandbox_operations ALTER COLUMN org_id TYPE uuid USING org_id::uuid"));
    assert_eq!(
        text(&format!(
            "SELECT problem FROM runtime_sandbox.check_ledger('{t}') WHERE object LIKE '%runtime_sandbox_operations.org_id'"
        )),
        "is uuid; the functions need text, varchar, citext or the type of runs.org_id"
    );
    let refused = error_of(&format!("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, 2, 10, '{t}')"));
    assert!(refused.as_deref().is_some_and(|e| e.starts_with("55000 ")), "{refused:?}");
}
