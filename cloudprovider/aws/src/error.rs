//! Errors: bad flags and files (exit 2), and AWS API failures mapped to the provider seam's
//! `CloudProviderError` with the AWS error code kept.

use std::fmt::Debug;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use thiserror::Error;

use cloudprovider::CloudProviderError;

#[derive(Debug, Error)]
pub enum ConfigError {
    /// A flag value that cannot be used.
    #[error("invalid {flag} value {value:?}: {reason}")]
    Flag { flag: &'static str, value: String, reason: String },

    /// The cloud-config file could not be read.
    #[error("cannot read cloud config {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },

    /// The cloud-config file is malformed: where (file, line, key) and what.
    #[error("{file}:{line}: {field}: {message}")]
    File { file: String, line: usize, field: String, message: String },

    /// Neither `--nodes` nor `--node-group-auto-discovery` names any ASG.
    #[error(
        "--cloud-provider=aws needs node groups: --nodes=<min>:<max>:<asg-name> or --node-group-auto-discovery=asg:tag=<key>[=<value>],…"
    )]
    NoGroups,
}

/// An AWS API failure as the seam reports it: the AWS error code (`ValidationError`,
/// `Throttling`, …) in `code`, and a message naming the operation.
pub(crate) fn api_error<E, R>(operation: &str, error: SdkError<E, R>) -> CloudProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: Debug,
{
    let code = error.code().map(str::to_string);
    let message = match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{operation}: {code}: {message}"),
        (Some(code), None) => format!("{operation}: {code}"),
        _ => format!("{operation}: {}", DisplayErrorContext(&error)),
    };
    CloudProviderError::Cloud { code, message }
}

/// The label value of `aws_request_duration_seconds{status}`: `success`, or the AWS error code,
/// or `error` when there is none (upstream's values).
pub(crate) fn status_label(code: Option<&str>, failed: bool) -> String {
    match (failed, code) {
        (false, _) => "success".to_string(),
        (true, Some(code)) if !code.is_empty() => code.to_string(),
        (true, _) => "error".to_string(),
    }
}
