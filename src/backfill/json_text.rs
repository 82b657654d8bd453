//! The text `->>` gives for a jsonb number or container, printed from jsonb's
//! binary format exactly as the server prints it (`numeric_out`,
//! `JsonbToCString`), so that the backfill reads every resource in place: a
//! sandbox id that is a JSON number or object becomes the same text the
//! application's SQL makes of it, without a query per attempt.

use crate::stock::jsonb_binary::{Container, DecodeError, Item, Kind};

const NUMERIC_SIGN_MASK: u16 = 0xC000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_SHORT: u16 = 0x8000;
const NUMERIC_SPECIAL: u16 = 0xC000;
const NUMERIC_SHORT_SIGN_MASK: u16 = 0x2000;
const NUMERIC_SHORT_DSCALE_MASK: u16 = 0x1F80;
const NUMERIC_SHORT_DSCALE_SHIFT: u16 = 7;
const NUMERIC_SHORT_WEIGHT_SIGN_MASK: u16 = 0x0040;
const NUMERIC_SHORT_WEIGHT_MASK: u16 = 0x003F;
const NUMERIC_DSCALE_MASK: u16 = 0x3FFF;

/// `numeric_out` of a numeric varlena (1- or 4-byte header), as stored in jsonb.
pub fn numeric_out(varlena: &[u8]) -> Result<String, DecodeError> {
    let first = *varlena.first().ok_or(DecodeError("empty numeric"))?;
    let word_at = |bytes: &[u8], i: usize| -> Result<u16, DecodeError> {
        bytes.get(i..i + 2).map(|b| u16::from_ne_bytes([b[0], b[1]])).ok_or(DecodeError("truncated numeric"))
    };
    // Where VARATT_IS_1B looks: the low bit on little-endian machines, the high bit on big-endian ones.
    let one_byte_header = if cfg!(target_endian = "little") { first & 0x01 == 0x01 } else { first & 0x80 == 0x80 };
    let (header_len, total) = if one_byte_header {
        let len = if cfg!(target_endian = "little") { first >> 1 } else { first & 0x7F };
        (1, usize::from(len))
    } else {
        let raw = varlena.get(..4).ok_or(DecodeError("truncated numeric"))?;
        let raw = u32::from_ne_bytes([raw[0], raw[1], raw[2], raw[3]]);
        let len = if cfg!(target_endian = "little") { raw >> 2 } else { raw & 0x3FFF_FFFF };
        (4, len as usize)
    };
    let body = varlena.get(header_len..total).ok_or(DecodeError("truncated numeric"))?;
    let header = word_at(body, 0)?;
    if header & NUMERIC_SIGN_MASK == NUMERIC_SPECIAL {
        return Err(DecodeError("special numeric value"));
    }
    let (negative, weight, dscale, digits_at) = if header & NUMERIC_SIGN_MASK == NUMERIC_SHORT {
        let weight = i32::from(header & NUMERIC_SHORT_WEIGHT_MASK);
        let weight = if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 { weight - 64 } else { weight };
        let dscale = usize::from((header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT);
        (header & NUMERIC_SHORT_SIGN_MASK != 0, weight, dscale, 2)
    } else {
        let weight = i32::from(word_at(body, 2)? as i16);
        (header & NUMERIC_SIGN_MASK == NUMERIC_NEG, weight, usize::from(header & NUMERIC_DSCALE_MASK), 4)
    };
    let ndigits = (body.len() - digits_at) / 2;
    let mut digits = Vec::with_capacity(ndigits);
    for i in 0..ndigits {
        let digit = word_at(body, digits_at + 2 * i)?;
        if digit >= 10_000 {
            return Err(DecodeError("numeric digit out of range"));
        }
        digits.push(digit);
    }
    // get_str_from_var: the base-10000 digits up to the weight, without the
    // first one's leading zeros, then dscale decimals.
    let digit = |d: i32| if d >= 0 && (d as usize) < digits.len() { digits[d as usize] } else { 0 };
    let mut text = String::with_capacity(8 + 4 * ndigits + dscale);
    if negative {
        text.push('-');
    }
    let mut d;
    if weight < 0 {
        d = weight + 1;
        text.push('0');
    } else {
        d = 0;
        while d <= weight {
            let group = digit(d);
            let places = [group / 1000, group / 100 % 10, group / 10 % 10, group % 10];
            let mut put = d > 0;
            for (k, place) in places.iter().enumerate() {
                put |= *place > 0 || k == 3;
                if put {
                    text.push(char::from(b'0' + *place as u8));
                }
            }
            d += 1;
        }
    }
    if dscale > 0 {
        text.push('.');
        let mut decimals = String::with_capacity(dscale + 4);
        while decimals.len() < dscale {
            let group = digit(d);
            for place in [group / 1000, group / 100 % 10, group / 10 % 10, group % 10] {
                decimals.push(char::from(b'0' + place as u8));
            }
            d += 1;
        }
        text.push_str(&decimals[..dscale]);
    }
    Ok(text)
}

/// `JsonbToCString` of a container (its own bytes, as jsonb stores it).
pub fn container_text(bytes: &[u8]) -> Result<String, DecodeError> {
    let mut out = String::new();
    write_container(&mut out, Container::read(bytes)?)?;
    Ok(out)
}

fn write_container(out: &mut String, container: Container<'_>) -> Result<(), DecodeError> {
    match container.kind {
        Kind::Scalar => {
            for element in container.raw_elements() {
                let (item, bytes) = element?;
                write_value(out, item, bytes)?;
            }
        }
        Kind::Array => {
            out.push('[');
            for (i, element) in container.raw_elements().enumerate() {
                let (item, bytes) = element?;
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, bytes)?;
            }
            out.push(']');
        }
        Kind::Object => {
            out.push('{');
            for (i, member) in container.raw_members().enumerate() {
                let (key, item, bytes) = member?;
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key)?;
                out.push_str(": ");
                write_value(out, item, bytes)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_value(out: &mut String, item: Item<'_>, bytes: &[u8]) -> Result<(), DecodeError> {
    match item {
        Item::Null => out.push_str("null"),
        Item::Bool(true) => out.push_str("true"),
        Item::Bool(false) => out.push_str("false"),
        Item::String(text) => write_string(out, text)?,
        Item::Number => out.push_str(&numeric_out(bytes)?),
        Item::Container(child) => write_container(out, child)?,
    }
    Ok(())
}

/// `escape_json`: quotes, backslashes and control characters escaped; nothing else.
fn write_string(out: &mut String, text: &[u8]) -> Result<(), DecodeError> {
    let text = std::str::from_utf8(text).map_err(|_| DecodeError("string is not UTF-8"))?;
    out.push('"');
    for c in text.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A numeric varlena with a 4-byte header (long format).
    fn long_numeric(negative: bool, weight: i16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&((if negative { NUMERIC_NEG } else { 0 }) | dscale).to_ne_bytes());
        body.extend_from_slice(&weight.to_ne_bytes());
        digits.iter().for_each(|d| body.extend_from_slice(&d.to_ne_bytes()));
        let total = (body.len() + 4) as u32;
        let header = if cfg!(target_endian = "little") { total << 2 } else { total };
        let mut out = header.to_ne_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// The same number in the short format with a 1-byte header.
    fn short_numeric(negative: bool, weight: i8, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let weight_bits = if weight < 0 { NUMERIC_SHORT_WEIGHT_SIGN_MASK | (weight as i16 + 64) as u16 } else { weight as u16 };
        let sign = if negative { NUMERIC_SHORT_SIGN_MASK } else { 0 };
        let header = NUMERIC_SHORT | sign | (dscale << NUMERIC_SHORT_DSCALE_SHIFT) | weight_bits;
        let mut body = header.to_ne_bytes().to_vec();
        digits.iter().for_each(|d| body.extend_from_slice(&d.to_ne_bytes()));
        let total = (body.len() + 1) as u8;
        let mut out = vec![if cfg!(target_endian = "little") { (total << 1) | 1 } else { total | 0x80 }];
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn numbers_print_like_numeric_out() {
        for (negative, weight, dscale, digits, text) in [
            (false, 0, 0, &[][..], "0"),
            (false, 0, 2, &[][..], "0.00"),
            (false, 0, 0, &[42][..], "42"),
            (false, 0, 2, &[123, 5000][..], "123.50"),
            (true, 0, 2, &[7, 2500][..], "-7.25"),
            (false, 1, 0, &[1][..], "10000"),
            (false, 1, 0, &[1, 2][..], "10002"),
            (false, -1, 6, &[1][..], "0.000100"),
            (false, -2, 6, &[100][..], "0.000001"),
            (false, 2, 3, &[12, 3456, 7890, 1200][..], "1234567890.120"),
                    ] {
            assert_eq!(numeric_out(&long_numeric(negative, weight, dscale, digits)).unwrap(), text);
            assert_eq!(numeric_out(&short_numeric(negative, weight as i8, dscale, digits)).unwrap(), text);
        }
        // 10000^24: the first group's one, then 24 groups of four zeros.
        assert_eq!(numeric_out(&long_numeric(false, 24, 0, &[1])).unwrap(), format!("1{}", "0".repeat(96)));
    }

    #[test]
    fn truncated_numbers_are_errors_not_panics() {
        let bytes = long_numeric(false, 2, 3, &[12, 3456, 7890, 1200]);
        for len in 0..bytes.len() {
            let _ = numeric_out(&bytes[..len]);
        }
        assert!(numeric_out(&long_numeric(false, 0, 0, &[10_000])).is_err());
    }
}
