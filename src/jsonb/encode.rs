//! Test support: a value in jsonb's binary format as the server lays it out
//! (object keys sorted by length then bytes, an end offset every 32 children,
//! numbers as numerics with the scale their text has), so unit tests of every
//! reader run without a server. The pg tests check the readers on the
//! server's own bytes.

use serde_json::Value as J;

const JB_FSCALAR: u32 = 0x1000_0000;
const JB_FOBJECT: u32 = 0x2000_0000;
const JB_FARRAY: u32 = 0x4000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

/// `value` as a jsonb payload (the bytes after the varlena header).
pub fn encode(value: &J) -> Vec<u8> {
    encode_with_stride(value, 32)
}

/// The same, storing an end offset every `stride` children (the server: 32).
pub fn encode_with_stride(value: &J, stride: usize) -> Vec<u8> {
    match value {
        J::Array(_) | J::Object(_) => container(value, stride),
        scalar => children(JB_FARRAY | JB_FSCALAR, 1, &[scalar], stride),
    }
}

fn container(value: &J, stride: usize) -> Vec<u8> {
    match value {
        J::Array(items) => children(JB_FARRAY, items.len(), &items.iter().collect::<Vec<_>>(), stride),
        J::Object(members) => {
            let mut sorted: Vec<(&String, &J)> = members.iter().collect();
            sorted.sort_by(|a, b| (a.0.len(), a.0).cmp(&(b.0.len(), b.0)));
            let keys: Vec<J> = sorted.iter().map(|(k, _)| J::String((*k).clone())).collect();
            let all: Vec<&J> = keys.iter().chain(sorted.iter().map(|(_, v)| *v)).collect();
            children(JB_FOBJECT, members.len(), &all, stride)
        }
        _ => unreachable!("scalars are children"),
    }
}

fn children(flags: u32, count: usize, all: &[&J], stride: usize) -> Vec<u8> {
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
            J::Number(n) => {
                data.resize((data.len() + 3) & !3, 0);
                data.extend_from_slice(&numeric(&n.to_string()));
                JENTRY_ISNUMERIC
            }
            J::Array(_) | J::Object(_) => {
                data.resize((data.len() + 3) & !3, 0);
                data.extend_from_slice(&container(child, stride));
                JENTRY_ISCONTAINER
            }
        };
        let entry = if i % stride == 0 { kind | JENTRY_HAS_OFF | data.len() as u32 } else { kind | (data.len() - start) as u32 };
        entries.push(entry);
    }
    let mut out = (flags | count as u32).to_ne_bytes().to_vec();
    entries.iter().for_each(|e| out.extend_from_slice(&e.to_ne_bytes()));
    out.extend_from_slice(&data);
    out
}

/// A numeric varlena (4-byte header, long format) of decimal text
/// `[-]digits[.digits][e[+-]digits]`, as numeric_in makes it: the scale is the
/// text's digits after the point, leading and trailing zero groups stripped.
pub fn numeric(text: &str) -> Vec<u8> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().expect("an exponent")),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    // Decimal digit i stands for 10^(point - 1 - i).
    let point = int.len() as i64 + exponent;
    let dscale = (digits.len() as i64 - point).max(0) as u16;
    let mut groups = std::collections::BTreeMap::<i64, u16>::new();
    for (i, &d) in digits.iter().enumerate() {
        let power = point - 1 - i as i64;
        let group = power.div_euclid(4);
        *groups.entry(group).or_default() += u16::from(d) * 10u16.pow(power.rem_euclid(4) as u32);
    }
    groups.retain(|_, g| *g != 0);
    let (weight, words): (i16, Vec<u16>) = match (groups.keys().next(), groups.keys().next_back()) {
        (Some(&low), Some(&high)) => (high as i16, (low..=high).rev().map(|g| groups.get(&g).copied().unwrap_or(0)).collect()),
        _ => (0, Vec::new()),
    };
    let sign: u16 = if negative && !words.is_empty() { 0x4000 } else { 0 };
    let mut body = (sign | dscale).to_ne_bytes().to_vec();
    body.extend_from_slice(&weight.to_ne_bytes());
    words.iter().for_each(|w| body.extend_from_slice(&w.to_ne_bytes()));
    let total = (body.len() + 4) as u32;
    let mut out = if cfg!(target_endian = "little") { (total << 2).to_ne_bytes() } else { total.to_ne_bytes() }.to_vec();
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonb::{exact_text, numeric_out};

    #[test]
    fn numerics_are_laid_out_as_numeric_in_lays_them_out() {
        for (text, printed, exact) in [
            ("0", "0", "0"),
            ("1.50", "1.50", "15000e-4"),
            ("-7.25", "-7.25", "-72500e-4"),
            ("10000", "10000", "10000"),
            ("1e21", "1000000000000000000000", "10e20"),
            ("1e-7", "0.0000001", "10e-8"),
            ("-0.000123", "-0.000123", "-12300e-8"),
            ("123456789.5", "123456789.5", "1234567895000e-4"),
        ] {
            assert_eq!(numeric_out(&numeric(text)).unwrap(), printed, "{text}");
            assert_eq!(exact_text(&numeric(text)).unwrap(), exact, "{text}");
        }
    }
}
