//! A corpus of bad calls across every function of the extension (the list of
//! functions comes from pg_proc, so a new function without entries fails the
//! test): NULLs, wrong types, empty and huge arrays, deep JSON, oversized
//! strings, invalid cursors, injection in identifiers, unknown schemas,
//! out-of-range numbers, bad intervals and timestamps. Each call runs on its
//! own (autocommit) and must raise a clear error — never XX000, a message that
//! names the argument — with every table of the database unchanged.
//!
//! The SQLSTATE and message of every call are recorded below, so a change shows.
//! `RUNTIME_SANDBOX_BAD_CALLS_OBSERVE=1 cargo test --test bad_calls -- --nocapture`
//! prints what each call raises now, in the tables' syntax.
//!
//! `BUGS` are calls that break the rule today (none at present);
//! `bad_calls_known_bugs_follow_the_rule` asserts the rule for them, so a call
//! added there fails until it is fixed. Whoever fixes one moves it to `BAD` with
//! the message it raises then.

mod common;

use postgres::Client;
use std::collections::{BTreeMap, BTreeSet};

/// Calls the extension refuses: (argument the message must name, call, SQLSTATE, message).
const BAD: &[(&str, &str, &str, &str)] = &[
    // reconcile_daytona: every argument NULL in turn.
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona(NULL, now(), false)", "22023", "runtime_sandbox: invalid argument inventory: must not be NULL"),
    ("inventory_captured_at", "SELECT runtime_sandbox.reconcile_daytona('[]', NULL, false)", "22023", "runtime_sandbox: invalid argument inventory_captured_at: must not be NULL"),
    ("dry_run", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), NULL)", "22023", "runtime_sandbox: invalid argument dry_run: must not be NULL"),
    ("batch_size", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, batch_size => NULL)", "22023", "runtime_sandbox: invalid argument batch_size: must not be NULL"),
    ("minimum_age", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, minimum_age => NULL)", "22023", "runtime_sandbox: invalid argument minimum_age: must not be NULL"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    // ... inventories that are not a list of {sandboxId, operationKey?, routingDomain?}.
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('{}', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: must be a JSON array, got an object"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('\"sb-1\"', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: must be a JSON array, got a string"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('null', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: must be a JSON array, got null"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[1]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: must be an object, got a number"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": 5}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId must be a string, got a number"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \" \\t\"}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId is blank"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[{\"operationKey\": \"label-1\"}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId is required"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\", \"operationKey\": 5}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: operationKey must be a string or null, got a number"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\", \"routingDomain\": []}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: routingDomain must be a string or null, got an array"),
    // A huge array whose last element is bad: nothing is written for the 100,000 good ones.
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona((SELECT jsonb_agg(jsonb_build_object('sandboxId', 'sb-' || g)) FROM generate_series(1, 100000) g) || '[{}]', now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 100000: sandboxId is required"),
    // Deep JSON (10,000 levels) where an item or a sandboxId should be.
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona(('[' || repeat('[', 10000) || repeat(']', 10000) || ']')::jsonb, now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: must be an object, got an array"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona(('[{\"sandboxId\": ' || repeat('{\"a\": ', 10000) || '1' || repeat('}', 10000) || '}]')::jsonb, now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId must be a string, got an object"),
    // A 10 MB value beside a bad sandboxId.
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona(jsonb_build_array(jsonb_build_object('sandboxId', 5, 'padding', repeat('x', 10000000))), now(), dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId must be a string, got a number"),
    ("inventory_captured_at", "SELECT runtime_sandbox.reconcile_daytona('[]', 'infinity', dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory_captured_at: must be a finite time"),
    ("inventory_captured_at", "SELECT runtime_sandbox.reconcile_daytona('[]', '-infinity', dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory_captured_at: must be a finite time"),
    ("inventory_captured_at", "SELECT runtime_sandbox.reconcile_daytona('[]', '1960-01-01', dry_run => false)", "22023", "runtime_sandbox: invalid argument inventory_captured_at: must be a positive time (after 1970-01-01 00:00:00+00)"),
    ("minimum_age", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, minimum_age => '-1 minute')", "22023", "runtime_sandbox: invalid argument minimum_age: must not be negative"),
    ("minimum_age", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, minimum_age => '1 month -40 days')", "22023", "runtime_sandbox: invalid argument minimum_age: must not be negative"),
    ("batch_size", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("batch_size", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, batch_size => 1001)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 1001"),
    ("batch_size", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, batch_size => -2147483648)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got -2147483648"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => '')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"nowhere\" does not exist"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => repeat('x', 10000000))", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" does not exist"),
    // backfill_sandbox_operations: batch sizes, cursors, schemas.
    ("batch_size", "SELECT runtime_sandbox.backfill_sandbox_operations(batch_size => NULL)", "22023", "runtime_sandbox: invalid argument batch_size: must not be NULL"),
    ("batch_size", "SELECT runtime_sandbox.backfill_sandbox_operations(batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("batch_size", "SELECT runtime_sandbox.backfill_sandbox_operations(batch_size => 1001)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 1001"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW(NULL, 'run-1', 1, 1))", "22023", "runtime_sandbox: invalid argument after: updated_at is NULL (a cursor needs all four fields)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', NULL, 1, 1))", "22023", "runtime_sandbox: invalid argument after: run_id is NULL (a cursor needs all four fields)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', 'run-1', NULL, 1))", "22023", "runtime_sandbox: invalid argument after: attempt is NULL (a cursor needs all four fields)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', 'run-1', 1, NULL))", "22023", "runtime_sandbox: invalid argument after: resource_ordinal is NULL (a cursor needs all four fields)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => '(,,,)')", "22023", "runtime_sandbox: invalid argument after: updated_at is NULL (a cursor needs all four fields)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', ' ', 1, 1))", "22023", "runtime_sandbox: invalid argument after: run_id is blank"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', 'run-1', 0, 1))", "22023", "runtime_sandbox: invalid argument after: attempt must be at least 1, got 0"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', 'run-1', 1, -1))", "22023", "runtime_sandbox: invalid argument after: resource_ordinal must be at least 1, got -1"),
    ("ledger_schema", "SELECT runtime_sandbox.backfill_sandbox_operations(ledger_schema => NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT runtime_sandbox.backfill_sandbox_operations(ledger_schema => 'runtime_scheduler\"; DELETE FROM runtime_scheduler.attempts; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"runtime_scheduler\\\"; DELETE FROM runtime_scheduler.attempts; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.backfill_sandbox_operations(ledger_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"nowhere\" does not exist"),
    ("ledger_schema", "SELECT runtime_sandbox.backfill_sandbox_operations(ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    // preview_sandbox_operation_backfill: the same checks.
    ("batch_size", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(batch_size => -1)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got -1"),
    ("after", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(after => ROW('2026-01-01', '', 1, 1))", "22023", "runtime_sandbox: invalid argument after: run_id is blank"),
    ("after", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(after => ROW(NULL, NULL, NULL, NULL))", "22023", "runtime_sandbox: invalid argument after: updated_at is NULL (a cursor needs all four fields)"),
    ("ledger_schema", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(ledger_schema => 'a.b')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"a.b\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    // advance_sandbox_operation_backfill, and checkpoints it cannot resume from.
    ("dry_run", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(NULL)", "22023", "runtime_sandbox: invalid argument dry_run: must not be NULL"),
    ("batch_size", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, batch_size => NULL)", "22023", "runtime_sandbox: invalid argument batch_size: must not be NULL"),
    ("batch_size", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, batch_size => 100000)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 100000"),
    ("ledger_schema", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, ledger_schema => NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, ledger_schema => 'x''; DROP SCHEMA runtime_scheduler CASCADE; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x'; DROP SCHEMA runtime_scheduler CASCADE; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(true, ledger_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"nowhere\" does not exist"),
    ("ledger_schema", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, ledger_schema => 'public')", "42P01", "runtime_sandbox: ledger_schema \"public\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    ("checkpoint", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, ledger_schema => 'blank_checkpoint')", "22000", "runtime_sandbox: the backfill checkpoint in \"blank_checkpoint\".control (key runtime_sandbox_operation_backfill_v1) is unusable: cursor.updatedAt is blank"),
    // run_sandbox_operation_backfill (a procedure).
    ("batch_size", "CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => NULL)", "22023", "runtime_sandbox: invalid argument batch_size: must not be NULL"),
    ("batch_size", "CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("max_batches", "CALL runtime_sandbox.run_sandbox_operation_backfill(max_batches => 0)", "22023", "runtime_sandbox: invalid argument max_batches: must be NULL (until complete) or at least 1, got 0"),
    ("max_batches", "CALL runtime_sandbox.run_sandbox_operation_backfill(max_batches => -1)", "22023", "runtime_sandbox: invalid argument max_batches: must be NULL (until complete) or at least 1, got -1"),
    ("pause", "CALL runtime_sandbox.run_sandbox_operation_backfill(pause => NULL)", "22023", "runtime_sandbox: invalid argument pause: must not be NULL"),
    ("pause", "CALL runtime_sandbox.run_sandbox_operation_backfill(pause => '-1 second')", "22023", "runtime_sandbox: invalid argument pause: must not be negative"),
    ("ledger_schema", "CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"nowhere\" does not exist"),
    ("ledger_schema", "CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    ("checkpoint", "CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => 'blank_checkpoint')", "22000", "runtime_sandbox: the backfill checkpoint in \"blank_checkpoint\".control (key runtime_sandbox_operation_backfill_v1) is unusable: cursor.updatedAt is blank"),
    // Checkpoints and cursors the application would not resume from (issue 11).
    ("checkpoint", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(true, ledger_schema => 'blank_checkpoint')", "22000", "runtime_sandbox: the backfill checkpoint in \"blank_checkpoint\".control (key runtime_sandbox_operation_backfill_v1) is unusable: cursor.updatedAt \"\": invalid input syntax for type timestamp with time zone: \"\""),
    ("checkpoint", "SELECT * FROM runtime_sandbox.backfill_status('blank_checkpoint')", "22000", "runtime_sandbox: the backfill checkpoint in \"blank_checkpoint\".control (key runtime_sandbox_operation_backfill_v1) is unusable: cursor.updatedAt \"\": invalid input syntax for type timestamp with time zone: \"\""),
    ("checkpoint", "SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, ledger_schema => 'infinity_checkpoint')", "22000", "runtime_sandbox: the backfill checkpoint in \"infinity_checkpoint\".control (key runtime_sandbox_operation_backfill_v1) is unusable: cursor.updatedAt \"infinity\" is not a timestamp the application accepts (its Date.parse gives NaN)"),
    ("after", "SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('infinity', 'run-1', 1, 1))", "22023", "runtime_sandbox: invalid argument after: updated_at infinity is not a timestamp the application accepts"),
    ("after", "SELECT runtime_sandbox.preview_sandbox_operation_backfill(after => ROW('-infinity', 'run-1', 1, 1))", "22023", "runtime_sandbox: invalid argument after: updated_at -infinity is not a timestamp the application accepts"),
    // backfill_status
    ("ledger_schema", "SELECT * FROM runtime_sandbox.backfill_status(NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.backfill_status('x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.backfill_status('nowhere')", "22023", "runtime_sandbox: invalid argument ledger_schema: schema \"nowhere\" does not exist"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.backfill_status('empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    // run_reconciliation_job (the scheduled reconciliation's job): the reconcile's argument checks, first
    ("batch_size", "CALL runtime_sandbox.run_reconciliation_job(batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("absent_confirmations", "CALL runtime_sandbox.run_reconciliation_job(absent_confirmations => 0)", "22023", "runtime_sandbox: invalid argument absent_confirmations: must be an integer from 1 through 100, got 0"),
    // run_reconciliation_job_in_environment (the job of another environment): the same, and its environment
    ("environment", "CALL runtime_sandbox.run_reconciliation_job_in_environment('')", "22023", "runtime_sandbox: invalid argument environment: must not be empty (the ledger's operations name their environment, e.g. 'production')"),
    ("environment", "CALL runtime_sandbox.run_reconciliation_job_in_environment(NULL)", "22023", "runtime_sandbox: invalid argument environment: must not be NULL"),
    ("batch_size", "CALL runtime_sandbox.run_reconciliation_job_in_environment('staging', batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    // the environment argument of the reconciles, the recording and the scheduling
    ("environment", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => true, environment => ' staging')", "22023", "runtime_sandbox: invalid argument environment: \" staging\" begins or ends with white space"),
    ("environment", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => now(), environment => '')", "22023", "runtime_sandbox: invalid argument environment: must not be empty (the ledger's operations name their environment, e.g. 'production')"),
    // complete_sandbox_operation_backfill
    ("batch_size", "SELECT runtime_sandbox.complete_sandbox_operation_backfill(0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("max_batches", "SELECT runtime_sandbox.complete_sandbox_operation_backfill(500, 0)", "22023", "runtime_sandbox: invalid argument max_batches: must be NULL (until complete) or at least 1, got 0"),
    ("ledger_schema", "SELECT runtime_sandbox.complete_sandbox_operation_backfill(ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) attempts, control, runs, runtime_sandbox_operations"),
    // _backfill_run_lock_key (the procedure's argument check)
    ("batch_size", "SELECT runtime_sandbox._backfill_run_lock_key(1001, NULL, '0', 'runtime_scheduler')", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 1001"),
    ("max_batches", "SELECT runtime_sandbox._backfill_run_lock_key(500, 0, '0', 'runtime_scheduler')", "22023", "runtime_sandbox: invalid argument max_batches: must be NULL (until complete) or at least 1, got 0"),
    ("pause", "SELECT runtime_sandbox._backfill_run_lock_key(500, NULL, NULL, 'runtime_scheduler')", "22023", "runtime_sandbox: invalid argument pause: must not be NULL"),
    ("pause", "SELECT runtime_sandbox._backfill_run_lock_key(500, NULL, '-1 day', 'runtime_scheduler')", "22023", "runtime_sandbox: invalid argument pause: must not be negative"),
    ("ledger_schema", "SELECT runtime_sandbox._backfill_run_lock_key(500, NULL, '0', 'a b')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"a b\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    // install_ledger / check_ledger
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('1abc')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"1abc\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('Ledger-2')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"Ledger-2\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.check_ledger('x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.check_ledger('')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger(NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.check_ledger(NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.ledger_readiness(NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.ledger_readiness('a;b')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"a;b\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.install_ledger_ddl(NULL)", "22023", "runtime_sandbox: invalid argument ledger_schema: must not be NULL"),
    ("ledger_schema", "SELECT * FROM runtime_sandbox.install_ledger_ddl('a;b')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"a;b\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("concurrently", "SELECT * FROM runtime_sandbox.install_ledger_ddl(concurrently => NULL)", "22023", "runtime_sandbox: invalid argument concurrently: must not be NULL"),
    ("inventory", "SELECT runtime_sandbox.reconcile_daytona(jsonb_build_array(jsonb_build_object('sandboxId', repeat('x', 10000000))), now(), dry_run => true)", "22023", "runtime_sandbox: invalid argument inventory: element 0: sandboxId is 10000000 bytes long; at most 1000 bytes fit the ledger's index keys"),
    ("items", "SELECT runtime_sandbox.record_inventory_snapshot('daytona', jsonb_build_array(jsonb_build_object('sandboxId', repeat('x', 12000))), now())", "22023", "runtime_sandbox: invalid argument items: element 0: sandboxId is 12000 bytes long; at most 1000 bytes fit the ledger's index keys"),
    // install_environment_tables
    ("app_schema", "SELECT runtime_sandbox.install_environment_tables('public\"; DROP TABLE public.environments; --')", "22023", "runtime_sandbox: invalid argument app_schema: \"public\\\"; DROP TABLE public.environments; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("app_schema", "SELECT runtime_sandbox.install_environment_tables('')", "22023", "runtime_sandbox: invalid argument app_schema: \"\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    // reconcile_managed_environment
    ("name", "SELECT runtime_sandbox.reconcile_managed_environment(NULL, 'daytona')", "22023", "runtime_sandbox: invalid argument name: must not be null"),
    ("name", "SELECT runtime_sandbox.reconcile_managed_environment('', 'daytona')", "22023", "runtime_sandbox: invalid argument name: must not be empty"),
    ("provider", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', NULL)", "22023", "runtime_sandbox: invalid argument provider: must not be null"),
    ("provider", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', '')", "22023", "runtime_sandbox: invalid argument provider: must not be empty"),
    ("config", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', config => '[]')", "22023", "runtime_sandbox: invalid argument config: must be a JSON object, got an array"),
    ("config", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', config => '\"x\"')", "22023", "runtime_sandbox: invalid argument config: must be a JSON object, got a string"),
    ("config", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', config => (repeat('{\"a\": ', 10000) || '1' || repeat('}', 10000))::jsonb)", "22023", "runtime_sandbox: invalid argument config: invalid JSON at byte 6000: nesting too deep"),
    ("extra_metadata", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', extra_metadata => '[1, 2]')", "22023", "runtime_sandbox: invalid argument extra_metadata: must be a JSON object, got an array"),
    ("extra_metadata", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', extra_metadata => ('{\"k\": ' || repeat('[', 10000) || repeat(']', 10000) || '}')::jsonb)", "22023", "runtime_sandbox: invalid argument extra_metadata: invalid JSON at byte 1005: nesting too deep"),
    ("app_schema", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => NULL)", "22023", "runtime_sandbox: invalid argument app_schema: must not be null"),
    ("app_schema", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'public\"; DROP TABLE public.environments; --')", "22023", "runtime_sandbox: invalid argument app_schema: \"public\\\"; DROP TABLE public.environments; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("app_schema", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument app_schema: schema \"nowhere\" does not exist"),
    ("app_schema", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'half')", "42P01", "runtime_sandbox: app_schema \"half\" lacks the application's table(s) built_in_managed_resources, companies"),
    // archive_managed_environment
    ("provider", "SELECT runtime_sandbox.archive_managed_environment(NULL)", "22023", "runtime_sandbox: invalid argument provider: must not be null"),
    ("provider", "SELECT runtime_sandbox.archive_managed_environment('')", "22023", "runtime_sandbox: invalid argument provider: must not be empty"),
    ("app_schema", "SELECT runtime_sandbox.archive_managed_environment('daytona', app_schema => NULL)", "22023", "runtime_sandbox: invalid argument app_schema: must not be null"),
    ("app_schema", "SELECT runtime_sandbox.archive_managed_environment('daytona', app_schema => 'x\"; DROP TABLE public.environments; --')", "22023", "runtime_sandbox: invalid argument app_schema: \"x\\\"; DROP TABLE public.environments; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("app_schema", "SELECT runtime_sandbox.archive_managed_environment('daytona', app_schema => 'nowhere')", "22023", "runtime_sandbox: invalid argument app_schema: schema \"nowhere\" does not exist"),
    ("app_schema", "SELECT runtime_sandbox.archive_managed_environment('daytona', app_schema => 'half')", "42P01", "runtime_sandbox: app_schema \"half\" lacks the application's table(s) built_in_managed_resources, companies"),
    // managed_environment_drift
    ("app_schema", "SELECT * FROM runtime_sandbox.managed_environment_drift(NULL)", "22023", "runtime_sandbox: invalid argument app_schema: must not be null"),
    ("app_schema", "SELECT * FROM runtime_sandbox.managed_environment_drift('x\"; DROP TABLE public.environments; --')", "22023", "runtime_sandbox: invalid argument app_schema: \"x\\\"; DROP TABLE public.environments; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("app_schema", "SELECT * FROM runtime_sandbox.managed_environment_drift('nowhere')", "22023", "runtime_sandbox: invalid argument app_schema: schema \"nowhere\" does not exist"),
    ("app_schema", "SELECT * FROM runtime_sandbox.managed_environment_drift('half')", "42P01", "runtime_sandbox: app_schema \"half\" lacks the application's table(s) built_in_managed_resources, companies"),
    // Fixed after the corpus found them: a stack overflow on deep documents (the server restarted), system
    // schemas and an index-sized name reaching PostgreSQL's own errors.
    ("value", "SELECT runtime_sandbox.stock_hash((repeat('[', 10000) || repeat(']', 10000))::jsonb)", "54000", "runtime_sandbox: invalid argument value: nested more than 1000 levels deep"),
    ("value", "SELECT runtime_sandbox.stable_json((repeat('{\"a\": ', 10000) || '1' || repeat('}', 10000))::jsonb)", "54000", "runtime_sandbox: invalid argument value: nested more than 1000 levels deep"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('pg_catalog')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"pg_catalog\" is a system schema"),
    ("ledger_schema", "SELECT runtime_sandbox.install_ledger('information_schema')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"information_schema\" is a system schema"),
    ("app_schema", "SELECT runtime_sandbox.install_environment_tables('pg_catalog')", "22023", "runtime_sandbox: invalid argument app_schema: \"pg_catalog\" is a system schema"),
    ("name", "SELECT runtime_sandbox.reconcile_managed_environment(repeat('n', 10000000), 'daytona', app_schema => 'app2')", "22023", "runtime_sandbox: invalid argument name: is 10000000 bytes long, more than the 1000 allowed"),
    ("provider", "SELECT runtime_sandbox.reconcile_managed_environment('Daytona', repeat('p', 1001), app_schema => 'app2')", "22023", "runtime_sandbox: invalid argument provider: is 1001 bytes long, more than the 1000 allowed"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) runtime_sandbox_operations, runtime_sandbox_capacity_leases, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, attempts, reconciliation_runs"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\"}]', now(), dry_run => true, ledger_schema => 'public')", "42P01", "runtime_sandbox: ledger_schema \"public\" lacks the ledger's table(s) runtime_sandbox_operations, runtime_sandbox_capacity_leases, sandbox_cleanup_jobs_v2"),
    // The functions of release 0.2.0: the valve ratio, snapshots, the latest snapshot, pg_cron jobs.
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => 0.5, ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => -0.5)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got -0.5"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => 'NaN')", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got NaN"),
    ("items", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '{}', captured_at => now())", "22023", "runtime_sandbox: invalid argument items: must be a JSON array, got an object"),
    ("items", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[{\"sandboxId\": 5}]', captured_at => now())", "22023", "runtime_sandbox: invalid argument items: element 0: sandboxId must be a string, got a number"),
    ("captured_at", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => 'infinity')", "22023", "runtime_sandbox: invalid argument captured_at: must be a finite time"),
    ("ledger_schema", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => now(), ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("batch_size", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("minimum_age", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, minimum_age => '-1 minute')", "22023", "runtime_sandbox: invalid argument minimum_age: must not be negative"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("schedule", "SELECT runtime_sandbox.schedule_reconciliation(schedule => 'not a schedule', job_name => 'bad-calls')", "22023", "runtime_sandbox: invalid argument schedule: \"not a schedule\" is not a cron schedule (3 fields; expected five fields, minute hour day-of-month month day-of-week, e.g. '*/5 * * * *', or @hourly, @daily ...)"),
    ("absent_confirmations", "SELECT runtime_sandbox.schedule_reconciliation(schedule => '0 0 31 2 *', job_name => 'bad-calls', absent_confirmations => 0)", "22023", "runtime_sandbox: invalid argument absent_confirmations: must be an integer from 1 through 100, got 0"),
    ("max_absent_ratio", "SELECT runtime_sandbox.schedule_reconciliation(schedule => '0 0 31 2 *', job_name => 'bad-calls', max_absent_ratio => 2)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 2"),
    ("batch_size", "SELECT runtime_sandbox.schedule_reconciliation(schedule => '0 0 31 2 *', job_name => 'bad-calls', batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("ledger_schema", "SELECT runtime_sandbox.schedule_reconciliation(schedule => '0 0 31 2 *', job_name => 'bad-calls', ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => 0)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 0"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => 1.5)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 1.5"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => false, max_absent_ratio => NULL)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must not be NULL"),
    ("streamed_items", "SELECT runtime_sandbox.publish_inventory_snapshot(provider => 'daytona', streamed_items => 3, captured_at => now())", "22023", "runtime_sandbox: invalid argument streamed_items: is 3, but this transaction streamed 0 rows into \"runtime_scheduler\".provider_inventory_stream"),
    ("streamed_items", "SELECT runtime_sandbox.publish_inventory_snapshot(provider => 'daytona', streamed_items => -1, captured_at => now())", "22023", "runtime_sandbox: invalid argument streamed_items: must be 0 or more (the rows this transaction streamed), got -1"),
    ("captured_at", "SELECT runtime_sandbox.publish_inventory_snapshot(provider => 'daytona', streamed_items => 0, captured_at => NULL)", "22023", "runtime_sandbox: invalid argument captured_at: must not be NULL"),
    ("provider", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'modal', items => '[]', captured_at => now())", "22023", "runtime_sandbox: invalid argument provider: must be 'daytona' (the only provider reconciled), got \"modal\""),
    ("provider", "SELECT runtime_sandbox.record_inventory_snapshot(provider => NULL, items => '[]', captured_at => now())", "22023", "runtime_sandbox: invalid argument provider: must not be NULL"),
    ("items", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => NULL, captured_at => now())", "22023", "runtime_sandbox: invalid argument items: must not be NULL"),
    ("captured_at", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => now() + interval '1 day')", "22023", "runtime_sandbox: invalid argument captured_at: must not be more than 5 minutes ahead of the database's clock"),
    ("keep_last", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => now(), keep_last => 0)", "22023", "runtime_sandbox: invalid argument keep_last: must be an integer from 1 through 1000, got 0"),
    ("ledger_schema", "SELECT runtime_sandbox.record_inventory_snapshot(provider => 'daytona', items => '[]', captured_at => now(), ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) provider_inventory_snapshots, provider_inventory_items"),
    ("max_snapshot_age", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, max_snapshot_age => '-1 minute')", "22023", "runtime_sandbox: invalid argument max_snapshot_age: must be positive"),
    ("absent_confirmations", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, absent_confirmations => 0)", "22023", "runtime_sandbox: invalid argument absent_confirmations: must be an integer from 1 through 100, got 0"),
    ("max_absent_ratio", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, max_absent_ratio => 2)", "22023", "runtime_sandbox: invalid argument max_absent_ratio: must be greater than 0 and at most 1, got 2"),
    ("ledger_schema", "SELECT runtime_sandbox.reconcile_daytona_latest(dry_run => false, ledger_schema => 'empty_ledger')", "42P01", "runtime_sandbox: ledger_schema \"empty_ledger\" lacks the ledger's table(s) provider_inventory_snapshots, provider_inventory_items, reconciliation_runs, runtime_sandbox_operations, runtime_sandbox_capacity_leases, sandbox_cleanup_jobs_v2, sandbox_cleanup_events_v2, attempts"),
    ("schedule", "SELECT runtime_sandbox.schedule_sandbox_operation_backfill(schedule => 'not a schedule', job_name => 'bad-calls')", "22023", "runtime_sandbox: invalid argument schedule: \"not a schedule\" is not a cron schedule (3 fields; expected five fields, minute hour day-of-month month day-of-week, e.g. '*/5 * * * *', or @hourly, @daily ...)"),
    ("batch_size", "SELECT runtime_sandbox.schedule_sandbox_operation_backfill(schedule => '0 0 31 2 *', job_name => 'bad-calls', batch_size => 0)", "22023", "runtime_sandbox: invalid argument batch_size: must be an integer from 1 through 1000, got 0"),
    ("ledger_schema", "SELECT runtime_sandbox.schedule_sandbox_operation_backfill(schedule => '0 0 31 2 *', job_name => 'bad-calls', ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.unschedule_sandbox_operation_backfill(ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
    ("ledger_schema", "SELECT runtime_sandbox.unschedule_reconciliation(ledger_schema => 'x\"; DROP TABLE runtime_scheduler.runs; --')", "22023", "runtime_sandbox: invalid argument ledger_schema: \"x\\\"; DROP TABLE runtime_scheduler.runs; --\" is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
];

/// Calls PostgreSQL refuses before the function runs (a value that is not of
/// the argument's type, a wrong argument list): (call, SQLSTATE, message).
/// Their messages are PostgreSQL's and do not name the argument.
const BY_POSTGRES: &[(&str, &str, &str)] = &[
    ("SELECT runtime_sandbox.reconcile_daytona(42, now(), false)", "42883", "function runtime_sandbox.reconcile_daytona(integer, timestamp with time zone, boolean) does not exist"),
    ("SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\"', now(), false)", "22P02", "invalid input syntax for type json"),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', 'yesterday-ish', false)", "22007", "invalid input syntax for type timestamp with time zone: \"yesterday-ish\""),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, batch_size => 'ten')", "22P02", "invalid input syntax for type integer: \"ten\""),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, minimum_age => 'infinity')", "22007", "invalid input syntax for type interval: \"infinity\""),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, batch_size => 4294967296)", "42883", "function runtime_sandbox.reconcile_daytona(unknown, timestamp with time zone, boolean, batch_size => bigint) does not exist"),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), false, 500, '10 minutes', 'runtime_scheduler', 0.5, 'production', 'extra')", "42883", "function runtime_sandbox.reconcile_daytona(unknown, timestamp with time zone, boolean, integer, unknown, unknown, numeric, unknown, unknown) does not exist"),
    ("SELECT runtime_sandbox.backfill_sandbox_operations(after => 'not a cursor')", "22P02", "malformed record literal: \"not a cursor\""),
    ("SELECT runtime_sandbox.backfill_sandbox_operations(after => ROW('2026-01-01', 'run-1', 1))", "42846", "cannot cast type record to runtime_sandbox.backfill_cursor"),
    ("SELECT runtime_sandbox.preview_sandbox_operation_backfill(after => ROW('infinityish', 'run-1', 1, 1))", "22007", "invalid input syntax for type timestamp with time zone: \"infinityish\""),
    ("CALL runtime_sandbox.run_sandbox_operation_backfill(pause => 'infinity')", "22007", "invalid input syntax for type interval: \"infinity\""),
    // Ours, with PostgreSQL's SQLSTATE for the same condition (and a HINT naming the fixes).
    ("BEGIN; CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 10)", "2D000", "runtime_sandbox: CALL run_sandbox_operation_backfill() COMMITs after every page and cannot run inside a transaction block"),
    ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', company_id => 'not-a-uuid')", "22P02", "invalid input syntax for type uuid: \"not-a-uuid\""),
    ("SELECT runtime_sandbox.archive_managed_environment('daytona', company_id => '12345')", "22P02", "invalid input syntax for type uuid: \"12345\""),
    ("SELECT runtime_sandbox.managed_resource_status('env-1')", "42883", "function runtime_sandbox.managed_resource_status(unknown) does not exist"),
    ("SELECT runtime_sandbox.stock_hash('{\"a\": ')", "22P02", "invalid input syntax for type json"),
    ("SELECT runtime_sandbox.stable_json(42)", "42883", "function runtime_sandbox.stable_json(integer) does not exist"),
];

/// Calls that look odd but are accepted by design: (call, why). Each runs in a
/// transaction that is rolled back.
const ACCEPTED: &[(&str, &str)] = &[
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => true)", "an empty listing is a valid inventory (the mass-absence valve guards applies, not argument checks)"),
    ("SELECT runtime_sandbox.reconcile_daytona(jsonb_build_array(jsonb_build_object('sandboxId', repeat('x', 1000))), now(), dry_run => true)", "any non-blank string that fits an index key is a sandbox id, as in the application (here: blocked_unowned_sandboxes)"),
    ("SELECT * FROM runtime_sandbox.install_ledger_ddl('nowhere')", "the DDL of a whole ledger, schema first"),
    ("SELECT runtime_sandbox.reconcile_daytona('[{\"sandboxId\": \"sb-1\", \"extra\": [[[[[[[[[[1]]]]]]]]]]}]', now(), dry_run => true)", "keys other than sandboxId, operationKey and routingDomain are ignored, whatever they hold"),
    ("SELECT runtime_sandbox.reconcile_daytona('[]', now(), dry_run => true, minimum_age => '0')", "a minimum age of 0 is allowed (>= 0)"),
    ("SELECT runtime_sandbox.backfill_sandbox_operations(after => NULL)", "a NULL cursor starts from the oldest attempt (the default)"),
    ("SELECT runtime_sandbox._backfill_run_lock(NULL)", "STRICT: NULL, no lock taken"),
    ("SELECT runtime_sandbox._backfill_run_unlock(NULL)", "STRICT: NULL"),
    ("SELECT runtime_sandbox._backfill_run_unlock(-1)", "false: this session holds no run lock"),
    ("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, max_batches => NULL)", "documented: max_batches NULL means 1"),
    ("SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, max_batches => -5)", "documented: max_batches is clamped to 1..200, as the application clamps it"),
    ("SELECT * FROM runtime_sandbox.check_ledger('nowhere')", "a report: one row 'missing schema'"),
    ("SELECT runtime_sandbox.install_environment_tables(NULL)", "STRICT: a NULL schema returns NULL and does nothing"),
    ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', description => NULL, company_id => NULL, stock_version => NULL)", "NULL is the documented default of these three"),
    ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', config => NULL, extra_metadata => NULL)", "documented: NULL objects mean {} (the application's `?? {}`)"),
    ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', platform_fully_managed => NULL)", "NULL is the application's absent option (false)"),
    ("SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', description => repeat('d', 10000000))", "a description is free text"),
    ("SELECT runtime_sandbox.managed_resource_status(NULL, NULL, NULL, NULL)", "NULL resource or hashes are answers (missing), not unknowns"),
    ("SELECT runtime_sandbox.stable_json(NULL)", "STRICT"),
    ("SELECT runtime_sandbox.stock_hash(jsonb_build_object('k', repeat('x', 10000000)))", "a 10 MB string is hashed like any other"),
    ("SELECT runtime_sandbox.install_ledger(repeat('a', 64))", "the name type truncates any identifier to 63 bytes before a function sees it, as everywhere in PostgreSQL (documented in docs/reference.md)"),
];

/// Calls that break the rule today: (argument, call, what happens now, the bug).
/// "now" is `SQLSTATE: message`, `accepted`, or `crash` (the backend dies; not run
/// by the main test).
const BUGS: &[(&str, &str, &str, &str)] = &[
];

/// The ledger, the application tables and a checkpoint, with a row or two in
/// every table; plus a schema without the ledger, an app schema missing tables
/// and a ledger whose checkpoint cannot be resumed.
fn corpus_database(name: &str) -> Client {
    let db = common::fresh_database(name);
    let mut c = common::connect(&db);
    c.batch_execute(
        r#"SELECT runtime_sandbox.install_ledger();
           SELECT runtime_sandbox.install_environment_tables();
           INSERT INTO runtime_scheduler.runs (run_id, org_id) VALUES ('run-1', 'org-1'), ('run-2', 'org-1'), ('run-3', 'org-2');
           INSERT INTO runtime_scheduler.attempts (run_id, attempt, updated_at, resource_json) VALUES
             ('run-1', 1, '2026-01-01 00:00:00+00', '[{"kind": "daytona_sandbox", "sandboxId": "sb-1"}]'),
             ('run-2', 1, '2026-01-02 00:00:00+00', '[{"kind": "daytona_sandbox", "sandboxId": "sb-2"}, {"kind": "modal_sandbox", "sandboxId": "m-2"}]'),
             ('run-3', 1, '2026-01-03 00:00:00+00', '{"kind": "daytona_sandbox", "sandboxId": "sb-new"}');
           INSERT INTO runtime_scheduler.runtime_sandbox_operations
               (operation_key, provider, run_id, attempt, org_id, sandbox_id, state, provider_operation_token, provider_created_at)
           VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', 'live', 'label-1', now() - interval '1 day'),
                  ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', 'live', 'label-2', now() - interval '1 day'),
                  ('op-3', 'daytona', 'run-3', 1, 'org-2', NULL, 'reserved', 'label-3', NULL);
           INSERT INTO runtime_scheduler.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id)
           VALUES ('op-1', 'org-1', 'run-1', 'daytona', 'sb-1'), ('op-3', 'org-2', 'run-3', NULL, NULL);
           INSERT INTO runtime_scheduler.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, status)
           VALUES ('daytona', 'sb-2', 'run-2', 1, 'pending');
           INSERT INTO runtime_scheduler.sandbox_cleanup_events_v2 (provider, sandbox_id, run_id, attempt, event_type)
           VALUES ('daytona', 'sb-2', 'run-2', 1, 'cleanup_requested');
           SELECT runtime_sandbox.advance_sandbox_operation_backfill(false, batch_size => 1);
           SELECT runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1"}, {"sandboxId": "sb-2"}]', now(), dry_run => false);
           SELECT runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', '{"target": "us"}');
           CREATE SCHEMA empty_ledger;
           CREATE SCHEMA half;
           CREATE TABLE half.environments (id uuid PRIMARY KEY);
           SELECT runtime_sandbox.install_ledger('blank_checkpoint');
           INSERT INTO blank_checkpoint.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
             '{"phase": "pending", "cursor": {"updatedAt": "", "runId": "run-1", "attempt": 1, "resourceOrdinal": 1}}');
           SELECT runtime_sandbox.install_environment_tables('app2');
           SELECT runtime_sandbox.install_ledger('infinity_checkpoint');
           INSERT INTO infinity_checkpoint.runs (run_id, org_id) VALUES ('run-1', 'org-1');
           INSERT INTO infinity_checkpoint.attempts (run_id, attempt, updated_at, resource_json)
           VALUES ('run-1', 1, '2026-01-01', '[{"kind": "daytona_sandbox", "sandboxId": "sb-1"}]');
           INSERT INTO infinity_checkpoint.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
             '{"phase": "pending", "cursor": {"updatedAt": "infinity", "runId": "run-1", "attempt": 1, "resourceOrdinal": 1}}');"#,
    )
    .unwrap();
    c
}

/// What one call did: `SQLSTATE: message`, or `accepted`.
fn outcome(c: &mut Client, call: &str) -> String {
    match c.batch_execute(call) {
        Ok(()) => {
            if call.starts_with("BEGIN") {
                c.batch_execute("ROLLBACK").unwrap();
            }
            "accepted".into()
        }
        Err(e) => {
            let Some(db) = e.as_db_error() else { return format!("crash: {e}") };
            let out = format!("{}: {}", db.code().code(), db.message());
            if call.starts_with("BEGIN") {
                c.batch_execute("ROLLBACK").unwrap();
            }
            out
        }
    }
}

fn function_of(call: &str) -> &str {
    let rest = &call[call.find("runtime_sandbox.").expect("a call names its function") + "runtime_sandbox.".len()..];
    &rest[..rest.find('(').unwrap()]
}

fn observe() -> bool {
    std::env::var_os("RUNTIME_SANDBOX_BAD_CALLS_OBSERVE").is_some()
}

fn escaped(s: &str) -> String {
    format!("{s:?}")
}

/// The rule: not XX000, and the message names the argument.
fn breaks_rule(argument: &str, outcome: &str) -> Option<String> {
    if outcome == "accepted" {
        return Some("accepted".into());
    }
    if outcome.starts_with("XX000") {
        return Some("XX000".into());
    }
    let message = outcome.split_once(": ").map(|(_, m)| m).unwrap_or(outcome);
    // `invalid argument <name>: <reason>`, or the argument and its value
    // (`app_schema "half" lacks ...`), or the stored checkpoint.
    let names = message.contains(&format!("invalid argument {argument}:"))
        || message.contains(&format!("{argument} \""))
        || (argument == "checkpoint" && message.contains("backfill checkpoint"));
    (!names).then(|| format!("the message does not name {argument}"))
}

/// Every table's checksum is what it was before `call`; a change is a failure
/// (and the new state the next call's baseline).
fn unchanged(c: &mut Client, before: &mut BTreeMap<String, String>, call: &str, failures: &mut Vec<String>) {
    let after = common::database_checksums(c);
    if after != *before {
        let changed: Vec<_> = after.iter().filter(|(t, s)| before.get(*t) != Some(*s)).map(|(t, _)| t.clone()).collect();
        failures.push(format!("{call}\n    changed tables {changed:?}"));
        *before = after;
    }
}

#[test]
fn bad_calls_raise_clear_errors_and_change_nothing() {
    let mut c = corpus_database("bad_calls");
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    let mut before = common::database_checksums(&mut c);
    for &(argument, call, code, message) in BAD {
        covered.insert(function_of(call).to_string());
        let got = outcome(&mut c, call);
        if observe() {
            let (code, message) = got.split_once(": ").unwrap_or((&got, ""));
            println!("    ({}, {}, {}, {}),", escaped(argument), escaped(call), escaped(code), escaped(message));
        } else if got != format!("{code}: {message}") {
            failures.push(format!("{call}\n    recorded {code}: {message}\n    now      {got}"));
        }
        if let Some(broken) = breaks_rule(argument, &got) {
            failures.push(format!("{call}\n    breaks the rule ({broken}): {got}"));
        }
        unchanged(&mut c, &mut before, call, &mut failures);
    }
    let major: i32 = c.query_one("SELECT current_setting('server_version_num')::int / 10000", &[]).unwrap().get(0);
    for &(call, code, message) in BY_POSTGRES {
        covered.insert(function_of(call).to_string());
        // PostgreSQL 17 reads 'infinity' as an interval: the function then refuses it itself (same values
        // refused on every major, docs/reference.md).
        let finite = major >= 17 && call.contains("=> 'infinity'");
        let argument = call.split(" => 'infinity'").next().unwrap_or("").rsplit(|c: char| c == ' ' || c == '(').next().unwrap_or("");
        let ours = format!("runtime_sandbox: invalid argument {argument}: must be a finite interval");
        let (code, message) = if finite { ("22023", ours.as_str()) } else { (code, message) };
        let got = outcome(&mut c, call);
        if observe() {
            let (code, message) = got.split_once(": ").unwrap_or((&got, ""));
            println!("    ({}, {}, {}),", escaped(call), escaped(code), escaped(message));
        } else if got != format!("{code}: {message}") {
            failures.push(format!("{call}\n    recorded {code}: {message}\n    now      {got}"));
        }
        if got == "accepted" || got.starts_with("XX000") {
            failures.push(format!("{call}\n    breaks the rule: {got}"));
        }
        unchanged(&mut c, &mut before, call, &mut failures);
    }
    for &(call, why) in ACCEPTED {
        covered.insert(function_of(call).to_string());
        let mut tx = c.transaction().unwrap();
        if let Err(e) = tx.batch_execute(call) {
            failures.push(format!("{call}\n    accepted by design ({why}) but raised {}", common::db_message(&e)));
        }
        tx.rollback().unwrap();
    }
    for &(argument, call, now, _) in BUGS {
        covered.insert(function_of(call).to_string());
        if now == "crash" {
            continue;
        }
        // Each in a database of its own: some of them write.
        let mut own = corpus_database("bad_calls_bug");
        let got = outcome(&mut own, call);
        if observe() {
            println!("    ({}, {}, {}, \"\"),", escaped(argument), escaped(call), escaped(&got));
        } else if got != now {
            failures.push(format!("{call}\n    recorded as a bug: {now}\n    now: {got} (fixed? move it to BAD)"));
        }
    }

    // Functions and arguments announced in API.md, where installed: the rule
    // only. Accepted ones are reported, not failed (their design is not known here).
    let installed: BTreeSet<String> = c
        .query(
            "SELECT DISTINCT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'runtime_sandbox'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Every function of the extension has entries.
    let uncovered: Vec<_> = installed.difference(&covered).collect();
    assert!(uncovered.is_empty(), "functions without bad-call entries in tests/bad_calls.rs: {uncovered:?}");
    let bad = BAD.len() + BY_POSTGRES.len();
    assert!(bad >= 60, "only {bad} bad calls");
    if !observe() {
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    }
}

#[test]
fn bad_calls_known_bugs_follow_the_rule() {
    let mut failures = BTreeMap::new();
    // The calls that crash the server go last.
    let mut bugs: Vec<_> = BUGS.to_vec();
    bugs.sort_by_key(|&(_, _, now, _)| now == "crash");
    for (argument, call, _, bug) in bugs {
        let mut c = corpus_database("bad_calls_known_bug");
        let before = common::database_checksums(&mut c);
        let got = outcome(&mut c, call);
        let mut problems = Vec::new();
        if got.starts_with("crash") {
            problems.push(got);
            wait_for_recovery();
        } else {
            if let Some(broken) = breaks_rule(argument, &got) {
                problems.push(if broken == got { got.clone() } else { format!("{broken}: {got}") });
            }
            if common::database_checksums(&mut c) != before {
                problems.push("tables changed".into());
            }
        }
        if !problems.is_empty() {
            failures.insert(call, format!("{bug}\n      {}", problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// After a backend crash the postmaster restarts every session and replays WAL.
fn wait_for_recovery() {
    let started = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let url = format!("host=127.0.0.1 port={} user=postgres dbname=postgres", common::port());
        if postgres::Client::connect(&url, postgres::NoTls).is_ok() {
            return;
        }
        assert!(started.elapsed().as_secs() < 60, "the server did not come back after the crash");
    }
}

/// A role with only CREATE on a database builds, in a schema of its own, the ledger shapes that crashed or
/// confused earlier versions (an org_id of type uuid, a json resource_json, a sandboxId nested 11,000 levels
/// deep, bigint attempts, a 1 MB id) and calls every function executable by PUBLIC on it: nothing crashes or
/// hangs the server (a watcher connection opened first keeps its backend), and nothing is an XX000.
#[test]
fn a_role_with_only_create_cannot_crash_the_server_through_public_functions() {
    const ROLE: &str = "rs_only_create";
    const DB: &str = "bad_calls_only_create";
    let mut admin = common::connect("postgres");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {ROLE}")).unwrap();
    admin.batch_execute(&format!("CREATE ROLE {ROLE} LOGIN")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {DB}")).unwrap();
    let mut su = common::connect(DB);
    su.batch_execute(&format!("CREATE EXTENSION runtime_sandbox; GRANT CREATE ON DATABASE {DB} TO {ROLE}")).unwrap();
    let mut watcher = common::connect(DB);
    let watcher_pid: i32 = watcher.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);

    let mut role = postgres::Client::connect(
        &format!("host=127.0.0.1 port={} user={ROLE} dbname={DB} options='-c statement_timeout=60s'", common::port()),
        postgres::NoTls,
    )
    .unwrap();
    role.batch_execute(
        r#"CREATE SCHEMA mine;
           CREATE TABLE mine.runs (run_id text PRIMARY KEY, org_id uuid NOT NULL);
           CREATE TABLE mine.attempts (run_id text, attempt bigint, resource_json json, updated_at timestamp DEFAULT now(),
                                       PRIMARY KEY (run_id, attempt));
           CREATE TABLE mine.control (key text PRIMARY KEY, value json);
           CREATE TABLE mine.runtime_sandbox_operations (operation_key text PRIMARY KEY, provider text, run_id text, attempt int,
               org_id text, environment text DEFAULT 'production', sandbox_id text, routing_domain text,
               routing_domain_key text GENERATED ALWAYS AS (coalesce(routing_domain, '')) STORED, state text DEFAULT 'reserved',
               provider_operation_token text, provider_created_at timestamptz, delete_confirmed_at timestamptz,
               updated_at timestamptz DEFAULT now(), UNIQUE (provider, sandbox_id, routing_domain_key));
           CREATE TYPE mine.runtime_sandbox_operation_state AS ENUM ('reserved', 'live', 'deleting', 'deleted');
           INSERT INTO mine.runs VALUES ('r1', gen_random_uuid()), ('r2', gen_random_uuid()), ('r3', gen_random_uuid());
           INSERT INTO mine.attempts (run_id, attempt, resource_json) VALUES
             ('r1', 1, '[{"kind": "daytona_sandbox", "sandboxId": "ok-1"}]'),
             ('r2', 1, ('[{"kind": "daytona_sandbox", "sandboxId": ' || repeat('[', 11000) || '1' || repeat(']', 11000) || '}]')::json),
             ('r3', 1, json_build_array(json_build_object('kind', 'daytona_sandbox', 'sandboxId', repeat('x', 1000000))));"#,
    )
    .unwrap_or_else(|e| panic!("the role's schema: {}", common::db_message(&e)));
    let calls = [
        "SELECT * FROM runtime_sandbox.check_ledger('mine')",
        "SELECT * FROM runtime_sandbox.install_ledger_ddl('mine')",
        "SELECT * FROM runtime_sandbox.preview_sandbox_operation_backfill(10, NULL, 'mine')",
        "SELECT * FROM runtime_sandbox.backfill_status('mine')",
        "SELECT * FROM runtime_sandbox.managed_environment_drift('mine')",
        "SELECT runtime_sandbox.stock_hash(resource_json::jsonb) FROM mine.attempts",
        "SELECT runtime_sandbox.stable_json(resource_json::jsonb) FROM mine.attempts",
        "SELECT runtime_sandbox.managed_resource_status(repeat('x', 1000000), NULL, NULL, NULL)",
    ];
    let mut outcomes = Vec::new();
    for call in calls {
        let outcome = match role.batch_execute(call) {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                let db = e.as_db_error().unwrap_or_else(|| panic!("{call}: the connection was lost (a crash?): {e}"));
                assert!(!db.code().code().starts_with("XX"), "{call}: an unforeseen error: {}", db.message());
                assert_ne!(db.code().code(), "57014", "{call}: ran past the statement timeout");
                format!("{} {}", db.code().code(), db.message())
            }
        };
        outcomes.push(format!("{call}: {outcome}"));
    }
    // The page reads the deep sandboxId as the application's ->> does (its text), and the page of three.
    let page: String = role
        .query_one("SELECT scanned_attempts::text FROM runtime_sandbox.preview_sandbox_operation_backfill(10, NULL, 'mine')", &[])
        .unwrap_or_else(|e| panic!("{}\n{outcomes:#?}", common::db_message(&e)))
        .get(0);
    assert_eq!(page, "3");
    let still: i32 = watcher.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    assert_eq!(still, watcher_pid, "the server restarted: {outcomes:#?}");
    drop((role, su, watcher));
    admin.batch_execute(&format!("DROP DATABASE {DB} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("DROP ROLE {ROLE}")).unwrap();
}
