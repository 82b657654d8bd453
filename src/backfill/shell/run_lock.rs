//! The migration procedure's run lock (run_sandbox_operation_backfill calls these with the caller's rights).

use super::*;

// ---------------------------------------------------------------------------
// The migration procedure's run lock

/// Checks `run_sandbox_operation_backfill`'s arguments before it takes its
/// lock or writes anything, and returns the advisory-lock key of the ledger's run.
#[pg_extern(name = "_backfill_run_lock_key", stable, parallel_restricted)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn backfill_run_lock_key(
    batch_size: Option<i32>,
    max_batches: Option<i32>,
    pause: Option<Interval>,
    ledger_schema: Option<Name>,
) -> i64 {
    page_limit(batch_size);
    run_max_batches(max_batches).or_raise();
    let pause = required("pause", pause);
    args::finite_interval("pause", pause.months(), pause.days(), pause.micros()).or_raise();
    if pause.is_negative() {
        Error::argument("pause", "must not be negative").raise();
    }
    let (ledger, _) = ledger(ledger_schema, false);
    crate::shell::standby::refuse_writes("run_sandbox_operation_backfill");
    // SAFETY: reads the transaction state.
    if unsafe { pg_sys::IsTransactionBlock() } {
        Error::new(
            Kind::InvalidTransactionTermination,
            "CALL run_sandbox_operation_backfill() COMMITs after every page and cannot run inside a transaction block",
        )
        .detail("A migration tool that wraps each migration in a transaction, or a driver that sends several statements in one request, runs it inside one.")
        .hint(
            "Run the CALL as a statement of its own, outside a transaction (your migration tool's non-transactional \
             mode), or complete the backfill inside this transaction with SELECT * FROM \
             runtime_sandbox.complete_sandbox_operation_backfill();",
        )
        .raise();
    }
    run_lock_key(&ledger.name)
}

thread_local! {
    /// The run lock this backend holds for the procedure, released if the transaction in progress aborts.
    static HELD_RUN_LOCK: Cell<Option<i64>> = const { Cell::new(None) };
    static ABORT_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// The session-level advisory lock of `key` (as `pg_try_advisory_lock(bigint)` takes it).
pub(super) fn advisory_tag(key: i64) -> pg_sys::LOCKTAG {
    pg_sys::LOCKTAG {
        // SAFETY: the backend's database, set at connection.
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.into(),
        locktag_field2: (key >> 32) as u32,
        locktag_field3: key as u32,
        locktag_field4: 1,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    }
}

/// At the abort of a transaction (an error, a cancel, a COMMIT that failed)
/// the procedure stops: its session lock must not outlive it.
#[pg_guard]
unsafe extern "C-unwind" fn release_run_lock_on_abort(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    if event == pg_sys::XactEvent::XACT_EVENT_ABORT {
        if let Some(key) = HELD_RUN_LOCK.with(|h| h.take()) {
            let tag = advisory_tag(key);
            // SAFETY: releases the session lock this backend took in backfill_run_lock.
            unsafe { pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as i32, true) };
        }
    }
}

/// Takes the ledger's run lock for `run_sandbox_operation_backfill` (false:
/// another session holds it). A session lock, so it spans the procedure's
/// COMMITs; it is released by `_backfill_run_unlock`, or when a transaction of
/// the run aborts, wherever that happens (in a page, in the pause, in COMMIT).
#[pg_extern(name = "_backfill_run_lock", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn backfill_run_lock(lock_key: i64) -> bool {
    if !ABORT_CALLBACK.with(Cell::get) {
        // SAFETY: registered once per backend; the callback lives as long as the library.
        unsafe { pg_sys::RegisterXactCallback(Some(release_run_lock_on_abort), std::ptr::null_mut()) };
        ABORT_CALLBACK.with(|c| c.set(true));
    }
    if HELD_RUN_LOCK.with(Cell::get).is_some() {
        // A run of this session holds it (a procedure cannot run inside another that COMMITs).
        return false;
    }
    let tag = advisory_tag(lock_key);
    // SAFETY: a session-level ExclusiveLock without waiting, as pg_try_advisory_lock(bigint).
    let result = unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as i32, true, true) };
    let taken = result != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL;
    if taken {
        HELD_RUN_LOCK.with(|h| h.set(Some(lock_key)));
    }
    taken
}

/// Releases the run lock `_backfill_run_lock` took (false: it was not held).
#[pg_extern(name = "_backfill_run_unlock", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
pub(super) fn backfill_run_unlock(lock_key: i64) -> bool {
    if HELD_RUN_LOCK.with(Cell::get) != Some(lock_key) {
        return false;
    }
    HELD_RUN_LOCK.with(|h| h.set(None));
    let tag = advisory_tag(lock_key);
    // SAFETY: releases the session lock taken by backfill_run_lock.
    unsafe { pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as i32, true) }
}
