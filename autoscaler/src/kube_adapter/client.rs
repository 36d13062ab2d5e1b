//! Building the Kubernetes clients from upstream's flags: `--kubeconfig`, `--kubernetes`,
//! `--kube-client-qps`, `--kube-client-burst`.

use std::path::PathBuf;
use std::sync::Arc;

use ::kube::client::ClientBuilder;
use ::kube::client::retry::RetryPolicy;
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;

use super::rate_limit::{RateLimitLayer, TokenBucket};
use super::request_metrics::{CountRequestsLayer, RestClientRequests};

/// How to reach the API server.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeClientOptions {
    /// `--kubeconfig`: a kubeconfig file; `None` means the in-cluster configuration (service
    /// account token and CA, `KUBERNETES_SERVICE_HOST`/`_PORT`).
    pub kubeconfig: Option<PathBuf>,
    /// `--kubernetes`: the API server URL; overrides the kubeconfig's server. Alone (no
    /// kubeconfig), it is used without credentials, as client-go does.
    pub master_url: Option<String>,
    /// `--kube-client-qps` (upstream default 5): steady requests per second; `<= 0` disables
    /// client-side rate limiting.
    pub qps: f32,
    /// `--kube-client-burst` (upstream default 10): requests allowed at once.
    pub burst: u32,
}

impl Default for KubeClientOptions {
    fn default() -> Self {
        KubeClientOptions { kubeconfig: None, master_url: None, qps: 5.0, burst: 10 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KubeClientError {
    #[error("cannot read --kubeconfig {path}: {message}")]
    Kubeconfig { path: PathBuf, message: String },
    #[error(
        "no Kubernetes configuration: --kubeconfig and --kubernetes are empty and the in-cluster configuration is unavailable: {0}"
    )]
    InCluster(String),
    #[error("invalid --kubernetes URL {url:?}: {message}")]
    MasterUrl { url: String, message: String },
    #[error("cannot build the Kubernetes client: {0}")]
    Build(String),
}

/// The clients the controller uses, with five request budgets of `--kube-client-qps` /
/// `--kube-client-burst` each: the loop's reads and writes (`client`, `eviction_client`); the
/// watches; the pod autoscalers' metrics reads; leader election; Events. So neither the lists of
/// a large cluster nor an HPA sync's metrics reads delay a taint or an eviction, and a busy loop
/// never starves the Lease renewals (upstream's leader election and kube-controller-manager's HPA
/// have clients of their own too). Events have their own because a scale-up for 1,000 pods
/// queues 1,000 `TriggeredScaleUp` Events, 200 s of writes at the default 5 per second: on the
/// loop's budget they held every later iteration's status write (and taints, evictions) behind
/// them (measured with the load harness: 0.75 s per iteration at 1,000 nodes).
#[derive(Clone)]
pub struct KubeClients {
    /// The loop's reads and writes, with kube's default retry of 429/503/504.
    pub client: Client,
    /// The reflectors' lists and watches (`KubeCluster`).
    pub watch_client: Client,
    /// The embedded pod autoscalers' metrics API reads (`KubeMetrics`).
    pub metrics_client: Client,
    /// Evictions only: no automatic retry, so a PodDisruptionBudget's 429 comes back at once
    /// (kube's default client would retry it for many seconds).
    pub eviction_client: Client,
    /// Leader election only: no automatic retry (a renewal must not spend its deadline in the
    /// client's backoff) and a rate limiter of its own.
    pub lease_client: Client,
    /// Event writes only (`events::EventRecorder`), off the loop's budget.
    pub events_client: Client,
    /// The API server's URL, for messages about it.
    pub server: String,
    /// Every request of every client above, by answer (`rest_client_requests_total`).
    pub requests: RestClientRequests,
}

impl std::fmt::Debug for KubeClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClients").finish_non_exhaustive()
    }
}

/// The API server URL of `--kubernetes`. As client-go's `DefaultServerURL`: a host without a
/// scheme (`10.0.0.1:6443`) gets `https://` when the configuration has TLS material, else
/// `http://`; a URL without a host is refused.
fn parse_url(url: &str, tls: bool) -> Result<::http::Uri, KubeClientError> {
    let error = |message: String| KubeClientError::MasterUrl { url: url.into(), message };
    let uri = match url.parse::<::http::Uri>() {
        Ok(uri) if uri.scheme().is_some() => uri,
        Err(e) if url.contains("://") => return Err(error(e.to_string())),
        _ => {
            let scheme = if tls { "https" } else { "http" };
            format!("{scheme}://{url}").parse::<::http::Uri>().map_err(|e| error(e.to_string()))?
        }
    };
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(uri),
        (Some(scheme), Some(_)) if scheme != "http" && scheme != "https" => {
            Err(error(format!("the scheme must be http or https, not {scheme}")))
        }
        _ => Err(error("no host".into())),
    }
}

/// Whether the client configuration talks TLS (client-go's `IsConfigTransportTLS`).
fn has_tls(config: &Config) -> bool {
    config.root_cert.is_some()
        || config.accept_invalid_certs
        || config.auth_info.client_certificate.is_some()
        || config.auth_info.client_certificate_data.is_some()
}

/// Loads the client configuration as upstream does: the kubeconfig file when given, else the
/// in-cluster configuration; `--kubernetes` overrides the server URL.
pub async fn load_config(options: &KubeClientOptions) -> Result<Config, KubeClientError> {
    let mut config = match (&options.kubeconfig, &options.master_url) {
        (Some(path), _) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| KubeClientError::Kubeconfig { path: path.clone(), message: e.to_string() })?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| KubeClientError::Kubeconfig { path: path.clone(), message: e.to_string() })?
        }
        (None, Some(url)) => Config::new(parse_url(url, false)?),
        (None, None) => Config::incluster().map_err(|e| KubeClientError::InCluster(e.to_string()))?,
    };
    if let Some(url) = &options.master_url {
        config.cluster_url = parse_url(url, has_tls(&config))?;
    }
    Ok(config)
}

impl KubeClients {
    /// Loads the configuration ([`load_config`]) and builds the clients.
    pub async fn connect(options: &KubeClientOptions) -> Result<KubeClients, KubeClientError> {
        let config = load_config(options).await?;
        KubeClients::from_config(config, options.qps, options.burst)
    }

    /// Builds the clients from one configuration; `qps <= 0` disables rate limiting.
    pub fn from_config(config: Config, qps: f32, burst: u32) -> Result<KubeClients, KubeClientError> {
        let bucket = TokenBucket::new(qps, burst);
        let server = config.cluster_url.to_string();
        let counting = CountRequestsLayer {
            counts: RestClientRequests::default(),
            host: config.cluster_url.authority().map(|a| a.to_string()).unwrap_or_default(),
        };
        let build = |config: Config, bucket| build(config, bucket, &counting);
        let mut no_retry = config.clone();
        no_retry.default_retry = false;
        Ok(KubeClients {
            watch_client: build(config.clone(), TokenBucket::new(qps, burst))?,
            metrics_client: build(config.clone(), TokenBucket::new(qps, burst))?,
            events_client: build(config.clone(), TokenBucket::new(qps, burst))?,
            client: build(config, bucket.clone())?,
            eviction_client: build(no_retry.clone(), bucket)?,
            lease_client: build(no_retry, TokenBucket::new(qps, burst))?,
            server,
            requests: counting.counts.clone(),
        })
    }
}

/// A client whose every attempt is counted, as client-go counts them: kube's retry of
/// 429/503/504 (when the configuration asks for it) is moved outside the counting layer. Tower's
/// retry needs a service it can clone, which kube's boxed stack is not: a buffer (a channel to a
/// task owning the stack, as `kube::Client` itself has) provides one.
fn build(
    mut config: Config,
    bucket: Option<Arc<TokenBucket>>,
    counting: &CountRequestsLayer,
) -> Result<Client, KubeClientError> {
    let retry = std::mem::replace(&mut config.default_retry, false);
    let builder = ClientBuilder::try_from(config).map_err(|e| KubeClientError::Build(e.to_string()))?;
    let builder = builder
        .with_layer(counting)
        .with_layer(&BufferLayer::new(REQUESTS_IN_FLIGHT))
        .with_layer(&tower::util::option_layer(retry.then(|| RetryLayer::new(RetryPolicy::server_retry()))));
    Ok(match bucket {
        Some(bucket) => builder.with_layer(&RateLimitLayer(bucket)).build(),
        None => builder.build(),
    })
}

/// The buffer's capacity: requests of one client waiting for the stack at once (kube's own
/// client buffer has the same).
const REQUESTS_IN_FLIGHT: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_url_without_a_scheme_gets_client_gos_default_and_garbage_is_refused() {
        assert_eq!(parse_url("127.0.0.1:6443", false).unwrap().to_string(), "http://127.0.0.1:6443/");
        assert_eq!(parse_url("127.0.0.1:6443", true).unwrap().to_string(), "https://127.0.0.1:6443/");
        assert_eq!(parse_url("https://api.example:6443", false).unwrap().to_string(), "https://api.example:6443/");
        for bad in ["", "http://", "ftp://x:1", "a b", "https://"] {
            let error = parse_url(bad, false).unwrap_err().to_string();
            assert!(error.contains(&format!("{bad:?}")) || error.contains(bad), "{bad}: {error}");
        }
    }
}
