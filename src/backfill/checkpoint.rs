//! The persisted backfill checkpoint: one row in `<ledger>.control`, in exactly
//! the application's JSON shape so either side can resume the other's run:
//! `{"phase":"pending","cursor":{"updatedAt":…,"runId":…,"attempt":n,"resourceOrdinal":n}}`
//! or `{"phase":"complete","cursor":null}`.

use super::cursor::{check_fields, Cursor};
use super::js_date::{date_parse_accepts, js_blank};
use serde_json::{json, Value};

/// `<ledger>.control.key` of the checkpoint (the application's constant).
pub const CONTROL_KEY: &str = "runtime_sandbox_operation_backfill_v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Complete,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Complete => "complete",
        }
    }
}

/// A cursor as stored: JSON numbers are doubles on the application's side, so
/// they are kept as such until a page needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCursor {
    pub updated_at: String,
    pub run_id: String,
    pub attempt: f64,
    pub resource_ordinal: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub phase: Phase,
    pub cursor: Option<StoredCursor>,
}

impl Checkpoint {
    pub const FRESH: Checkpoint = Checkpoint { phase: Phase::Pending, cursor: None };
}

/// Read the stored value (its jsonb text; `None` when there is no row or the
/// value is SQL NULL) the way the application does: anything but an object is
/// a fresh start, `phase: "complete"` is complete, and a cursor whose fields
/// have the wrong JSON types is dropped (the next page starts from the oldest).
pub fn read(value: Option<&str>) -> Result<Checkpoint, String> {
    let Some(text) = value else { return Ok(Checkpoint::FRESH) };
    let value: Value = serde_json::from_str(text).map_err(|e| format!("value is not readable JSON: {e}"))?;
    let Value::Object(object) = value else { return Ok(Checkpoint::FRESH) };
    if object.get("phase").and_then(Value::as_str) == Some("complete") {
        return Ok(Checkpoint { phase: Phase::Complete, cursor: None });
    }
    let cursor = object.get("cursor").and_then(Value::as_object).and_then(|c| {
        Some(StoredCursor {
            updated_at: c.get("updatedAt")?.as_str()?.to_owned(),
            run_id: c.get("runId")?.as_str()?.to_owned(),
            attempt: number(c.get("attempt")?)?,
            resource_ordinal: number(c.get("resourceOrdinal")?)?,
        })
    });
    Ok(Checkpoint { phase: Phase::Pending, cursor })
}

fn number(value: &Value) -> Option<f64> {
    value.as_number().and_then(|n| n.as_f64())
}

/// The stored value after a page: `cursor` only while pending.
pub fn write(phase: Phase, cursor: Option<&Cursor<String>>) -> String {
    let cursor = match (phase, cursor) {
        (Phase::Pending, Some(c)) => json!({
            "updatedAt": c.updated_at,
            "runId": c.run_id,
            "attempt": c.attempt,
            "resourceOrdinal": c.resource_ordinal,
        }),
        _ => Value::Null,
    };
    json!({ "phase": phase.as_str(), "cursor": cursor }).to_string()
}

impl StoredCursor {
    /// The cursor an applied page resumes after: the application refuses a
    /// blank timestamp or run id, a timestamp its `Date.parse` cannot read
    /// (PostgreSQL reads more: `infinity`, `epoch`, BC dates, ...), and
    /// attempt/ordinal that are not integers from 1.
    pub fn to_resume(&self) -> Result<Cursor<String>, String> {
        if js_blank(&self.updated_at) {
            return Err("cursor.updatedAt is blank".into());
        }
        if !date_parse_accepts(&self.updated_at) {
            return Err(format!(
                "cursor.updatedAt {:?} is not a timestamp the application accepts (its Date.parse gives NaN)",
                self.updated_at
            ));
        }
        let cursor = self.to_position()?;
        check_fields(&cursor.run_id, cursor.attempt, cursor.resource_ordinal).map_err(|e| format!("cursor.{e}"))?;
        Ok(cursor)
    }

    /// The position a dry run previews from: the application does not validate
    /// it, but the numbers still have to be SQL integers.
    pub fn to_position(&self) -> Result<Cursor<String>, String> {
        Ok(Cursor {
            updated_at: self.updated_at.clone(),
            run_id: self.run_id.clone(),
            attempt: integer("attempt", self.attempt)?,
            resource_ordinal: integer("resourceOrdinal", self.resource_ordinal)?,
        })
    }
}

fn integer(field: &str, value: f64) -> Result<i32, String> {
    if value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64 {
        Ok(value as i32)
    } else {
        Err(format!("cursor.{field} must be an integer, got {value}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cursor(t: &str, run: &str, attempt: i32, ordinal: i32) -> Cursor<String> {
        Cursor { updated_at: t.into(), run_id: run.into(), attempt, resource_ordinal: ordinal }
    }

    #[test]
    fn writes_the_application_shape() {
        let c = cursor("2026-01-02 03:04:05.123456+00", "run-1", 2, 3);
        let pending: Value = serde_json::from_str(&write(Phase::Pending, Some(&c))).unwrap();
        assert_eq!(
            pending,
            json!({"phase":"pending","cursor":{"updatedAt":"2026-01-02 03:04:05.123456+00","runId":"run-1","attempt":2,"resourceOrdinal":3}})
        );
        let complete: Value = serde_json::from_str(&write(Phase::Complete, Some(&c))).unwrap();
        assert_eq!(complete, json!({"phase":"complete","cursor":null}));
    }

    #[test]
    fn reads_like_the_application() {
        for fresh in [None, Some("null"), Some("0"), Some("[]"), Some("\"x\""), Some("{}"), Some("{\"phase\":\"pending\"}")] {
            assert_eq!(read(fresh).unwrap(), Checkpoint::FRESH, "{fresh:?}");
        }
        let complete = read(Some(r#"{"phase":"complete","cursor":{"updatedAt":"x","runId":"r","attempt":1,"resourceOrdinal":1}}"#));
        assert_eq!(complete.unwrap(), Checkpoint { phase: Phase::Complete, cursor: None });
        // Any other phase is pending, as the application reads it.
        let odd = read(Some(r#"{"phase":"weird","cursor":{"updatedAt":"t","runId":"r","attempt":1.0,"resourceOrdinal":4}}"#)).unwrap();
        assert_eq!(odd.phase, Phase::Pending);
        assert_eq!(
            odd.cursor,
            Some(StoredCursor { updated_at: "t".into(), run_id: "r".into(), attempt: 1.0, resource_ordinal: 4.0 })
        );
    }

    #[test]
    fn a_cursor_with_wrong_field_types_restarts() {
        for bad in [
            r#"{"phase":"pending","cursor":{"updatedAt":1,"runId":"r","attempt":1,"resourceOrdinal":1}}"#,
            r#"{"phase":"pending","cursor":{"updatedAt":"t","runId":null,"attempt":1,"resourceOrdinal":1}}"#,
            r#"{"phase":"pending","cursor":{"updatedAt":"t","runId":"r","attempt":"1","resourceOrdinal":1}}"#,
            r#"{"phase":"pending","cursor":{"updatedAt":"t","runId":"r","attempt":1}}"#,
            r#"{"phase":"pending","cursor":["t","r",1,1]}"#,
            r#"{"phase":"pending","cursor":"t"}"#,
        ] {
            assert_eq!(read(Some(bad)).unwrap(), Checkpoint::FRESH, "{bad}");
        }
    }

    #[test]
    fn resuming_applies_the_application_checks() {
        let stored = |t: &str, r: &str, a: f64, o: f64| StoredCursor {
            updated_at: t.into(),
            run_id: r.into(),
            attempt: a,
            resource_ordinal: o,
        };
        let t = "2026-01-01 00:00:00+00";
        assert_eq!(stored(t, "r", 2.0, 1.0).to_resume().unwrap(), cursor(t, "r", 2, 1));
        assert!(stored(" ", "r", 1.0, 1.0).to_resume().unwrap_err().contains("updatedAt is blank"));
        assert!(stored("\u{feff}", "r", 1.0, 1.0).to_resume().unwrap_err().contains("updatedAt is blank"));
        for refused in ["t", "infinity", "epoch", "2026-01-01 BC"] {
            assert!(stored(refused, "r", 1.0, 1.0).to_resume().unwrap_err().contains("not a timestamp the application accepts"));
        }
        assert!(stored(t, "", 1.0, 1.0).to_resume().unwrap_err().contains("run_id"));
        assert!(stored(t, "\u{a0}", 1.0, 1.0).to_resume().unwrap_err().contains("run_id is blank"));
        assert!(stored(t, "r", 0.0, 1.0).to_resume().unwrap_err().contains("attempt"));
        assert!(stored(t, "r", 1.5, 1.0).to_resume().unwrap_err().contains("attempt"));
        assert!(stored(t, "r", 1.0, 0.0).to_resume().unwrap_err().contains("resource_ordinal"));
        assert!(stored(t, "r", 1e12, 1.0).to_resume().is_err());
        // A dry run previews from any integral position.
        assert_eq!(stored("", "", 0.0, -1.0).to_position().unwrap(), cursor("", "", 0, -1));
        assert!(stored("t", "r", 0.5, 1.0).to_position().is_err());
    }

    proptest! {
        #[test]
        fn checkpoints_round_trip(t in "\\PC{1,40}", run in "\\PC{1,40}", attempt in 1i32.., ordinal in 1i32..) {
            let c = cursor(&t, &run, attempt, ordinal);
            let back = read(Some(&write(Phase::Pending, Some(&c)))).unwrap();
            prop_assert_eq!(back.phase, Phase::Pending);
            prop_assert_eq!(back.cursor.unwrap().to_position().unwrap(), c);
            prop_assert_eq!(read(Some(&write(Phase::Complete, None))).unwrap(), Checkpoint { phase: Phase::Complete, cursor: None });
        }
    }
}
