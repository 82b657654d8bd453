//! Statements on tables the caller does not own run as their owner.
//!
//! A ledger (or an application schema) belongs to the application's role,
//! while the extension's functions are often run by a more privileged one (a
//! superuser's pg_cron job, a migration role). Any code the tables carry —
//! triggers, rules, defaults, CHECKs, domains, index expressions, policies —
//! would run with the caller's privileges. PostgreSQL's own maintenance
//! (VACUUM, ANALYZE, REFRESH MATERIALIZED VIEW) solves the same problem by
//! switching to the table's owner inside a security-restricted operation;
//! `as_owner` does exactly that:
//! - the current user becomes the owner, with SECURITY_RESTRICTED_OPERATION
//!   (no temporary objects, no SET ROLE, no cursors or prepared statements
//!   that outlive the call) and SECURITY_LOCAL_USERID_CHANGE;
//! - a new GUC nest level, rolled back on the way out, so nothing the owner's
//!   code sets (search_path, role, ...) outlives the call;
//! - on the way out (normal return or unwinding) the caller's user and
//!   security context come back; an ERROR's transaction or subtransaction
//!   abort restores both anyway.
//! PostgreSQL refuses to queue deferred triggers inside such an operation
//! (they would fire at COMMIT, as the caller): a ledger with a DEFERRABLE
//! INITIALLY DEFERRED trigger works only for its owner (check_ledger warns).
//!
//! Who may switch is decided by the caller of `as_owner` (`may_act_as`): the
//! owner itself, a member of its role, or a superuser.

use pgrx::pg_sys;

/// The caller's identity while the owner's is in effect.
struct Restore {
    user: pg_sys::Oid,
    context: i32,
    nest_level: i32,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: plain assignments of backend globals (AtEOXact_GUC pops
        // only the levels this call pushed, with their values).
        unsafe {
            pg_sys::AtEOXact_GUC(false, self.nest_level);
            pg_sys::SetUserIdAndSecContext(self.user, self.context);
        }
    }
}

/// Run `work` as `owner`, in a security-restricted operation. When the
/// caller is the owner there is nobody to protect: `work` runs as it is (so
/// the owner's own deferred triggers, which PostgreSQL refuses to queue
/// inside a security-restricted operation, keep working for the owner).
pub fn as_owner<R>(owner: pg_sys::Oid, work: impl FnOnce() -> R) -> R {
    if owner == current_user() {
        return work();
    }
    let restore = unsafe {
        let mut user = pg_sys::InvalidOid;
        let mut context = 0i32;
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(
            owner,
            context
                | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
        Restore { user, context, nest_level: pg_sys::NewGUCNestLevel() }
    };
    let result = work();
    drop(restore);
    result
}

/// The current user (the caller, outside `as_owner`).
pub fn current_user() -> pg_sys::Oid {
    unsafe { pg_sys::GetUserId() }
}

/// Whether the current user may act as `owner`: it is the owner, has the
/// privileges of its role (membership with INHERIT), or is a superuser.
pub fn may_act_as(owner: pg_sys::Oid) -> bool {
    unsafe { pg_sys::has_privs_of_role(pg_sys::GetUserId(), owner) }
}

/// A role's name (for messages), or its OID when it has none any more.
pub fn role_name(role: pg_sys::Oid) -> String {
    unsafe {
        let name = pg_sys::GetUserNameFromId(role, true);
        if name.is_null() {
            format!("{}", role.to_u32())
        } else {
            std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }
}

/// Run `work` with the setting `name` = `value` for its duration only (a GUC
/// nest level of its own, rolled back on the way out).
pub fn with_setting<R>(name: &str, value: &str, work: impl FnOnce() -> R) -> R {
    struct Level(i32);
    impl Drop for Level {
        fn drop(&mut self) {
            // SAFETY: pops the level pushed below, restoring the previous value.
            unsafe { pg_sys::AtEOXact_GUC(false, self.0) };
        }
    }
    // SAFETY: pushes a GUC nest level.
    let level = Level(unsafe { pg_sys::NewGUCNestLevel() });
    // Set directly, as set_config(name, value, true) does, not through SPI: a
    // statement run that way would assign a transaction id, which a read-only
    // call must not need (it would fail on a standby).
    let c_name = std::ffi::CString::new(name).expect("setting names have no NUL");
    let c_value = std::ffi::CString::new(value).expect("setting values have no NUL");
    // SAFETY: both strings outlive the call; errors are raised as ERROR.
    unsafe {
        let context = if pg_sys::superuser() { pg_sys::GucContext::PGC_SUSET } else { pg_sys::GucContext::PGC_USERSET };
        pg_sys::set_config_option(
            c_name.as_ptr(),
            c_value.as_ptr(),
            context,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_LOCAL,
            true,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
    let result = work();
    drop(level);
    result
}
