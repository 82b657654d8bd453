//! Whether JavaScript's `Date.parse` (V8, as in the application's Node.js)
//! reads a text as a date: the application refuses to resume from a checkpoint
//! cursor whose `updatedAt` it cannot parse, and PostgreSQL reads texts V8
//! does not (`infinity`, `epoch`, `now`, BC dates, Julian days, zone names,
//! offsets with seconds, years beyond ±275,760), so the server's own cast is no
//! guide. This follows V8's date parser: an ES5 ISO date-time if the whole
//! text is one, else its legacy (Safari-compatible) reading of numbers, words,
//! signs and separators, then the range check of `new Date`. A text without a
//! zone is taken as UTC; the application's local zone only matters within ten
//! days of ±275,760 years.

/// `!Number.isNaN(Date.parse(text))`.
pub fn date_parse_accepts(text: &str) -> bool {
    let units: Vec<u32> = text.encode_utf16().map(u32::from).collect();
    parse(&units).and_then(|fields| time_value(&fields)).is_some()
}

/// `!text.trim()`: the text is empty or only whitespace and line terminators, as JavaScript trims them.
pub fn js_blank(text: &str) -> bool {
    text.encode_utf16().all(|c| is_white_space(u32::from(c)) || matches!(c, 0x0A | 0x0D | 0x2028 | 0x2029))
}

const NONE: i32 = i32::MAX;
const MAX_SIGNIFICANT_DIGITS: usize = 9;

fn between(x: i32, lo: i32, hi: i32) -> bool {
    (lo..=hi).contains(&x)
}

fn is_minute(x: i32) -> bool {
    between(x, 0, 59)
}

fn is_hour(x: i32) -> bool {
    between(x, 0, 23)
}

fn is_month(x: i32) -> bool {
    between(x, 1, 12)
}

fn is_day(x: i32) -> bool {
    between(x, 1, 31)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Unknown,
    Month(i32),
    Zone(i32),
    TimeSeparator,
    AmPm(i32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Unknown,
    WhiteSpace,
    Number { value: i32, length: usize },
    Symbol(u8),
    End,
    Word { word: Word, length: usize },
}

impl Token {
    fn is_number_of_length(self, wanted: usize) -> bool {
        matches!(self, Token::Number { length, .. } if length == wanted)
    }

    fn number(self) -> i32 {
        match self {
            Token::Number { value, .. } => value,
            _ => unreachable!("not a number token"),
        }
    }

    fn is_sign(self) -> bool {
        matches!(self, Token::Symbol(b'+' | b'-'))
    }

    fn sign(self) -> i32 {
        if self == Token::Symbol(b'-') {
            -1
        } else {
            1
        }
    }

    fn is_zone_z(self) -> bool {
        matches!(self, Token::Word { word: Word::Zone(0), length: 1 })
    }
}

/// Month names (any word starting with one), am/pm, the zones V8 knows, and `T`.
const KEYWORDS: &[(&[u8], Word)] = &[
    (b"jan", Word::Month(1)),
    (b"feb", Word::Month(2)),
    (b"mar", Word::Month(3)),
    (b"apr", Word::Month(4)),
    (b"may", Word::Month(5)),
    (b"jun", Word::Month(6)),
    (b"jul", Word::Month(7)),
    (b"aug", Word::Month(8)),
    (b"sep", Word::Month(9)),
    (b"oct", Word::Month(10)),
    (b"nov", Word::Month(11)),
    (b"dec", Word::Month(12)),
    (b"am", Word::AmPm(0)),
    (b"pm", Word::AmPm(12)),
    (b"ut", Word::Zone(0)),
    (b"utc", Word::Zone(0)),
    (b"z", Word::Zone(0)),
    (b"gmt", Word::Zone(0)),
    (b"cdt", Word::Zone(-5)),
    (b"cst", Word::Zone(-6)),
    (b"edt", Word::Zone(-4)),
    (b"est", Word::Zone(-5)),
    (b"mdt", Word::Zone(-6)),
    (b"mst", Word::Zone(-7)),
    (b"pdt", Word::Zone(-7)),
    (b"pst", Word::Zone(-8)),
    (b"t", Word::TimeSeparator),
];

fn keyword(prefix: [u32; 3], length: usize) -> Word {
    for (name, word) in KEYWORDS {
        let matches = (0..3).all(|j| prefix[j] == name.get(j).map_or(0, |&b| u32::from(b)));
        // Only month names may be longer than their three letters.
        if matches && (length <= 3 || matches!(word, Word::Month(_))) {
            return *word;
        }
    }
    Word::Unknown
}

/// ECMAScript's WhiteSpace (not the line terminators): what ends a word.
fn is_white_space(c: u32) -> bool {
    matches!(c, 0x09 | 0x0B | 0x0C | 0x20 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x202F | 0x205F | 0x3000 | 0xFEFF)
}

/// The text as V8 tokenizes it (UTF-16 units; the end reads as 0).
struct Scanner<'a> {
    text: &'a [u32],
    at: usize,
    next: Token,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a [u32]) -> Scanner<'a> {
        let mut scanner = Scanner { text, at: 0, next: Token::End };
        scanner.next = scanner.scan();
        scanner
    }

    fn ch(&self) -> u32 {
        self.text.get(self.at).copied().unwrap_or(0)
    }

    fn scan(&mut self) -> Token {
        let start = self.at;
        let ch = self.ch();
        if ch == 0 {
            return Token::End;
        }
        if (u32::from(b'0')..=u32::from(b'9')).contains(&ch) {
            // Leading zeros are skipped; then nine significant digits count.
            while self.ch() == u32::from(b'0') {
                self.at += 1;
            }
            let (mut value, mut digits) = (0i32, 0);
            while let digit @ 0x30..=0x39 = self.ch() {
                if digits < MAX_SIGNIFICANT_DIGITS {
                    value = value * 10 + (digit - 0x30) as i32;
                }
                digits += 1;
                self.at += 1;
            }
            return Token::Number { value, length: self.at - start };
        }
        if let Some(&symbol) = [b':', b'-', b'+', b'.', b')'].iter().find(|&&s| u32::from(s) == ch) {
            self.at += 1;
            return Token::Symbol(symbol);
        }
        let in_word = |c: u32| c >= u32::from(b'A') && !is_white_space(c);
        if in_word(ch) {
            let mut prefix = [0u32; 3];
            while in_word(self.ch()) {
                let length = self.at - start;
                if length < 3 {
                    prefix[length] = self.ch() | 0x20;
                }
                self.at += 1;
            }
            let length = self.at - start;
            return Token::Word { word: keyword(prefix, length), length };
        }
        if is_white_space(ch) || matches!(ch, 0x0A | 0x0D | 0x2028 | 0x2029) {
            self.at += 1;
            return Token::WhiteSpace;
        }
        if ch == u32::from(b'(') {
            let mut balance = 0;
            loop {
                match self.ch() {
                    0x29 => balance -= 1,
                    0x28 => balance += 1,
                    _ => {}
                }
                self.at += 1;
                if balance <= 0 || self.ch() == 0 {
                    break;
                }
            }
            return Token::Unknown;
        }
        self.at += 1;
        Token::Unknown
    }

    fn peek(&self) -> Token {
        self.next
    }

    fn take(&mut self) -> Token {
        let token = self.next;
        self.next = self.scan();
        token
    }

    fn skip_symbol(&mut self, symbol: u8) -> bool {
        if self.next == Token::Symbol(symbol) {
            self.next = self.scan();
            true
        } else {
            false
        }
    }
}

/// The first three significant digits of a fraction, as milliseconds.
fn milliseconds(token: Token) -> i32 {
    let Token::Number { value, length } = token else { unreachable!("not a number token") };
    match length {
        1 => value * 100,
        2 => value * 10,
        3 => value,
        _ => value / 10i32.pow((length.min(MAX_SIGNIFICANT_DIGITS) - 3) as u32),
    }
}

#[derive(Default)]
struct Day {
    parts: Vec<i32>,
    named_month: Option<i32>,
    iso: bool,
}

impl Day {
    fn add(&mut self, n: i32) -> bool {
        self.parts.len() < 3 && {
            self.parts.push(n);
            true
        }
    }

    /// (year, month 1..12, day). Missing parts are 1, so two numbers read as
    /// month and day (or day and year beside a month name) of the year 2001.
    fn write(&self) -> Option<(i32, i32, i32)> {
        if self.parts.is_empty() {
            return None;
        }
        let part = |i: usize| self.parts.get(i).copied().unwrap_or(1);
        let (mut year, month, day) = match self.named_month {
            None if self.iso || !is_day(part(0)) => (part(0), part(1), part(2)),
            None => (part(2), part(0), part(1)),
            Some(month) if !is_day(part(0)) => (part(0), month, part(1)),
            Some(month) => (part(1), month, part(0)),
        };
        if !self.iso {
            if between(year, 0, 49) {
                year += 2000;
            } else if between(year, 50, 99) {
                year += 1900;
            }
        }
        (is_month(month) && is_day(day)).then_some((year, month, day))
    }
}

struct Time {
    parts: Vec<i32>,
    hour_offset: Option<i32>,
}

impl Time {
    fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    fn is_expecting(&self, n: i32) -> bool {
        match self.parts.len() {
            1 | 2 => is_minute(n),
            3 => between(n, 0, 999),
            _ => false,
        }
    }

    fn add(&mut self, n: i32) -> bool {
        self.parts.len() < 4 && {
            self.parts.push(n);
            true
        }
    }

    fn add_final(&mut self, n: i32) -> bool {
        if !self.add(n) {
            return false;
        }
        self.parts.resize(4, 0);
        true
    }

    /// (hour, minute, second, millisecond)
    fn write(&self) -> Option<[i32; 4]> {
        let mut t = [0; 4];
        t[..self.parts.len()].copy_from_slice(&self.parts);
        if let Some(offset) = self.hour_offset {
            if !between(t[0], 0, 12) {
                return None;
            }
            t[0] = t[0] % 12 + offset;
        }
        let valid = is_hour(t[0]) && is_minute(t[1]) && is_minute(t[2]) && between(t[3], 0, 999);
        (valid || t == [24, 0, 0, 0]).then_some(t)
    }
}

struct Zone {
    sign: i32,
    hour: i32,
    minute: i32,
}

impl Zone {
    fn set(&mut self, hours: i32) {
        self.sign = if hours < 0 { -1 } else { 1 };
        self.hour = hours * self.sign;
        self.minute = 0;
    }

    fn is_expecting(&self, n: i32) -> bool {
        self.hour != NONE && self.minute == NONE && is_minute(n)
    }

    fn is_utc(&self) -> bool {
        self.hour == 0 && self.minute == 0
    }

    fn is_empty(&self) -> bool {
        self.hour == NONE
    }

    /// `Some(None)`: no zone given; `Some(Some(seconds))`: the offset; `None`: invalid.
    fn write(&self) -> Option<Option<i64>> {
        if self.sign == NONE {
            return Some(None);
        }
        let hour = if self.hour == NONE { 0 } else { self.hour } as u32;
        let minute = if self.minute == NONE { 0 } else { self.minute } as u32;
        let total = hour.wrapping_mul(3600).wrapping_add(minute.wrapping_mul(60));
        (total <= i32::MAX as u32).then_some(Some(i64::from(self.sign) * i64::from(total)))
    }
}

struct Fields {
    year: i32,
    month: i32,
    day: i32,
    time: [i32; 4],
    offset_seconds: Option<i64>,
}

fn parse(text: &[u32]) -> Option<Fields> {
    let mut scanner = Scanner::new(text);
    let mut day = Day::default();
    let mut time = Time { parts: Vec::new(), hour_offset: None };
    let mut zone = Zone { sign: NONE, hour: NONE, minute: NONE };
    let first = iso_date_time(&mut scanner, &mut day, &mut time, &mut zone)?;
    let mut has_read_number = !day.parts.is_empty();
    let mut token = first;
    while token != Token::End {
        match token {
            Token::Number { value: n, .. } => {
                has_read_number = true;
                if scanner.skip_symbol(b':') {
                    if scanner.skip_symbol(b':') {
                        if !time.is_empty() {
                            return None;
                        }
                        time.add(n);
                        time.add(0);
                    } else {
                        if !time.add(n) {
                            return None;
                        }
                        if scanner.peek() == Token::Symbol(b'.') {
                            scanner.take();
                        }
                    }
                } else if scanner.skip_symbol(b'.') && time.is_expecting(n) {
                    time.add(n);
                    if !matches!(scanner.peek(), Token::Number { .. }) {
                        return None;
                    }
                    let ms = milliseconds(scanner.take());
                    time.add_final(ms);
                } else if zone.is_expecting(n) {
                    zone.minute = n;
                } else if time.is_expecting(n) {
                    time.add_final(n);
                    let peek = scanner.peek();
                    if !matches!(peek, Token::End | Token::WhiteSpace) && !peek.is_zone_z() && !peek.is_sign() {
                        return None;
                    }
                } else {
                    if !day.add(n) {
                        return None;
                    }
                    scanner.skip_symbol(b'-');
                }
            }
            Token::Word { word, .. } => match word {
                Word::AmPm(offset) if !time.is_empty() => time.hour_offset = Some(offset),
                Word::Month(month) => {
                    day.named_month = Some(month);
                    scanner.skip_symbol(b'-');
                }
                Word::Zone(hours) if has_read_number => zone.set(hours),
                _ => {
                    // Words are ignored only before the first number, and apart from it.
                    if has_read_number || matches!(scanner.peek(), Token::Number { .. }) {
                        return None;
                    }
                }
            },
            sign if sign.is_sign() && (zone.is_utc() || !time.is_empty()) => {
                zone.sign = sign.sign();
                let (n, length) = match scanner.peek() {
                    Token::Number { value, length } => {
                        scanner.take();
                        (value, length)
                    }
                    _ => (0, 0),
                };
                has_read_number = true;
                if scanner.peek() == Token::Symbol(b':') {
                    zone.hour = n;
                    zone.minute = NONE;
                } else if length == 1 || length == 2 {
                    zone.hour = n;
                    zone.minute = 0;
                } else if length == 3 || length == 4 {
                    zone.hour = n / 100;
                    zone.minute = n % 100;
                } else {
                    return None;
                }
            }
            other if (other.is_sign() || other == Token::Symbol(b')')) && has_read_number => return None,
            _ => {}
        }
        token = scanner.take();
    }
    let (year, month, day) = day.write()?;
    let time = time.write()?;
    let offset_seconds = zone.write()?;
    Some(Fields { year, month, day, time, offset_seconds })
}

/// As far as the text is an ES5 date-time string (`[+-YY]YYYY[-MM[-DD]][THH:mm[:ss[.sss]][Z|±hh:mm]]`):
/// `End` when all of it is, `None` when it broke off after its `T`, otherwise
/// the token the legacy reading continues with.
fn iso_date_time(scanner: &mut Scanner<'_>, day: &mut Day, time: &mut Time, zone: &mut Zone) -> Option<Token> {
    if scanner.peek().is_sign() {
        let sign_token = scanner.take();
        if !scanner.peek().is_number_of_length(6) {
            return Some(sign_token);
        }
        let sign = sign_token.sign();
        let year = scanner.take().number();
        if sign < 0 && year == 0 {
            return Some(sign_token);
        }
        day.add(sign * year);
    } else if scanner.peek().is_number_of_length(4) {
        day.add(scanner.take().number());
    } else {
        return Some(scanner.take());
    }
    if scanner.skip_symbol(b'-') {
        if !scanner.peek().is_number_of_length(2) || !is_month(scanner.peek().number()) {
            return Some(scanner.take());
        }
        day.add(scanner.take().number());
        if scanner.skip_symbol(b'-') {
            if !scanner.peek().is_number_of_length(2) || !is_day(scanner.peek().number()) {
                return Some(scanner.take());
            }
            day.add(scanner.take().number());
        }
    }
    if !matches!(scanner.peek(), Token::Word { word: Word::TimeSeparator, .. }) {
        if scanner.peek() != Token::End {
            return Some(scanner.take());
        }
    } else {
        scanner.take();
        let two_digits = |token: Token| token.is_number_of_length(2);
        if !two_digits(scanner.peek()) || !between(scanner.peek().number(), 0, 24) {
            return None;
        }
        let hour_is_24 = scanner.peek().number() == 24;
        time.add(scanner.take().number());
        if !scanner.skip_symbol(b':') {
            return None;
        }
        if !two_digits(scanner.peek()) || !is_minute(scanner.peek().number()) || (hour_is_24 && scanner.peek().number() > 0) {
            return None;
        }
        time.add(scanner.take().number());
        if scanner.skip_symbol(b':') {
            if !two_digits(scanner.peek()) || !is_minute(scanner.peek().number()) || (hour_is_24 && scanner.peek().number() > 0) {
                return None;
            }
            time.add(scanner.take().number());
            if scanner.skip_symbol(b'.') {
                if !matches!(scanner.peek(), Token::Number { .. }) || (hour_is_24 && scanner.peek().number() > 0) {
                    return None;
                }
                time.add(milliseconds(scanner.take()));
            }
        }
        if scanner.peek().is_zone_z() {
            scanner.take();
            zone.set(0);
        } else if scanner.peek().is_sign() {
            zone.sign = scanner.take().sign();
            if scanner.peek().is_number_of_length(4) {
                let hour_minute = scanner.take().number();
                let (hour, minute) = (hour_minute / 100, hour_minute % 100);
                if !is_hour(hour) || !is_minute(minute) {
                    return None;
                }
                zone.hour = hour;
                zone.minute = minute;
            } else {
                if !two_digits(scanner.peek()) || !is_hour(scanner.peek().number()) {
                    return None;
                }
                zone.hour = scanner.take().number();
                if !scanner.skip_symbol(b':') {
                    return None;
                }
                if !two_digits(scanner.peek()) || !is_minute(scanner.peek().number()) {
                    return None;
                }
                zone.minute = scanner.take().number();
            }
        }
        if scanner.peek() != Token::End {
            return None;
        }
    }
    // A date-only ES5 string is UTC.
    if zone.is_empty() && time.is_empty() {
        zone.set(0);
    }
    day.iso = true;
    Some(Token::End)
}

const MS_PER_DAY: i64 = 86_400_000;
/// ±100,000,000 days around 1970 (ECMAScript's time range).
const MAX_TIME_MS: i64 = 8_640_000_000_000_000;
/// Local times may lie up to ten days beyond it before their zone is applied.
const MAX_LOCAL_TIME_MS: i64 = MAX_TIME_MS + 864_000_000;

/// Days from 1970-01-01 to the first of `month` (1..12) of `year` (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The milliseconds since 1970 `new Date` would hold (MakeDay, MakeTime, TimeClip), `None` for NaN.
fn time_value(fields: &Fields) -> Option<i64> {
    if !(-1_000_000..=1_000_000).contains(&fields.year) {
        return None;
    }
    let days = days_from_civil(i64::from(fields.year), i64::from(fields.month)) + i64::from(fields.day) - 1;
    let [hour, minute, second, ms] = fields.time.map(i64::from);
    let local = days * MS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000 + ms;
    let utc = match fields.offset_seconds {
        Some(offset) => local - offset * 1000,
        None if local.abs() <= MAX_LOCAL_TIME_MS => local,
        None => return None,
    };
    (utc.abs() <= MAX_TIME_MS).then_some(utc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Texts PostgreSQL prints or reads as timestamptz, and the legacy parser's corners.
    const CASES: &[&str] = &[
        "2026-03-01 10:00:00.000001+00", "2026-03-01 10:00:00+00", "2026-03-01 10:00:00.5-07", "2026-03-01 10:00:00+05:30",
        "2026-03-01 10:00:00+05:30:15", "1900-01-01 00:00:00+00:19:32", "2026-03-01T10:00:00.000001Z",
        "2026-03-01T10:00:00+0530", "2026-03-01T24:00:00Z", "2026-03-01T24:00:01Z", "2026-03-01T10:00Z",
        "2026-03-01T10Z", "2026-03-01T", "2026-03", "2026", "+002026-03-01T00:00:00Z", "-000000-01-01T00:00:00Z",
        "-000001-01-01T00:00:00Z", "+275760-09-13T00:00:00Z", "+275760-09-13T00:00:00.001Z", "275760-09-13 00:00:00+00",
        "275760-09-13 00:00:00.001+00", "275760-09-23 00:00:00", "275760-09-24 00:00:00", "-271821-04-20T00:00:00Z",
        "-271821-04-19T23:59:59.999Z", "300000-01-01 00:00:00+00", "99999-01-01", "10000-01-01 00:00:00+00",
        "0001-01-01 00:00:00+00", "0000-01-01", "-0001-01-01 00:00:00+00", "0044-03-15 00:00:00+00 BC",
        "2026-01-01 BC", "infinity", "-infinity", "Infinity", "epoch", "now", "today", "tomorrow", "yesterday",
        "allballs", "J2461042", "20260301", "2026.060", "x", "", " ", "  2026-03-01", "2026-03-01 10:00:00+00 ",
        "2026-03-01 25:00:00+00", "2026-03-01 24:00:00+00", "2026-03-01 10:00:60+00", "2026-02-30 10:00:00+00",
        "2026-13-01", "2026-00-10", "Mar 1 2026", "1 Mar 2026", "March 1, 2026 10:00 pm", "Sun Mar 01 10:00:00.000001 2026 UTC",
        "Sun Mar 01 10:00:00.000001 2026 PST", "Sun Mar 01 10:00:00.000001 2026 CET", "03/01/2026 10:00:00.000001 UTC",
        "01.03.2026 10:00:00.000001 UTC", "2026-03-01 10:00:00 PST", "2026-03-01 10:00:00 CET",
        "2026-03-01 10:00:00 Europe/Berlin", "1999-01-08 04:05:06 America/New_York", "2026-03-01 10:00:00 GMT+2",
        "2026-03-01 10:00:00 GMT-0130", "2026-03-01 10:00:00 UTC+12345", "2026-03-01 10:00:00 +05:", "10:00 2026-03-01",
        "12:00 am 2026-03-01", "13:00 pm 2026-03-01", "2026-03-01 (comment) 10:00", "2026-03-01 (unclosed 10:00",
        "2026-03-01 10:00)", "junk 2026-03-01", "junk2026-03-01", "2026-03-01 junk", "Tue, 01 Mar 2026 10:00:00 GMT",
        "2026-03-01 10:00:00.123456789123+00", "2026-03-01 10:00:00.+00", "2026-03-01 10:00:00::", "10::2026-03-01",
        "2026-03-01\t10:00:00\n+00", "2026-03-01\u{a0}10:00:00+00", "2026-03-01 10:00:00\u{feff}", "2026-03-01 10:00:00 ｚ",
        "2026-03-01 10:00:00 \u{1F600}", "1/2/3", "1/2/3/4", "50-1-1", "49/1/1", "1 2", "12", "12 pm", "utc 2026",
        "2026 utc", "2026-03-01 10:00:00 z", "2026-03-01 10:00:00 Z", "2026-03-01 10:00:00 zulu", "2026-03-01 10:00:00 t",
        "2026-03-01 10:00:00 +", "2026-03-01 10:00:00 -", "2026-03-01 10:00:00 +5", "2026-03-01 10:00:00 +123",
        "2026-03-01 10:00:00 +12:30", "2026-03-01 10:00:00 +99:99", "+2026", "-2026-03-01", "Jan", "Janfoo 1 2026",
        "1 2 3 Jan", "2026-03-01 10", "2026-03-01 10:", "2026-03-01 10.5", "2026-03-01 10:00.5", "2026-03-01 10:00:00.5.5",
        "2026-03-01 10:00:00 1", "2026-03-01 10:00:00+00 1", "999999999-01-01", "1000000-01-01", "1000001-01-01",
        "2026-03-01 10:00:00 +2147483647:",
    ];

    #[test]
    fn blank_is_what_javascript_trims_away() {
        for blank in ["", " ", "\t\n\r\u{b}\u{c}", "\u{a0}\u{feff}\u{2028}\u{3000}"] {
            assert!(js_blank(blank), "{blank:?}");
        }
        for text in ["x", " x ", "\u{85}", "\u{200b}"] {
            assert!(!js_blank(text), "{text:?}");
        }
    }

    #[test]
    fn known_texts() {
        for (text, expected) in [
            ("2026-03-01 10:00:00.000001+00", true),
            ("2026-03-01 10:00:00+05:30", true),
            ("infinity", false),
            ("epoch", false),
            ("2026-01-01 00:00:00+00 BC", false),
            ("J2461042", false),
            ("275760-09-13 00:00:00+00", true),
            ("275760-09-13 00:00:00.001+00", false),
            ("2026-03-01 10:00:00+05:30:15", false),
            ("Mar 1 2026", true),
            ("", false),
        ] {
            assert_eq!(date_parse_accepts(text), expected, "{text:?}");
        }
    }

    /// Every case against the real `Date.parse` when node is installed.
    #[test]
    fn agrees_with_node() {
        if !Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success()) {
            eprintln!("node not found: skipping the Date.parse parity check");
            return;
        }
        let mut cases: Vec<String> = CASES.iter().map(|s| s.to_string()).collect();
        // Generated texts from the pieces PostgreSQL's timestamp formats are made of.
        let pieces = [
            "2026", "-", "03", "01", " ", "T", "10", ":", "00", ".", "5", "000001", "+", "05", "Z", "UTC", "Mar", "pm",
            "BC", "(", ")", "/", ",", "PST", "12", "1", "275760", "+002026", "\u{a0}", "x", "am", "GMT", "0", "24", "::",
            "-000001", "60", "999", "1234567890", "\u{2028}", "\n", "Sept", "z", "t", "000",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..40000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = 1 + (state % 9) as usize;
            for k in 0..n {
                let pick = (state >> (5 * k + 7)) as usize % pieces.len();
                text.push_str(pieces[pick]);
            }
            cases.push(text);
        }
        let script = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{\
                      process.stdout.write(JSON.stringify(JSON.parse(s).map(t=>!Number.isNaN(Date.parse(t)))))})";
        let mut child = Command::new("node")
            .env("TZ", "UTC")
            .args(["-e", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(serde_json::to_string(&cases).unwrap().as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "node failed");
        let expected: Vec<bool> = serde_json::from_slice(&output.stdout).unwrap();
        let wrong: Vec<(&String, bool)> =
            cases.iter().zip(&expected).filter(|(c, &e)| date_parse_accepts(c) != e).map(|(c, &e)| (c, e)).collect();
        assert!(wrong.is_empty(), "{} of {} differ from node, e.g. {:?}", wrong.len(), cases.len(), &wrong[..wrong.len().min(10)]);
    }
}
