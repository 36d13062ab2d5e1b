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

/// Formats a duration the way Go prints it (`10m0s`, `1h0m0s`, `30s`, `1.5s`).
pub fn format_go_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let total = d.as_secs_f64();
    if total < 1.0 {
        return format!("{}ms", d.as_millis());
    }
    let hours = d.as_secs() / 3600;
    let minutes = (d.as_secs() % 3600) / 60;
    let seconds = total - (hours * 3600 + minutes * 60) as f64;
    let secs = if seconds.fract() == 0.0 { format!("{}s", seconds as u64) } else { format!("{seconds}s") };
    if hours > 0 {
        format!("{hours}h{minutes}m{secs}")
    } else if minutes > 0 {
        format!("{minutes}m{secs}")
    } else {
        secs
    }
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
}
