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
    BlockedMassAbsence,
    SkippedConcurrent,
    NoFreshSnapshot,
}

impl Status {
    /// The word the result row and the history use.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Planned => "planned",
            Status::BlockedUnownedSandboxes => "blocked_unowned_sandboxes",
            Status::BlockedMassAbsence => "blocked_mass_absence",
            Status::SkippedConcurrent => "skipped_concurrent",
            Status::NoFreshSnapshot => "no_fresh_snapshot",
        }
    }

    /// Statuses an operator is told about (WARNING and pg_notify) when an apply ends in them.
    pub fn alerts(self) -> bool {
        matches!(self, Status::BlockedUnownedSandboxes | Status::BlockedMassAbsence | Status::NoFreshSnapshot)
    }
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
    /// Every live operation that passed the absence filters, not only the
    /// batch (the valve's numerator); None when absence was not looked at.
    pub absent_candidates: Option<i64>,
    /// Live production Daytona operations (the valve's denominator); None
    /// when the ledger was not read.
    pub live_operations: Option<i64>,
    /// The snapshot reconciled (reconcile_daytona_latest).
    pub snapshot_id: Option<i64>,
    /// How many snapshots, newest first, an absent operation had to be
    /// missing from (reconcile_daytona_latest); fewer than asked: too few
    /// snapshots yet, nothing was called absent.
    pub confirming_snapshots: Option<i64>,
    /// The operations' environment reconciled.
    pub environment: String,
    /// When blocked by unowned sandboxes: how many of them live or deleting
    /// operations of other environments own, by environment, most first
    /// (serialized as an object; {} when none); None otherwise.
    #[serde(serialize_with = "as_object")]
    pub unowned_in_other_environments: Option<Vec<(String, i64)>>,
    /// What an apply on this ledger and listing releases and recovers: a dry
    /// run computes them (the application's dry run skips both phases, so
    /// `released_terminal_leases` and `recovered_reserved_operations` stay 0
    /// there); an apply copies its own counts (`Summary::settle`).
    pub would_release_terminal_leases: i64,
    pub would_recover_reserved_operations: i64,
}

/// (environment, count) pairs as the JSON object the result row holds.
fn as_object<S: serde::Serializer>(owners: &Option<Vec<(String, i64)>>, serializer: S) -> Result<S::Ok, S::Error> {
    match owners {
        None => serializer.serialize_none(),
        Some(owners) => serializer.collect_map(owners.iter().map(|(environment, owned)| (environment, owned))),
    }
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
            absent_candidates: None,
            live_operations: None,
            snapshot_id: None,
            confirming_snapshots: None,
            environment: crate::args::DEFAULT_ENVIRONMENT.to_owned(),
            unowned_in_other_environments: None,
            would_release_terminal_leases: 0,
            would_recover_reserved_operations: 0,
        }
    }

    /// Fill the `would_*` columns as the run ends. An apply reports what it
    /// did. A dry run has counted the first release pass and the recovery in
    /// the `would_*` fields; `second_release` is how many of the leases
    /// recovery would bind an apply's second pass releases, a pass an apply
    /// reaches only when nothing blocked it.
    pub fn settle(&mut self, second_release: i64) {
        if !self.dry_run {
            self.would_release_terminal_leases = self.released_terminal_leases;
            self.would_recover_reserved_operations = self.recovered_reserved_operations;
        } else if self.status == Status::Planned {
            self.would_release_terminal_leases += second_release;
        }
    }

    pub fn measured(&mut self, phase: Phase, duration_ms: f64, row_count: i64) {
        self.diagnostics.push(Diagnostic { phase, duration_ms, row_count });
    }

    /// Record what other environments own of the unowned sandboxes
    /// (`owners`: environment and count, most first).
    pub fn owned_elsewhere(&mut self, owners: &[(String, i64)]) {
        self.unowned_in_other_environments = Some(owners.to_vec());
    }

    /// The hint a run blocked by unowned sandboxes gives when operations of
    /// other environments own some of them; None when none do.
    pub fn other_environment_hint(&self) -> Option<String> {
        let owners = self.unowned_in_other_environments.as_deref()?;
        let (top, _) = owners.first()?;
        let unowned = self.unmatched_provider_sandbox_ids.len();
        let all: Vec<String> = owners.iter().map(|(e, n)| format!("{n} in {e:?}")).collect();
        Some(format!(
            "{} of {unowned} unowned sandboxes belong to live operations of other environments ({}); \
             this run reconciled environment {:?}: pass environment => {} if the listing is that environment's",
            owners.iter().map(|(_, n)| n).sum::<i64>(),
            all.join(", "),
            self.environment,
            crate::args::sql_literal(top),
        ))
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

/// An interval in microseconds, as PostgreSQL compares intervals (a month is
/// 30 days, a day 24 hours).
pub fn interval_micros(months: i32, days: i32, micros: i64) -> i128 {
    const DAY_MICROS: i128 = 86_400_000_000;
    (months as i128 * 30 + days as i128) * DAY_MICROS + micros as i128
}

/// `minimum_age` must not be negative, compared the way PostgreSQL compares
/// intervals (a month is 30 days, a day 24 hours).
pub fn minimum_age(months: i32, days: i32, micros: i64) -> Result<(), ArgError> {
    crate::args::finite_interval("minimum_age", months, days, micros)?;
    if interval_micros(months, days, micros) < 0 {
        Err(ArgError::new("minimum_age", "must not be negative"))
    } else {
        Ok(())
    }
}

/// More absent candidates than this are never "a handful": the valve may
/// block them.
pub const ABSENT_HANDFUL: i64 = 10;

/// `max_absent_ratio`: a share of the live operations, 0 < ratio <= 1.
pub fn max_absent_ratio(value: f32) -> Result<f32, ArgError> {
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(ArgError::new("max_absent_ratio", format!("must be greater than 0 and at most 1, got {value}")))
    }
}

/// The mass-absence valve: true when a listing calls too much of the live
/// fleet absent to be believed. An empty listing against live operations
/// with anything to mark is always too much; otherwise more than a handful
/// of candidates and more than `max_ratio` of the live operations. A ratio
/// of 1 never blocks (the application's behaviour).
pub fn mass_absence(candidates: i64, live: i64, inventory_empty: bool, max_ratio: f32) -> bool {
    if max_ratio >= 1.0 {
        return false;
    }
    (candidates > 0 && inventory_empty && live > 0)
        || (candidates > ABSENT_HANDFUL && candidates as f64 > f64::from(max_ratio) * live as f64)
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
        // PostgreSQL 17's 'infinity' and '-infinity'.
        assert_eq!(minimum_age(i32::MAX, i32::MAX, i64::MAX).unwrap_err().reason, "must be a finite interval");
        assert_eq!(minimum_age(i32::MIN, i32::MIN, i64::MIN).unwrap_err().reason, "must be a finite interval");
        assert!(minimum_age(i32::MAX, i32::MAX, i64::MAX - 1).is_ok());
    }

    #[test]
    fn settle_copies_an_apply_and_adds_the_second_pass_to_a_dry_run_that_reaches_it() {
        let mut apply = Summary::empty(3, false, Status::BlockedUnownedSandboxes);
        (apply.released_terminal_leases, apply.recovered_reserved_operations) = (2, 1);
        apply.settle(5);
        assert_eq!((apply.would_release_terminal_leases, apply.would_recover_reserved_operations), (2, 1));
        let planned = |status| {
            let mut dry = Summary::empty(3, true, status);
            (dry.would_release_terminal_leases, dry.would_recover_reserved_operations) = (2, 1);
            dry.settle(1);
            (dry.would_release_terminal_leases, dry.would_recover_reserved_operations, dry.released_terminal_leases)
        };
        assert_eq!(planned(Status::Planned), (3, 1, 0));
        // A blocked apply stops before the second pass.
        assert_eq!(planned(Status::BlockedMassAbsence), (2, 1, 0));
        assert_eq!(planned(Status::BlockedUnownedSandboxes), (2, 1, 0));
    }

    #[test]
    fn valve_boundaries() {
        // Exactly at the ratio is not more than it.
        assert!(!mass_absence(20, 40, false, 0.5));
        assert!(mass_absence(21, 40, false, 0.5));
        // A handful never blocks, one more does.
        assert!(!mass_absence(10, 10, false, 0.5));
        assert!(mass_absence(11, 11, false, 0.5));
        // An empty listing with anything to mark always does.
        assert!(mass_absence(1, 100, true, 0.5));
        assert!(mass_absence(1, 100, true, 0.99));
        assert!(!mass_absence(0, 100, true, 0.5));
        // 1.0 is the application's behaviour.
        assert!(!mass_absence(100, 100, true, 1.0));
        assert!(!mass_absence(1000, 1000, false, 1.0));
        // A small ratio blocks what is beyond it.
        assert!(mass_absence(11, 1000, false, 0.01));
        assert!(!mass_absence(10, 1000, false, 0.001));
    }

    #[test]
    fn max_absent_ratio_bounds() {
        assert_eq!(max_absent_ratio(1.0), Ok(1.0));
        assert_eq!(max_absent_ratio(f32::MIN_POSITIVE), Ok(f32::MIN_POSITIVE));
        for bad in [0.0, -0.5, 1.000001, f32::NAN, f32::INFINITY] {
            let err = max_absent_ratio(bad).unwrap_err();
            assert_eq!(err.argument, "max_absent_ratio");
        }
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
        for status in [Status::Applied, Status::Planned, Status::BlockedUnownedSandboxes, Status::BlockedMassAbsence,
                       Status::SkippedConcurrent, Status::NoFreshSnapshot] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!(json["absent_candidates"], serde_json::Value::Null);
        assert_eq!(json["environment"], "production");
        assert_eq!(json["unowned_in_other_environments"], serde_json::Value::Null);
    }

    #[test]
    fn other_environment_hint_names_the_owners() {
        let mut s = Summary::empty(40, false, Status::BlockedUnownedSandboxes);
        s.unmatched_provider_sandbox_ids = (0..40).map(|i| format!("sb-{i}")).collect();
        assert_eq!(s.other_environment_hint(), None);
        s.owned_elsewhere(&[]);
        assert_eq!(s.other_environment_hint(), None);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s.to_json()).unwrap()["unowned_in_other_environments"], serde_json::json!({}));
        s.owned_elsewhere(&[("prod".into(), 37), ("staging".into(), 1)]);
        let hint = s.other_environment_hint().unwrap();
        assert!(hint.starts_with("38 of 40 unowned sandboxes belong to live operations of other environments (37 in \"prod\", 1 in \"staging\")"), "{hint}");
        assert!(hint.ends_with("pass environment => 'prod' if the listing is that environment's"), "{hint}");
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["unowned_in_other_environments"], serde_json::json!({"prod": 37, "staging": 1}));
    }
}
