-- What reconcile_daytona reports. One entry per statement the application
-- would have measured, under the application's phase names.
CREATE TYPE @extschema@.reconciliation_diagnostic AS (
    phase       text,
    duration_ms double precision,
    row_count   bigint
);
COMMENT ON TYPE @extschema@.reconciliation_diagnostic IS
'One measured statement of a reconciliation: the application''s phase name (release_terminal_capacity, recover_reserved_operations, match_provider_inventory, find_absent_operations, inspect_capacity_bindings, seed_capacity_bindings, mark_provider_confirmed_absent), its duration in milliseconds and the rows it returned.';

-- The application's RuntimeSandboxLedgerReconciliationSummary in snake_case,
-- plus a one-word status.
CREATE TYPE @extschema@.reconciliation_summary AS (
    provider                       text,
    provider_sandbox_count         bigint,
    matched_live_sandboxes         bigint,
    unmatched_provider_sandbox_ids text[],
    live_leases_to_seed            bigint,
    absent_ledger_rows             bigint,
    seeded_leases                  bigint,
    released_terminal_leases       bigint,
    marked_deleted                 bigint,
    recovered_reserved_operations  bigint,
    has_more_absent_ledger_rows    boolean,
    dry_run                        boolean,
    status                         text,
    diagnostics                    @extschema@.reconciliation_diagnostic[],
    -- Since 0.2.0, appended: what the mass-absence valve weighed, and the
    -- snapshot a reconcile_daytona_latest run reconciled.
    absent_candidates              bigint,
    live_operations                bigint,
    snapshot_id                    bigint,
    confirming_snapshots           bigint,
    -- Since 0.4.0, appended: the environment reconciled, and what other
    -- environments own of the unowned sandboxes.
    environment                    text,
    unowned_in_other_environments  jsonb,
    -- What an apply releases and recovers: computed by a dry run (whose
    -- application columns stay 0), an apply's own counts on an apply.
    would_release_terminal_leases      bigint,
    would_recover_reserved_operations  bigint
);
COMMENT ON TYPE @extschema@.reconciliation_summary IS
'The result of reconcile_daytona and reconcile_daytona_latest: the application''s reconciliation summary fields in snake_case, status (applied, planned, blocked_unowned_sandboxes, blocked_mass_absence, skipped_concurrent, no_fresh_snapshot), the per-statement diagnostics, then absent_candidates (every live operation the absence filters kept, not only the batch), live_operations (live Daytona operations of the environment), snapshot_id (the snapshot reconciled), confirming_snapshots (how many snapshots an absent operation had to be missing from), environment (the operations'' environment reconciled), unowned_in_other_environments (when blocked_unowned_sandboxes: how many of the unowned sandboxes live operations of each other environment own, {} when none), would_release_terminal_leases and would_recover_reserved_operations (what an apply on the same ledger and listing releases and recovers: a dry run counts them, read only, since the application''s dry run skips both phases and leaves released_terminal_leases and recovered_reserved_operations 0; an apply reports its own counts). NULL: not evaluated in this run.';
