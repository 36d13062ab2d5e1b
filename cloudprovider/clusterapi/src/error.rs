//! Errors: bad flags and files (exit 2), and management-cluster API failures mapped to the seam's
//! `CloudProviderError` with the API server's reason kept as the code.

use std::path::PathBuf;

use thiserror::Error;

use cloudprovider::CloudProviderError;

#[derive(Debug, Error)]
pub enum ConfigError {
    /// A flag value that cannot be used.
    #[error("invalid {flag} value {value:?}: {reason}")]
    Flag { flag: &'static str, value: String, reason: String },

    /// `--cloud-config` is not a kubeconfig this provider can use.
    #[error("--cloud-config {}: {message}", path.display())]
    Kubeconfig { path: PathBuf, message: String },
}

/// The management cluster could not be reached or refused a call: where, and the API server's
/// answer. The code is the API server's `reason` (`NotFound`, `Conflict`, …) when it gave one.
pub(crate) fn api_error(what: &str, error: kube::Error) -> CloudProviderError {
    match error {
        kube::Error::Api(status) => {
            let code = (!status.reason.is_empty()).then(|| status.reason.clone());
            CloudProviderError::Cloud { code, message: format!("{what}: {} ({})", status.message, status.code) }
        }
        other => CloudProviderError::Cloud { code: None, message: format!("{what}: {other}") },
    }
}

/// Whether the API server answered 409 Conflict (a stale resourceVersion).
pub(crate) fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}
