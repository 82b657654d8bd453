//! The backfill's recipes (docs/backfill.md) under real migration tools, installed from the npm registry and
//! PyPI by scripts/setup.sh: node-pg-migrate, dbmate, alembic and yoyo, each with its default configuration
//! (a transaction per migration) and its non-transactional mode.
//!
//! - In the default configuration, `SELECT * FROM runtime_sandbox.complete_sandbox_operation_backfill()`
//!   completes the backfill, and `CALL runtime_sandbox.run_sandbox_operation_backfill()` fails the migration at
//!   once with the fix in its message's HINT (nothing is written, the migration is not recorded as applied).
//! - In the non-transactional mode, the CALL completes the backfill, committing page by page.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn tools() -> PathBuf {
    let base = std::env::var("RUNTIME_SANDBOX_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/runtime_sandbox"));
    base.join("migrate")
}

const COMPLETE: &str = "SELECT * FROM runtime_sandbox.complete_sandbox_operation_backfill()";
const CALL: &str = "CALL runtime_sandbox.run_sandbox_operation_backfill()";

#[derive(Clone, Copy, Debug)]
enum Tool {
    NodePgMigrate,
    Dbmate,
    Alembic,
    Yoyo,
}

/// Write the migration project for `tool` into `dir`: one migration running `sql`, in a transaction or not.
fn project(tool: Tool, dir: &Path, sql: &str, transactional: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let write = |path: &str, text: String| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    match tool {
        Tool::NodePgMigrate => write(
            "migrations/1767225600000_backfill.js",
            format!(
                "exports.up = (pgm) => {{\n{}  pgm.sql('{sql}');\n}};\nexports.down = false;\n",
                if transactional { "" } else { "  pgm.noTransaction();\n" }
            ),
        ),
        Tool::Dbmate => write(
            "db/migrations/20260101000000_backfill.sql",
            format!("-- migrate:up{}\n{sql};\n\n-- migrate:down\n", if transactional { "" } else { " transaction:false" }),
        ),
        Tool::Yoyo => write(
            "migrations/0001.backfill.sql",
            format!("{}{sql};\n", if transactional { "" } else { "-- transactional: false\n" }),
        ),
        Tool::Alembic => {
            // The project as `alembic init` makes it, the URL set, and one revision.
            let status = Command::new(tools().join("py/bin/alembic")).args(["init", "migrations"]).current_dir(dir).status().unwrap();
            assert!(status.success(), "alembic init");
            let ini = std::fs::read_to_string(dir.join("alembic.ini")).unwrap();
            let url = format!("sqlalchemy.url = postgresql://postgres@127.0.0.1:{}/{}", common::port(), db_name(dir));
            let ini: String =
                ini.lines().map(|l| if l.starts_with("sqlalchemy.url") { url.clone() } else { l.to_string() }).collect::<Vec<_>>().join("\n");
            std::fs::write(dir.join("alembic.ini"), ini).unwrap();
            let body = if transactional {
                format!("    op.execute(\"{sql}\")\n")
            } else {
                format!("    with op.get_context().autocommit_block():\n        op.execute(\"{sql}\")\n")
            };
            write(
                "migrations/versions/0001_backfill.py",
                format!(
                    "from alembic import op\n\nrevision = \"0001\"\ndown_revision = None\n\n\ndef upgrade():\n{body}\n\ndef downgrade():\n    pass\n"
                ),
            );
        }
    }
}

fn db_name(dir: &Path) -> String {
    dir.file_name().unwrap().to_str().unwrap().to_string()
}

/// Run the tool's "migrate up" in `dir` against database `db`: (success, everything it printed).
fn migrate(tool: Tool, dir: &Path, db: &str) -> (bool, String) {
    let url = format!("postgres://postgres@127.0.0.1:{}/{db}", common::port());
    let mut command = match tool {
        Tool::NodePgMigrate => {
            let mut c = Command::new(tools().join("node/node_modules/.bin/node-pg-migrate"));
            c.arg("up").env("DATABASE_URL", &url);
            c
        }
        Tool::Dbmate => {
            let mut c = Command::new(tools().join("node/node_modules/.bin/dbmate"));
            c.args(["--url", &format!("{url}?sslmode=disable"), "--no-dump-schema", "up"]);
            c
        }
        Tool::Alembic => {
            let mut c = Command::new(tools().join("py/bin/alembic"));
            c.args(["upgrade", "head"]);
            c
        }
        Tool::Yoyo => {
            let mut c = Command::new(tools().join("py/bin/yoyo"));
            c.args(["apply", "--batch", "--no-config-file", "--database", &url.replacen("postgres://", "postgresql://", 1), "migrations"]);
            c
        }
    };
    let out = command.current_dir(dir).output().unwrap_or_else(|e| panic!("{tool:?}: {e} (make setup installs the tools)"));
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A database with the extension and a ledger of 30 attempts (one sandbox each).
fn seeded(db: &str) {
    common::fresh_database(db);
    common::connect(db)
        .batch_execute(
            "SELECT runtime_sandbox.install_ledger();
             INSERT INTO runtime_scheduler.runs SELECT 'run-' || g, 'org' FROM generate_series(1, 30) g;
             INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json)
             SELECT 'run-' || g, 1, '2026-01-01'::timestamptz + g * interval '1 second',
                    jsonb_build_array(jsonb_build_object('kind', 'daytona_sandbox', 'sandboxId', 'sb-' || g))
             FROM generate_series(1, 30) g;",
        )
        .unwrap();
}

fn backfilled(db: &str) -> (String, i64) {
    let row = common::connect(db)
        .query_one(
            "SELECT (SELECT phase FROM runtime_sandbox.backfill_status()),
                    (SELECT count(*) FROM runtime_scheduler.runtime_sandbox_operations)",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn every_recipe_works_under_real_migration_tools() {
    let root = std::env::temp_dir().join(format!("runtime_sandbox_migrate_{}", std::process::id()));
    let mut failures = Vec::new();
    for tool in [Tool::NodePgMigrate, Tool::Dbmate, Tool::Alembic, Tool::Yoyo] {
        for (case, sql, transactional, succeeds) in [
            ("function_in_transaction", COMPLETE, true, true),
            ("call_in_transaction", CALL, true, false),
            ("call_without_transaction", CALL, false, true),
        ] {
            let db = format!("it_migrate_{}_{case}", format!("{tool:?}").to_lowercase());
            seeded(&db);
            let dir = root.join(&db);
            project(tool, &dir, sql, transactional);
            let (ok, output) = migrate(tool, &dir, &db);
            let (phase, operations) = backfilled(&db);
            if succeeds {
                if !ok || (phase.as_str(), operations) != ("complete", 30) {
                    failures.push(format!("{tool:?} {case}: exit ok {ok}, phase {phase}, {operations} operations\n{output}"));
                }
            } else {
                // Refused at once, saying why; nothing written.
                let said = output.contains("cannot run inside a transaction block");
                if ok || !said || (phase.as_str(), operations) != ("pending", 0) {
                    failures.push(format!("{tool:?} {case}: exit ok {ok}, explained {said}, phase {phase}, {operations} operations\n{output}"));
                }
            }
            common::connect("postgres").batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)")).unwrap();
        }
    }
    std::fs::remove_dir_all(&root).ok();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
