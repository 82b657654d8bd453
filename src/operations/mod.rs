//! Running reconciliation unattended: inventory snapshots recorded by whoever
//! can list the provider and reconciled later by a job that cannot
//! (record_inventory_snapshot, reconcile_daytona_latest), pg_cron jobs for
//! that and for the backfill (schedule_* / unschedule_*), and the health view
//! install_ledger creates (sql/ddl/ledger_tables.sql).
//!
//! `rules` is the pure core (argument rules, cron schedules, the job
//! commands); `shell` is the SPI shell (statements in
//! `sql/queries/operations/`).

pub mod rules;
mod shell;

pgrx::extension_sql_file!(
    "../../sql/extension/operations_api.sql",
    name = "operations_api",
    requires = [
        shell::record_inventory_snapshot_of,
        shell::stream::publish_inventory_snapshot_of,
        shell::reconcile_daytona_latest_in,
        shell::jobs::schedule_reconciliation_of,
        shell::jobs::unschedule_reconciliation_of,
        shell::jobs::schedule_sandbox_operation_backfill_in,
        shell::jobs::unschedule_sandbox_operation_backfill_in
    ]
);
pgrx::extension_sql_file!(
    "../../sql/extension/operations_job.sql",
    name = "operations_job",
    requires = ["reconcile_types", shell::reconcile_daytona_latest_in]
);

#[cfg(feature = "pg_test")]
#[pgrx::pg_schema]
mod tests {
    include!("pg_tests.rs");
}
