//! What a reconciliation reports: the application's summary fields, the
//! status word, the per-statement diagnostics, and the scalar argument rules.

use crate::args::ArgError;
use serde::Serialize;

pub const PROVIDER: &str = "daytona";

/// The application's phase names, one per measured statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    ReleaseTerminalCapacity,
    MatchProviderInventory,
    RecoverReservedOperations,
    FindAbsentOperations,
    InspectCapacityBindings,
    SeedCapacityBindings,
    MarkProviderConfirmedAbsent,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub phase: Phase,
    pub duration_ms: f64,
    pub row_count: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Applied,
    Planned,
    BlockedUnownedSandboxes,
    SkippedConcurrent,
}

/// `runtime_sandbox.reconciliation_summary`, field for field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub provider: &'static str,
    pub provider_sandbox_count: i64,
    pub matched_live_sandboxes: i64,
    pub unmatched_provider_sandbox_ids: Vec<String>,
    pub live_leases_to_seed: i64,
    pub absent_ledger_rows: i64,
    pub seeded_leases: i64,
    pub released_terminal_leases: i64,
    pub marked_deleted: i64,
    pub recovered_reserved_operations: i64,
    pub has_more_absent_ledger_rows: bool,
    pub dry_run: bool,
    pub status: Status,
    pub diagnostics: Vec<Diagnostic>,
}

impl Summary {
    /// Every count zero: the starting point of a run, and the whole answer of a skipped one.
    pub fn empty(provider_sandbox_count: usize, dry_run: bool, status: Status) -> Self {
        Self {
            provider: PROVIDER,
            provider_sandbox_count: provider_sandbox_count as i64,
            matched_live_sandboxes: 0,
            unmatched_provider_sandbox_ids: Vec::new(),
            live_leases_to_seed: 0,
            absent_ledger_rows: 0,
            seeded_leases: 0,
            released_terminal_leases: 0,
            marked_deleted: 0,
            recovered_reserved_operations: 0,
            has_more_absent_ledger_rows: false,
            dry_run,
            status,
            diagnostics: Vec::new(),
        }
    }

    pub fn measured(&mut self, phase: Phase, duration_ms: f64, row_count: i64) {
        self.diagnostics.push(Diagnostic { phase, duration_ms, row_count });
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("summary serializes")
    }
}

/// `inventory_captured_at` in PostgreSQL's representation (microseconds since
/// 2000-01-01): it must be a finite time after the Unix epoch, as the
/// application requires a positive epoch-milliseconds value.
pub fn captured_at(pg_micros: i64) -> Result<i64, ArgError> {
    const UNIX_EPOCH_PG_MICROS: i64 = -946_684_800_000_000;
    if pg_micros == i64::MAX || pg_micros == i64::MIN {
        return Err(ArgError::new("inventory_captured_at", "must be a finite time"));
    }
    if pg_micros <= UNIX_EPOCH_PG_MICROS {
        return Err(ArgError::new("inventory_captured_at", "must be a positive time (after 1970-01-01 00:00:00+00)"));
    }
    Ok(pg_micros)
}

/// `minimum_age` must not be negative, compared the way PostgreSQL compares
/// intervals (a month is 30 days, a day 24 hours).
pub fn minimum_age(months: i32, days: i32, micros: i64) -> Result<(), ArgError> {
    const DAY_MICROS: i128 = 86_400_000_000;
    let total = (months as i128 * 30 + days as i128) * DAY_MICROS + micros as i128;
    if total < 0 {
        Err(ArgError::new("minimum_age", "must not be negative"))
    } else {
        Ok(())
    }
}

pub fn required<T>(argument: &'static str, value: Option<T>) -> Result<T, ArgError> {
    value.ok_or_else(|| ArgError::new(argument, "must not be NULL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_at_bounds() {
        assert!(captured_at(-946_684_800_000_000).is_err());
        assert!(captured_at(-946_684_800_000_001).is_err());
        assert_eq!(captured_at(-946_684_799_999_999), Ok(-946_684_799_999_999));
        assert!(captured_at(i64::MAX).unwrap_err().reason.contains("finite"));
        assert!(captured_at(i64::MIN).is_err());
        assert_eq!(captured_at(0), Ok(0));
    }

    #[test]
    fn minimum_age_sign() {
        assert!(minimum_age(0, 0, 0).is_ok());
        assert!(minimum_age(0, 0, -1).is_err());
        assert!(minimum_age(1, -30, 0).is_ok());
        assert!(minimum_age(1, -31, 0).is_err());
        assert!(minimum_age(0, 1, -86_400_000_000).is_ok());
        assert_eq!(minimum_age(-1, 0, 0).unwrap_err().argument, "minimum_age");
    }

    #[test]
    fn summary_json_uses_snake_case_names() {
        let mut s = Summary::empty(3, true, Status::Planned);
        s.measured(Phase::RecoverReservedOperations, 1.5, 2);
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["status"], "planned");
        assert_eq!(json["provider"], "daytona");
        assert_eq!(json["provider_sandbox_count"], 3);
        assert_eq!(json["diagnostics"][0]["phase"], "recover_reserved_operations");
        assert_eq!(json["diagnostics"][0]["row_count"], 2);
        assert_eq!(serde_json::to_value(Status::BlockedUnownedSandboxes).unwrap(), "blocked_unowned_sandboxes");
        assert_eq!(serde_json::to_value(Status::SkippedConcurrent).unwrap(), "skipped_concurrent");
    }
}
