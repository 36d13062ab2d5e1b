//! Go's duration syntax (`10s`, `1h30m`, `1.5h`, `300ms`), which upstream's flags use.

use std::time::Duration;

/// Parses a Go duration. Negative durations are refused (no flag of ours takes one).
pub fn parse_go_duration(input: &str) -> Result<Duration, String> {
    let s = input.trim();
    let err = |why: &str| format!("invalid duration {input:?}: {why} (use Go syntax such as 10s, 5m, 1h30m)");
    if s.is_empty() {
        return Err(err("empty"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.starts_with('-') {
        return Err(err("negative"));
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_len == 0 {
            return Err(err("expected a number"));
        }
        let value: f64 = rest[..number_len].parse().map_err(|_| err("bad number"))?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(err("missing unit")),
            _ => return Err(err("unknown unit")),
        };
        rest = &rest[unit_len..];
        total += value * seconds;
    }
    Ok(Duration::from_secs_f64(total))
}

/// A duration as Go prints one (`10m0s`, `1h2m3.5s`, `250ms`), as upstream's message does.
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
    fn go_durations() {
        assert_eq!(parse_go_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_go_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_go_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_go_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_go_duration("0s").unwrap(), Duration::ZERO);
        for bad in ["", "10", "10x", "-5s", "h", "1.2.3s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format_go_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(format_go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_go_duration(Duration::from_secs(30)), "30s");
    }

    #[test]
    fn go_duration_matches_go_formatting() {
        assert_eq!(format_go_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(format_go_duration(Duration::from_secs(3723)), "1h2m3s");
        assert_eq!(format_go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_go_duration(Duration::ZERO), "0s");
    }
}
