//! The IaaS API over HTTP: one method per call the provider makes, each bounded by the
//! configured timeout, each failure an [`IaasError`] naming the method, the URL and what went
//! wrong (status and the API's message).
//!
//! Why hyper-util's legacy client and not reqwest: it and hyper-rustls are already in the
//! dependency tree through kube with the TLS stack we want (rustls over aws-lc-rs: no OpenSSL, no
//! ring), so this provider adds no crate to the build. reqwest would add itself and its own
//! feature set to audit, for conveniences (JSON helpers, redirects, cookies) a dozen-call API
//! client does not need. A platform team with a generated client for its API uses that instead.
//!
//! Authentication goes in [`IaasClient::send`] (a token header, say), the one place every request
//! passes through.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cloudprovider::CloudProviderError;
use cloudprovider::duration::format_go_duration;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls_pki_types::CertificateDer;
use serde::de::DeserializeOwned;

use crate::api::{CreateVm, ErrorBody, Flavor, FlavorList, ImageList, Pool, PoolList, Vm, VmList};

/// Answers above this size are refused rather than buffered.
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// How many times a `GET` whose connection broke is sent again (see [`IaasClient::send`]).
const GET_RETRIES: u32 = 2;

/// A failed call. `Display` gives the method, the URL and the cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IaasError {
    /// No answer within the timeout (the request may still have been carried out).
    #[error("{method} {url}: no answer within {timeout}")]
    Timeout { method: Method, url: String, timeout: String },
    /// The request did not reach the API (connection refused, DNS, TLS…): nothing was done.
    #[error("{method} {url}: {message}")]
    Unreachable { method: Method, url: String, message: String },
    /// The connection broke after the request was sent, before the whole answer came: the
    /// request may have been carried out.
    #[error("{method} {url}: connection lost: {message}")]
    ConnectionLost { method: Method, url: String, message: String },
    /// The API answered with an error status.
    #[error("{method} {url}: {status}: {message}")]
    Status { method: Method, url: String, status: StatusCode, code: Option<String>, message: String },
    /// The API answered something this client does not understand.
    #[error("{method} {url}: unexpected answer: {message}")]
    Decode { method: Method, url: String, message: String },
}

impl IaasError {
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            IaasError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether the request may have been carried out although the call failed.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            IaasError::Timeout { .. } | IaasError::ConnectionLost { .. } | IaasError::Decode { .. } => true,
            IaasError::Status { status, .. } => status.is_server_error(),
            IaasError::Unreachable { .. } => false,
        }
    }
}

impl From<IaasError> for CloudProviderError {
    /// `code` is the API's error code when it sent one, else the HTTP status, `Timeout`,
    /// `Unreachable`, `ConnectionLost` or `BadAnswer`.
    fn from(error: IaasError) -> CloudProviderError {
        let code = match &error {
            IaasError::Status { code: Some(code), .. } => code.clone(),
            IaasError::Status { status, .. } => status.as_u16().to_string(),
            IaasError::Timeout { .. } => "Timeout".to_string(),
            IaasError::Unreachable { .. } => "Unreachable".to_string(),
            IaasError::ConnectionLost { .. } => "ConnectionLost".to_string(),
            IaasError::Decode { .. } => "BadAnswer".to_string(),
        };
        CloudProviderError::Cloud { code: Some(code), message: error.to_string() }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot set up the IaaS client: {0}")]
pub struct ClientSetupError(String);

#[derive(Clone)]
pub struct IaasClient {
    endpoint: String,
    timeout: Duration,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for IaasClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IaasClient").field("endpoint", &self.endpoint).field("timeout", &self.timeout).finish()
    }
}

impl IaasClient {
    /// A client for `endpoint` (`http(s)://host[:port][/prefix]`) trusting the system's CA
    /// certificates plus `extra_roots`. Reads the system's certificates; connects to nothing.
    pub fn new(
        endpoint: &str,
        timeout: Duration,
        extra_roots: &[CertificateDer<'static>],
    ) -> Result<IaasClient, ClientSetupError> {
        let mut roots = rustls::RootCertStore::empty();
        // Unreadable system certificates are not fatal: an http endpoint or a `caFile` needs none.
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        for certificate in extra_roots {
            roots.add(certificate.clone()).map_err(|e| ClientSetupError(format!("caFile: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientSetupError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let http = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(IaasClient { endpoint: endpoint.trim_end_matches('/').to_string(), timeout, http })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub async fn flavors(&self) -> Result<Vec<Flavor>, IaasError> {
        Ok(self.call::<FlavorList>(Method::GET, "/v1/flavors", None).await?.flavors)
    }

    pub async fn images(&self) -> Result<Vec<String>, IaasError> {
        Ok(self.call::<ImageList>(Method::GET, "/v1/images", None).await?.images.into_iter().map(|i| i.name).collect())
    }

    pub async fn pools(&self) -> Result<Vec<Pool>, IaasError> {
        Ok(self.call::<PoolList>(Method::GET, "/v1/pools", None).await?.pools)
    }

    pub async fn vms(&self, pool: &str) -> Result<Vec<Vm>, IaasError> {
        Ok(self.call::<VmList>(Method::GET, &format!("/v1/pools/{pool}/vms"), None).await?.vms)
    }

    /// One VM; `None` when the API says it does not exist (any more).
    pub async fn vm(&self, pool: &str, id: &str) -> Result<Option<Vm>, IaasError> {
        match self.call::<Vm>(Method::GET, &format!("/v1/pools/{pool}/vms/{id}"), None).await {
            Ok(vm) => Ok(Some(vm)),
            Err(e) if e.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn create_vm(&self, pool: &str, request: &CreateVm) -> Result<Vm, IaasError> {
        let url = format!("/v1/pools/{pool}/vms");
        let body = serde_json::to_vec(request).map_err(|e| IaasError::Decode {
            method: Method::POST,
            url: format!("{}{url}", self.endpoint),
            message: format!("cannot encode the request: {e}"),
        })?;
        self.call(Method::POST, &url, Some(body)).await
    }

    /// Starts deleting a VM; `None` when it was already gone.
    pub async fn delete_vm(&self, pool: &str, id: &str) -> Result<Option<Vm>, IaasError> {
        match self.call::<Vm>(Method::DELETE, &format!("/v1/pools/{pool}/vms/{id}"), None).await {
            Ok(vm) => Ok(Some(vm)),
            Err(e) if e.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, IaasError> {
        let url = format!("{}{path}", self.endpoint);
        let sent = tokio::time::timeout(self.timeout, self.send(method.clone(), &url, body)).await;
        let (status, bytes) = match sent {
            Ok(result) => result?,
            Err(_elapsed) => {
                return Err(IaasError::Timeout { method, url, timeout: format_go_duration(self.timeout) });
            }
        };
        if !status.is_success() {
            let (code, message) = match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(body) => (Some(body.error.code), body.error.message),
                Err(_) => (None, String::from_utf8_lossy(&bytes).chars().take(200).collect()),
            };
            return Err(IaasError::Status { method, url, status, code, message });
        }
        serde_json::from_slice(&bytes).map_err(|e| IaasError::Decode { method, url, message: e.to_string() })
    }

    /// Sends one request and reads the whole answer (at most [`MAX_ANSWER_BYTES`]). A `GET`
    /// whose connection broke is sent again, at most [`GET_RETRIES`] times: a kept-alive
    /// connection the API closed while idle fails the next request sent on it before the client
    /// has seen the close (as Go's `net/http` does for idempotent requests). Other methods are
    /// not sent twice: their first attempt may have been carried out.
    async fn send(&self, method: Method, url: &str, body: Option<Vec<u8>>) -> Result<(StatusCode, Bytes), IaasError> {
        let body = Bytes::from(body.unwrap_or_default());
        let mut attempt = 0;
        loop {
            match self.send_once(method.clone(), url, body.clone()).await {
                Err(IaasError::ConnectionLost { .. }) if method == Method::GET && attempt < GET_RETRIES => {
                    attempt += 1;
                }
                answer => return answer,
            }
        }
    }

    async fn send_once(&self, method: Method, url: &str, body: Bytes) -> Result<(StatusCode, Bytes), IaasError> {
        let unreachable =
            |message: String| IaasError::Unreachable { method: method.clone(), url: url.to_string(), message };
        let lost =
            |message: String| IaasError::ConnectionLost { method: method.clone(), url: url.to_string(), message };
        let mut request = Request::builder().method(method.clone()).uri(url).header(header::ACCEPT, "application/json");
        if !body.is_empty() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request.body(Full::new(body)).map_err(|e| unreachable(format!("invalid request: {e}")))?;
        // Only a failure to connect proves the request was never sent.
        let response = self
            .http
            .request(request)
            .await
            .map_err(|e| if e.is_connect() { unreachable(error_chain(&e)) } else { lost(error_chain(&e)) })?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<LengthLimitError>() {
                    IaasError::Decode {
                        method: method.clone(),
                        url: url.to_string(),
                        message: format!("an answer larger than {} MiB", MAX_ANSWER_BYTES >> 20),
                    }
                } else {
                    lost(format!("reading the answer: {e}"))
                }
            })?
            .to_bytes();
        Ok((status, bytes))
    }
}

/// An error and its causes, `a: b: c` (hyper's own message is only "client error (Connect)").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A server on a free local port that reads each request and then does `answer` with the
    /// connection; returns its URL and how many connections it accepted.
    async fn raw_server(answer: &'static [u8], body_bytes: usize) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut request = vec![0u8; 64 << 10];
                let _ = socket.read(&mut request).await;
                let _ = socket.write_all(answer).await;
                let _ = socket.write_all(&vec![b' '; body_bytes]).await;
                // Dropping the socket closes the connection.
            }
        });
        (url, accepted)
    }

    fn client(url: &str) -> IaasClient {
        IaasClient::new(url, Duration::from_secs(10), &[]).unwrap()
    }

    #[tokio::test]
    async fn a_get_whose_connection_breaks_is_sent_again_a_few_times() {
        let (url, accepted) = raw_server(b"", 0).await;
        let error = client(&url).pools().await.unwrap_err();
        assert!(matches!(error, IaasError::ConnectionLost { .. }), "{error:?}");
        assert!(error.to_string().starts_with(&format!("GET {url}/v1/pools: connection lost: ")), "{error}");
        assert!(error.outcome_unknown());
        assert_eq!(accepted.load(Ordering::SeqCst), 1 + GET_RETRIES as usize);
        let CloudProviderError::Cloud { code, .. } = CloudProviderError::from(error) else { panic!() };
        assert_eq!(code.as_deref(), Some("ConnectionLost"));
    }

    #[tokio::test]
    async fn a_create_whose_connection_breaks_is_not_sent_again_and_may_have_happened() {
        // Half an answer: the status line came, the connection broke in the headers.
        let (url, accepted) = raw_server(b"HTTP/1.1 200 OK\r\nContent-Le", 0).await;
        let request = CreateVm { name: Some("compute-1".into()), image: "ubuntu".into(), flavor: "m1".into() };
        let error = client(&url).create_vm("compute", &request).await.unwrap_err();
        assert!(matches!(error, IaasError::ConnectionLost { .. }), "{error:?}");
        assert!(error.outcome_unknown());
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_refused_connection_is_unreachable_and_nothing_was_done() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let error = client(&url).pools().await.unwrap_err();
        assert!(matches!(error, IaasError::Unreachable { .. }), "{error:?}");
        assert!(error.to_string().to_lowercase().contains("connection refused"), "{error}");
        assert!(!error.outcome_unknown());
    }

    #[tokio::test]
    async fn an_answer_past_the_size_limit_is_refused_as_a_bad_answer() {
        const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16777217\r\n\r\n";
        let (url, _) = raw_server(HEAD, MAX_ANSWER_BYTES + 1).await;
        let error = client(&url).pools().await.unwrap_err();
        assert!(matches!(error, IaasError::Decode { .. }), "{error:?}");
        assert!(error.to_string().ends_with("unexpected answer: an answer larger than 16 MiB"), "{error}");
    }
}
