//! Why a run recorded nothing, and the exit code that says so: below the
//! edges (daytona, record) and the run that ties them, which all return it.

/// Exit codes (docs/reference.md says what to do about each).
pub mod exit {
    /// A complete listing was recorded (or printed, with --dry-run).
    pub const RECORDED: u8 = 0;
    /// Bad flags or configuration: nothing was listed.
    pub const USAGE: u8 = 2;
    /// Daytona refused the credentials (401, 403).
    pub const AUTH: u8 = 3;
    /// The listing is incomplete or not Daytona's: a page failed after its retries, a timeout, a malformed or
    /// unknown answer, a repeated cursor or sandbox, an item of another organization or outside the label
    /// scope, too many pages.
    pub const INCOMPLETE: u8 = 4;
    /// The listing is whole but refused: empty, no operation label on any sandbox, or the ledger holds
    /// routing domains the configured organizations do not cover.
    pub const REFUSED: u8 = 5;
    /// The database: connecting, the extension or ledger missing, the recording failed.
    pub const DATABASE: u8 = 6;
}

/// Why nothing was recorded, and the exit code that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

macro_rules! failure {
    ($($name:ident => $code:ident),*) => {
        impl Failure {
            $(pub fn $name(message: impl Into<String>) -> Self {
                Self { code: exit::$code, message: message.into() }
            })*
        }
    };
}
failure!(usage => USAGE, auth => AUTH, incomplete => INCOMPLETE, refused => REFUSED, database => DATABASE);
