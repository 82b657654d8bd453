//! The operations functions' argument rules, the confirmation of absence over
//! snapshots, and the pg_cron commands they write (pure Rust, no pgrx types).

use crate::args::{ArgError, SchemaName};

/// The only provider reconciled (and so the only one snapshots are kept for).
pub const PROVIDER: &str = "daytona";

pub fn provider(value: &str) -> Result<&'static str, ArgError> {
    if value == PROVIDER {
        Ok(PROVIDER)
    } else {
        Err(ArgError::new("provider", format!("must be 'daytona' (the only provider reconciled), got {value:?}")))
    }
}

/// The rows a caller streamed for one snapshot: none (an empty listing, as
/// `[]` is) or more.
pub fn streamed_items(value: i32) -> Result<i32, ArgError> {
    if value >= 0 {
        Ok(value)
    } else {
        Err(ArgError::new("streamed_items", format!("must be 0 or more (the rows this transaction streamed), got {value}")))
    }
}

/// Snapshots kept per provider: 1..1000.
pub fn keep_last(value: i32) -> Result<i32, ArgError> {
    if (1..=1000).contains(&value) {
        Ok(value)
    } else {
        Err(ArgError::new("keep_last", format!("must be an integer from 1 through 1000, got {value}")))
    }
}

/// Snapshots an operation must be missing from: 1..100.
pub fn absent_confirmations(value: i32) -> Result<i32, ArgError> {
    if (1..=100).contains(&value) {
        Ok(value)
    } else {
        Err(ArgError::new("absent_confirmations", format!("must be an integer from 1 through 100, got {value}")))
    }
}

/// `max_snapshot_age` must be positive (compared as PostgreSQL compares intervals).
pub fn max_snapshot_age(months: i32, days: i32, micros: i64) -> Result<(), ArgError> {
    crate::args::finite_interval("max_snapshot_age", months, days, micros)?;
    if crate::reconcile::summary::interval_micros(months, days, micros) > 0 {
        Ok(())
    } else {
        Err(ArgError::new("max_snapshot_age", "must be positive"))
    }
}

/// How far ahead of the database's clock a snapshot's capture time may be
/// (clock skew between the recorder and the database); it is stored clamped
/// to the moment of recording, anything further ahead is an error.
pub const CAPTURE_SKEW_MICROS: i64 = 5 * 60 * 1_000_000;

pub fn captured_not_ahead(captured_micros: i64, now_micros: i64) -> Result<(), ArgError> {
    if captured_micros > now_micros.saturating_add(CAPTURE_SKEW_MICROS) {
        Err(ArgError::new("captured_at", "must not be more than 5 minutes ahead of the database's clock"))
    } else {
        Ok(())
    }
}

/// pg_cron job names are `name`s: 1..63 bytes, no control characters.
pub fn job_name(argument: &'static str, value: &str) -> Result<String, ArgError> {
    if value.contains(TAG) {
        return Err(ArgError::new(argument, format!("must not contain {TAG}")));
    }
    if value.trim().is_empty() {
        return Err(ArgError::new(argument, "must not be blank"));
    }
    if value.len() > 63 {
        return Err(ArgError::new(argument, format!("{value:?} is longer than 63 bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(ArgError::new(argument, format!("{value:?} contains a control character")));
    }
    Ok(value.to_owned())
}

/// The job name a schedule function uses when none is given: one job per
/// ledger and kind (and database, for a job run in another one), so
/// scheduling another ledger never replaces this one; for the reconciliation
/// of an environment other than 'production' (`Some`), also one per
/// environment: `<kind>:[<database>.]<ledger_schema>:<environment>`.
pub fn default_job_name(
    kind: &str,
    ledger: &SchemaName,
    database: Option<&str>,
    environment: Option<&str>,
) -> Result<String, ArgError> {
    let mut name = match database {
        None => format!("{kind}:{}", ledger.name),
        Some(database) => format!("{kind}:{database}.{}", ledger.name),
    };
    if let Some(environment) = environment {
        name = format!("{name}:{environment}");
    }
    job_name("job_name", &name).map_err(|_| {
        let form = if environment.is_some() { ":<environment>" } else { "" };
        ArgError::new(
            "job_name",
            format!("the default {kind}:[<database>.]<ledger_schema>{form} would be longer than 63 bytes or not a job name; name the job"),
        )
    })
}

const MACROS: &[&str] = &["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@reboot"];
const MONTHS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A cron schedule pg_cron accepts: one of its @macros, or five fields
/// (minute hour day-of-month month day-of-week), each a comma list of `*`,
/// `n` or `n-m`, optionally `/step`; months and days may be named.
pub fn cron_schedule(value: &str) -> Result<String, ArgError> {
    let bad = |why: &str| {
        ArgError::new(
            "schedule",
            format!("{value:?} is not a cron schedule ({why}; expected five fields, minute hour day-of-month month day-of-week, e.g. '*/5 * * * *', or @hourly, @daily ...)"),
        )
    };
    let trimmed = value.trim();
    if trimmed.starts_with('@') {
        return if MACROS.contains(&trimmed.to_ascii_lowercase().as_str()) { Ok(trimmed.to_owned()) } else { Err(bad("unknown macro")) };
    }
    let fields: Vec<&str> = trimmed.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(bad(&format!("{} fields", fields.len())));
    }
    let ranges: [(u32, u32, &[&str], u32); 5] =
        [(0, 59, &[], 0), (0, 23, &[], 0), (1, 31, &[], 0), (1, 12, MONTHS, 1), (0, 7, DAYS, 0)];
    for (field, &(low, high, names, first)) in fields.iter().zip(&ranges) {
        let number = |text: &str| -> Option<u32> {
            let lower = text.to_ascii_lowercase();
            names
                .iter()
                .position(|n| *n == lower)
                .map(|i| i as u32 + first)
                .or_else(|| text.parse::<u32>().ok())
                .filter(|n| (low..=high).contains(n))
        };
        for item in field.split(',') {
            let (range, step) = match item.split_once('/') {
                Some((range, step)) => (range, Some(step)),
                None => (item, None),
            };
            if step.is_some_and(|s| s.parse::<u32>().map_or(true, |s| s == 0)) {
                return Err(bad(&format!("bad step in {item:?}")));
            }
            let ok = range == "*"
                || match range.split_once('-') {
                    Some((a, b)) => matches!((number(a), number(b)), (Some(a), Some(b)) if a <= b),
                    None => number(range).is_some(),
                };
            if !ok {
                return Err(bad(&format!("{item:?} is out of range {low}-{high}")));
            }
        }
    }
    Ok(fields.join(" "))
}

/// A SQL string literal for a job's command (args::sql_literal: right
/// whatever standard_conforming_strings says).
pub use crate::args::sql_literal as literal;

/// An interval as SQL that reads back the same in any session (no IntervalStyle involved).
pub fn interval_sql(months: i32, days: i32, micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let (seconds, fraction) = (micros.unsigned_abs() / 1_000_000, micros.unsigned_abs() % 1_000_000);
    format!("pg_catalog.make_interval(months => {months}, days => {days}, secs => {sign}{seconds}.{fraction:06})")
}

/// The options a scheduled reconciliation runs with (validated by the caller).
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcileJob {
    pub batch_size: i32,
    /// (months, days, microseconds)
    pub minimum_age: (i32, i32, i64),
    pub max_snapshot_age: (i32, i32, i64),
    pub absent_confirmations: i32,
    pub max_absent_ratio: f32,
    /// The operations' environment reconciled (validated: args::environment).
    pub environment: String,
}

/// The environment of a scheduled reconciliation: written into the job's
/// command, so it must not end its dollar quote.
pub fn job_environment(environment: &str) -> Result<(), ArgError> {
    if environment.contains(TAG) {
        return Err(ArgError::new("environment", format!("must not contain {TAG}")));
    }
    Ok(())
}

/// The dollar-quote tag of a job's DO block (job names may not contain it).
const TAG: &str = "$runtime_sandbox_job$";

/// A job's command: a DO block that says what to do when the extension is
/// gone from the database the job runs in (its jobs would otherwise fail every
/// tick with "schema does not exist"), then CALLs `call` (a procedure that
/// COMMITs: DO at top level lets it).
fn job_command(job_name: &str, check: &str, call: &str) -> String {
    format!(
        "DO {TAG}\nBEGIN\n    IF pg_catalog.to_regprocedure({check}) IS NULL THEN\n        RAISE EXCEPTION \
         'runtime_sandbox is not installed in database %: pg_cron job % has nothing to run', \
         pg_catalog.current_database(), {name}\n            USING HINT = pg_catalog.format('Remove the job where \
         pg_cron runs: SELECT cron.unschedule(%L);', {name});\n    END IF;\n    {call};\nEND\n{TAG}",
        check = literal(check),
        name = literal(job_name),
    )
}

/// What the reconciliation job runs: the latest snapshot with the job's
/// options; the job fails when the run is blocked or finds no fresh snapshot
/// (its history row committed first: run_reconciliation_job).
/// 'production' runs the procedure of earlier releases, with the same command
/// text as they wrote; another environment runs
/// run_reconciliation_job_in_environment, which names it.
pub fn reconcile_command(job_name: &str, ledger: &SchemaName, job: &ReconcileJob) -> String {
    let (m, d, u) = job.minimum_age;
    let (sm, sd, su) = job.max_snapshot_age;
    let (procedure, signature, environment) = if job.environment == crate::args::DEFAULT_ENVIRONMENT {
        ("run_reconciliation_job", "integer, interval, interval, integer, real, name", String::new())
    } else {
        (
            "run_reconciliation_job_in_environment",
            "text, integer, interval, interval, integer, real, name",
            format!("environment => {}, ", literal(&job.environment)),
        )
    };
    job_command(
        job_name,
        &format!("runtime_sandbox.{procedure}({signature})"),
        &format!(
            "CALL runtime_sandbox.{procedure}({environment}batch_size => {}, minimum_age => {}, max_snapshot_age => {}, \
             absent_confirmations => {}, max_absent_ratio => {}, ledger_schema => {})",
            job.batch_size,
            interval_sql(m, d, u),
            interval_sql(sm, sd, su),
            job.absent_confirmations,
            job.max_absent_ratio,
            literal(&ledger.name)
        ),
    )
}

/// What the backfill job runs: the procedure, committing page by page.
/// What the role of a reconciliation job must be allowed to execute: the
/// procedure it CALLs and what that calls with its rights.
pub fn reconcile_job_needs(environment: &str) -> &'static [&'static str] {
    const PRODUCTION: &[&str] = &[
        "runtime_sandbox.run_reconciliation_job(integer, interval, interval, integer, real, name)",
        "runtime_sandbox.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name)",
        "runtime_sandbox.reconcile_daytona_latest(boolean, integer, interval, interval, integer, name, real, text)",
    ];
    if environment == crate::args::DEFAULT_ENVIRONMENT {
        PRODUCTION
    } else {
        &PRODUCTION[1..]
    }
}

/// What the role of a backfill job must be allowed to execute.
pub const BACKFILL_JOB_NEEDS: &[&str] = &[
    "runtime_sandbox.run_sandbox_operation_backfill(integer, integer, interval, name)",
    "runtime_sandbox._backfill_run_lock_key(integer, integer, interval, name)",
    "runtime_sandbox._backfill_run_lock(bigint)",
    "runtime_sandbox.advance_sandbox_operation_backfill(boolean, integer, integer, name)",
    "runtime_sandbox._backfill_run_unlock(bigint)",
];

pub fn backfill_command(job_name: &str, batch_size: i32, max_batches: Option<i32>, ledger: &SchemaName) -> String {
    job_command(
        job_name,
        "runtime_sandbox.run_sandbox_operation_backfill(integer, integer, interval, name)",
        &format!(
            "CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => {batch_size}, max_batches => {}, ledger_schema => {})",
            max_batches.map_or("NULL".to_string(), |n| n.to_string()),
            literal(&ledger.name)
        ),
    )
}

/// `max_batches` for a scheduled backfill: NULL (until complete) or at least 1.
pub fn max_batches(value: Option<i32>) -> Result<Option<i32>, ArgError> {
    match value {
        Some(n) if n < 1 => Err(ArgError::new("max_batches", format!("must be NULL or at least 1, got {n}"))),
        other => Ok(other),
    }
}

/// What the newest snapshots (newest first: id and capture time) confirm: an
/// operation is called absent only when missing from each of the
/// `confirmations` newest snapshots, and only if it was recorded before the
/// oldest of them was captured (otherwise that one could not have listed it).
/// Fewer snapshots than that: nothing is called absent yet. Returns the time
/// absent operations must be recorded by (None: none are absent) and the ids
/// of the snapshots before the newest, which must not list them either.
pub fn confirmation<T: Copy>(snapshots: &[(i64, T)], confirmations: usize) -> (Option<T>, Vec<i64>) {
    let absent_before = if snapshots.len() == confirmations { snapshots.last().map(|s| s.1) } else { None };
    (absent_before, snapshots.iter().skip(1).map(|s| s.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::schema_name;

    #[test]
    fn absence_needs_every_one_of_the_newest_snapshots() {
        // Newest first; captured at 30, 20, 10.
        let three = [(3, 30), (2, 20), (1, 10)];
        assert_eq!(confirmation(&three, 3), (Some(10), vec![2, 1]));
        assert_eq!(confirmation(&three[..1], 1), (Some(30), vec![]));
        // Fewer snapshots than asked: nothing absent, the older ones still named.
        assert_eq!(confirmation(&three[..2], 3), (None, vec![2]));
        assert_eq!(confirmation::<i64>(&[], 2), (None, vec![]));
    }

    #[test]
    fn cron_schedules() {
        for good in ["*/5 * * * *", "0 3 * * *", "0,30 8-18 * * mon-fri", "15 2 1 jan,jul *", "@hourly", "@Daily",
                     " 1 2 3 4 5 ", "0 0 * * 7", "*/1 * * * *", "5-10/2 * * * *"] {
            assert!(cron_schedule(good).is_ok(), "{good}");
        }
        assert_eq!(cron_schedule(" 1  2 3 4 5").unwrap(), "1 2 3 4 5");
        for bad in ["", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
                    "*/0 * * * *", "@often", "5-1 * * * *", "x * * * *", "1; DROP TABLE t * * * *", "* * * * sun-"] {
            let err = cron_schedule(bad).unwrap_err();
            assert_eq!(err.argument, "schedule", "{bad}");
        }
    }

    #[test]
    fn commands_quote_the_ledger_and_say_what_to_do_without_the_extension() {
        let ledger = schema_name("ledger_schema", "ops_ledger").unwrap();
        let job = ReconcileJob {
            batch_size: 500,
            minimum_age: (0, 0, 600_000_000),
            max_snapshot_age: (1, 2, 1_500_000),
            absent_confirmations: 2,
            max_absent_ratio: 0.5,
            environment: "production".into(),
        };
        let command = reconcile_command("nightly 'x'", &ledger, &job);
        assert!(command.starts_with("DO $runtime_sandbox_job$\nBEGIN\n"), "{command}");
        assert!(command.contains("'runtime_sandbox.run_reconciliation_job(integer, interval, interval, integer, real, name)'"), "{command}");
        assert!(command.contains("pg_catalog.current_database(), 'nightly ''x'''"), "{command}");
        assert!(
            command.contains(
                "CALL runtime_sandbox.run_reconciliation_job(batch_size => 500, minimum_age => pg_catalog.make_interval(months => 0, \
                 days => 0, secs => 600.000000), max_snapshot_age => pg_catalog.make_interval(months => 1, days => 2, secs => 1.500000), \
                 absent_confirmations => 2, max_absent_ratio => 0.5, ledger_schema => 'ops_ledger');"
            ),
            "{command}"
        );
        let backfill = backfill_command("b", 500, None, &ledger);
        assert!(
            backfill.contains(
                "CALL runtime_sandbox.run_sandbox_operation_backfill(batch_size => 500, max_batches => NULL, ledger_schema => 'ops_ledger');"
            ),
            "{backfill}"
        );
        assert_eq!(literal("a'b"), "'a''b'");
        // Another environment: its own procedure, the environment quoted.
        let staging = reconcile_command("s", &ledger, &ReconcileJob { environment: "o'hara\\x".into(), ..job.clone() });
        assert!(
            staging.contains("'runtime_sandbox.run_reconciliation_job_in_environment(text, integer, interval, interval, integer, real, name)'"),
            "{staging}"
        );
        assert!(staging.contains("CALL runtime_sandbox.run_reconciliation_job_in_environment(environment => E'o''hara\\\\x', batch_size => 500,"), "{staging}");
        assert!(job_environment("a$runtime_sandbox_job$b").is_err());
        assert!(job_environment("staging").is_ok());
        assert_eq!(
            default_job_name("reconcile_daytona", &ledger, Some("app"), Some("staging")).unwrap(),
            "reconcile_daytona:app.ops_ledger:staging"
        );
        assert_eq!(default_job_name("reconcile_daytona", &ledger, None, Some(&"e".repeat(60))).unwrap_err().argument, "job_name");
        assert_eq!(default_job_name("reconcile_daytona", &ledger, None, None).unwrap(), "reconcile_daytona:ops_ledger");
        assert_eq!(default_job_name("reconcile_daytona", &ledger, Some("app"), None).unwrap(), "reconcile_daytona:app.ops_ledger");
        let long = schema_name("ledger_schema", &"l".repeat(63)).unwrap();
        assert_eq!(default_job_name("reconcile_daytona", &long, None, None).unwrap_err().argument, "job_name");
        assert!(job_name("job_name", "a$runtime_sandbox_job$b").is_err());
        assert_eq!(interval_sql(0, 0, -1_500_000), "pg_catalog.make_interval(months => 0, days => 0, secs => -1.500000)");
    }

    #[test]
    fn argument_bounds() {
        assert!(provider("daytona").is_ok());
        assert!(provider("modal").unwrap_err().reason.contains("daytona"));
        assert!(keep_last(1).is_ok() && keep_last(1000).is_ok() && keep_last(0).is_err() && keep_last(1001).is_err());
        assert!(absent_confirmations(1).is_ok() && absent_confirmations(0).is_err() && absent_confirmations(101).is_err());
        assert!(max_snapshot_age(0, 0, 1).is_ok());
        assert!(max_snapshot_age(0, 0, 0).is_err());
        assert!(max_snapshot_age(1, -30, 0).is_err());
        assert!(captured_not_ahead(CAPTURE_SKEW_MICROS, 0).is_ok());
        assert!(captured_not_ahead(CAPTURE_SKEW_MICROS + 1, 0).is_err());
        assert!(job_name("job_name", " ").is_err());
        assert!(job_name("job_name", &"j".repeat(64)).is_err());
        assert!(job_name("job_name", "a\nb").is_err());
        assert_eq!(job_name("job_name", "nightly 'x'").unwrap(), "nightly 'x'");
        assert_eq!(max_batches(None), Ok(None));
        assert!(max_batches(Some(0)).is_err());
    }
}
