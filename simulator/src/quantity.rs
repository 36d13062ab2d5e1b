//! Exact parsing of Kubernetes resource quantities.
//!
//! A quantity is `<sign><digits>[.<digits>]<suffix>` where the suffix is a binary SI suffix
//! (`Ki` … `Ei`), a decimal SI suffix (`n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`) or a
//! decimal exponent (`e3`, `E-2`). We parse it into an exact rational (mantissa × 10^exp × 2^bin)
//! and round the way the API machinery does: `Value()` and `MilliValue()` round away from zero.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    pub input: String,
    pub reason: &'static str,
}

/// An exactly parsed quantity: `mantissa × 10^decimal_exponent × 2^binary_exponent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exact {
    negative: bool,
    mantissa: u128,
    decimal_exponent: i32,
    binary_exponent: u32,
}

fn parse_exact(input: &str) -> Result<Exact, QuantityError> {
    let err = |reason| QuantityError { input: input.to_string(), reason };
    let s = input.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    let mut mantissa: u128 = 0;
    let mut digits = 0usize;
    let mut fraction_digits: i32 = 0;
    let mut seen_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            // Keep at most 30 significant digits; further digits only matter below any
            // resolution we use, but must still be counted for the exponent.
            if mantissa < 10u128.pow(30) {
                mantissa = mantissa * 10 + u128::from(c - b'0');
                if seen_dot {
                    fraction_digits += 1;
                }
            } else if !seen_dot {
                fraction_digits -= 1;
            }
            digits += 1;
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return Err(err("no digits"));
    }
    let suffix = &s[i..];
    let (decimal, binary) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other if other.starts_with('e') || other.starts_with('E') => {
            let exponent: i32 = other[1..].parse().map_err(|_| err("bad exponent"))?;
            if !(-40..=40).contains(&exponent) {
                return Err(err("exponent out of range"));
            }
            (exponent, 0)
        }
        _ => return Err(err("unknown suffix")),
    };
    Ok(Exact { negative, mantissa, decimal_exponent: decimal - fraction_digits, binary_exponent: binary })
}

/// 10^0 ..= 10^38, the powers of ten a u128 holds.
const POW10: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// `value × 10^scale`, rounded away from zero, saturating at i64 bounds.
fn scaled(q: Exact, scale: i32) -> i64 {
    let exp = q.decimal_exponent + scale;
    let magnitude: u128 = if exp >= 0 {
        let factor = POW10.get(exp as usize).copied();
        match factor.and_then(|f| q.mantissa.checked_mul(f)).and_then(|v| v.checked_mul(1u128 << q.binary_exponent)) {
            Some(v) => v,
            None if q.mantissa == 0 => 0,
            None => u128::MAX,
        }
    } else {
        match POW10.get((-exp) as usize) {
            Some(&denominator) => match q.mantissa.checked_mul(1u128 << q.binary_exponent) {
                Some(numerator) => numerator.div_ceil(denominator),
                None => shifted_div_ceil(q.mantissa, q.binary_exponent, denominator),
            },
            // Far below one unit: round away from zero.
            None => u128::from(q.mantissa != 0),
        }
    };
    let magnitude = magnitude.min(i64::MAX as u128) as i64;
    if q.negative { -magnitude } else { magnitude }
}

/// `⌈mantissa × 2^shift / denominator⌉` where the product does not fit in a `u128` (many
/// digits and a binary suffix, `.747896861637331005896309896268Ti`): rounding the quotient up
/// before shifting would be off by up to `2^shift`, so the remainder is shifted in one bit at a
/// time, as in long division. It stays below `denominator` (at most 10^38 < 2^127), so doubling
/// it cannot overflow.
fn shifted_div_ceil(mantissa: u128, shift: u32, denominator: u128) -> u128 {
    let (mut quotient, mut remainder) = (mantissa / denominator, mantissa % denominator);
    for _ in 0..shift {
        quotient = quotient.saturating_mul(2);
        remainder <<= 1;
        if remainder >= denominator {
            remainder -= denominator;
            quotient = quotient.saturating_add(1);
        }
    }
    quotient.saturating_add(u128::from(remainder != 0))
}

/// The quantity in whole units, rounded away from zero (like `Quantity.Value()`).
pub fn parse_value(input: &str) -> Result<i64, QuantityError> {
    Ok(scaled(parse_exact(input)?, 0))
}

/// The quantity in thousandths, rounded away from zero (like `Quantity.MilliValue()`).
pub fn parse_milli(input: &str) -> Result<i64, QuantityError> {
    Ok(scaled(parse_exact(input)?, 3))
}

/// Formats millicores the way people write them: `2`, `1500m`.
pub fn format_milli(milli: i64) -> String {
    if milli % 1000 == 0 { format!("{}", milli / 1000) } else { format!("{milli}m") }
}

/// Formats bytes with the largest exact binary suffix (`16Gi`, `1536Mi`, `100`).
pub fn format_bytes(bytes: i64) -> String {
    const SUFFIXES: [(&str, i64); 6] =
        [("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)];
    for (suffix, unit) in SUFFIXES {
        if bytes != 0 && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    format!("{bytes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_binary_suffixes() {
        assert_eq!(parse_milli("100m").unwrap(), 100);
        assert_eq!(parse_milli("0.1").unwrap(), 100);
        assert_eq!(parse_milli("2").unwrap(), 2000);
        assert_eq!(parse_milli(".5").unwrap(), 500);
        assert_eq!(parse_value("1Ki").unwrap(), 1024);
        assert_eq!(parse_value("16Gi").unwrap(), 16 * (1 << 30));
        assert_eq!(parse_value("1.5Gi").unwrap(), 3 * (1 << 29));
        assert_eq!(parse_value("128974848").unwrap(), 128_974_848);
        assert_eq!(parse_value("129e6").unwrap(), 129_000_000);
        assert_eq!(parse_value("129M").unwrap(), 129_000_000);
        assert_eq!(parse_value("123Mi").unwrap(), 123 * (1 << 20));
        assert_eq!(parse_value("1E").unwrap(), 1_000_000_000_000_000_000);
        assert_eq!(parse_value("1E3").unwrap(), 1000);
        assert_eq!(parse_value("1e-3").unwrap(), 1);
        assert_eq!(parse_milli("1e-3").unwrap(), 1);
        assert_eq!(parse_value("500n").unwrap(), 1);
        assert_eq!(parse_milli("500u").unwrap(), 1);
        assert_eq!(parse_value("+5").unwrap(), 5);
        assert_eq!(parse_value("-5k").unwrap(), -5000);
    }

    #[test]
    fn rounding_is_away_from_zero() {
        assert_eq!(parse_milli("0.0001").unwrap(), 1);
        assert_eq!(parse_value("0.5").unwrap(), 1);
        assert_eq!(parse_value("1.0001").unwrap(), 2);
        assert_eq!(parse_milli("1234567u").unwrap(), 1235);
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "abc", "1x", "1.2.3", "Gi", "1e", "1Kii", "--1"] {
            assert!(parse_value(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn many_digits_with_a_binary_suffix_stay_exact() {
        // Found by the readers' fuzz test: the product of the digits and the suffix overflows
        // 128 bits, and the value was rounded before it was shifted (0.1% or more too large).
        assert_eq!(parse_milli(".747896861637331005896309896268Ti").unwrap(), 822_321_295_747_424);
        assert_eq!(parse_value("1.000000000000000000001Ei").unwrap(), (1 << 60) + 1);
        assert_eq!(parse_value("-1.000000000000000000001Ei").unwrap(), -(1 << 60) - 1);
        assert_eq!(parse_milli("7.999999999999999999999999999999Ei").unwrap(), i64::MAX);
        assert_eq!(parse_milli(".227298177825590589286908903807Pi").unwrap(), 255_914_997_239_330_629);
    }

    #[test]
    fn huge_values_saturate() {
        assert_eq!(parse_value("100E").unwrap(), i64::MAX);
        assert_eq!(parse_value("1e40").unwrap(), i64::MAX);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_milli(1500), "1500m");
        assert_eq!(format_milli(2000), "2");
        assert_eq!(format_bytes(16 << 30), "16Gi");
        assert_eq!(format_bytes(1536 << 20), "1536Mi");
        assert_eq!(format_bytes(1000), "1000");
    }
}
