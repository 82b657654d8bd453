//! The orchestrator's rules: how many pages one call may apply, when the
//! backfill is complete, and what a call reports.

use super::checkpoint::Phase;
use crate::args::ArgError;

/// The application clamps `maxBatches` to 1..200 (NULL means one page).
pub const MAX_BATCHES: i32 = 200;

pub fn clamp_max_batches(value: Option<i32>) -> i32 {
    value.unwrap_or(1).clamp(1, MAX_BATCHES)
}

/// A short page (including an empty one) ends the backfill; a full page may be
/// followed by more rows, so the run stays pending.
pub fn phase_after_page(has_more: bool) -> Phase {
    if has_more {
        Phase::Pending
    } else {
        Phase::Complete
    }
}

/// Sums over the pages one call applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub batches: i64,
    pub scanned: i64,
    pub inserted: i64,
}

impl Totals {
    pub fn add_page(&mut self, scanned: i64, inserted: i64) {
        self.batches += 1;
        self.scanned += scanned;
        self.inserted += inserted;
    }

    /// An applied run reports every scanned resource as projected (the
    /// application's `projectedOperations: scannedAttempts`).
    pub fn projected(&self) -> i64 {
        self.scanned
    }
}

/// `run_sandbox_operation_backfill(max_batches)`: NULL runs to completion,
/// otherwise at least one batch.
pub fn run_max_batches(value: Option<i32>) -> Result<Option<i32>, ArgError> {
    match value {
        Some(n) if n < 1 => Err(ArgError::new("max_batches", format!("must be NULL (until complete) or at least 1, got {n}"))),
        other => Ok(other),
    }
}

/// Advisory-lock key of one ledger's backfill run (session lock, so a second
/// CALL on the same ledger in the same database sees it). FNV-1a of the schema
/// name under a fixed prefix, stable across versions and servers.
pub fn run_lock_key(ledger_schema: &str) -> i64 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in ledger_schema.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // 'RSBF' in the high half; the low half shows up as pg_locks.objid.
    (0x5253_4246_i64 << 32) | i64::from(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_batches_is_clamped_like_the_application() {
        assert_eq!(clamp_max_batches(None), 1);
        assert_eq!(clamp_max_batches(Some(-4)), 1);
        assert_eq!(clamp_max_batches(Some(0)), 1);
        assert_eq!(clamp_max_batches(Some(7)), 7);
        assert_eq!(clamp_max_batches(Some(500)), 200);
    }

    #[test]
    fn totals_and_phases() {
        let mut t = Totals::default();
        t.add_page(10, 4);
        t.add_page(3, 0);
        assert_eq!(t, Totals { batches: 2, scanned: 13, inserted: 4 });
        assert_eq!(t.projected(), 13);
        assert_eq!(phase_after_page(true), Phase::Pending);
        assert_eq!(phase_after_page(false), Phase::Complete);
    }

    #[test]
    fn run_arguments() {
        assert_eq!(run_max_batches(None), Ok(None));
        assert_eq!(run_max_batches(Some(3)), Ok(Some(3)));
        assert_eq!(run_max_batches(Some(0)).unwrap_err().argument, "max_batches");
    }

    #[test]
    fn lock_keys_differ_per_ledger_and_are_stable() {
        assert_ne!(run_lock_key("runtime_scheduler"), run_lock_key("other"));
        assert_eq!(run_lock_key("runtime_scheduler"), run_lock_key("runtime_scheduler"));
        assert_eq!(run_lock_key("") >> 32, 0x5253_4246);
        assert!(run_lock_key("x") > 0);
    }
}
