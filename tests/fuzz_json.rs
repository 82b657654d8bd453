//! Generated JSON through every function that reads jsonb: the inventory (reconcile_daytona,
//! record_inventory_snapshot), an attempt's resources (the backfill page, preview and applied), the backfill
//! checkpoint (control.value: backfill_status, advance), the stock hashes, and the managed environment's
//! config and extra metadata. Documents: nesting past every limit (up to 100,000 levels), arrays of 100,000
//! elements, strings of megabytes, every scalar kind (huge and tiny numbers, -0, escapes, non-BMP text),
//! duplicate keys; each as the whole argument and in the place the function reads (a sandboxId, a cursor).
//!
//! Every call ends in an answer or a clean error (never XX000), within the statement timeout, and the
//! server never restarts (the same connection serves every call). `RUNTIME_SANDBOX_FUZZ_CASES` (default 40)
//! and `RUNTIME_SANDBOX_FUZZ_SEED` choose how many documents and which.

mod common;

use common::Rng;

const DB: &str = "it_fuzz_json";

/// A JSON document as text (built iteratively: the deepest ones are 100,000 levels).
fn document(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => deep(rng),
        1 => huge_array(rng),
        2 => format!("\"{}\"", "x".repeat(1 + rng.below(3_000_000) as usize)),
        _ => value(rng, 0),
    }
}

fn deep(rng: &mut Rng) -> String {
    let depth = *rng.pick(&[129usize, 1_001, 5_000, 11_000, 100_000]);
    let (open, close) = if rng.chance(0.5) { ("[", "]") } else { ("{\"a\":", "}") };
    format!("{}{}{}", open.repeat(depth), scalar(rng), close.repeat(depth))
}

fn huge_array(rng: &mut Rng) -> String {
    let n = 1 + rng.below(100_000) as usize;
    let element = if rng.chance(0.5) { "{\"kind\":\"daytona_sandbox\",\"sandboxId\":\"s\"}".to_string() } else { scalar(rng) };
    format!("[{}]", vec![element; n].join(","))
}

fn scalar(rng: &mut Rng) -> String {
    rng.pick(&[
        "null", "true", "false", "0", "-0", "1.0", "1e308", "-1e-308", "1e400", "123456789012345678901234567890",
        "0.000000000000000000000000001", "\"\"", "\"sb-1\"", "\"\\u00e9\\n\\t\\\"\\\\\"", "\"\\ud83d\\ude00\"",
        "\"  \"", "\"\\u0000\"", "\"\\ud800\"",
    ])
    .to_string()
}

fn value(rng: &mut Rng, depth: usize) -> String {
    if depth > 6 || rng.chance(0.4) {
        return scalar(rng);
    }
    if rng.chance(0.5) {
        let n = rng.below(5) as usize;
        format!("[{}]", (0..n).map(|_| value(rng, depth + 1)).collect::<Vec<_>>().join(","))
    } else {
        let n = rng.below(5) as usize;
        let keys = ["sandboxId", "operationKey", "routingDomain", "kind", "phase", "cursor", "updatedAt", "a", "a", ""];
        let members: Vec<String> = (0..n).map(|_| format!("\"{}\":{}", rng.pick(&keys), value(rng, depth + 1))).collect();
        format!("{{{}}}", members.join(","))
    }
}

/// Where a document goes: the SQL (with `$1` the document's text) and whether it writes (rolled back).
const SINKS: &[&str] = &[
    "SELECT status FROM runtime_sandbox.reconcile_daytona($1::text::jsonb, now(), true, ledger_schema => 'fz')",
    "SELECT status FROM runtime_sandbox.reconcile_daytona(jsonb_build_array(jsonb_build_object('sandboxId', $1::text::jsonb, 'operationKey', $1::text::jsonb)), now(), true, ledger_schema => 'fz')",
    "SELECT runtime_sandbox.record_inventory_snapshot('daytona', $1::text::jsonb, now(), ledger_schema => 'fz')",
    "WITH up AS (UPDATE fz.attempts SET resource_json = $1::text::jsonb WHERE run_id = 'r1' RETURNING 1)
     SELECT count(*) FROM up",
    "WITH up AS (UPDATE fz.attempts SET resource_json = jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', $1::text::jsonb)) WHERE run_id = 'r1' RETURNING 1)
     SELECT count(*) FROM up",
    "INSERT INTO fz.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1', $1::text::jsonb)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
    "INSERT INTO fz.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
         jsonb_build_object('phase', 'pending', 'cursor', $1::text::jsonb))
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
    "SELECT runtime_sandbox.stock_hash($1::text::jsonb)",
    "SELECT runtime_sandbox.stable_json($1::text::jsonb)",
    "SELECT action FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', config => $1::text::jsonb, app_schema => 'fzapp')",
    "SELECT action FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', extra_metadata => $1::text::jsonb, app_schema => 'fzapp')",
];

/// What runs after each sink (in its transaction): the readers of what the sink wrote.
const READERS: &[&str] = &[
    "SELECT count(*) FROM runtime_sandbox.preview_sandbox_operation_backfill(10, NULL, 'fz')",
    "SELECT count(*) FROM runtime_sandbox.backfill_sandbox_operations(10, NULL, 'fz')",
    "SELECT count(*) FROM runtime_sandbox.backfill_status('fz')",
    "SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 10, 1, 'fz')",
    "SELECT phase FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 2, 'fz')",
];

#[test]
fn generated_json_never_crashes_or_hangs_a_function() {
    let cases = common::env_number("RUNTIME_SANDBOX_FUZZ_CASES", 40);
    let seed = common::env_number("RUNTIME_SANDBOX_FUZZ_SEED", 2026);
    let db = common::fresh_database(DB);
    let mut c = common::connect(&db);
    c.batch_execute(
        "SELECT runtime_sandbox.install_ledger('fz');
         SELECT runtime_sandbox.install_environment_tables('fzapp');
         INSERT INTO fz.runs VALUES ('r1', 'org-1');
         INSERT INTO fz.attempts (run_id, attempt, resource_json) VALUES ('r1', 1, '[]');
         SET statement_timeout = '60s';",
    )
    .unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let mut rng = Rng::new(seed);
    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    for case in 0..cases {
        let doc = document(&mut rng);
        for sink in SINKS {
            let mut tx = c.transaction().unwrap();
            let mut outcome = |sql: &str, tx: &mut postgres::Transaction| -> bool {
                let result = if sql.contains("$1") { tx.execute(sql, &[&doc]).map(|_| ()) } else { tx.batch_execute(sql) };
                match result {
                    Ok(()) => {
                        *tally.entry("ok".into()).or_default() += 1;
                        true
                    }
                    Err(e) => {
                        let db_error = e.as_db_error().unwrap_or_else(|| {
                            panic!("seed {seed} case {case}: the connection was lost (a crash?): {e}\n  {sql}\n  {}", prefix(&doc))
                        });
                        let code = db_error.code().code();
                        assert!(
                            !code.starts_with("XX"),
                            "seed {seed} case {case}: {code} {}\n  {sql}\n  {}",
                            db_error.message(),
                            prefix(&doc)
                        );
                        assert_ne!(code, "57014", "seed {seed} case {case}: past the statement timeout\n  {sql}\n  {}", prefix(&doc));
                        *tally.entry(code.to_string()).or_default() += 1;
                        false
                    }
                }
            };
            if outcome(sink, &mut tx) && !sink.starts_with("SELECT") {
                for reader in READERS {
                    tx.batch_execute("SAVEPOINT reader").unwrap();
                    if !outcome(reader, &mut tx) {
                        tx.batch_execute("ROLLBACK TO SAVEPOINT reader").unwrap();
                    }
                }
            }
            drop(tx); // rolled back
        }
    }
    let still: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    assert_eq!(still, pid, "the backend changed: the server restarted");
    println!("outcomes (seed {seed}, {cases} documents): {tally:?}");
    drop(c);
    common::connect("postgres").batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)")).unwrap();
}

fn prefix(doc: &str) -> String {
    let end = doc.char_indices().nth(120).map_or(doc.len(), |(i, _)| i);
    format!("{}… ({} bytes)", &doc[..end], doc.len())
}
