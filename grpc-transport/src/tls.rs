//! TLS settings from PEM files, checked when they are read so that a bad file is a start-up
//! error naming the file, not a handshake failure minutes later. tonic accepts PEM as it is but
//! silently skips CA certificates it cannot parse, so the PEM is checked here first.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("{}: cannot read the file: {message}", path.display())]
    Read { path: PathBuf, message: String },
    /// `what` names the file (or the role of in-memory PEM) and the expected content.
    #[error("{what}: {message}")]
    Pem { what: String, message: String },
    #[error("{0}")]
    Config(String),
}

/// A client's TLS: whom to trust, who it is (mutual TLS), and the name the server's certificate
/// must carry (a DNS name or an IP address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTls {
    /// PEM certificates of the CAs (or the self-signed server certificate) to trust.
    pub ca_pem: Vec<u8>,
    /// PEM certificate chain and private key presented to the server, for mutual TLS.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// Checked against the server certificate's names.
    pub server_name: String,
}

impl ClientTls {
    /// Reads and checks the PEM files; errors name the file that is wrong.
    pub fn from_files(
        ca: &Path,
        identity: Option<(&Path, &Path)>,
        server_name: impl Into<String>,
    ) -> Result<ClientTls, TlsError> {
        let ca_pem = read(ca)?;
        certificates(&ca_pem, &ca.display().to_string())?;
        let identity = match identity {
            Some((cert, key)) => {
                let cert_pem = read(cert)?;
                certificates(&cert_pem, &cert.display().to_string())?;
                let key_pem = read(key)?;
                private_key(&key_pem, &key.display().to_string())?;
                Some((cert_pem, key_pem))
            }
            None => None,
        };
        Ok(ClientTls { ca_pem, identity, server_name: server_name.into() })
    }

    /// Checks in-memory PEM (what [`ClientTls::from_files`] checks).
    pub fn check(&self) -> Result<(), TlsError> {
        certificates(&self.ca_pem, "CA certificate")?;
        if let Some((cert, key)) = &self.identity {
            certificates(cert, "client certificate")?;
            private_key(key, "client key")?;
        }
        Ok(())
    }

    pub fn to_tonic(&self) -> ClientTlsConfig {
        let mut config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .domain_name(self.server_name.clone());
        if let Some((cert, key)) = &self.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        config
    }
}

/// A server's TLS: its certificate chain and key, and when `client_ca_pem` is set, the CA client
/// certificates must be signed by (mutual TLS: clients without one are refused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    pub client_ca_pem: Option<Vec<u8>>,
}

impl ServerTls {
    pub fn from_files(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<ServerTls, TlsError> {
        let cert_pem = read(cert)?;
        certificates(&cert_pem, &cert.display().to_string())?;
        let key_pem = read(key)?;
        private_key(&key_pem, &key.display().to_string())?;
        let client_ca_pem = match client_ca {
            Some(path) => {
                let pem = read(path)?;
                certificates(&pem, &path.display().to_string())?;
                Some(pem)
            }
            None => None,
        };
        Ok(ServerTls { cert_pem, key_pem, client_ca_pem })
    }

    /// Checks the PEM (what [`ServerTls::from_files`] checks).
    pub fn check(&self) -> Result<(), TlsError> {
        certificates(&self.cert_pem, "server certificate")?;
        private_key(&self.key_pem, "server key")?;
        if let Some(ca) = &self.client_ca_pem {
            certificates(ca, "client CA certificate")?;
        }
        Ok(())
    }

    pub fn to_tonic(&self) -> ServerTlsConfig {
        let mut config = ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_pem, &self.key_pem));
        if let Some(ca) = &self.client_ca_pem {
            config = config.client_ca_root(Certificate::from_pem(ca)).client_auth_optional(false);
        }
        config
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read { path: path.to_path_buf(), message: e.to_string() })
}

/// At least one certificate, and nothing that fails to parse.
fn certificates(pem: &[u8], what: &str) -> Result<usize, TlsError> {
    let mut count = 0;
    for item in CertificateDer::pem_slice_iter(pem) {
        item.map_err(|e| TlsError::Pem { what: what.to_string(), message: format!("not a PEM certificate: {e}") })?;
        count += 1;
    }
    if count == 0 {
        return Err(TlsError::Pem {
            what: what.to_string(),
            message: "no PEM certificate (-----BEGIN CERTIFICATE-----) found".to_string(),
        });
    }
    Ok(count)
}

fn private_key(pem: &[u8], what: &str) -> Result<(), TlsError> {
    PrivateKeyDer::from_pem_slice(pem)
        .map(|_| ())
        .map_err(|e| TlsError::Pem { what: what.to_string(), message: format!("no usable PEM private key: {e}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap().self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn good_pem_files_are_read_and_bad_ones_are_named() {
        let (cert, key) = self_signed();
        let dir = tempfile::Builder::new().prefix("grpc-transport-tls-").tempdir().unwrap();
        let cert_path = dir.path().join("tls.crt");
        let key_path = dir.path().join("tls.key");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&cert_path, &cert).unwrap();
        std::fs::write(&key_path, &key).unwrap();
        std::fs::write(&junk, "hello").unwrap();

        let tls = ClientTls::from_files(&cert_path, Some((&cert_path, &key_path)), "localhost").unwrap();
        assert_eq!(tls.server_name, "localhost");
        assert!(tls.check().is_ok());
        assert!(ServerTls::from_files(&cert_path, &key_path, Some(&cert_path)).unwrap().check().is_ok());

        let error = ClientTls::from_files(&junk, None, "localhost").unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: no PEM certificate", junk.display())), "{error}");
        let error = ServerTls::from_files(&cert_path, &junk, None).unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: no usable PEM private key", junk.display())), "{error}");
        let missing = dir.path().join("missing.crt");
        let error = ClientTls::from_files(&missing, None, "x").unwrap_err();
        assert!(matches!(error, TlsError::Read { .. }), "{error}");
        // A key where a certificate belongs is not a certificate.
        let error = ClientTls::from_files(&key_path, None, "x").unwrap_err();
        assert!(error.to_string().contains("no PEM certificate"), "{error}");
    }
}
