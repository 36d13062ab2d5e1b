//! Go-style durations (`time.ParseDuration`): `90s`, `10m`, `1h30m`, `1.5h`, `300ms`, `0`.
//!
//! `humantime` is not used because its syntax differs from Go's: it accepts `1d`, `2min` and
//! spaces, and rejects fractions such as `1.5h`. Users copy these values from upstream flags.

use std::time::Duration;

const NANOS_PER_UNIT: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000), // U+00B5 micro sign
    ("μs", 1_000), // U+03BC Greek small letter mu
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a non-negative Go duration. The error says what is wrong, without the field name.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let fail = |reason: &str| format!("invalid duration {text:?}: {reason}");
    let mut rest = text;
    if let Some(stripped) = rest.strip_prefix('+') {
        rest = stripped;
    } else if rest.starts_with('-') {
        return Err(fail("must not be negative"));
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(fail("empty"));
    }
    let mut total_nanos: u128 = 0;
    while !rest.is_empty() {
        let integer_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (integer, after) = rest.split_at(integer_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after_dot) => {
                let fraction_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
                after_dot.split_at(fraction_len)
            }
            None => ("", after),
        };
        if integer.is_empty() && fraction.is_empty() {
            return Err(fail("expected a number"));
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let Some(&(_, unit_nanos)) = NANOS_PER_UNIT.iter().find(|(name, _)| *name == unit) else {
            return Err(if unit.is_empty() {
                fail("missing unit (use ns, us, ms, s, m or h)")
            } else {
                fail(&format!("unknown unit {unit:?} (use ns, us, ms, s, m or h)"))
            });
        };
        let Some(component) = component_nanos(integer, fraction, unit_nanos) else {
            return Err(fail("too large"));
        };
        total_nanos = match total_nanos.checked_add(component) {
            Some(sum) => sum,
            None => return Err(fail("too large")),
        };
        rest = after;
    }
    let seconds = u64::try_from(total_nanos / 1_000_000_000).map_err(|_| fail("too large"))?;
    Ok(Duration::new(seconds, (total_nanos % 1_000_000_000) as u32))
}

/// `integer.fraction × unit` in nanoseconds, truncating below a nanosecond like Go does.
fn component_nanos(integer: &str, fraction: &str, unit_nanos: u128) -> Option<u128> {
    let whole: u128 = if integer.is_empty() { 0 } else { integer.parse().ok()? };
    let mut nanos = whole.checked_mul(unit_nanos)?;
    // Digits beyond 20 cannot change the result at nanosecond resolution for units up to hours.
    let fraction = &fraction[..fraction.len().min(20)];
    if !fraction.is_empty() {
        let numerator: u128 = fraction.parse().ok()?;
        let denominator = 10u128.pow(fraction.len() as u32);
        nanos = nanos.checked_add(numerator.checked_mul(unit_nanos)? / denominator)?;
    }
    Some(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_go_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_go_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_go_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_go_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_go_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_go_duration("1m0.5s").unwrap(), Duration::from_millis(60_500));
        assert_eq!(parse_go_duration(".5s").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_go_duration("2us").unwrap(), Duration::from_micros(2));
        assert_eq!(parse_go_duration("2µs").unwrap(), Duration::from_micros(2));
        assert_eq!(parse_go_duration("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_go_duration("+5s").unwrap(), Duration::from_secs(5));
    }

    #[test]
    fn go_durations_reject_what_go_rejects() {
        for bad in ["", "10", "5 m", "1d", "2min", "1h30", ".s", "s", "1..5s", "abc"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn negative_durations_are_refused() {
        assert_eq!(parse_go_duration("-5m").unwrap_err(), r#"invalid duration "-5m": must not be negative"#);
    }

    #[test]
    fn duration_errors_name_the_unit_problem() {
        assert!(parse_go_duration("1d").unwrap_err().contains(r#"unknown unit "d""#));
        assert!(parse_go_duration("10").unwrap_err().contains("missing unit"));
    }
}
