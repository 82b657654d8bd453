//! Raising `crate::error::Error`: pgrx's `ErrorReport` with the kind's
//! SQLSTATE, `runtime_sandbox: <message>`, DETAIL and HINT.

use crate::args::ArgError;
use crate::error::{Error, Kind};
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// The kind's error code, as pgrx names it.
pub fn code(kind: Kind) -> PgSqlErrorCode {
    match kind {
        Kind::InvalidArgument => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        Kind::NotInstalled => PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
        Kind::ConcurrentChange => PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
        Kind::Conflict => PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
        Kind::LimitExceeded => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        Kind::NotUtf8 => PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
        Kind::UnusableStoredValue => PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
        Kind::BrokenInstall => PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Kind::DataCorrupted => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        Kind::UnusableLedger => PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        Kind::NotOwner | Kind::JobNotRunnable => PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        Kind::InvalidTransactionTermination => PgSqlErrorCode::ERRCODE_INVALID_TRANSACTION_TERMINATION,
        Kind::ReadOnly => PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
    }
}

pub trait Raise {
    /// Raise it as a PostgreSQL ERROR (the transaction is aborted).
    fn raise(self) -> !;
}

impl Raise for Error {
    fn raise(self) -> ! {
        let mut report = ErrorReport::new(code(self.kind), format!("runtime_sandbox: {}", self.message), "runtime_sandbox");
        if let Some(detail) = self.detail {
            report = report.set_detail(detail);
        }
        if let Some(hint) = self.hint {
            report = report.set_hint(hint);
        }
        report.report(PgLogLevel::ERROR);
        unreachable!("ereport(ERROR) does not return")
    }
}

/// Unwrap, or raise the error.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T, E: Into<Error>> OrRaise<T> for Result<T, E> {
    fn or_raise(self) -> T {
        self.unwrap_or_else(|e| e.into().raise())
    }
}

/// Raise a bad-argument error (SQLSTATE 22023). Nothing has been written yet.
pub fn raise_arg(err: ArgError) -> ! {
    Error::from(err).raise()
}

/// Unwrap a core result or raise its argument error.
pub fn check<T>(result: Result<T, ArgError>) -> T {
    result.or_raise()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_sqlstate() {
        for kind in Kind::ALL {
            // PgSqlErrorCode packs the five characters six bits each (MAKE_SQLSTATE).
            let packed = code(kind) as i32;
            let text: String = (0..5).map(|i| ((((packed >> (6 * i)) & 0x3F) as u8).wrapping_add(b'0')) as char).collect();
            assert_eq!(text, kind.sqlstate(), "{kind:?}");
        }
    }
}

/// Raise an error with a hint (what to do about it). Nothing is written after it.
/// (The reconcile and operations shells still use it; the other shells raise `Error`.)
pub fn raise_with_hint(code: PgSqlErrorCode, message: String, hint: String, function: &'static str) -> ! {
    ErrorReport::new(code, message, function).set_hint(hint).report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) does not return")
}
