//! runtime_sandbox: an agent-sandbox platform's ledger jobs, inside PostgreSQL.
//!
//! The house (README "Layout" has the map):
//! - one folder per capability (`stock`, `managed`, `backfill`, `reconcile`,
//!   `ledger`, `operations`): a pure core (plain Rust, no pgrx: `cargo test
//!   --lib` runs it without a server) and one pgrx file, `shell.rs`, that
//!   checks the arguments, runs the capability's statements from `sql/queries/<capability>/` over SPI and builds the result
//!   row; its `mod.rs` loads its objects from `sql/extension/`; its `#[pg_test]`s
//!   are in `pg_tests.rs`;
//! - `jsonb`: the one reader of jsonb's binary format (pure);
//! - shared by every capability: `args` (argument rules) and `error` (the one
//!   error type: kind → SQLSTATE, message, DETAIL, HINT), both pure, and
//!   `fast_hash`; `shell`, what the pgrx shells share (raising an `Error`,
//!   catalog look-ups, argument types).
//!
//! Imports run one way: capabilities → jsonb, args, error, fast_hash, shell
//! (managed also → stock); `tests/layout.rs` checks it.

use pgrx::prelude::*;

::pgrx::pg_module_magic!();

/// pgrx attaches a Rust backtrace to the DETAIL of every PostgreSQL error
/// that crosses Rust code when the server runs with RUST_BACKTRACE set: file
/// paths and frames of the server's build, shown to any client. Backtraces
/// are turned off for the library's backtraces (RUST_LIB_BACKTRACE takes
/// precedence over RUST_BACKTRACE for them); a panic's own message still
/// reaches the server log.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    // The core's recursions over user data call PostgreSQL's stack check.
    stack::install(|| unsafe { pg_sys::check_stack_depth() });
    // The ledger owner's functions run with the owner's search path (shell::owner).
    shell::owner::install_hooks();
}

pub mod args;
pub mod error;
pub mod fast_hash;
pub mod jsonb;
pub mod shell;
pub mod stack;

pub mod backfill;
pub mod ledger;
pub mod managed;
pub mod operations;
pub mod reconcile;
pub mod stock;

extension_sql_file!("../sql/extension/schema.sql", name = "schema", bootstrap);

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![
            "shared_preload_libraries = 'pg_cron'",
            "cron.database_name = 'pgrx_tests'",
            // The tests run a debug build, whose frames are several times a
            // release build's: a 1,000-level document (the documented limit)
            // needs more than the default 2MB before PostgreSQL's stack check
            // (which the recursions call) stops it.
            "max_stack_depth = '6MB'",
        ]
    }
}
