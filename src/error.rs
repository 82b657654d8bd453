//! The one error type of the extension (pure, no pgrx): what went wrong, its
//! SQLSTATE, and the DETAIL and HINT a caller needs. Every condition the code
//! foresees has a kind here; XX000 is left for what it did not foresee. The
//! cores build errors (an `ArgError` becomes one), the shells raise them
//! (`crate::shell::Raise`, pgrx's `ErrorReport`).

use crate::args::ArgError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 22023: a bad argument; nothing has been read or written.
    InvalidArgument,
    /// 42P01: a table the function works on is not installed (a ledger, the
    /// application's tables).
    NotInstalled,
    /// 40001: a concurrent transaction changed what the call read or would
    /// write; the call wrote nothing that survives, and retrying is safe.
    ConcurrentChange,
    /// 23505: the call would take a name another row holds.
    Conflict,
    /// 54000: a value beyond what the reader accepts (JSON nested too deep).
    LimitExceeded,
    /// 22021: text that is not UTF-8 (the database encoding is not UTF8).
    NotUtf8,
    /// 22000: a stored value the extension reads back and cannot use (the
    /// backfill checkpoint).
    UnusableStoredValue,
    /// 55000: the extension's own objects are not as it created them.
    BrokenInstall,
    /// XX001: a stored value that is not in the format PostgreSQL writes.
    DataCorrupted,
    /// 55000: a ledger whose tables the functions cannot use as they are
    /// (check_ledger lists why, with the DDL that fixes it).
    UnusableLedger,
    /// 42501: the caller may not act as the ledger's owner.
    NotOwner,
    /// 42501: a pg_cron job would run as a role that may not execute what it calls.
    JobNotRunnable,
    /// 2D000: a call that COMMITs, made inside a transaction block.
    InvalidTransactionTermination,
    /// 25006: a call that writes, on a standby.
    ReadOnly,
}

impl Kind {
    pub const ALL: [Kind; 14] = [
        Kind::InvalidArgument,
        Kind::NotInstalled,
        Kind::ConcurrentChange,
        Kind::Conflict,
        Kind::LimitExceeded,
        Kind::NotUtf8,
        Kind::UnusableStoredValue,
        Kind::BrokenInstall,
        Kind::DataCorrupted,
        Kind::UnusableLedger,
        Kind::NotOwner,
        Kind::JobNotRunnable,
        Kind::InvalidTransactionTermination,
        Kind::ReadOnly,
    ];

    /// The SQLSTATE as clients see it.
    pub fn sqlstate(self) -> &'static str {
        match self {
            Kind::InvalidArgument => "22023",
            Kind::NotInstalled => "42P01",
            Kind::ConcurrentChange => "40001",
            Kind::Conflict => "23505",
            Kind::LimitExceeded => "54000",
            Kind::NotUtf8 => "22021",
            Kind::UnusableStoredValue => "22000",
            Kind::BrokenInstall => "55000",
            Kind::DataCorrupted => "XX001",
            Kind::UnusableLedger => "55000",
            Kind::NotOwner | Kind::JobNotRunnable => "42501",
            Kind::InvalidTransactionTermination => "2D000",
            Kind::ReadOnly => "25006",
        }
    }
}

/// An error to raise: `runtime_sandbox: <message>`, with DETAIL and HINT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), detail: None, hint: None }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// 22023 `invalid argument <argument>: <reason>`.
    pub fn argument(argument: &'static str, reason: impl Into<String>) -> Self {
        ArgError::new(argument, reason).into()
    }

    /// The ledger schema named by `argument` does not exist (22023), with the
    /// command that creates it.
    pub fn ledger_schema_missing(argument: &'static str, schema: &str) -> Self {
        Error::argument(argument, format!("schema {schema:?} does not exist"))
            .hint(format!("{} creates it with the ledger's tables.", install_ledger(schema)))
    }

    /// The ledger schema exists but lacks tables the call uses (42P01).
    /// `uses` says what the call does with which tables (the DETAIL).
    pub fn ledger_not_installed(argument: &'static str, schema: &str, missing: &str, uses: &str) -> Self {
        Error::new(Kind::NotInstalled, format!("{argument} {schema:?} lacks the ledger's table(s) {missing}"))
            .detail(uses)
            .hint(format!(
                "Point {argument} at the ledger's schema, or run {} to create the tables.",
                install_ledger(schema)
            ))
    }
}

impl Error {
    /// The caller may not act as the owner of the schema a function works on (42501).
    pub fn not_owner(function: &str, schema: &str, owner: &str, caller: &str) -> Self {
        Error::new(
            Kind::NotOwner,
            format!("{function} runs on schema {schema:?} as its owner {owner:?}, and role {caller:?} is not a member of it"),
        )
        .detail(
            "Statements on a ledger run with its owner's privileges, so that code attached to its tables never runs \
             with the caller's; the caller must be the owner, a member of the owner's role, or a superuser.",
        )
        .hint(format!("GRANT \"{}\" TO \"{}\";", owner.replace('"', "\"\""), caller.replace('"', "\"\"")))
    }
}

impl Error {
    /// A job that would run as `role`, which may not execute `missing` (regprocedure texts) it calls.
    pub fn job_not_runnable(function: &str, role: &str, missing: &[String]) -> Self {
        let role_ident = format!("\"{}\"", role.replace('"', "\"\""));
        Error::new(
            Kind::JobNotRunnable,
            format!(
                "{function}: the job would run as role {role:?}, which may not execute {}; nothing was scheduled",
                missing.join(", ")
            ),
        )
        .detail("A pg_cron job runs as the role that scheduled it, and its procedure calls these with that role's rights.")
        .hint(
            missing
                .iter()
                .map(|routine| format!("GRANT EXECUTE ON ROUTINE {routine} TO {role_ident};"))
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

fn install_ledger(schema: &str) -> String {
    format!("SELECT runtime_sandbox.install_ledger('{schema}')")
}

/// A bad argument keeps its message (`invalid argument <name>: <reason>`).
impl From<ArgError> for Error {
    fn from(err: ArgError) -> Self {
        Error::new(Kind::InvalidArgument, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_keep_their_message() {
        let e = Error::from(ArgError::new("app_schema", "must not be null"));
        assert_eq!((e.kind, e.message.as_str()), (Kind::InvalidArgument, "invalid argument app_schema: must not be null"));
        assert_eq!(Error::argument("batch_size", "must be 1..1000"), Error::from(ArgError::new("batch_size", "must be 1..1000")));
    }

    #[test]
    fn a_missing_ledger_says_how_to_install_it() {
        let e = Error::ledger_not_installed("ledger_schema", "l1", "attempts, runs", "The backfill reads them.");
        assert_eq!(e.kind.sqlstate(), "42P01");
        assert_eq!(e.message, "ledger_schema \"l1\" lacks the ledger's table(s) attempts, runs");
        assert_eq!(e.detail.as_deref(), Some("The backfill reads them."));
        assert_eq!(
            e.hint.as_deref(),
            Some("Point ledger_schema at the ledger's schema, or run SELECT runtime_sandbox.install_ledger('l1') to create the tables.")
        );
        let e = Error::ledger_schema_missing("ledger_schema", "l2");
        assert_eq!((e.kind, e.message.as_str()), (Kind::InvalidArgument, "invalid argument ledger_schema: schema \"l2\" does not exist"));
        assert_eq!(e.hint.as_deref(), Some("SELECT runtime_sandbox.install_ledger('l2') creates it with the ledger's tables."));
    }
}
