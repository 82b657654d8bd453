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
//!
//! The owner's code (its trigger functions, and any other function of its in
//! SQL or a procedural language without a search_path of its own) runs with
//! the owner's search path, as when the application runs it: the owner's
//! role/database setting (ALTER ROLE ... [IN DATABASE] ... SET search_path,
//! else ALTER DATABASE ... SET, else the server's default), never the
//! caller's session value; pg_catalog first and pg_temp last. PostgreSQL's
//! function-manager hook sets it around each such call; the extension's own
//! statements keep their pinned `pg_catalog, pg_temp`, so no function planted
//! in a schema of that path can take a built-in's place in them.
//!
//! PostgreSQL refuses to queue deferred trigger events inside a
//! security-restricted operation (they would fire at COMMIT, as the caller).
//! So for the call, deferrable constraints are made IMMEDIATE (SET
//! CONSTRAINTS ALL IMMEDIATE, as the caller, before switching): the owner's
//! foreign keys and constraint triggers are checked at the end of each
//! statement, as the owner, instead of at COMMIT; afterwards the ones that
//! are INITIALLY DEFERRED are DEFERRED again for the rest of the caller's
//! transaction.
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

/// Run `work` as `owner`, in a security-restricted operation, with the
/// owner's search path for its code and the owner's time zone throughout.
/// When the caller is the owner there is nobody to protect: `work` runs as
/// the caller (so the owner's deferred triggers fire at COMMIT, as they do
/// for the application).
pub fn as_owner<R>(owner: pg_sys::Oid, work: impl FnOnce() -> R) -> R {
    let settings = OwnerSettings::read(owner);
    let _path = OwnerPath::enter(search_path_for(settings.search_path.as_deref()));
    // The time zone for the whole call, statements included: `timestamp
    // without time zone` columns hold the application's wall clock.
    let _zone = settings.time_zone.as_deref().map(|zone| {
        let level = GucLevel::push();
        set_local("TimeZone", zone);
        level
    });
    if owner == current_user() {
        return work();
    }
    let deferred = Deferrable::make_immediate();
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
    // On an error the (sub)transaction's abort restores the constraint modes.
    deferred.restore();
    result
}

/// What a hooked call did to the search path (one per FHET_START, popped at
/// FHET_END or FHET_ABORT).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Hooked {
    /// The owner's path, in a GUC nest level of the hook's own (a function
    /// without settings): popped at FHET_END.
    Pushed(i32),
    /// The owner's path, saved into the nest level PostgreSQL pushed for the
    /// function's own other settings: PostgreSQL pops it before FHET_END.
    Saved,
    /// The function's own SET search_path: nothing done.
    OwnPath,
    /// Nothing done, and the path in effect is not the hook's business (not
    /// the owner's code, or outside `as_owner`).
    Untouched,
    /// Nothing done: nested in a call whose path is set (by the hook or by a
    /// SET clause), it keeps its caller's, as in PostgreSQL.
    Nested,
}

impl Hooked {
    /// Whether calls nested in this one keep the path in effect.
    fn sets_path(self) -> bool {
        !matches!(self, Hooked::Untouched)
    }
}

thread_local! {
    /// The owner's search path while `as_owner` runs (None outside).
    static OWNER_PATH: std::cell::RefCell<Option<std::ffi::CString>> = const { std::cell::RefCell::new(None) };
    /// Per hooked call since `as_owner` began (innermost last).
    static HOOKED: std::cell::RefCell<Vec<Hooked>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The owner's path in effect for a call, with a stack of hooked calls of
/// its own; the previous ones come back on drop (also when an error unwinds).
struct OwnerPath(Option<std::ffi::CString>, Vec<Hooked>);

impl OwnerPath {
    fn enter(path: String) -> Self {
        let path = std::ffi::CString::new(path).ok();
        OwnerPath(OWNER_PATH.with(|p| p.replace(path)), HOOKED.with(|h| h.take()))
    }
}

impl Drop for OwnerPath {
    fn drop(&mut self) {
        OWNER_PATH.with(|p| *p.borrow_mut() = self.0.take());
        HOOKED.with(|h| *h.borrow_mut() = std::mem::take(&mut self.1));
    }
}

static mut PREVIOUS_NEEDS_FMGR_HOOK: pg_sys::needs_fmgr_hook_type = None;
static mut PREVIOUS_FMGR_HOOK: pg_sys::fmgr_hook_type = None;

/// Install the function-manager hooks (from _PG_init), after any already there.
pub fn install_hooks() {
    // SAFETY: _PG_init runs once per backend, before any query.
    unsafe {
        PREVIOUS_NEEDS_FMGR_HOOK = pg_sys::needs_fmgr_hook;
        PREVIOUS_FMGR_HOOK = pg_sys::fmgr_hook;
        pg_sys::needs_fmgr_hook = Some(needs_owner_path);
        pg_sys::fmgr_hook = Some(owner_path_hook);
    }
}

/// pg_language OIDs of internal and C functions (pg_language.dat): their
/// code does not look names up in the search path.
const INTERNAL_LANGUAGE: u32 = 12;
const C_LANGUAGE: u32 = 13;

/// What the hook needs of a function's catalog row.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Function {
    /// In pg_catalog, or internal or C: its code does not resolve names.
    NotOwnersCode,
    /// SQL or a procedural language without a SET clause.
    Plain,
    /// With a SET clause; whether it sets search_path.
    Configured { search_path: bool },
}

/// The kind of function `fn_oid` is (NotOwnersCode when it is gone).
fn function_kind(fn_oid: pg_sys::Oid) -> Function {
    // SAFETY: a syscache lookup, released before returning; the proconfig
    // array is copied out by from_datum.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::PROCOID as i32, fn_oid.into());
        if tuple.is_null() {
            return Function::NotOwnersCode;
        }
        let proc = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(tuple);
        let mut isnull = false;
        let datum = pg_sys::SysCacheGetAttr(
            pg_sys::SysCacheIdentifier::PROCOID as i32,
            tuple,
            pg_sys::Anum_pg_proc_proconfig as pg_sys::AttrNumber,
            &mut isnull,
        );
        let config = <Vec<Option<String>> as pgrx::FromDatum>::from_datum(datum, isnull);
        let owners_code = (*proc).pronamespace != pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE)
            && !matches!((*proc).prolang.to_u32(), INTERNAL_LANGUAGE | C_LANGUAGE);
        let kind = classify(owners_code, config.as_deref());
        pg_sys::ReleaseSysCache(tuple);
        kind
    }
}

/// A function's kind from whether its code is the owner's (SQL or a
/// procedural language, outside pg_catalog) and its proconfig entries
/// (`name=value`; None without a SET clause). A SET search_path counts for
/// any function, the extension's own C functions included.
fn classify(owners_code: bool, config: Option<&[Option<String>]>) -> Function {
    let sets_search_path = |entries: &[Option<String>]| {
        entries.iter().flatten().any(|e| e.split('=').next().is_some_and(|name| name.trim().eq_ignore_ascii_case("search_path")))
    };
    match config {
        Some(entries) if sets_search_path(entries) => Function::Configured { search_path: true },
        _ if !owners_code => Function::NotOwnersCode,
        Some(_) => Function::Configured { search_path: false },
        None => Function::Plain,
    }
}

/// What the hook does at a call's start: `enclosing_sets_path` when a call
/// around it (since `as_owner` began) set the path or has its own.
fn plan_call(owner_path: bool, enclosing_sets_path: bool, kind: Function) -> Plan {
    match kind {
        _ if !owner_path => Plan::Nothing(Hooked::Untouched),
        Function::NotOwnersCode => Plan::Nothing(Hooked::Untouched),
        Function::Configured { search_path: true } => Plan::Nothing(Hooked::OwnPath),
        _ if enclosing_sets_path => Plan::Nothing(Hooked::Nested),
        Function::Plain => Plan::PushOwnerPath,
        Function::Configured { search_path: false } => Plan::SaveOwnerPath,
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Plan {
    Nothing(Hooked),
    PushOwnerPath,
    SaveOwnerPath,
}

/// Whether a call of `fn_oid` must pass through `owner_path_hook`: while
/// `as_owner` runs, a function outside pg_catalog, in SQL or a procedural
/// language, without settings of its own (PostgreSQL passes the others with
/// a SET clause, and SECURITY DEFINER ones, through the hook anyway).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn needs_owner_path(fn_oid: pg_sys::Oid) -> bool {
    if let Some(previous) = unsafe { PREVIOUS_NEEDS_FMGR_HOOK } {
        if unsafe { previous(fn_oid) } {
            return true;
        }
    }
    OWNER_PATH.with(|p| p.borrow().is_some()) && function_kind(fn_oid) == Function::Plain
}

/// Around a call PostgreSQL routes through its security-definer path (the
/// ones `needs_owner_path` chose, and every function with SECURITY DEFINER
/// or a SET clause): while `as_owner` runs, the outermost call of the
/// owner's code gets the owner's search path, unless its own SET clause sets
/// one; nested calls keep their caller's. PostgreSQL applies a function's
/// own settings before FHET_START and pops them before FHET_END, so the
/// owner's path goes into that level for such a function, and into a level
/// of the hook's own for a function without settings.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn owner_path_hook(event: pg_sys::FmgrHookEventType::Type, flinfo: *mut pg_sys::FmgrInfo, arg: *mut pg_sys::Datum) {
    if let Some(previous) = unsafe { PREVIOUS_FMGR_HOOK } {
        unsafe { previous(event, flinfo, arg) };
    }
    match event {
        pg_sys::FmgrHookEventType::FHET_START => {
            let path = OWNER_PATH.with(|p| p.borrow().clone());
            let enclosing = HOOKED.with(|h| h.borrow().iter().any(|c| c.sets_path()));
            let kind = match path {
                Some(_) if !enclosing => function_kind(unsafe { (*flinfo).fn_oid }),
                _ => Function::Plain,
            };
            let hooked = match (plan_call(path.is_some(), enclosing, kind), path) {
                (Plan::PushOwnerPath, Some(path)) => {
                    // SAFETY: pushes a GUC nest level, popped at FHET_END (or by the error's abort).
                    let level = unsafe { pg_sys::NewGUCNestLevel() };
                    set(c"search_path", &path, pg_sys::GucAction::GUC_ACTION_SAVE);
                    Hooked::Pushed(level)
                }
                (Plan::SaveOwnerPath, Some(path)) => {
                    set(c"search_path", &path, pg_sys::GucAction::GUC_ACTION_SAVE);
                    Hooked::Saved
                }
                (Plan::Nothing(hooked), _) => hooked,
                (_, None) => Hooked::Untouched,
            };
            HOOKED.with(|h| h.borrow_mut().push(hooked));
        }
        pg_sys::FmgrHookEventType::FHET_END => {
            if let Some(Hooked::Pushed(level)) = HOOKED.with(|h| h.borrow_mut().pop()) {
                // As after a function's own SET clause: the saved value comes
                // back; what the function SET LOCAL otherwise stays.
                unsafe { pg_sys::AtEOXact_GUC(true, level) };
            }
        }
        _ => {
            // The error's (sub)transaction abort pops the nest level.
            HOOKED.with(|h| h.borrow_mut().pop());
        }
    }
}

/// The search path the owner's code runs with, from the owner's setting
/// (None: it has none; the server's default applies): pg_catalog first, the
/// owner's schemas, pg_temp last.
pub fn search_path_for(owner_setting: Option<&str>) -> String {
    let schemas = owner_setting.unwrap_or(DEFAULT_SEARCH_PATH).trim();
    if schemas.is_empty() || schemas == "\"\"" {
        "pg_catalog, pg_temp".to_string()
    } else {
        format!("pg_catalog, {schemas}, pg_temp")
    }
}

/// The server's built-in search_path.
const DEFAULT_SEARCH_PATH: &str = "\"$user\", public";

/// The owner's settings the application's sessions start with in this
/// database, by PostgreSQL's own precedence: role in database, role,
/// database, every role.
struct OwnerSettings {
    /// None: the server's default applies.
    search_path: Option<String>,
    /// None: the caller's session's applies (no setting anywhere, or the
    /// server's files are not the caller's to read).
    time_zone: Option<String>,
}

impl OwnerSettings {
    fn read(owner: pg_sys::Oid) -> Self {
        pgrx::Spi::connect(|client| {
            let mut settings = OwnerSettings { search_path: None, time_zone: None };
            for row in client.select(include_str!("../../sql/queries/shell/owner_settings.sql"), None, &[owner.into()])? {
                let (name, value) = (row.get::<String>(1)?, row.get::<String>(2)?);
                match name.as_deref() {
                    Some("search_path") if settings.search_path.is_none() => settings.search_path = value,
                    Some("timezone") if settings.time_zone.is_none() => settings.time_zone = value,
                    _ => {}
                }
            }
            // Without a role or database setting the server's own applies (its
            // files: readable by a superuser or whom it granted them).
            if settings.time_zone.is_none() && server_files_readable() {
                settings.time_zone = server_time_zone(client)?;
            }
            Ok::<_, pgrx::spi::SpiError>(settings)
        })
        .unwrap_or_else(|e| pgrx::error!("runtime_sandbox: reading the owner's settings: {e}"))
    }
}

thread_local! {
    /// The TimeZone the server's files set, as read after the configuration was last loaded (`PgReloadTime`).
    static SERVER_TIME_ZONE: std::cell::RefCell<Option<(pg_sys::TimestampTz, Option<String>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The TimeZone the server's files set (server_time_zone.sql), read once per configuration load of this backend:
/// the server applies its files only when it loads them, and parsing them on every call cost a backfill page
/// 0.4 ms of its 6.
fn server_time_zone(client: &pgrx::spi::SpiClient) -> Result<Option<String>, pgrx::spi::SpiError> {
    // SAFETY: a plain read of the backend's own global, set when it (re)loads its configuration.
    let loaded = unsafe { pg_sys::PgReloadTime };
    if let Some((at, zone)) = SERVER_TIME_ZONE.with(|cache| cache.borrow().clone()) {
        if at == loaded {
            return Ok(zone);
        }
    }
    let zone = client
        .select(include_str!("../../sql/queries/shell/server_time_zone.sql"), Some(1), &[])?
        .into_iter()
        .next()
        .map(|row| row.get::<String>(1))
        .transpose()?
        .flatten();
    SERVER_TIME_ZONE.with(|cache| *cache.borrow_mut() = Some((loaded, zone.clone())));
    Ok(zone)
}

/// Whether the current user may call pg_show_all_file_settings().
fn server_files_readable() -> bool {
    unsafe {
        if pg_sys::superuser() {
            return true;
        }
    }
    pgrx::Spi::get_one::<bool>(
        "SELECT pg_catalog.has_function_privilege('pg_catalog.pg_show_all_file_settings()', 'EXECUTE')",
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// The constraints to defer again after a call that made every deferrable
/// one IMMEDIATE: (schema, name) of each INITIALLY DEFERRED constraint whose
/// name no other constraint of its schema shares unless it is one too (none
/// when the database has no deferrable constraint: nothing was changed).
struct Deferrable {
    initially_deferred: Vec<(String, String)>,
}

impl Deferrable {
    /// SET CONSTRAINTS ALL IMMEDIATE when the database has a deferrable
    /// constraint (firing, as the caller, what the caller's transaction had
    /// queued for them).
    fn make_immediate() -> Self {
        let (any, rows) = pgrx::Spi::connect(|client| {
            let mut any = false;
            let mut out = Vec::new();
            for row in client.select(include_str!("../../sql/queries/shell/deferrable_constraints.sql"), None, &[])? {
                any |= row.get::<bool>(1)?.unwrap_or(false);
                if let (Some(schema), Some(name)) = (row.get::<String>(2)?, row.get::<String>(3)?) {
                    out.push((schema, name));
                }
            }
            Ok::<_, pgrx::spi::SpiError>((any, out))
        })
        .unwrap_or_else(|e| pgrx::error!("runtime_sandbox: reading the deferrable constraints: {e}"));
        if any {
            set_constraints(&[], false);
        }
        Deferrable { initially_deferred: rows }
    }

    fn restore(self) {
        if !self.initially_deferred.is_empty() {
            set_constraints(&self.initially_deferred, true);
        }
    }
}

/// SET CONSTRAINTS {ALL | names} {IMMEDIATE | DEFERRED}, without SPI (no
/// statement of its own, so nothing that needs a transaction id).
fn set_constraints(names: &[(String, String)], deferred: bool) {
    unsafe {
        let mut stmt = pgrx::PgBox::<pg_sys::ConstraintsSetStmt>::alloc_node(pg_sys::NodeTag::T_ConstraintsSetStmt);
        let mut list: *mut pg_sys::List = std::ptr::null_mut();
        for (schema, name) in names {
            let schema = std::ffi::CString::new(schema.as_str()).expect("catalog names have no NUL");
            let name = std::ffi::CString::new(name.as_str()).expect("catalog names have no NUL");
            let range = pg_sys::makeRangeVar(pg_sys::pstrdup(schema.as_ptr()), pg_sys::pstrdup(name.as_ptr()), -1);
            list = pg_sys::lappend(list, range.cast());
        }
        stmt.constraints = list;
        stmt.deferred = deferred;
        pg_sys::AfterTriggerSetState(stmt.as_ptr());
    }
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
    let level = GucLevel::push();
    set_local(name, value);
    let result = work();
    drop(level);
    result
}

/// A GUC nest level of its own; popped, with what was set in it, on drop
/// (also when an error unwinds).
struct GucLevel(i32);

impl GucLevel {
    fn push() -> Self {
        // SAFETY: pushes a GUC nest level, popped on drop.
        GucLevel(unsafe { pg_sys::NewGUCNestLevel() })
    }
}

impl Drop for GucLevel {
    fn drop(&mut self) {
        // SAFETY: pops the level pushed above, restoring the previous values.
        unsafe { pg_sys::AtEOXact_GUC(false, self.0) };
    }
}

/// The current GUC nest level (for tests: the hook leaves it as it found it).
pub fn guc_nest_level() -> i32 {
    // SAFETY: pushes a level and pops it at once; nothing is set in it.
    unsafe {
        let level = pg_sys::NewGUCNestLevel();
        pg_sys::AtEOXact_GUC(false, level);
        level - 1
    }
}

/// Set `name` = `value` in the current GUC nest level, directly, as
/// set_config(name, value, true) does, not through SPI: a statement run that
/// way would assign a transaction id, which a read-only call must not need
/// (it would fail on a standby).
fn set_local(name: &str, value: &str) {
    let c_name = std::ffi::CString::new(name).expect("setting names have no NUL");
    let c_value = std::ffi::CString::new(value).expect("setting values have no NUL");
    set(&c_name, &c_value, pg_sys::GucAction::GUC_ACTION_LOCAL);
}

/// set_config_option for the session's current nest level: LOCAL (rolled
/// back with the level) or SAVE (restored when the level ends, as a
/// function's own SET clause).
fn set(name: &std::ffi::CStr, value: &std::ffi::CStr, action: pg_sys::GucAction::Type) {
    // SAFETY: both strings outlive the call; errors are raised as ERROR.
    unsafe {
        let context = if pg_sys::superuser() { pg_sys::GucContext::PGC_SUSET } else { pg_sys::GucContext::PGC_USERSET };
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            context,
            pg_sys::GucSource::PGC_S_SESSION,
            action,
            true,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{classify, plan_call, search_path_for, Function, Hooked, Plan};

    fn config(entries: &[&str]) -> Vec<Option<String>> {
        entries.iter().map(|e| Some(e.to_string())).collect()
    }

    #[test]
    fn a_set_search_path_is_the_functions_own_whatever_its_language() {
        assert_eq!(classify(true, None), Function::Plain);
        assert_eq!(classify(false, None), Function::NotOwnersCode);
        assert_eq!(classify(true, Some(&config(&["search_path=app_audit, pg_temp"]))), Function::Configured { search_path: true });
        assert_eq!(classify(false, Some(&config(&["search_path=pg_catalog, pg_temp"]))), Function::Configured { search_path: true });
        assert_eq!(classify(true, Some(&config(&["work_mem=64MB", "Search_Path=x"]))), Function::Configured { search_path: true });
        assert_eq!(classify(true, Some(&config(&["work_mem=64MB"]))), Function::Configured { search_path: false });
        assert_eq!(classify(false, Some(&config(&["work_mem=64MB"]))), Function::NotOwnersCode);
        assert_eq!(classify(true, Some(&config(&["search_path_x=1"]))), Function::Configured { search_path: false });
    }

    #[test]
    fn only_the_outermost_call_of_the_owners_code_gets_the_owners_path() {
        // Outside as_owner nothing is done, whatever the function.
        for kind in [Function::Plain, Function::NotOwnersCode, Function::Configured { search_path: false }] {
            assert_eq!(plan_call(false, false, kind), Plan::Nothing(Hooked::Untouched));
        }
        assert_eq!(plan_call(true, false, Function::Plain), Plan::PushOwnerPath);
        assert_eq!(plan_call(true, false, Function::Configured { search_path: false }), Plan::SaveOwnerPath);
        assert_eq!(plan_call(true, false, Function::Configured { search_path: true }), Plan::Nothing(Hooked::OwnPath));
        assert_eq!(plan_call(true, false, Function::NotOwnersCode), Plan::Nothing(Hooked::Untouched));
        // Nested in a call whose path is set: kept.
        assert_eq!(plan_call(true, true, Function::Plain), Plan::Nothing(Hooked::Nested));
        assert_eq!(plan_call(true, true, Function::Configured { search_path: false }), Plan::Nothing(Hooked::Nested));
        assert_eq!(plan_call(true, true, Function::Configured { search_path: true }), Plan::Nothing(Hooked::OwnPath));
        // Calls around which only code that resolves no names ran do not count as setting it.
        assert!(!Hooked::Untouched.sets_path());
        assert!(Hooked::OwnPath.sets_path() && Hooked::Nested.sets_path() && Hooked::Saved.sets_path() && Hooked::Pushed(3).sets_path());
    }

    #[test]
    fn the_owners_schemas_sit_between_pg_catalog_and_pg_temp() {
        assert_eq!(search_path_for(Some("runtime_scheduler, public")), "pg_catalog, runtime_scheduler, public, pg_temp");
        assert_eq!(search_path_for(None), "pg_catalog, \"$user\", public, pg_temp");
        assert_eq!(search_path_for(Some("")), "pg_catalog, pg_temp");
        assert_eq!(search_path_for(Some("\"\"")), "pg_catalog, pg_temp");
    }
}
