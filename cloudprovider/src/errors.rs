//! Errors a cloud provider returns, classified like upstream's `AutoscalerError` types.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CloudProviderError {
    /// An optional method the provider does not implement (upstream `ErrNotImplemented`).
    #[error("Not implemented")]
    NotImplemented,
    /// Upstream `ErrAlreadyExist`.
    #[error("Already exist")]
    AlreadyExist,
    /// Upstream `ErrIllegalConfiguration`.
    #[error("Configuration not allowed by cloud provider")]
    IllegalConfiguration,
    #[error("node group {0} does not exist")]
    NodeGroupDoesNotExist(String),
    /// A request the provider refuses, e.g. a size outside [min, max] or a node of another group.
    #[error("{0}")]
    InvalidRequest(String),
    /// The cloud API failed; `code` is the provider's error code when it has one.
    #[error("{message}")]
    Cloud { code: Option<String>, message: String },
    /// Bad provider configuration (cloud-config file, flags).
    #[error("{0}")]
    Configuration(String),
}

impl CloudProviderError {
    pub fn cloud(message: impl Into<String>) -> Self {
        CloudProviderError::Cloud { code: None, message: message.into() }
    }

    /// Upstream's `AutoscalerErrorType` string, used in `errors_total{type}` and logs.
    pub fn error_type(&self) -> &'static str {
        match self {
            CloudProviderError::NotImplemented
            | CloudProviderError::AlreadyExist
            | CloudProviderError::IllegalConfiguration => "internalError",
            CloudProviderError::NodeGroupDoesNotExist(_) => "nodeGroupDoesNotExistError",
            CloudProviderError::InvalidRequest(_) | CloudProviderError::Cloud { .. } => "cloudProviderError",
            CloudProviderError::Configuration(_) => "configurationError",
        }
    }

    pub fn is_not_implemented(&self) -> bool {
        matches!(self, CloudProviderError::NotImplemented)
    }
}

pub type Result<T, E = CloudProviderError> = std::result::Result<T, E>;
