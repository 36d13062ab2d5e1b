//! Classifying kube-rs errors into the ports' errors.

use crate::ports::PortError;

/// The HTTP status of an API error, if the error is one.
pub(crate) fn api_status(error: &::kube::Error) -> Option<u16> {
    match error {
        ::kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// 404 → `NotFound`, 409 → `Conflict`; overload (429, 503, 504) and lost connections →
/// `Transient` (try again next loop); anything else → `Api`.
pub(crate) fn port_error(error: ::kube::Error, kind: &str, name: &str) -> PortError {
    match &error {
        ::kube::Error::Api(status) => match status.code {
            404 => PortError::NotFound { kind: kind.into(), name: name.into() },
            409 => PortError::Conflict { kind: kind.into(), name: name.into() },
            429 | 503 | 504 => {
                PortError::Transient(format!("{kind} {name}: {} (HTTP {})", status.message, status.code))
            }
            code => PortError::Api(format!("{kind} {name}: {} (HTTP {code})", status.message)),
        },
        ::kube::Error::HyperError(_) | ::kube::Error::Service(_) | ::kube::Error::ReadEvents(_) => {
            PortError::Transient(format!("{kind} {name}: {error}"))
        }
        _ => PortError::Api(format!("{kind} {name}: {error}")),
    }
}
