//! The `--cloud-config` file of `--cloud-provider=externalgrpc`, upstream's format:
//!
//! ```yaml
//! address: provider.kube-system.svc:8086   # host:port or [v6]:port; required
//! cert: /etc/ca-grpc/tls.crt               # client certificate: set => mutual TLS
//! key: /etc/ca-grpc/tls.key                # its key (required with cert)
//! cacert: /etc/ca-grpc/ca.crt              # CA of the server's certificate (required with cert)
//! grpc_timeout: 5s                         # per-call deadline, a Go duration; default 5s
//! ```
//!
//! Without `cert` the connection is plaintext HTTP/2 (upstream ignores `key` and `cacert` then;
//! so do we, with a warning). With it, the server's certificate must be signed by `cacert` and
//! name the host part of `address` (as upstream checks it). Unknown keys are errors; every error
//! names the file, the line when known, and the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cloudprovider::duration::parse_go_duration;
use cloudprovider::yaml::{FileError, from_str, line_of};
use grpc_transport::ClientTls;
use serde::Deserialize;
use serde_saphyr::Spanned;

/// Upstream's default per-call deadline.
pub const DEFAULT_GRPC_TIMEOUT: Duration = Duration::from_secs(5);

/// The file as written; values later checks talk about keep their line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    address: Option<Spanned<String>>,
    #[serde(default)]
    key: Option<Spanned<String>>,
    #[serde(default)]
    cert: Option<Spanned<String>>,
    #[serde(default)]
    cacert: Option<Spanned<String>>,
    #[serde(default)]
    grpc_timeout: Option<Spanned<String>>,
}

const SPANNED_KEYS: &[&str] = &["address", "key", "cert", "cacert", "grpc_timeout"];

/// A checked configuration: the address parses, the TLS files exist and hold PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalGrpcConfig {
    /// `host:port`, as written.
    pub address: String,
    /// Mutual TLS, when `cert` is set.
    pub tls: Option<ClientTls>,
    /// Deadline of every call.
    pub grpc_timeout: Duration,
}

impl ExternalGrpcConfig {
    /// Reads and checks `path` (local files only: no network).
    pub fn from_file(path: &Path) -> Result<ExternalGrpcConfig, FileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FileError::new(&file, "", None, e.to_string()))?;
        ExternalGrpcConfig::from_yaml_str(&text, &file)
    }

    /// Reads `text` (the file `file`). Certificate paths are read as written: relative ones
    /// from the process's working directory, as upstream does.
    pub fn from_yaml_str(text: &str, file: &str) -> Result<ExternalGrpcConfig, FileError> {
        // An empty file is an empty map, so the message is about the missing address.
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig { address: None, key: None, cert: None, cacert: None, grpc_timeout: None }
        } else {
            from_str(text, file, SPANNED_KEYS)?
        };
        let error = |field: &str, value: Option<&Spanned<String>>, message: String| {
            FileError::new(file, field, value.and_then(line_of), message)
        };
        let address = match &raw.address {
            Some(address) if !address.value.trim().is_empty() => address,
            _ => {
                return Err(error(
                    "address",
                    raw.address.as_ref(),
                    "required: the provider service's host:port (or [v6]:port)".to_string(),
                ));
            }
        };
        let host = grpc_transport::host_of(&address.value)
            .map_err(|e| error("address", Some(address), e.to_string()))?
            .to_string();
        let grpc_timeout = match &raw.grpc_timeout {
            None => DEFAULT_GRPC_TIMEOUT,
            Some(timeout) => {
                let parsed = parse_go_duration(&timeout.value).map_err(|e| error("grpc_timeout", Some(timeout), e))?;
                if parsed.is_zero() {
                    return Err(error(
                        "grpc_timeout",
                        Some(timeout),
                        "must be positive (every call would fail at once)".to_string(),
                    ));
                }
                parsed
            }
        };
        let set = |value: &Option<Spanned<String>>| value.as_ref().filter(|v| !v.value.is_empty()).cloned();
        let tls = match set(&raw.cert) {
            None => {
                for (field, value) in [("key", &raw.key), ("cacert", &raw.cacert)] {
                    if set(value).is_some() {
                        tracing::warn!(
                            "{file}: {field} is ignored without cert: the connection to {} is plaintext, as upstream's",
                            address.value
                        );
                    }
                }
                None
            }
            Some(cert) => {
                let key = set(&raw.key).ok_or_else(|| {
                    error("key", Some(&cert), "required with cert: the client certificate's private key".to_string())
                })?;
                let cacert = set(&raw.cacert).ok_or_else(|| {
                    error("cacert", Some(&cert), "required with cert: the CA of the server's certificate".to_string())
                })?;
                let tls = ClientTls::from_files(
                    &PathBuf::from(&cacert.value),
                    Some((&PathBuf::from(&cert.value), &PathBuf::from(&key.value))),
                    host,
                );
                // The message names the file that is wrong; point at the key that names it.
                Some(tls.map_err(|e| {
                    let (field, value) = if e.to_string().starts_with(&format!("{}:", cacert.value)) {
                        ("cacert", &cacert)
                    } else if e.to_string().starts_with(&format!("{}:", key.value)) {
                        ("key", &key)
                    } else {
                        ("cert", &cert)
                    };
                    error(field, Some(value), e.to_string())
                })?)
            }
        };
        Ok(ExternalGrpcConfig { address: address.value.clone(), tls, grpc_timeout })
    }
}
