//! A server in recovery (a hot standby) runs read-only transactions: the
//! functions that write say so before any work, instead of failing later
//! with PostgreSQL's "cannot execute ... in a read-only transaction".

use super::raise::Raise;
use crate::error::{Error, Kind};
use pgrx::pg_sys;

/// Raise 25006 when the server is a standby; `function` writes.
pub fn refuse_writes(function: &str) {
    // SAFETY: reads shared memory state; callable in any backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        Error::new(Kind::ReadOnly, format!("{function} writes and cannot run on a standby (the server is in recovery)"))
            .hint("Run it on the primary. On a standby, dry runs and the read-only functions work.")
            .raise()
    }
}
