//! Running reconciliation unattended: inventory snapshots recorded by whoever
//! can list the provider and reconciled later by a job that cannot
//! (record_inventory_snapshot, reconcile_daytona_latest), pg_cron jobs for
//! that and for the backfill (schedule_* / unschedule_*), and the health view
//! install_ledger creates (sql/ledger/install.sql).
//!
//! `rules` is the pure core (argument rules, cron schedules, the job
//! commands); `snapshots` and `schedule` are the SPI shells.

pub mod rules;
mod schedule;
mod snapshots;

pgrx::extension_sql_file!(
    "../../sql/operations/api.sql",
    name = "operations_api",
    requires = [
        snapshots::record_inventory_snapshot,
        snapshots::reconcile_daytona_latest,
        schedule::schedule_reconciliation,
        schedule::unschedule_reconciliation,
        schedule::schedule_sandbox_operation_backfill,
        schedule::unschedule_sandbox_operation_backfill
    ]
);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("tests.rs");
}
