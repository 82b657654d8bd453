//! What an apply leaves behind: its history row, the WARNING and notification of a run that did not go through,
//! and the result row.

use super::Options;
use crate::args::SchemaName;
use crate::reconcile::summary::{Status, Summary, PROVIDER};
const RECORD_RUN: &str = include_str!("../../../sql/queries/reconcile/record_run.sql");
const RECORD_RUN_WITHOUT_ENVIRONMENT: &str = include_str!("../../../sql/queries/reconcile/record_run_without_environment.sql");
const NOTIFY: &str = include_str!("../../../sql/queries/reconcile/notify.sql");
const SUMMARY_ROW: &str = include_str!("../../../sql/queries/reconcile/summary_row.sql");
use crate::shell::statement::{count, execute, execute_by_environment};
use pgrx::datum::TimestampWithTimeZone;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use pgrx::AllocatedByRust;

/// The history row of an apply (skipped and blocked ones included); returns its id.
/// `runs_environment`: the table has its environment column (Access::environment_column).
pub(crate) fn record_run(client: &mut SpiClient, options: &Options, runs_environment: bool, started_at: TimestampWithTimeZone, summary: &Summary) -> i64 {
    let params = vec![started_at.into(), summary.status.as_str().into(), summary.to_json().into()];
    let environment = runs_environment.then_some(options.environment.name.as_str());
    let (table, _) =
        execute_by_environment(client, &options.ledger(), (RECORD_RUN, RECORD_RUN_WITHOUT_ENVIRONMENT), params, environment);
    count(&table.first(), 1)
}

/// An apply that did not go through says so: a WARNING to the caller (pg_cron
/// logs it) and a notification on channel `runtime_sandbox` for listeners.
/// Whether the call runs inside run_reconciliation_job, which raises the
/// reason as the job's error (one message per blocked run, not two).
fn in_scheduled_job() -> bool {
    // SAFETY: GetConfigOption returns a pointer into the GUC's storage, or NULL.
    unsafe {
        let value = pg_sys::GetConfigOption(c"runtime_sandbox.scheduled_job".as_ptr(), true, false);
        !value.is_null() && std::ffi::CStr::from_ptr(value).to_bytes() == b"on"
    }
}

pub(crate) fn alert(client: &mut SpiClient, ledger: &SchemaName, run_id: i64, summary: &Summary) {
    if !summary.status.alerts() {
        return;
    }
    let reason = match summary.status {
        Status::BlockedMassAbsence => format!(
            "{} absent candidates among {} live operations are too many to believe (an empty or partial listing?); \
             nothing was seeded or marked absent",
            summary.absent_candidates.unwrap_or(0),
            summary.live_operations.unwrap_or(0)
        ),
        Status::BlockedUnownedSandboxes => format!(
            "{} listed sandboxes are owned by no operation of environment {:?} (first: {}); nothing was seeded or marked absent{}",
            summary.unmatched_provider_sandbox_ids.len(),
            summary.environment,
            crate::args::prefix(summary.unmatched_provider_sandbox_ids.first().map(String::as_str).unwrap_or(""), 100),
            summary.other_environment_hint().map(|hint| format!(" ({hint})")).unwrap_or_default()
        ),
        _ => match summary.snapshot_id {
            Some(id) => format!("the newest Daytona snapshot ({id}) is older than max_snapshot_age; nothing was reconciled"),
            None => "there is no Daytona snapshot; nothing was reconciled".to_string(),
        },
    };
    if !in_scheduled_job() {
        warning!("runtime_sandbox: reconciliation of ledger {:?} {}: {reason}", ledger.name, summary.status.as_str());
    }
    let payload = serde_json::json!({
        "ledger_schema": ledger.name,
        "provider": PROVIDER,
        "environment": summary.environment,
        "status": summary.status.as_str(),
        "run_id": run_id,
        "snapshot_id": summary.snapshot_id,
        "provider_sandbox_count": summary.provider_sandbox_count,
        "unmatched_provider_sandboxes": summary.unmatched_provider_sandbox_ids.len(),
        "absent_candidates": summary.absent_candidates,
        "live_operations": summary.live_operations,
        "released_terminal_leases": summary.released_terminal_leases,
        "recovered_reserved_operations": summary.recovered_reserved_operations,
        "would_release_terminal_leases": summary.would_release_terminal_leases,
        "would_recover_reserved_operations": summary.would_recover_reserved_operations,
    });
    execute(client, NOTIFY, &[payload.to_string().into()]);
}

pub(crate) fn result_row(summary: &Summary) -> PgHeapTuple<'static, AllocatedByRust> {
    crate::shell::spi::get_one_with_args::<PgHeapTuple<'static, AllocatedByRust>>(SUMMARY_ROW, &[summary.to_json().into()])
        .unwrap_or_else(|e| error!("runtime_sandbox: reconcile_daytona could not build its result: {e}"))
        .expect("jsonb_populate_record returns a row")
}
