//! A jsonb number: the numeric varlena jsonb stores, read once and printed
//! two ways, as exact decimal text (`exact_text`, for the stock hashes) or as
//! the server prints it (`numeric_out`, for `->>` texts).

use super::container::u32_at;
use super::DecodeError;

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

const OUT_OF_RANGE: DecodeError = DecodeError("numeric digit out of range");

/// A numeric's fields: value = digits (base 10000) × 10000^(weight + 1 - ndigits).
struct Numeric<'a> {
    negative: bool,
    weight: i32,
    /// Decimal digits after the point that numeric_out prints.
    dscale: usize,
    /// The base-10000 digits, native-endian u16 words (each must be < 10000).
    words: &'a [u8],
}

impl Numeric<'_> {
    /// A numeric varlena (1- or 4-byte header), as stored in jsonb.
    fn read(varlena: &[u8]) -> Result<Numeric<'_>, DecodeError> {
        let first = *varlena.first().ok_or(DecodeError("empty numeric"))?;
        // Where VARATT_IS_1B looks: the low bit on little-endian machines, the high bit on big-endian ones.
        let one_byte_header = if cfg!(target_endian = "little") { first & 0x01 == 0x01 } else { first & 0x80 == 0x80 };
        let (header_len, total) = if one_byte_header {
            let len = if cfg!(target_endian = "little") { first >> 1 } else { first & 0x7F };
            (1, usize::from(len))
        } else {
            let raw = u32_at(varlena, 0).ok_or(DecodeError("truncated numeric"))?;
            let len = if cfg!(target_endian = "little") { raw >> 2 } else { raw & 0x3FFF_FFFF };
            (4, len as usize)
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
        let (negative, weight, dscale, digits_at) = if flags == NUMERIC_SHORT {
            let weight = i32::from(header & NUMERIC_SHORT_WEIGHT_MASK);
            let weight = if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 { weight - 64 } else { weight };
            let dscale = usize::from((header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT);
            (header & NUMERIC_SHORT_SIGN_MASK != 0, weight, dscale, 2)
        } else {
            (flags == NUMERIC_NEG, i32::from(word(2)? as i16), usize::from(header & NUMERIC_DSCALE_MASK), 4)
        };
        let ndigits = (body.len() - digits_at) / 2;
        Ok(Numeric { negative, weight, dscale, words: &body[digits_at..digits_at + 2 * ndigits] })
    }

    fn check_digits(&self) -> Result<(), DecodeError> {
        match (0..self.ndigits()).any(|i| self.digit(i as i32) >= 10_000) {
            true => Err(OUT_OF_RANGE),
            false => Ok(()),
        }
    }

    fn ndigits(&self) -> usize {
        self.words.len() / 2
    }

    /// Base-10000 digit `i` (0 outside the stored digits).
    fn digit(&self, i: i32) -> u16 {
        match usize::try_from(i).ok().and_then(|i| self.words.get(2 * i..2 * i + 2)) {
            Some(b) => u16::from_ne_bytes([b[0], b[1]]),
            None => 0,
        }
    }
}

fn places(group: u16) -> [u16; 4] {
    [group / 1000, group / 100 % 10, group / 10 % 10, group % 10]
}

/// A numeric varlena as exact decimal text `[-]DIGITS[e<exp>]` (what the
/// stock hash rounds to a double once, as `JSON.parse` does).
pub fn exact_text(varlena: &[u8]) -> Result<String, DecodeError> {
    let numeric = Numeric::read(varlena)?;
    let ndigits = numeric.ndigits();
    if ndigits == 0 {
        return Ok("0".to_owned());
    }
    let mut text = String::with_capacity(ndigits * 4 + 8);
    if numeric.negative {
        text.push('-');
    }
    let sign_len = text.len();
    for word in numeric.words.chunks_exact(2) {
        let digit = u16::from_ne_bytes([word[0], word[1]]);
        if digit >= 10_000 {
            return Err(OUT_OF_RANGE);
        }
        for d in places(digit) {
            // Leading zeros say nothing; dropping them lets integers print without parsing.
            if d != 0 || text.len() > sign_len {
                text.push(char::from(b'0' + d as u8));
            }
        }
    }
    if text.len() == sign_len {
        return Ok("0".to_owned());
    }
    let exponent = 4 * (numeric.weight + 1 - ndigits as i32);
    if (0..=8).contains(&exponent) {
        text.extend(std::iter::repeat_n('0', exponent as usize));
    } else {
        text.push('e');
        text.push_str(&exponent.to_string());
    }
    Ok(text)
}

/// `numeric_out` of a numeric varlena (get_str_from_var): the base-10000
/// digits up to the weight, without the first one's leading zeros, then
/// dscale decimals.
pub fn numeric_out(varlena: &[u8]) -> Result<String, DecodeError> {
    let numeric = Numeric::read(varlena)?;
    numeric.check_digits()?;
    let (weight, dscale) = (numeric.weight, numeric.dscale);
    let mut text = String::with_capacity(8 + 4 * numeric.ndigits() + dscale);
    if numeric.negative {
        text.push('-');
    }
    let mut d;
    if weight < 0 {
        d = weight + 1;
        text.push('0');
    } else {
        d = 0;
        while d <= weight {
            let mut put = d > 0;
            for (k, place) in places(numeric.digit(d)).iter().enumerate() {
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
            for place in places(numeric.digit(d)) {
                decimals.push(char::from(b'0' + place as u8));
            }
            d += 1;
        }
        text.push_str(&decimals[..dscale]);
    }
    Ok(text)
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
    fn numerics_become_exact_decimal_text() {
        // 1.5: weight 0, dscale 1 → digits [1, 5000].
        assert_eq!(exact_text(&short_numeric(false, 0, 1, &[1, 5000])).unwrap(), "15000e-4");
        // -0.0001: weight -1, digits [1].
        assert_eq!(exact_text(&short_numeric(true, -1, 4, &[1])).unwrap(), "-1e-4");
        // 10^40: weight 10, digits [1].
        assert_eq!(exact_text(&long_numeric(false, 10, 0, &[1])).unwrap(), "1e40");
        // 30001 = [3, 0001] with weight 1, and 120000 = [12] with weight 1.
        assert_eq!(exact_text(&short_numeric(false, 1, 0, &[3, 1])).unwrap(), "30001");
        assert_eq!(exact_text(&short_numeric(false, 1, 0, &[12])).unwrap(), "120000");
        assert_eq!(exact_text(&short_numeric(false, 0, 0, &[])).unwrap(), "0");
        let mut nan = long_numeric(false, 0, 0, &[]);
        nan[4..6].copy_from_slice(&NUMERIC_SPECIAL.to_ne_bytes());
        assert_eq!(exact_text(&nan), Err(DecodeError("special numeric value")));
        assert_eq!(numeric_out(&nan), Err(DecodeError("special numeric value")));
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
            let _ = exact_text(&bytes[..len]);
        }
        assert!(numeric_out(&long_numeric(false, 0, 0, &[10_000])).is_err());
        assert!(exact_text(&long_numeric(false, 0, 0, &[10_000])).is_err());
    }
}
