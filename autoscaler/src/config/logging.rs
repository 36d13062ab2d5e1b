//! The controller's logging flags: klog's and component-base's, as upstream's binary has them
//! (Helm values commonly set `logtostderr`, `stderrthreshold`, `v`), mapped onto `tracing`.
//!
//! - `-v` / `--v=N`: 0–1 info, 2–4 debug, 5+ trace (`RUST_LOG` wins when set).
//! - `--logging-format=text|json`.
//! - `--logtostderr` (default true): as klog, logs go to stderr *instead of* files, so
//!   `--log-file` / `--log-dir` only take effect with `--logtostderr=false`.
//! - `--log-file=PATH`, or `--log-dir=DIR` (then `DIR/cluster-autoscaler.log`): the log file,
//!   appended to. With it, `--alsologtostderr` copies everything to stderr, and otherwise
//!   entries at or above `--stderrthreshold` (INFO, WARNING, ERROR, FATAL or 0–3; upstream sets
//!   INFO) are copied.
//! - `--skip-headers`: no timestamp, level or target before the message; `--add-dir-header`:
//!   the source file and line.
//! - Accepted with no effect here (documented): `--log-file-max-size` (no rotation: use
//!   logrotate or the container runtime), `--skip-log-headers`, `--one-output`,
//!   `--log-backtrace-at`, `--vmodule` (klog's per-file verbosity has no mapping onto Rust
//!   modules; use `RUST_LOG`), `--log-flush-frequency`, `--log-json-*` / `--log-text-*` buffer
//!   and split-stream options. klog's underscore spellings (`--log_dir`, `--log_file`, …) are
//!   accepted too.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, ValueEnum};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::writer::{BoxMakeWriter, MakeWriterExt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn duration(s: &str) -> Result<Duration, String> {
    cloudprovider::duration::parse_go_duration(s)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoggingFormat {
    Text,
    Json,
}

/// klog's severities, by name or number.
fn severity(s: &str) -> Result<Level, String> {
    match s.to_ascii_uppercase().as_str() {
        "INFO" | "0" => Ok(Level::INFO),
        "WARNING" | "1" => Ok(Level::WARN),
        "ERROR" | "2" | "FATAL" | "3" => Ok(Level::ERROR),
        _ => Err(format!("{s:?} is not a severity (INFO, WARNING, ERROR, FATAL or 0-3)")),
    }
}

#[derive(Args, Clone, Debug, PartialEq)]
#[command(next_help_heading = "Logging (klog)")]
pub struct LoggingFlags {
    /// Log verbosity (klog's `-v`): 0–1 info, 2–4 debug, 5+ trace.
    #[arg(long = "v", short = 'v', default_value_t = 0)]
    pub verbosity: u8,

    #[arg(long = "logging-format", value_enum, default_value = "text")]
    pub logging_format: LoggingFormat,

    /// Log to stderr instead of files.
    #[arg(long = "logtostderr", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub logtostderr: bool,

    /// With a log file, log to stderr as well.
    #[arg(long = "alsologtostderr", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub alsologtostderr: bool,

    /// With a log file, entries at or above this severity also go to stderr.
    #[arg(long = "stderrthreshold", default_value = "INFO", value_parser = severity)]
    pub stderrthreshold: Level,

    /// The log file (with --logtostderr=false).
    #[arg(long = "log-file", alias = "log_file", default_value = "")]
    pub log_file: String,

    /// The directory of the log file `cluster-autoscaler.log` (with --logtostderr=false and no
    /// --log-file).
    #[arg(long = "log-dir", alias = "log_dir", default_value = "")]
    pub log_dir: String,

    /// Accepted; no rotation here.
    #[arg(long = "log-file-max-size", alias = "log_file_max_size", default_value_t = 1800)]
    pub log_file_max_size: u64,

    /// No timestamp, level or target before messages.
    #[arg(long = "skip-headers", alias = "skip_headers", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_headers: bool,

    /// Accepted; no effect.
    #[arg(long = "skip-log-headers", alias = "skip_log_headers", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_log_headers: bool,

    /// The source file and line in each entry.
    #[arg(long = "add-dir-header", alias = "add_dir_header", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub add_dir_header: bool,

    /// Accepted; no effect.
    #[arg(long = "one-output", alias = "one_output", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub one_output: bool,

    /// Accepted; no effect.
    #[arg(long = "log-backtrace-at", alias = "log_backtrace_at", default_value = "")]
    pub log_backtrace_at: String,

    /// Accepted; no effect (use RUST_LOG for per-module levels).
    #[arg(long = "vmodule", default_value = "")]
    pub vmodule: String,

    /// Accepted; entries are written at once.
    #[arg(long = "log-flush-frequency", default_value = "5s", value_parser = duration)]
    pub log_flush_frequency: Duration,

    /// Accepted; no effect.
    #[arg(long = "log-json-info-buffer-size", default_value = "0")]
    pub log_json_info_buffer_size: String,

    /// Accepted; no effect.
    #[arg(long = "log-json-split-stream", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub log_json_split_stream: bool,

    /// Accepted; no effect.
    #[arg(long = "log-text-info-buffer-size", default_value = "0")]
    pub log_text_info_buffer_size: String,

    /// Accepted; no effect.
    #[arg(long = "log-text-split-stream", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub log_text_split_stream: bool,
}

impl LoggingFlags {
    /// The log file, when logs go to a file (klog: only with `--logtostderr=false`).
    pub fn log_file_path(&self) -> Option<PathBuf> {
        if self.logtostderr {
            return None;
        }
        if !self.log_file.is_empty() {
            return Some(PathBuf::from(&self.log_file));
        }
        (!self.log_dir.is_empty()).then(|| PathBuf::from(&self.log_dir).join("cluster-autoscaler.log"))
    }

    /// Installs the global subscriber. A log file that cannot be opened is an error naming it.
    pub fn init(&self) -> Result<(), String> {
        let level = match self.verbosity {
            0 | 1 => "info",
            2..=4 => "debug",
            _ => "trace",
        };
        // kube's HTTP layer logs every failed request as an ERROR ("failed with error …") naming
        // neither the request nor the server; our callers log the same failure with both, so
        // that layer is heard only from `-v 2` on.
        let directives =
            if level == "info" { format!("{level},kube_client::client::builder=off") } else { level.to_string() };
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(directives));
        let (writer, ansi) = match self.log_file_path() {
            None => (BoxMakeWriter::new(std::io::stderr), std::io::IsTerminal::is_terminal(&std::io::stderr())),
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| format!("--log-file / --log-dir: cannot open {}: {e}", path.display()))?;
                let file = std::sync::Mutex::new(file);
                let writer = if self.alsologtostderr {
                    BoxMakeWriter::new(file.and(std::io::stderr))
                } else {
                    BoxMakeWriter::new(file.and(std::io::stderr.with_max_level(self.stderrthreshold)))
                };
                (writer, false)
            }
        };
        let layer = match (self.logging_format, self.skip_headers) {
            (LoggingFormat::Json, _) => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
            (LoggingFormat::Text, true) => tracing_subscriber::fmt::layer()
                .without_time()
                .with_level(false)
                .with_target(false)
                .with_ansi(ansi)
                .with_writer(writer)
                .boxed(),
            (LoggingFormat::Text, false) => tracing_subscriber::fmt::layer()
                .with_file(self.add_dir_header)
                .with_line_number(self.add_dir_header)
                .with_ansi(ansi)
                .with_writer(writer)
                .boxed(),
        };
        // A second init (tests) keeps the first subscriber.
        let _ = tracing_subscriber::registry().with(layer.with_filter(filter)).try_init();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        logging: LoggingFlags,
    }

    fn parse(args: &[&str]) -> LoggingFlags {
        Cli::try_parse_from(std::iter::once("ca").chain(args.iter().copied())).unwrap().logging
    }

    #[test]
    fn helm_values_common_klog_flags_parse() {
        let flags = parse(&["--logtostderr=true", "--stderrthreshold=info", "--v=4", "--alsologtostderr"]);
        assert_eq!((flags.verbosity, flags.stderrthreshold, flags.alsologtostderr), (4, Level::INFO, true));
        let underscored = parse(&["--log_dir=/var/log", "--skip_headers", "--add_dir_header=false"]);
        assert_eq!(underscored.log_dir, "/var/log");
        assert!(underscored.skip_headers);
        assert!(Cli::try_parse_from(["ca", "--stderrthreshold=loud"]).is_err());
    }

    #[test]
    fn log_files_only_without_logtostderr_as_klog() {
        assert_eq!(parse(&["--log-file=/tmp/ca.log"]).log_file_path(), None);
        assert_eq!(
            parse(&["--log-file=/tmp/ca.log", "--logtostderr=false"]).log_file_path(),
            Some(PathBuf::from("/tmp/ca.log"))
        );
        assert_eq!(
            parse(&["--log-dir=/tmp/logs", "--logtostderr=false"]).log_file_path(),
            Some(PathBuf::from("/tmp/logs/cluster-autoscaler.log"))
        );
    }

    #[test]
    fn an_unwritable_log_file_is_an_error_naming_it() {
        let flags = parse(&["--log-file=/nonexistent/dir/ca.log", "--logtostderr=false"]);
        let error = flags.init().unwrap_err();
        assert!(error.contains("/nonexistent/dir/ca.log"), "{error}");
    }
}
