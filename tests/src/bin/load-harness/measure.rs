//! What the harness reads off the controller: its memory (`/proc`), its own histogram of
//! iteration times (`/metrics`) and its `scale-up` log lines.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde_json::Value;

/// Resident memory of a process from `/proc/<pid>/status`: `VmRSS` now and `VmHWM` (the peak
/// since it started), in bytes. `None` once the process is gone.
pub fn process_memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some((status_kib(&status, "VmRSS:")? * 1024, status_kib(&status, "VmHWM:")? * 1024))
}

/// `MemAvailable` of the machine, in bytes: what the harness watches to stop before the kernel
/// runs out of memory (the machine has no swap, and it is shared).
pub fn machine_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    status_kib(&meminfo, "MemAvailable:").map(|kib| kib * 1024)
}

fn status_kib(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One histogram series of the Prometheus text format: cumulative counts by upper bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `(le, cumulative count)`, in increasing `le` (the last one is `+Inf`).
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum: f64,
}

impl Histogram {
    /// The series `<name>{<label>="<value>"}` of a histogram family, from `/metrics` text.
    pub fn parse(text: &str, name: &str, label: (&str, &str)) -> Option<Histogram> {
        let wanted = format!("{}=\"{}\"", label.0, label.1);
        let mut histogram = Histogram::default();
        let mut found = false;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else { continue };
            let (metric, labels) = series.split_once('{').unwrap_or((series, ""));
            if !labels.split(',').any(|l| l.trim_end_matches('}') == wanted) {
                continue;
            }
            let Ok(value) = value.parse::<f64>() else { continue };
            match metric.strip_prefix(name) {
                Some("_bucket") => {
                    let le = labels.split(',').find_map(|l| l.trim_end_matches('}').strip_prefix("le=\""));
                    let Some(le) = le.map(|l| l.trim_end_matches('"')) else { continue };
                    let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
                    histogram.buckets.push((le, value as u64));
                    found = true;
                }
                Some("_count") => histogram.count = value as u64,
                Some("_sum") => histogram.sum = value,
                _ => {}
            }
        }
        histogram.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.then_some(histogram)
    }

    /// The observations made since `earlier` (a scrape of the same series).
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let before: BTreeMap<u64, u64> = earlier.buckets.iter().map(|(le, c)| (le.to_bits(), *c)).collect();
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|(le, c)| (*le, c.saturating_sub(before.get(&le.to_bits()).copied().unwrap_or(0))))
                .collect(),
            count: self.count.saturating_sub(earlier.count),
            sum: self.sum - earlier.sum,
        }
    }

    /// The `q` quantile, interpolated linearly inside its bucket as Prometheus's
    /// `histogram_quantile` does; `None` without observations. Past the last finite bound the
    /// answer is that bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total == 0 {
            return None;
        }
        let rank = q * total as f64;
        let (mut lower, mut below) = (0.0, 0u64);
        for &(le, count) in &self.buckets {
            if count as f64 >= rank {
                if le.is_infinite() {
                    return Some(lower);
                }
                let inside = (count - below) as f64;
                let fraction = if inside > 0.0 { (rank - below as f64) / inside } else { 1.0 };
                return Some(lower + (le - lower) * fraction);
            }
            lower = le;
            below = count;
        }
        Some(lower)
    }
}

/// The value of a sample with exactly this series name and labels (`name{a="b"}`), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A node group call as the controller logs it (`--logging-format=json`): the `scale-up` line
/// `log_report` writes for each `IncreaseSize` of an iteration, at the time in its `called_at`
/// field (when the calls had returned; the line itself is written when the iteration ends).
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleUp {
    pub at: Timestamp,
    pub group: String,
    pub from: usize,
    pub to: usize,
}

/// Follows the controller's log file as it grows.
pub struct LogTail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl LogTail {
    /// A tail from the file's current end: only lines written from now on are read.
    pub fn from_end(path: &Path) -> LogTail {
        let offset = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        LogTail { path: path.to_path_buf(), offset, partial: String::new() }
    }

    /// The complete lines written since the last call.
    pub fn lines(&mut self) -> Vec<String> {
        let Ok(mut file) = std::fs::File::open(&self.path) else { return Vec::new() };
        let mut new = String::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err() || file.read_to_string(&mut new).is_err() {
            return Vec::new();
        }
        self.offset += new.len() as u64;
        self.partial.push_str(&new);
        let Some(end) = self.partial.rfind('\n') else { return Vec::new() };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        complete.lines().map(str::to_string).collect()
    }

    /// The `scale-up` lines among the lines written since the last call.
    pub fn scale_ups(&mut self) -> Vec<ScaleUp> {
        self.lines().iter().filter_map(|l| parse_scale_up(l)).collect()
    }
}

fn parse_scale_up(line: &str) -> Option<ScaleUp> {
    let value: Value = serde_json::from_str(line).ok()?;
    let fields = value.get("fields")?;
    if fields.get("message")?.as_str()? != "scale-up" {
        return None;
    }
    // A controller older than `called_at`: the line's own time, an upper bound.
    let at = fields.get("called_at").and_then(Value::as_str).filter(|t| !t.is_empty());
    Some(ScaleUp {
        at: at.or(value.get("timestamp")?.as_str())?.parse().ok()?,
        group: fields.get("group")?.as_str()?.to_string(),
        from: usize::try_from(fields.get("from")?.as_u64()?).ok()?,
        to: usize::try_from(fields.get("to")?.as_u64()?).ok()?,
    })
}

/// The `q` quantile of some samples (nearest rank); `None` when there are none.
pub fn nearest_rank(samples: &[f64], q: f64) -> Option<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "\
# TYPE cluster_autoscaler_function_duration_seconds histogram
cluster_autoscaler_function_duration_seconds_sum{function=\"main\"} 3.5
cluster_autoscaler_function_duration_seconds_count{function=\"main\"} 4
cluster_autoscaler_function_duration_seconds_bucket{le=\"1.0\",function=\"main\"} 1
cluster_autoscaler_function_duration_seconds_bucket{le=\"2.0\",function=\"main\"} 3
cluster_autoscaler_function_duration_seconds_bucket{le=\"+Inf\",function=\"main\"} 4
cluster_autoscaler_function_duration_seconds_bucket{le=\"1.0\",function=\"mainSuccessful\"} 0
";

    #[test]
    fn histogram_quantiles_interpolate_inside_the_bucket() {
        let h =
            Histogram::parse(METRICS, "cluster_autoscaler_function_duration_seconds", ("function", "main")).unwrap();
        assert_eq!(h.buckets, vec![(1.0, 1), (2.0, 3), (f64::INFINITY, 4)]);
        assert_eq!(h.count, 4);
        // Rank 2 of 4 is halfway through the (1, 2] bucket.
        assert_eq!(h.quantile(0.5), Some(1.5));
        // Past the last finite bound: that bound.
        assert_eq!(h.quantile(0.95), Some(2.0));
        let earlier = Histogram { buckets: vec![(1.0, 1), (2.0, 1), (f64::INFINITY, 1)], count: 1, sum: 0.5 };
        assert_eq!(h.since(&earlier).buckets, vec![(1.0, 0), (2.0, 2), (f64::INFINITY, 3)]);
    }

    #[test]
    fn scale_up_lines_are_read_from_json_logs() {
        let line = r#"{"timestamp":"2026-11-24T16:49:16.123456Z","level":"INFO","fields":{"message":"scale-up","group":"general","from":10,"to":42},"target":"autoscaler::run"}"#;
        let up = parse_scale_up(line).unwrap();
        assert_eq!((up.group.as_str(), up.from, up.to), ("general", 10, 42));
        assert_eq!(up.at.to_string(), "2026-11-24T16:49:16.123456Z");
        // With the time of the call: that time, not the line's.
        let line = r#"{"timestamp":"2026-11-24T16:49:16.9Z","level":"INFO","fields":{"message":"scale-up","group":"general","from":10,"to":42,"called_at":"2026-11-24T16:49:16.25Z"},"target":"autoscaler::run"}"#;
        assert_eq!(parse_scale_up(line).unwrap().at.to_string(), "2026-11-24T16:49:16.25Z");
        assert!(parse_scale_up(r#"{"fields":{"message":"node removed"}}"#).is_none());
    }

    #[test]
    fn nearest_rank_quantiles() {
        let samples = [3.0, 1.0, 2.0, 4.0];
        assert_eq!(nearest_rank(&samples, 0.5), Some(2.0));
        assert_eq!(nearest_rank(&samples, 0.95), Some(4.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }
}
