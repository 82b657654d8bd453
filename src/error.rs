//! The one error type of the SPI shells: what went wrong, its SQLSTATE, and the
//! DETAIL and HINT a caller needs, raised with pgrx's `ErrorReport`. A condition
//! the code foresees has a kind here; XX000 is left for what it did not foresee.
//! (Managed environments and stock hashes use it; other capabilities still use
//! `shell::raise_arg`.)

use crate::args::ArgError;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 22023: a bad argument; nothing has been read or written.
    InvalidArgument,
    /// 42P01: a table the function works on is not installed.
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
    /// 55000: the extension's own objects are not as it created them.
    BrokenInstall,
    /// XX001: a stored value that is not in the format PostgreSQL writes.
    DataCorrupted,
}

impl Kind {
    pub fn code(self) -> PgSqlErrorCode {
        match self {
            Kind::InvalidArgument => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            Kind::NotInstalled => PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            Kind::ConcurrentChange => PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            Kind::Conflict => PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            Kind::LimitExceeded => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            Kind::NotUtf8 => PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
            Kind::BrokenInstall => PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Kind::DataCorrupted => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        }
    }

    /// The SQLSTATE as clients see it.
    pub fn sqlstate(self) -> &'static str {
        match self {
            Kind::InvalidArgument => "22023",
            Kind::NotInstalled => "42P01",
            Kind::ConcurrentChange => "40001",
            Kind::Conflict => "23505",
            Kind::LimitExceeded => "54000",
            Kind::NotUtf8 => "22021",
            Kind::BrokenInstall => "55000",
            Kind::DataCorrupted => "XX001",
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

    /// Raise it as a PostgreSQL ERROR (the transaction is aborted).
    pub fn raise(self) -> ! {
        let mut report = ErrorReport::new(self.kind.code(), format!("runtime_sandbox: {}", self.message), "runtime_sandbox");
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

/// A bad argument keeps its message (`invalid argument <name>: <reason>`).
impl From<ArgError> for Error {
    fn from(err: ArgError) -> Self {
        Error::new(Kind::InvalidArgument, err.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_sqlstate() {
        use Kind::*;
        for kind in [InvalidArgument, NotInstalled, ConcurrentChange, Conflict, LimitExceeded, NotUtf8, BrokenInstall, DataCorrupted] {
            // PgSqlErrorCode packs the five characters six bits each (MAKE_SQLSTATE).
            let packed = kind.code() as i32;
            let text: String = (0..5).map(|i| ((((packed >> (6 * i)) & 0x3F) as u8).wrapping_add(b'0')) as char).collect();
            assert_eq!(text, kind.sqlstate(), "{kind:?}");
        }
    }

    #[test]
    fn argument_errors_keep_their_message() {
        let e = Error::from(ArgError::new("app_schema", "must not be null"));
        assert_eq!((e.kind, e.message.as_str()), (Kind::InvalidArgument, "invalid argument app_schema: must not be null"));
    }
}
