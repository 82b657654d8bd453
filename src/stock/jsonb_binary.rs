//! Reads PostgreSQL's on-disk jsonb format directly (pure Rust, no server calls).
//!
//! `stock_hash(doc)` used to print the value with `jsonb_out` and parse the
//! text back; reading the binary container skips both, and hands the
//! canonicalizer what it needs: keys already in jsonb order, raw strings, and
//! numbers as exact decimal text (rounded to a double once, like `JSON.parse`).
//! Layout: src/include/utils/jsonb.h and src/backend/utils/adt/numeric.c.

use super::json::Value;
use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed jsonb: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

const JB_CMASK: u32 = 0x0FFF_FFFF;
const JB_FSCALAR: u32 = 0x1000_0000;
const JB_FOBJECT: u32 = 0x2000_0000;
const JB_FARRAY: u32 = 0x4000_0000;

const JENTRY_OFFLENMASK: u32 = 0x0FFF_FFFF;
const JENTRY_TYPEMASK: u32 = 0x7000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

/// The same bound on nesting as the text reader's (`json::MAX_DEPTH`).
use super::json::MAX_DEPTH;

/// Decode a jsonb value from its varlena payload (the bytes after the varlena header).
pub fn decode(payload: &[u8]) -> Result<Value<'_>, DecodeError> {
    let root = container(payload, 0)?;
    match root {
        // A top-level scalar is stored as a one-element "raw scalar" array.
        Decoded::Scalar(value) => Ok(value),
        Decoded::Container(value) => Ok(value),
    }
}

enum Decoded<'a> {
    Scalar(Value<'a>),
    Container(Value<'a>),
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, DecodeError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(DecodeError("truncated container"))
}

const fn int_align(offset: usize) -> usize {
    (offset + 3) & !3
}

fn container(bytes: &[u8], depth: usize) -> Result<Decoded<'_>, DecodeError> {
    if depth >= MAX_DEPTH {
        return Err(DecodeError("nesting too deep"));
    }
    let header = u32_at(bytes, 0)?;
    let count = (header & JB_CMASK) as usize;
    let is_object = header & JB_FOBJECT != 0;
    if !is_object && header & JB_FARRAY == 0 {
        return Err(DecodeError("container is neither array nor object"));
    }
    let entries = if is_object { count * 2 } else { count };
    let data_start = 4 + entries * 4;
    if data_start > bytes.len() {
        return Err(DecodeError("truncated entries"));
    }
    let data = &bytes[data_start..];

    // Children in storage order, each with its byte range inside `data`: for an
    // object the keys (already in jsonb order) and then the values, pairwise.
    let mut start = 0usize;
    let mut next = |i: usize| -> Result<Value<'_>, DecodeError> {
        let entry = u32_at(bytes, 4 + i * 4)?;
        let field = (entry & JENTRY_OFFLENMASK) as usize;
        let end = if entry & JENTRY_HAS_OFF != 0 { field } else { start + field };
        if end < start || end > data.len() {
            return Err(DecodeError("entry outside its container"));
        }
        let value = child(entry & JENTRY_TYPEMASK, data, start, end, depth)?;
        start = end;
        Ok(value)
    };
    if is_object {
        let mut members = Vec::with_capacity(count);
        for i in 0..count {
            match next(i)? {
                Value::String(key) => members.push((key, Value::Null)),
                _ => return Err(DecodeError("object key is not a string")),
            }
        }
        for (i, member) in members.iter_mut().enumerate() {
            member.1 = next(count + i)?;
        }
        return Ok(Decoded::Container(Value::Object(members)));
    }
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        items.push(next(i)?);
    }
    if header & JB_FSCALAR != 0 {
        items.pop().map(Decoded::Scalar).ok_or(DecodeError("empty raw scalar"))
    } else {
        Ok(Decoded::Container(Value::Array(items)))
    }
}

fn child<'a>(kind: u32, data: &'a [u8], start: usize, end: usize, depth: usize) -> Result<Value<'a>, DecodeError> {
    Ok(match kind {
        JENTRY_ISNULL => Value::Null,
        JENTRY_ISBOOL_TRUE => Value::Bool(true),
        JENTRY_ISBOOL_FALSE => Value::Bool(false),
        JENTRY_ISSTRING => Value::String(Cow::Borrowed(
            std::str::from_utf8(&data[start..end]).map_err(|_| DecodeError("string is not UTF-8"))?,
        )),
        JENTRY_ISNUMERIC => Value::Number(Cow::Owned(numeric_text(padded(data, start, end)?)?)),
        JENTRY_ISCONTAINER => match container(padded(data, start, end)?, depth + 1)? {
            Decoded::Container(v) => v,
            Decoded::Scalar(_) => return Err(DecodeError("raw scalar nested in a container")),
        },
        _ => return Err(DecodeError("unknown entry type")),
    })
}

/// Numerics and containers start at the next 4-byte boundary of their offset.
fn padded(data: &[u8], start: usize, end: usize) -> Result<&[u8], DecodeError> {
    let aligned = int_align(start);
    if aligned > end {
        return Err(DecodeError("padding past the entry"));
    }
    Ok(&data[aligned..end])
}

const NUMERIC_SIGN_MASK: u16 = 0xC000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_SHORT: u16 = 0x8000;
const NUMERIC_SPECIAL: u16 = 0xC000;
const NUMERIC_SHORT_SIGN_MASK: u16 = 0x2000;
const NUMERIC_SHORT_WEIGHT_SIGN_MASK: u16 = 0x0040;
const NUMERIC_SHORT_WEIGHT_MASK: u16 = 0x003F;

/// A numeric varlena (1- or 4-byte header) as exact decimal text `[-]DIGITSe<exp>`.
pub fn numeric_text(varlena: &[u8]) -> Result<String, DecodeError> {
    let first = *varlena.first().ok_or(DecodeError("empty numeric"))?;
    // Little- or big-endian, the 1-byte-header flag sits where VARATT_IS_1B looks.
    let (header_len, total) = if cfg!(target_endian = "little") {
        if first & 0x01 == 0x01 {
            (1, ((first >> 1) & 0x7F) as usize)
        } else {
            (4, (u32_at(varlena, 0)? >> 2) as usize & 0x3FFF_FFFF)
        }
    } else if first & 0x80 == 0x80 {
        (1, (first & 0x7F) as usize)
    } else {
        (4, u32_at(varlena, 0)? as usize & 0x3FFF_FFFF)
    };
    let body = varlena.get(header_len..total).ok_or(DecodeError("truncated numeric"))?;
    let word = |i: usize| -> Result<u16, DecodeError> {
        body.get(i..i + 2).map(|b| u16::from_ne_bytes([b[0], b[1]])).ok_or(DecodeError("truncated numeric"))
    };
    let header = word(0)?;
    let flags = header & NUMERIC_SIGN_MASK;
    if flags == NUMERIC_SPECIAL {
        // NaN / ±Infinity never appear in jsonb; refuse rather than guess.
        return Err(DecodeError("special numeric value"));
    }
    let (negative, weight, digits_at) = if flags == NUMERIC_SHORT {
        let weight_bits = (header & NUMERIC_SHORT_WEIGHT_MASK) as i32;
        let weight = if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 { weight_bits - 64 } else { weight_bits };
        (header & NUMERIC_SHORT_SIGN_MASK != 0, weight, 2)
    } else {
        (flags == NUMERIC_NEG, word(2)? as i16 as i32, 4)
    };
    let ndigits = (body.len() - digits_at) / 2;
    if ndigits == 0 {
        return Ok("0".to_owned());
    }
    let mut text = String::with_capacity(ndigits * 4 + 8);
    if negative {
        text.push('-');
    }
    let sign_len = text.len();
    for i in 0..ndigits {
        let digit = word(digits_at + i * 2)?;
        if digit >= 10_000 {
            return Err(DecodeError("numeric digit out of range"));
        }
        let group = [digit / 1000, digit / 100 % 10, digit / 10 % 10, digit % 10];
        for d in group {
            // Leading zeros say nothing; dropping them lets integers print without parsing.
            if d != 0 || text.len() > sign_len {
                text.push(char::from(b'0' + d as u8));
            }
        }
    }
    if text.len() == sign_len {
        return Ok("0".to_owned());
    }
    // Value = digits × 10000^(weight + 1 - ndigits).
    let exponent = 4 * (weight + 1 - ndigits as i32);
    if (0..=8).contains(&exponent) {
        text.extend(std::iter::repeat_n('0', exponent as usize));
    } else {
        text.push('e');
        text.push_str(&exponent.to_string());
    }
    Ok(text)
}

// Reading in place: a container's children one at a time, nothing built, no
// allocation, every offset checked (for callers that read a few fields of a
// large document: the backfill's resources, the reconcile inventory).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Array,
    Object,
    /// The one-element array a top-level scalar is stored as.
    Scalar,
}

#[derive(Debug, Clone, Copy)]
pub struct Container<'a> {
    pub kind: Kind,
    /// Members (objects) or elements.
    count: usize,
    entries: &'a [u8],
    data: &'a [u8],
}

#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    Null,
    Bool(bool),
    String(&'a [u8]),
    Number,
    Container(Container<'a>),
}


impl<'a> Container<'a> {
    /// The container at the start of `bytes` (a jsonb payload, or a child's aligned bytes).
    pub fn read(bytes: &'a [u8]) -> Result<Container<'a>, DecodeError> {
        let header = u32_at(bytes, 0)?;
        let count = (header & JB_CMASK) as usize;
        let kind = if header & JB_FOBJECT != 0 {
            Kind::Object
        } else if header & JB_FARRAY == 0 {
            return Err(DecodeError("not a jsonb container"));
        } else if header & JB_FSCALAR != 0 {
            Kind::Scalar
        } else {
            Kind::Array
        };
        let children = if kind == Kind::Object { count * 2 } else { count };
        let data_start = children.checked_mul(4).and_then(|n| n.checked_add(4)).ok_or(DecodeError("truncated jsonb"))?;
        let entries = bytes.get(4..data_start).ok_or(DecodeError("truncated jsonb"))?;
        Ok(Container { kind, count, entries, data: &bytes[data_start..] })
    }

    fn entry(&self, index: usize) -> Result<u32, DecodeError> {
        u32_at(self.entries, index * 4)
    }

    /// Where child `index`'s data starts (getJsonbOffset): lengths summed
    /// back to the nearest entry that stores its end offset.
    fn start(&self, index: usize) -> Result<usize, DecodeError> {
        let mut offset = 0usize;
        for i in (0..index).rev() {
            let entry = self.entry(i)?;
            offset += (entry & JENTRY_OFFLENMASK) as usize;
            if entry & JENTRY_HAS_OFF != 0 {
                break;
            }
        }
        Ok(offset)
    }

    /// Child `index`, its data starting at `start`; also where it ends.
    fn child_at(&self, index: usize, start: usize) -> Result<(Item<'a>, usize), DecodeError> {
        self.raw_child_at(index, start).map(|(item, _, end)| (item, end))
    }

    /// Child `index` with its bytes (a number's numeric varlena, a container's
    /// own container, a string's text); also where it ends.
    fn raw_child_at(&self, index: usize, start: usize) -> Result<(Item<'a>, &'a [u8], usize), DecodeError> {
        let entry = self.entry(index)?;
        let field = (entry & JENTRY_OFFLENMASK) as usize;
        let end = if entry & JENTRY_HAS_OFF != 0 { field } else { start + field };
        let bytes = self.data.get(start..end).ok_or(DecodeError("truncated jsonb"))?;
        // Numbers and containers start at the next 4-byte boundary.
        let aligned = || self.data.get(int_align(start)..end).ok_or(DecodeError("truncated jsonb"));
        let (item, bytes) = match entry & JENTRY_TYPEMASK {
            JENTRY_ISSTRING => (Item::String(bytes), bytes),
            JENTRY_ISNULL => (Item::Null, bytes),
            JENTRY_ISBOOL_FALSE => (Item::Bool(false), bytes),
            JENTRY_ISBOOL_TRUE => (Item::Bool(true), bytes),
            JENTRY_ISNUMERIC => (Item::Number, aligned()?),
            JENTRY_ISCONTAINER => {
                let bytes = aligned()?;
                let child = Container::read(bytes)?;
                if child.kind == Kind::Scalar {
                    return Err(DecodeError("not a jsonb container"));
                }
                (Item::Container(child), bytes)
            }
            _ => return Err(DecodeError("unknown jsonb entry type")),
        };
        Ok((item, bytes, end))
    }

    /// How many elements (or members) the container holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The elements of an array, in order.
    pub fn elements(self) -> impl Iterator<Item = Result<Item<'a>, DecodeError>> {
        let mut start = 0usize;
        (0..self.count).map(move |i| {
            let (item, end) = self.child_at(i, start)?;
            start = end;
            Ok(item)
        })
    }

    /// An object's member `key` (`None`: absent).
    pub fn get(&self, key: &[u8]) -> Result<Option<Item<'a>>, DecodeError> {
        Ok(self.get_raw(key)?.map(|(item, _)| item))
    }

    /// An object's member `key` with its bytes (see `raw_elements`).
    pub fn get_raw(&self, key: &[u8]) -> Result<Option<(Item<'a>, &'a [u8])>, DecodeError> {
        if self.kind != Kind::Object {
            return Ok(None);
        }
        let mut start = 0usize;
        for i in 0..self.count {
            let (name, end) = self.child_at(i, start)?;
            start = end;
            if let Item::String(name) = name {
                if name == key {
                    let value = self.count + i;
                    return self.raw_child_at(value, self.start(value)?).map(|(item, bytes, _)| Some((item, bytes)));
                }
            }
        }
        Ok(None)
    }

    /// The elements of an array (the scalar of a raw scalar), in order, each
    /// with its bytes: a number's numeric varlena, a container's own container.
    pub fn raw_elements(self) -> impl Iterator<Item = Result<(Item<'a>, &'a [u8]), DecodeError>> {
        let mut start = 0usize;
        (0..self.count).map(move |i| {
            let (item, bytes, end) = self.raw_child_at(i, start)?;
            start = end;
            Ok((item, bytes))
        })
    }

    /// An object's members in storage order (jsonb's key order): key, value and the value's bytes.
    pub fn raw_members(self) -> impl Iterator<Item = Result<(&'a [u8], Item<'a>, &'a [u8]), DecodeError>> {
        let count = if self.kind == Kind::Object { self.count } else { 0 };
        let (mut key_start, mut value_start) = (0usize, None);
        (0..count).map(move |i| {
            let (key, key_end) = self.child_at(i, key_start)?;
            key_start = key_end;
            let Item::String(key) = key else { return Err(DecodeError("object key is not a string")) };
            let start = match value_start {
                Some(start) => start,
                None => self.start(self.count)?,
            };
            let (item, bytes, end) = self.raw_child_at(self.count + i, start)?;
            value_start = Some(end);
            Ok((key, item, bytes))
        })
    }
}

impl Item<'_> {
    /// The kind, as argument errors name it ("an object", "null", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Null => "null",
            Item::Bool(_) => "a boolean",
            Item::Number => "a number",
            Item::String(_) => "a string",
            Item::Container(Container { kind: Kind::Object, .. }) => "an object",
            Item::Container(_) => "an array",
        }
    }
}

/// Test support: `value` in jsonb's binary format, as the server lays it out
/// (object keys sorted by length then bytes, an end offset every 32 children);
/// numbers are an opaque aligned blob (the in-place reader does not read them).
#[cfg(test)]
pub fn encode(value: &serde_json::Value) -> Vec<u8> {
    use serde_json::Value as J;
    fn container(value: &J) -> Vec<u8> {
        match value {
            J::Array(items) => children(JB_FARRAY, items.len(), &items.iter().collect::<Vec<_>>()),
            J::Object(members) => {
                let mut sorted: Vec<(&String, &J)> = members.iter().collect();
                sorted.sort_by(|a, b| (a.0.len(), a.0).cmp(&(b.0.len(), b.0)));
                let keys: Vec<J> = sorted.iter().map(|(k, _)| J::String((*k).clone())).collect();
                let all: Vec<&J> = keys.iter().chain(sorted.iter().map(|(_, v)| *v)).collect();
                children(JB_FOBJECT, members.len(), &all)
            }
            scalar => children(JB_FARRAY | JB_FSCALAR, 1, &[scalar]),
        }
    }
    fn children(flags: u32, count: usize, all: &[&J]) -> Vec<u8> {
        let (mut entries, mut data) = (Vec::new(), Vec::<u8>::new());
        for (i, child) in all.iter().enumerate() {
            let start = data.len();
            let kind = match child {
                J::Null => JENTRY_ISNULL,
                J::Bool(false) => JENTRY_ISBOOL_FALSE,
                J::Bool(true) => JENTRY_ISBOOL_TRUE,
                J::String(s) => {
                    data.extend_from_slice(s.as_bytes());
                    JENTRY_ISSTRING
                }
                J::Number(_) | J::Array(_) | J::Object(_) => {
                    data.resize((data.len() + 3) & !3, 0);
                    if let J::Number(_) = child {
                        data.extend_from_slice(&[9u8; 8]);
                        JENTRY_ISNUMERIC
                    } else {
                        data.extend_from_slice(&container(child));
                        JENTRY_ISCONTAINER
                    }
                }
            };
            entries.push(if i % 32 == 0 { kind | JENTRY_HAS_OFF | data.len() as u32 } else { kind | (data.len() - start) as u32 });
        }
        let mut out = (flags | count as u32).to_ne_bytes().to_vec();
        entries.iter().for_each(|e| out.extend_from_slice(&e.to_ne_bytes()));
        out.extend_from_slice(&data);
        out
    }
    container(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(header: &[u16], digits: &[u16]) -> Vec<u8> {
        let mut body: Vec<u8> = header.iter().chain(digits).flat_map(|w| w.to_ne_bytes()).collect();
        let total = 4 + body.len();
        let mut v = ((total as u32) << 2).to_ne_bytes().to_vec();
        v.append(&mut body);
        v
    }

    #[test]
    fn numerics_become_exact_decimal_text() {
        // 1.5 short form: weight 0, dscale 1 → digits [1, 5000].
        let short = numeric(&[NUMERIC_SHORT | (1 << 7)], &[1, 5000]);
        assert_eq!(numeric_text(&short).unwrap(), "15000e-4");
        // -0.0001 short: weight -1 (two's complement in 7 bits), digits [1].
        let tiny = numeric(&[NUMERIC_SHORT | NUMERIC_SHORT_SIGN_MASK | NUMERIC_SHORT_WEIGHT_SIGN_MASK | 0x3F], &[1]);
        assert_eq!(numeric_text(&tiny).unwrap(), "-1e-4");
        // Long form: 10^40 → weight 10, digits [1].
        let big = numeric(&[0, 10], &[1]);
        assert_eq!(numeric_text(&big).unwrap(), "1e40");
        // 30001 = [3, 0001] with weight 1, and 120000 = [12] with weight 1.
        assert_eq!(numeric_text(&numeric(&[NUMERIC_SHORT | 1], &[3, 1])).unwrap(), "30001");
        assert_eq!(numeric_text(&numeric(&[NUMERIC_SHORT | 1], &[12])).unwrap(), "120000");
        assert_eq!(numeric_text(&numeric(&[NUMERIC_SHORT], &[])).unwrap(), "0");
        assert!(numeric_text(&numeric(&[NUMERIC_SPECIAL], &[])).is_err());
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        for bytes in [&[][..], &[1, 0, 0][..], &[2, 0, 0, 0x20, 9, 9][..]] {
            assert!(decode(bytes).is_err());
        }
    }
}
