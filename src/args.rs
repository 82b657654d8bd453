//! Argument checks shared by every capability (pure Rust, no pgrx types).

use std::fmt;

/// A bad argument: which one, and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub argument: &'static str,
    pub reason: String,
}

impl ArgError {
    pub fn new(argument: &'static str, reason: impl Into<String>) -> Self {
        Self { argument, reason: reason.into() }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid argument {}: {}", self.argument, self.reason)
    }
}

impl std::error::Error for ArgError {}

/// PostgreSQL truncates longer names silently; refuse them instead.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// A schema name that matched the application's `^[A-Za-z_][A-Za-z0-9_]*$`,
/// kept with its quoted form for SQL text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaName {
    pub name: String,
    pub quoted: String,
}

/// Validate a schema argument as a plain identifier and quote it.
pub fn schema_name(argument: &'static str, value: &str) -> Result<SchemaName, ArgError> {
    let mut chars = value.chars();
    let plain = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(ArgError::new(
            argument,
            format!("{value:?} is not a plain identifier (expected ^[A-Za-z_][A-Za-z0-9_]*$)"),
        ));
    }
    // PostgreSQL reserves these for itself (CREATE SCHEMA refuses them with a
    // message that does not name the argument).
    if value.starts_with("pg_") || value == "information_schema" {
        return Err(ArgError::new(argument, format!("{value:?} is a system schema")));
    }
    if value.len() > MAX_IDENTIFIER_BYTES {
        return Err(ArgError::new(argument, format!("{value:?} is longer than {MAX_IDENTIFIER_BYTES} bytes")));
    }
    Ok(SchemaName { name: value.to_owned(), quoted: format!("\"{value}\"") })
}

/// Interval arguments must be finite. PostgreSQL 17 added `'infinity'` and
/// `'-infinity'` intervals (every field at its maximum, or minimum); earlier
/// majors cannot make them. An infinite age or pause has no useful meaning
/// here (an age nothing reaches, a pause that never ends), so every major
/// refuses the same values.
pub fn finite_interval(argument: &'static str, months: i32, days: i32, micros: i64) -> Result<(), ArgError> {
    let end = months == i32::MAX && days == i32::MAX && micros == i64::MAX;
    let begin = months == i32::MIN && days == i32::MIN && micros == i64::MIN;
    if end || begin {
        Err(ArgError::new(argument, "must be a finite interval"))
    } else {
        Ok(())
    }
}

/// `batch_size` is an integer from 1 through 1000 everywhere.
pub const MAX_BATCH_SIZE: i32 = 1000;

pub fn batch_size(value: i32) -> Result<i32, ArgError> {
    if (1..=MAX_BATCH_SIZE).contains(&value) {
        Ok(value)
    } else {
        Err(ArgError::new("batch_size", format!("must be an integer from 1 through {MAX_BATCH_SIZE}, got {value}")))
    }
}

/// The environment a reconcile works on: the value of the ledger's
/// `environment` columns (`'production'` unless the caller says otherwise).
pub const DEFAULT_ENVIRONMENT: &str = "production";
/// An environment is a short label; a longer value is a mistake, not a name.
pub const MAX_ENVIRONMENT_BYTES: usize = 200;

/// A validated environment (a parameter of every statement that reads
/// operations: each is planned for its value, so 'production' still meets the
/// application's partial indexes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub name: String,
}

impl Environment {
    pub fn is_default(&self) -> bool {
        self.name == DEFAULT_ENVIRONMENT
    }
}

/// Validate an `environment` argument: not empty, no surrounding white space
/// (`' prod'` is never what an operator meant), no control characters, at
/// most MAX_ENVIRONMENT_BYTES bytes.
pub fn environment(argument: &'static str, value: &str) -> Result<Environment, ArgError> {
    if value.is_empty() {
        return Err(ArgError::new(argument, "must not be empty (the ledger's operations name their environment, e.g. 'production')"));
    }
    if value.trim() != value {
        return Err(ArgError::new(argument, format!("{:?} begins or ends with white space", prefix(value, 100))));
    }
    if value.chars().any(char::is_control) {
        return Err(ArgError::new(argument, format!("{:?} contains a control character", prefix(value, 100))));
    }
    if value.len() > MAX_ENVIRONMENT_BYTES {
        return Err(ArgError::new(argument, format!("is longer than {MAX_ENVIRONMENT_BYTES} bytes")));
    }
    Ok(Environment { name: value.to_owned() })
}

/// A string constant for SQL text (a pg_cron job's command), right whatever
/// standard_conforming_strings says: quotes doubled, and backslashes doubled inside an E'' string when
/// there are any (as PostgreSQL's quote_literal does).
pub fn sql_literal(value: &str) -> String {
    let quoted = value.replace('\'', "''");
    if value.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// At most `max` bytes of `text` (cut at a character boundary), with an
/// ellipsis and the full length when cut: what a message quotes of a value.
pub fn prefix(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// How an error names the JSON it got instead ("got a number").
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_are_checked_and_quoted() {
        let production = environment("environment", "production").unwrap();
        assert!(production.is_default());
        assert_eq!(environment("environment", "o'brien").unwrap().name, "o'brien");
        assert_eq!(sql_literal("production"), "'production'");
        assert_eq!(sql_literal("o'brien"), "'o''brien'");
        assert_eq!(sql_literal(r"a\'b"), r"E'a\\''b'");
        assert!(!environment("environment", "staging").unwrap().is_default());
        for bad in ["", " prod", "prod ", "pr\nod", "a\u{0}b"] {
            let e = environment("environment", bad).unwrap_err();
            assert_eq!(e.argument, "environment", "{bad:?}");
        }
        assert!(environment("environment", &"e".repeat(MAX_ENVIRONMENT_BYTES)).is_ok());
        assert!(environment("environment", &"e".repeat(MAX_ENVIRONMENT_BYTES + 1)).is_err());
    }

    #[test]
    fn plain_identifiers_are_quoted() {
        let s = schema_name("ledger_schema", "runtime_scheduler").unwrap();
        assert_eq!(s.quoted, "\"runtime_scheduler\"");
        assert_eq!(schema_name("ledger_schema", "_A9").unwrap().name, "_A9");
    }

    #[test]
    fn anything_else_is_refused_with_the_argument_name() {
        for bad in ["", "1abc", "a-b", "a b", "x\"; DROP TABLE t; --", "é", "a.b", &"a".repeat(64), "pg_catalog", "pg_toast", "information_schema"] {
            let err = schema_name("ledger_schema", bad).unwrap_err();
            assert_eq!(err.argument, "ledger_schema");
            assert!(err.to_string().starts_with("invalid argument ledger_schema:"), "{err}");
        }
    }

    #[test]
    fn prefixes_cut_at_a_character_boundary() {
        assert_eq!(prefix("short", 10), "short");
        assert_eq!(prefix("ééé", 3), "é… (6 bytes)");
        assert_eq!(prefix(&"x".repeat(1000), 4), "xxxx… (1000 bytes)");
    }

    #[test]
    fn batch_size_bounds() {
        assert_eq!(batch_size(1), Ok(1));
        assert_eq!(batch_size(1000), Ok(1000));
        assert!(batch_size(0).is_err());
        assert!(batch_size(1001).is_err());
        assert!(batch_size(-5).unwrap_err().to_string().contains("batch_size"));
    }
}
