//! The keyset position of a backfill page: (attempt.updated_at, run_id,
//! attempt, ordinal of the resource in the attempt's array), and the rules a
//! cursor must satisfy before a page may start after it.

use super::js_date::js_blank;
use crate::args::ArgError;

/// A position in keyset order. `T` is the timestamp: `TimestampWithTimeZone` in
/// the SQL shell, the exact timestamptz text in the checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Cursor<T> {
    pub updated_at: T,
    pub run_id: String,
    pub attempt: i32,
    pub resource_ordinal: i32,
}

/// The `after` argument of the page functions: every field is required (a NULL
/// field would silently compare as unknown and restart or skip pages).
pub fn after_argument<T>(
    updated_at: Option<T>,
    run_id: Option<String>,
    attempt: Option<i32>,
    resource_ordinal: Option<i32>,
) -> Result<Cursor<T>, ArgError> {
    let missing = |field: &str| ArgError::new("after", format!("{field} is NULL (a cursor needs all four fields)"));
    let updated_at = updated_at.ok_or_else(|| missing("updated_at"))?;
    let run_id = run_id.ok_or_else(|| missing("run_id"))?;
    let attempt = attempt.ok_or_else(|| missing("attempt"))?;
    let resource_ordinal = resource_ordinal.ok_or_else(|| missing("resource_ordinal"))?;
    check_fields(&run_id, attempt, resource_ordinal).map_err(|reason| ArgError::new("after", reason))?;
    Ok(Cursor { updated_at, run_id, attempt, resource_ordinal })
}

/// The application's rule for a cursor it will resume from: non-blank run id
/// (as JavaScript trims it), attempt and ordinal integers from 1.
pub fn check_fields(run_id: &str, attempt: i32, resource_ordinal: i32) -> Result<(), String> {
    if js_blank(run_id) {
        return Err("run_id is blank".into());
    }
    if attempt < 1 {
        return Err(format!("attempt must be at least 1, got {attempt}"));
    }
    if resource_ordinal < 1 {
        return Err(format!("resource_ordinal must be at least 1, got {resource_ordinal}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_cursor_is_accepted() {
        let c = after_argument(Some("t"), Some("run-1".into()), Some(1), Some(2)).unwrap();
        assert_eq!(c, Cursor { updated_at: "t", run_id: "run-1".into(), attempt: 1, resource_ordinal: 2 });
    }

    #[test]
    fn every_null_field_is_named() {
        let cases = [
            (after_argument::<&str>(None, Some("r".into()), Some(1), Some(1)), "updated_at"),
            (after_argument(Some("t"), None, Some(1), Some(1)), "run_id"),
            (after_argument(Some("t"), Some("r".into()), None, Some(1)), "attempt"),
            (after_argument(Some("t"), Some("r".into()), Some(1), None), "resource_ordinal"),
        ];
        for (result, field) in cases {
            let err = result.unwrap_err();
            assert_eq!(err.argument, "after");
            assert!(err.reason.starts_with(field), "{err}");
        }
    }

    #[test]
    fn blank_run_id_and_small_numbers_are_refused() {
        assert!(after_argument(Some("t"), Some("  ".into()), Some(1), Some(1)).unwrap_err().reason.contains("blank"));
        assert!(after_argument(Some("t"), Some("r".into()), Some(0), Some(1)).unwrap_err().reason.contains("attempt"));
        assert!(after_argument(Some("t"), Some("r".into()), Some(1), Some(-3)).unwrap_err().reason.contains("resource_ordinal"));
    }
}
