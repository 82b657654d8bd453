//! PostgreSQL's stack check, for the pure core's recursions over user data.
//!
//! Every recursion over a value a caller supplies (a jsonb tree, a parsed
//! document) has a depth limit of its own; each level also calls `check`,
//! which runs PostgreSQL's `check_stack_depth` once the library is loaded
//! (`_PG_init` installs it): an ERROR (54001) before the backend's stack
//! could overflow, whatever `max_stack_depth` and the build's frame sizes are.
//! Under plain `cargo test` nothing is installed and `check` does nothing.

use std::sync::OnceLock;

static CHECK: OnceLock<fn()> = OnceLock::new();

/// Install the server's stack check (once per process).
pub fn install(check: fn()) {
    let _ = CHECK.set(check);
}

/// Raise PostgreSQL's "stack depth limit exceeded" when the stack is nearly full.
#[inline]
pub fn check() {
    if let Some(check) = CHECK.get() {
        check();
    }
}
