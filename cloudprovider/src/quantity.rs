//! A small Kubernetes quantity reader for providers' templates and prices, and for the pod
//! autoscalers' `Quantity.AsApproximateFloat64()`.
//!
//! The exact parser lives in `simulator`, which this crate must not depend on (crates only point
//! down the list in DESIGN.md). Here we need two things only: to refuse what the API server
//! would refuse, and an approximate value for prices, "has GPUs" checks and tolerances, so an
//! `f64` is enough.
//!
//! Grammar (apimachinery `resource.Quantity`):
//! `[+-] (digits | digits. | digits.digits | .digits) (Ki..Ei | n u m k M G T P E | e<int> | E<int> | "")`.

/// The quantity's value in base units (cores, bytes, devices) as a float.
pub fn quantity_value(text: &str) -> Result<f64, String> {
    let fail = |reason: &str| Err(format!("invalid quantity {text:?}: {reason}"));
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        Some(_) => (false, text),
        None => return fail("empty"),
    };
    let integer_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (integer, after) = rest.split_at(integer_len);
    let (fraction, suffix) = match after.strip_prefix('.') {
        Some(after_dot) => after_dot.split_at(after_dot.bytes().take_while(u8::is_ascii_digit).count()),
        None => ("", after),
    };
    if integer.is_empty() && fraction.is_empty() {
        return fail("expected a number");
    }
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        other if other.starts_with(['e', 'E']) => match parse_exponent(&other[1..]) {
            Some(exponent) => 10f64.powi(exponent),
            None => return fail("bad exponent"),
        },
        _ => return fail("unknown suffix"),
    };
    let number: f64 = format!("{}.{}", if integer.is_empty() { "0" } else { integer }, fraction)
        .trim_end_matches('.')
        .parse()
        .or_else(|_| fail("bad number"))?;
    let value = number * multiplier;
    Ok(if negative { -value } else { value })
}

fn parse_exponent(text: &str) -> Option<i32> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let exponent: i32 = text.parse().ok()?;
    // The API machinery refuses exponents it cannot represent; stay far inside f64's range.
    (-100..=100).contains(&exponent).then_some(exponent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn quantities_in_every_notation() {
        for (text, expected) in [
            ("4", 4.0),
            ("3900m", 3.9),
            ("0.5", 0.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("16Gi", 16.0 * 1024f64.powi(3)),
            ("1.5Gi", 1.5 * 1024f64.powi(3)),
            ("129M", 129e6),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("1E", 1e18),
            ("500n", 5e-7),
            ("+2", 2.0),
            ("-1k", -1000.0),
        ] {
            let value = quantity_value(text).unwrap();
            assert!(close(value, expected), "{text}: got {value}, expected {expected}");
        }
    }

    #[test]
    fn malformed_quantities_are_refused() {
        for bad in ["", "abc", "1x", "1.2.3", "Gi", "1e", "1Kii", "--1", "0x10", "1 Gi", "1e1.5", "."] {
            assert!(quantity_value(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
