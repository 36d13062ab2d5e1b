//! Upstream Cluster Autoscaler's gRPC expander protocol (`grpcplugin.Expander/BestOptions`),
//! wire-compatible with upstream's client and with expander services written for it:
//!
//! - [`GrpcExpanderClient`]: the backend of `--expander=grpc` (`--grpc-expander-url`,
//!   `--grpc-expander-cert`), an [`expander::ExternalExpander`] the expander chain calls
//!   synchronously. As upstream's client: TLS is required (the certificate file is the CA, or
//!   the server's own certificate, to trust; the server name is the URL's host), each call has a
//!   5 s deadline and may receive up to 128 MiB, options carry their pods and the request
//!   carries each group's template Node, both Kubernetes-protobuf encoded.
//! - [`server`]: the generated service, to implement an expander service in Rust (tests use it).
//!
//! What the chain does with the answer (failures and unknown ids pass everything, an empty
//! answer keeps nothing) is in `expander::external`, so it does not depend on the transport.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use expander::{ExpansionOption, ExternalExpander};
use grpc_transport::{BlockingBridge, ClientTls, code_text, request_with_deadline, with_deadline};
use tonic::transport::Channel;

/// The generated messages, client and server.
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("grpcplugin");
}

use proto::expander_client::ExpanderClient;

/// Upstream's per-call deadline.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Upstream's largest answer.
pub const MAX_RECEIVE_BYTES: usize = 128 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcExpanderError {
    #[error("--expander=grpc needs --grpc-expander-cert: insecure connections are not allowed (as upstream)")]
    MissingCert,
    #[error("--expander=grpc needs --grpc-expander-url (host:port of the expander service)")]
    MissingUrl,
    #[error("--grpc-expander-cert={path}: {message}")]
    Cert { path: String, message: String },
    #[error("--grpc-expander-url={url}: {message}")]
    Url { url: String, message: String },
    #[error("gRPC expander client: {0}")]
    Start(String),
}

/// The client of an expander service. Connects on the first call.
#[derive(Debug)]
pub struct GrpcExpanderClient {
    url: String,
    client: ExpanderClient<Channel>,
    timeout: Duration,
    bridge: BlockingBridge,
}

impl GrpcExpanderClient {
    /// A client of `url` (`host:port`, or gRPC's `dns:///host:port`) trusting the PEM
    /// certificates in `cert_file`. Reads the file; does not connect.
    pub fn new(url: &str, cert_file: &str) -> Result<GrpcExpanderClient, GrpcExpanderError> {
        if cert_file.is_empty() {
            return Err(GrpcExpanderError::MissingCert);
        }
        if url.is_empty() {
            return Err(GrpcExpanderError::MissingUrl);
        }
        let address = url.strip_prefix("dns:///").unwrap_or(url);
        let url_error = |message: String| GrpcExpanderError::Url { url: url.to_string(), message };
        let host = grpc_transport::host_of(address).map_err(|e| url_error(e.to_string()))?;
        let tls = ClientTls::from_files(Path::new(cert_file), None, host)
            .map_err(|e| GrpcExpanderError::Cert { path: cert_file.to_string(), message: e.to_string() })?;
        let bridge = BlockingBridge::start("grpc-expander").map_err(|e| GrpcExpanderError::Start(e.to_string()))?;
        let channel = {
            let _runtime = bridge.handle().enter();
            grpc_transport::lazy_channel(address, Some(&tls), CALL_TIMEOUT).map_err(|e| url_error(e.to_string()))?
        };
        let client = ExpanderClient::new(channel).max_decoding_message_size(MAX_RECEIVE_BYTES);
        Ok(GrpcExpanderClient { url: url.to_string(), client, timeout: CALL_TIMEOUT, bridge })
    }

    /// Another deadline than upstream's 5 s (tests).
    pub fn with_timeout(mut self, timeout: Duration) -> GrpcExpanderClient {
        self.timeout = timeout;
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The request for `options`: each option with its pods, and each group's template Node.
pub fn request_for(options: &[&ExpansionOption]) -> proto::BestOptionsRequest {
    let mut node_bytes_map = HashMap::new();
    let options = options
        .iter()
        .map(|option| {
            node_bytes_map
                .entry(option.node_group_id.clone())
                .or_insert_with(|| k8s_protobuf::node_to_bytes(&option.template.node));
            proto::Option {
                node_group_id: option.node_group_id.clone(),
                node_count: i32::try_from(option.node_count).unwrap_or(i32::MAX),
                debug: option.debug.clone(),
                pod_bytes: option.pods.iter().map(|p| k8s_protobuf::pod_to_bytes(&p.to_pod())).collect(),
            }
        })
        .collect();
    proto::BestOptionsRequest { options, node_bytes_map }
}

impl ExternalExpander for GrpcExpanderClient {
    /// One `BestOptions` call, waited for on the client's own thread (the caller may be inside
    /// an async runtime), at most the deadline.
    fn best_options(&self, options: &[&ExpansionOption]) -> Result<Vec<String>, String> {
        let request = request_with_deadline(request_for(options), self.timeout);
        let mut client = self.client.clone();
        let timeout = self.timeout;
        let call = with_deadline(timeout, async move { client.best_options(request).await });
        let answer = match self.bridge.block_on(timeout + Duration::from_secs(1), call) {
            Ok(Ok(answer)) => answer.into_inner(),
            Ok(Err(status)) => return Err(format!("BestOptions at {}: {}", self.url, code_text(&status))),
            Err(e) => return Err(format!("BestOptions at {}: {e}", self.url)),
        };
        Ok(answer.options.into_iter().map(|o| o.node_group_id).collect())
    }
}

/// The generated service for expander services written in Rust, and a loopback-friendly
/// `serve`.
pub mod server {
    use std::future::Future;

    pub use grpc_transport::ServerTls;
    use tokio::net::TcpListener;
    use tonic::transport::Server;
    use tonic::transport::server::TcpIncoming;

    pub use crate::proto::expander_server::{Expander, ExpanderServer};

    /// Serves `service` on `listener` until `shutdown`, over TLS when `tls` is given (upstream's
    /// client requires TLS).
    pub async fn serve<S: Expander>(
        service: S,
        listener: TcpListener,
        tls: Option<ServerTls>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), String> {
        let mut builder = Server::builder();
        if let Some(tls) = tls {
            tls.check().map_err(|e| e.to_string())?;
            builder = builder.tls_config(tls.to_tonic()).map_err(|e| grpc_transport::error_chain(&e))?;
        }
        builder
            .add_service(ExpanderServer::new(service).max_decoding_message_size(crate::MAX_RECEIVE_BYTES))
            .serve_with_incoming_shutdown(TcpIncoming::from(listener), shutdown)
            .await
            .map_err(|e| grpc_transport::error_chain(&e))
    }
}
