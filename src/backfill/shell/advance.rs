//! The orchestrator: the checkpoint kept in the ledger, advance_sandbox_operation_backfill and
//! complete_sandbox_operation_backfill over pages, and backfill_status.

use super::*;

const PROGRESS_ROW: &str = include_str!("../../../sql/queries/backfill/progress_row.sql");
const READ_CHECKPOINT: &str = include_str!("../../../sql/queries/backfill/read_checkpoint.sql");
const WRITE_CHECKPOINT: &str = include_str!("../../../sql/queries/backfill/write_checkpoint.sql");
const STATUS_WITHOUT_CURSOR: &str = include_str!("../../../sql/queries/backfill/status_without_cursor.sql");
const STATUS_AFTER_CURSOR: &str = include_str!("../../../sql/queries/backfill/status_after_cursor.sql");

// ---------------------------------------------------------------------------
// The orchestrator

pub(super) fn read_checkpoint(ledger: &SchemaName) -> Checkpoint {
    let sql = READ_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    let value = Spi::connect_mut(|client| {
        let table = run_kept(client, &sql, &[checkpoint::CONTROL_KEY.into()], &|e| {
            error!("runtime_sandbox: reading the backfill checkpoint failed: {e}")
        });
        if table.is_empty() {
            return None;
        }
        table.first().get_one::<String>().unwrap_or_else(|e| error!("runtime_sandbox: reading the backfill checkpoint failed: {e}"))
    });
    checkpoint::read(value.as_deref()).unwrap_or_else(|e| checkpoint_error(ledger, e))
}

pub(super) fn checkpoint_error(ledger: &SchemaName, reason: String) -> ! {
    Error::new(
        Kind::UnusableStoredValue,
        format!("the backfill checkpoint in {}.control (key {}) is unusable: {reason}", ledger.quoted, checkpoint::CONTROL_KEY),
    )
    .detail("The backfill resumes from its checkpoint as the application does, and stops where the application would.")
    .hint("Fix the value, or delete the row to restart the backfill from the oldest attempt.")
    .raise()
}

/// A stored cursor as a page position, its timestamp read as the application reads it.
pub(super) fn stored_position(ledger: &SchemaName, cursor: Cursor<String>) -> After {
    let updated_at = read_timestamp(ledger, &cursor.updated_at);
    position(&Cursor { updated_at, run_id: cursor.run_id, attempt: cursor.attempt, resource_ordinal: cursor.resource_ordinal })
}

pub(super) fn write_checkpoint(client: &mut SpiClient<'_>, ledger: &SchemaName, value: &str) {
    let sql = WRITE_CHECKPOINT.replace("@ledger@", &ledger.quoted);
    run_kept(client, &sql, &[checkpoint::CONTROL_KEY.into(), value.into()], &|e| {
        error!("runtime_sandbox: writing the backfill checkpoint failed: {e}")
    });
}

/// A backfill_progress row; `targets` only for the dry run.
pub(super) fn progress_row(
    phase: Phase,
    dry_run: bool,
    totals: Totals,
    projected: i64,
    next: Option<&After>,
    targets: Option<(&Page, &dyn Fn(usize) -> bool)>,
) -> Row {
    let mut args: Vec<DatumWithOid<'static>> = vec![
        phase.as_str().into(),
        dry_run.into(),
        totals.batches.into(),
        totals.scanned.into(),
        totals.inserted.into(),
        projected.into(),
    ];
    args.extend(next_cursor_args(next));
    match targets {
        Some((page, would_insert)) => args.extend(target_args(page, would_insert)),
        None => args.extend([
            texts(std::iter::empty()),
            integers(std::iter::empty()),
            integers(std::iter::empty()),
            texts(std::iter::empty()),
            texts(std::iter::empty()),
            booleans(std::iter::empty()),
        ]),
    }
    Spi::connect_mut(|client| {
        let table = run_kept(client, PROGRESS_ROW, &args, &|e| {
            error!("runtime_sandbox: building backfill progress failed: {e}")
        });
        table.first().get_one::<Row>().ok().flatten().unwrap_or_else(|| error!("runtime_sandbox: building backfill progress failed"))
    })
}

/// The persisted, resumable orchestrator: the application's
/// `advanceRuntimeSandboxOperationBackfill`.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn advance_sandbox_operation_backfill(
    dry_run: Option<bool>,
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, 1),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_progress") {
    let dry_run = required("dry_run", dry_run);
    let limit = page_limit(batch_size);
    // A dry run only reads: a problem only writing statements have (a missing
    // ON CONFLICT key, a NOT NULL the inserts leave empty) does not refuse it.
    let (ledger, access) = ledger(ledger_schema, dry_run);
    if !dry_run {
        crate::shell::standby::refuse_writes("advance_sandbox_operation_backfill");
    }
    if let Some(requested) = max_batches.filter(|&n| n != clamp_max_batches(Some(n))) {
        // The application clamps without a word; a caller asking for more pages is told.
        warning!(
            "runtime_sandbox: max_batches {requested} is outside 1..{MAX_BATCHES}: this call applies at most {} page(s), as the \
             application does; call it again while phase is pending, or use complete_sandbox_operation_backfill()",
            clamp_max_batches(Some(requested))
        );
    }
    access.run(|| advance(&ledger, dry_run, limit, max_batches))
}

/// Apply the whole remaining backfill in the caller's transaction (no
/// COMMIT: for migration tools that wrap a migration in a transaction, and
/// drivers that send several statements at once). Waits for a backfill run
/// by another session (the procedure, a pg_cron job) to end, so it returns
/// `complete` only when the backfill is; `max_batches` bounds the pages.
#[pg_extern(volatile, parallel_unsafe, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn complete_sandbox_operation_backfill(
    batch_size: default!(Option<i32>, 500),
    max_batches: default!(Option<i32>, "NULL"),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> pgrx::composite_type!('static, "runtime_sandbox.backfill_progress") {
    let limit = page_limit(batch_size);
    let pages = run_max_batches(max_batches).or_raise();
    let (ledger, access) = ledger(ledger_schema, false);
    crate::shell::standby::refuse_writes("complete_sandbox_operation_backfill");
    // The run lock, for this transaction: a running procedure holds it for its whole run.
    let tag = advisory_tag(run_lock_key(&ledger.name));
    // SAFETY: a transaction-level ExclusiveLock, waiting (lock_timeout and deadlock detection apply).
    unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as i32, false, false) };
    access.run(|| {
        let stored = read_checkpoint(&ledger);
        let started = std::time::Instant::now();
        let mut reported = started;
        let (phase, totals, next) = apply_pages(&ledger, &stored, limit, pages.map(i64::from), |totals, phase| {
            if reported.elapsed() >= PROGRESS_EVERY && phase != Phase::Complete {
                reported = std::time::Instant::now();
                notice!(
                    "runtime_sandbox backfill on ledger {}: {} pages, {} attempts scanned, {} operations inserted ({:.0} s)",
                    ledger.name,
                    totals.batches,
                    totals.scanned,
                    totals.inserted,
                    started.elapsed().as_secs_f64()
                );
            }
        });
        progress_row(phase, false, totals, totals.projected(), next.as_ref(), None)
    })
}

/// How often a long backfill reports its progress (a NOTICE: the client sees
/// it, the server log only if log_min_messages asks for notices).
pub(super) const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

pub(super) fn advance(ledger: &SchemaName, dry_run: bool, limit: usize, max_batches: Option<i32>) -> Row {
    let ledger = ledger.clone();
    let stored = read_checkpoint(&ledger);
    if stored.phase == Phase::Complete {
        return progress_row(Phase::Complete, dry_run, Totals::default(), 0, None, None);
    }
    if dry_run {
        // The application's preview: no validation of the cursor beyond its types.
        let after = stored
            .cursor
            .map(|c| stored_position(&ledger, c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
        let (page, won) = Spi::connect_mut(|client| {
            let page = scan_page(client, &ledger, Rules::application_preview(limit), after);
            let winners = page.winners();
            let present = existing(client, &ledger, &page, &winners);
            let won: FastSet<usize> = winners.into_iter().filter(|i| !present.contains(i)).collect();
            (page, won)
        });
        // The application reports one batch when the page has rows, and its would_insert targets as projected.
        let totals = Totals { batches: i64::from(page.scanned() > 0), scanned: page.scanned() as i64, inserted: 0 };
        let next = next_of(&page);
        return progress_row(Phase::Pending, true, totals, won.len() as i64, next.as_ref(), Some((&page, &|i| won.contains(&i))));
    }
    let (phase, totals, next) = apply_pages(&ledger, &stored, limit, Some(clamp_max_batches(max_batches) as i64), |_, _| {});
    progress_row(phase, false, totals, totals.projected(), next.as_ref(), None)
}

/// Apply pages from the stored checkpoint until the backfill is complete or
/// `pages` pages were applied (None: until complete), writing the checkpoint
/// after every page; `each` sees the totals and phase after every page.
pub(super) fn apply_pages(
    ledger: &SchemaName,
    stored: &Checkpoint,
    limit: usize,
    pages: Option<i64>,
    mut each: impl FnMut(&Totals, Phase),
) -> (Phase, Totals, Option<After>) {
    let ledger = ledger.clone();
    if stored.phase == Phase::Complete {
        return (Phase::Complete, Totals::default(), None);
    }
    let mut after = stored.cursor.clone().map(|c| {
        let cursor = c.to_resume().unwrap_or_else(|e| checkpoint_error(&ledger, e));
        stored_position(&ledger, cursor)
    });
    let mut totals = Totals::default();
    while pages.is_none_or(|pages| totals.batches < pages) {
        let (scanned, inserted, has_more, next) = Spi::connect_mut(|client| {
            let page = scan_page(client, &ledger, Rules::applied(limit), after.take());
            let inserted = insert_winners(client, &ledger, &page, &page.winners(), false).count;
            let next = next_of(&page);
            let phase = phase_after_page(page.has_more());
            let stored_next = next.as_ref().map(|n| Cursor {
                updated_at: iso_timestamp(n.attempt.updated_at),
                run_id: String::from_utf8_lossy(&n.attempt.run_id).into_owned(),
                attempt: n.attempt.attempt,
                resource_ordinal: n.ordinal,
            });
            write_checkpoint(client, &ledger, &checkpoint::write(phase, stored_next.as_ref()));
            (page.scanned() as i64, inserted, page.has_more(), next)
        });
        totals.add_page(scanned, inserted);
        after = next;
        let phase = phase_after_page(has_more);
        each(&totals, phase);
        if phase == Phase::Complete {
            return (Phase::Complete, totals, None);
        }
    }
    (Phase::Pending, totals, after)
}

/// How far the backfill has come and what is left.
#[pg_extern(stable, parallel_restricted, requires = ["backfill_types"])]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn backfill_status(
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
) -> TableIterator<
    'static,
    (
        name!(phase, String),
        name!(cursor, Option<pgrx::composite_type!('static, "runtime_sandbox.backfill_cursor")>),
        name!(attempts_remaining, i64),
    ),
> {
    let (ledger, access) = ledger(ledger_schema, true);
    access.run(|| status(&ledger))
}

pub(super) type StatusRow = (String, Option<Row>, i64);

pub(super) fn status(ledger: &SchemaName) -> TableIterator<'static, StatusRow> {
    let stored = read_checkpoint(ledger);
    if stored.phase == Phase::Complete {
        return TableIterator::once((Phase::Complete.as_str().to_owned(), None, 0));
    }
    // A cursor the next page could not resume from is shown as it is stored;
    // only the numbers must be integers to show it at all.
    let after = stored
        .cursor
        .map(|c| stored_position(&ledger, c.to_position().unwrap_or_else(|e| checkpoint_error(&ledger, e))));
    let (statement, args) = match &after {
        Some(after) => (STATUS_AFTER_CURSOR, Vec::from(next_cursor_args(Some(after)))),
        None => (STATUS_WITHOUT_CURSOR, Vec::new()),
    };
    let sql = statement.replace("@ledger@", &ledger.quoted);
    let (cursor, remaining) = Spi::connect_mut(|client| {
        let fail = |e: String| error!("runtime_sandbox: backfill status on {} failed: {e}", ledger.name);
        let table = run_kept(client, &sql, &args, &fail);
        table.first().get_two::<Row, i64>().unwrap_or_else(|e| raise(&fail, e))
    });
    TableIterator::once((Phase::Pending.as_str().to_owned(), cursor, remaining.unwrap_or(0)))
}
