//! Go-style durations (`time.ParseDuration` / `Duration.String`): `90s`, `10m`, `1h30m`, `1.5h`,
//! `300ms`, `0`. Upstream's flags, cloud-config files and scenario files all use them, so every
//! crate reads and prints them through this one module.
//!
//! `humantime` is not used because its syntax differs from Go's: it accepts `1d`, `2min` and
//! spaces, and rejects fractions such as `1.5h`. Users copy these values from upstream flags.
//! As in Go, a duration must fit in an `int64` of nanoseconds (about 292 years).

use std::time::Duration;

/// `t + d`, saturating at the end of the representable range instead of panicking: deadlines
/// computed from user-given durations (flags, scenario files) must never overflow.
pub fn later(t: k8s_openapi::jiff::Timestamp, d: Duration) -> k8s_openapi::jiff::Timestamp {
    t.checked_add(d).unwrap_or(k8s_openapi::jiff::Timestamp::MAX)
}

/// The time from `from` to `to`; zero when `to` is earlier (a time recorded by another clock).
pub fn elapsed(from: k8s_openapi::jiff::Timestamp, to: k8s_openapi::jiff::Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or(Duration::ZERO)
}

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

/// Go's largest duration: `math.MaxInt64` nanoseconds (2562047h47m16.854775807s).
pub const MAX_GO_DURATION_NANOS: u128 = i64::MAX as u128;

/// Parses a non-negative Go duration. The error says what is wrong, without the field name.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
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
    if total_nanos > MAX_GO_DURATION_NANOS {
        return Err(fail("too large (Go durations end at 2562047h47m16.854775807s)"));
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

/// A duration as Go prints one (`10m0s`, `1h2m3.5s`, `250ms`), as upstream's messages do.
pub fn format_go_duration(d: Duration) -> String {
    let total = d.as_secs();
    let nanos = d.subsec_nanos();
    if total == 0 {
        return match nanos {
            0 => "0s".into(),
            n if n < 1_000 => format!("{n}ns"),
            n if n < 1_000_000 => format!("{}µs", trim_fraction(f64::from(n) / 1e3)),
            n => format!("{}ms", trim_fraction(f64::from(n) / 1e6)),
        };
    }
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    let seconds = if nanos == 0 {
        format!("{seconds}s")
    } else {
        let fraction = format!("{nanos:09}");
        format!("{seconds}.{}s", fraction.trim_end_matches('0'))
    };
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

fn trim_fraction(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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
    fn durations_past_gos_int64_nanoseconds_are_refused() {
        assert_eq!(parse_go_duration("2562047h").unwrap(), Duration::from_secs(2562047 * 3600));
        assert!(parse_go_duration("2562048h").unwrap_err().contains("too large"));
        assert!(parse_go_duration("100000000h").unwrap_err().contains("too large"));
        assert!(parse_go_duration("99999999999999999999999999h").unwrap_err().contains("too large"));
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format_go_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(format_go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_go_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_go_duration(Duration::from_secs(3723)), "1h2m3s");
        assert_eq!(format_go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_go_duration(Duration::ZERO), "0s");
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
