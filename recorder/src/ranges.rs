//! The parallel listing's rules (pure): Daytona's `createdAt` read as an instant, the split of the time from the
//! last sandbox a sequential walk reached to the listing's capture into ranges that `createdAtAfter` and
//! `createdAtBefore` select (both inclusive, fact a1), and the union of the ranges' walks checked as one listing.
//!
//! Adjacent ranges share their boundary instant, a whole millisecond: every stored `createdAt` t satisfies
//! t <= b or t >= b, so no sandbox falls between two ranges, however finely Daytona stores it. A sandbox whose
//! t is exactly b is listed by both: it is one sandbox only when its printed `createdAt` is that boundary.
//! Anything else seen twice, a sandbox outside its range, or one without `createdAt` fails the listing.

/// Microseconds since the Unix epoch.
pub type Instant = i64;

const MICROS_PER_MS: i64 = 1_000;

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count from 1970-01-01 (civil_from_days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// An ISO-8601 date-time as Daytona prints it (`2026-12-01T10:00:00.123Z`; any fraction, `Z` or `+hh:mm`).
/// None: not such a text.
pub fn parse(text: &str) -> Option<Instant> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut at = 19;
    let mut micros = 0;
    if b.get(at) == Some(&b'.') {
        let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let fraction = &text[at + 1..at + 1 + digits];
        let six: String = fraction.chars().chain(std::iter::repeat('0')).take(6).collect();
        micros = six.parse::<i64>().ok()?;
        at += 1 + digits;
    }
    let offset = match &text[at..] {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(zone.as_bytes()[0], b'+' | b'-') && zone.as_bytes()[3] == b':' => {
            let minutes = num(at + 1, 2)? * 60 + num(at + 4, 2)?;
            if zone.starts_with('-') { -minutes } else { minutes }
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second - offset * 60;
    Some(seconds * 1_000_000 + micros)
}

/// An instant as the filters take it: UTC, milliseconds (`2026-12-01T10:00:00.123Z`).
pub fn format(at: Instant) -> String {
    let ms = at.div_euclid(MICROS_PER_MS);
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// One range of the listing: `createdAtAfter` and `createdAtBefore` (None: that side is open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub after: Option<Instant>,
    pub before: Option<Instant>,
}

impl Range {
    /// Whether a sandbox printed as created at `at` may belong to this range.
    pub fn holds(&self, at: Instant) -> bool {
        self.after.is_none_or(|after| at >= after) && self.before.is_none_or(|before| at <= before)
    }
}

/// The ranges after a sequential walk that reached a sandbox created at `from`, for a listing captured at `to`:
/// `count` ranges of equal time, their boundaries whole milliseconds after `from`. The first range has no
/// `createdAtAfter` (it continues the sequential walk's own cursor), the last no `createdAtBefore` (sandboxes
/// created during the walk are listed as a sequential walk lists them). Fewer ranges when the time is too short
/// to split; one (the sequential walk, unsplit) when there is nothing to split.
pub fn split(from: Instant, to: Instant, count: usize) -> Vec<Range> {
    let first = from.div_euclid(MICROS_PER_MS) + 1;
    let last = to.div_euclid(MICROS_PER_MS);
    let span = last - first;
    let mut boundaries: Vec<Instant> = Vec::new();
    if count > 1 && span > 0 {
        for i in 1..count as i64 {
            let at = (first + span * i / (count as i64)) * MICROS_PER_MS;
            if boundaries.last() != Some(&at) {
                boundaries.push(at);
            }
        }
    }
    let mut ranges = Vec::with_capacity(boundaries.len() + 1);
    let mut after = None;
    for &b in &boundaries {
        ranges.push(Range { after, before: Some(b) });
        after = Some(b);
    }
    ranges.push(Range { after, before: None });
    ranges
}

/// One range's walk: its ids and their printed `createdAt`, in the order listed (the ids borrowed from the
/// walk's items: a million sandboxes are not copied again).
#[derive(Debug, Default)]
pub struct Walked<'a> {
    pub ids: Vec<&'a str>,
    pub created: Vec<Option<Instant>>,
}

/// The union of the ranges' walks (in range order), checked as one listing: every sandbox has a `createdAt`
/// inside its range, and a sandbox listed twice is listed by two adjacent ranges at exactly their shared
/// boundary. Returns, per range, which of its entries to keep (a boundary sandbox is kept in the earlier range).
pub fn merge(ranges: &[Range], walked: &[Walked]) -> Result<Vec<Vec<bool>>, String> {
    let total = walked.iter().map(|w| w.ids.len()).sum();
    let mut seen: std::collections::HashMap<&str, (usize, Option<Instant>)> = std::collections::HashMap::with_capacity(total);
    let mut keep = Vec::with_capacity(walked.len());
    for (r, (range, walk)) in ranges.iter().zip(walked).enumerate() {
        let mut kept = Vec::with_capacity(walk.ids.len());
        for (id, &created) in walk.ids.iter().zip(&walk.created) {
            let Some(at) = created else {
                return Err(format!(
                    "sandbox {id} has no createdAt: a listing split by creation time cannot place it \
                     (--concurrency 1 lists sequentially)"
                ));
            };
            if !range.holds(at) {
                return Err(format!(
                    "sandbox {id}, created {}, was listed in the range {}: the server did not apply the createdAt \
                     filters",
                    format(at),
                    describe(range)
                ));
            }
            match seen.get(id) {
                None => {
                    seen.insert(id, (r, created));
                    kept.push(true);
                }
                Some(&(earlier, first)) if earlier + 1 == r && first == created && range.after == Some(at) => {
                    kept.push(false);
                }
                Some(&(earlier, _)) => {
                    return Err(format!(
                        "sandbox {id} was listed in the ranges {} and {}, not at their shared boundary: the listing \
                         is not consistent",
                        describe(&ranges[earlier]),
                        describe(range)
                    ));
                }
            }
        }
        keep.push(kept);
    }
    Ok(keep)
}

/// A range as the messages name it.
pub fn describe(range: &Range) -> String {
    let side = |at: Option<Instant>| at.map_or_else(|| "..".to_string(), format);
    format!("[{}, {}]", side(range.after), side(range.before))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_read_as_daytona_prints_them_and_print_as_the_filters_take_them() {
        let at = parse("2026-12-01T10:00:00.123Z").unwrap();
        assert_eq!(format(at), "2026-12-01T10:00:00.123Z");
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse("1970-01-01T00:00:00.000001Z"), Some(1));
        assert_eq!(parse("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse("1969-12-31T23:00:00-01:00"), Some(0));
        assert_eq!(parse("2026-12-01T10:00:00.1234567Z"), parse("2026-12-01T10:00:00.123456Z"));
        assert_eq!(format(parse("2024-02-29T23:59:59.999Z").unwrap()), "2024-02-29T23:59:59.999Z");
        assert_eq!(format(parse("1969-12-31T23:59:59.999Z").unwrap()), "1969-12-31T23:59:59.999Z");
        for bad in ["", "2026-12-01", "2026-12-01T10:00:00", "2026-13-01T10:00:00Z", "2026-12-01T10:00:00.Z", "x026-12-01T10:00:00Z"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        // Every day of four centuries round-trips.
        for day in (-146_097..146_097).step_by(37) {
            let at = day * 86_400_000_000 + 45_296_789_000;
            assert_eq!(parse(&format(at)), Some(at));
        }
    }

    #[test]
    fn ranges_tile_the_time_with_shared_whole_millisecond_boundaries() {
        let from = parse("2026-12-01T00:00:00.000500Z").unwrap();
        let to = parse("2026-12-01T00:00:10.000Z").unwrap();
        let ranges = split(from, to, 4);
        assert_eq!(ranges.len(), 4);
        assert_eq!(ranges[0].after, None);
        assert_eq!(ranges[3].before, None);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].before, pair[1].after);
            let b = pair[0].before.unwrap();
            assert_eq!(b % 1_000, 0);
            assert!(b > from && b < to);
        }
        // Every instant belongs to a range; only a boundary to two.
        for at in (from - 5_000..to + 5_000).step_by(997) {
            let holders = ranges.iter().filter(|r| r.holds(at)).count();
            let boundary = ranges.iter().any(|r| r.after == Some(at));
            assert_eq!(holders, if boundary { 2 } else { 1 }, "{}", format(at));
        }
        // Too little time to split: the walk stays one range.
        assert_eq!(split(from, from + 1_000, 4), vec![Range { after: None, before: None }]);
        assert_eq!(split(from, from, 8).len(), 1);
        assert_eq!(split(from, to, 1).len(), 1);
    }

    fn walked<'a>(entries: &[(&'a str, Option<&str>)]) -> Walked<'a> {
        Walked {
            ids: entries.iter().map(|(id, _)| *id).collect(),
            created: entries.iter().map(|(_, at)| at.and_then(parse)).collect(),
        }
    }

    #[test]
    fn the_union_keeps_a_boundary_sandbox_once_and_refuses_anything_else_twice() {
        let b = parse("2026-12-01T00:00:05.000Z").unwrap();
        let ranges = [Range { after: None, before: Some(b) }, Range { after: Some(b), before: None }];
        let at = |s: &'static str| Some(s);
        let ok = merge(
            &ranges,
            &[
                walked(&[("a", at("2026-12-01T00:00:01.000Z")), ("edge", at("2026-12-01T00:00:05.000Z"))]),
                walked(&[("edge", at("2026-12-01T00:00:05.000Z")), ("z", at("2026-12-01T00:00:06.000Z"))]),
            ],
        )
        .unwrap();
        assert_eq!(ok, vec![vec![true, true], vec![false, true]]);
        // Seen twice away from the boundary; created outside the range; no createdAt.
        let twice = merge(
            &ranges,
            &[walked(&[("a", at("2026-12-01T00:00:01.000Z"))]), walked(&[("a", at("2026-12-01T00:00:06.000Z"))])],
        );
        assert!(twice.unwrap_err().contains("not at their shared boundary"));
        let outside = merge(&ranges, &[walked(&[("late", at("2026-12-01T00:00:06.000Z"))]), walked(&[])]).unwrap_err();
        assert!(outside.contains("did not apply the createdAt filters"), "{outside}");
        let missing = merge(&ranges, &[walked(&[("x", None)]), walked(&[])]).unwrap_err();
        assert!(missing.contains("no createdAt"), "{missing}");
        let repeated = merge(
            &ranges,
            &[walked(&[]), walked(&[("r", at("2026-12-01T00:00:06.000Z")), ("r", at("2026-12-01T00:00:06.000Z"))])],
        )
        .unwrap_err();
        assert!(repeated.contains("not at their shared boundary"), "{repeated}");
    }
}
