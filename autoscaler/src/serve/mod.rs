//! The HTTP endpoints on `--address` (`:8085`): `GET /metrics` and `GET /health-check`.
//!
//! - [`Metrics`]: upstream's `cluster_autoscaler_*` metrics (see [`metrics`] for the names and
//!   what differs), updated from each loop iteration's report.
//! - [`HealthCheck`]: upstream's liveness rule (see [`health`]).
//! - [`HttpServer`] / [`serve`]: the axum server; [`parse_address`] reads upstream's
//!   `--address` syntax.
//!
//! # Wiring, as upstream's main loop does
//!
//! ```text
//! metrics.set_limits(&options);                       // once
//! serve(address, metrics, health, shutdown)           // spawned at start-up, leader or not
//! health.start_monitoring(now)                        // when this replica starts autoscaling
//! per iteration, started at `start`:
//!     health.record_activity(start); metrics.set_last_activity(Function::Main, start);
//!     Ok(report)  => metrics.record_loop(&report, &state, elapsed); health.record_success(end)
//!     Err(error)  => metrics.record_loop_error(error.error_type(), elapsed);
//!                    if error.error_type() == TRANSIENT_ERROR { health.record_success(end) }
//! ```
//!
//! # `/metrics` format
//!
//! prometheus-client encodes OpenMetrics text. A scraper that asks for it (`Accept:
//! application/openmetrics-text`, as Prometheus does) gets it as is; any other client gets the
//! classic Prometheus text format 0.0.4 that upstream serves, converted from it (counter
//! families named with their `_total` suffix, no `# EOF`).

pub mod health;
pub mod metrics;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

pub use health::{HealthCheck, HealthCheckConfig, Unhealthy};
pub use metrics::{Function, Metrics, TRANSIENT_ERROR, cluster_resources};

/// Content type of the OpenMetrics text format.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of the classic Prometheus text format.
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on --address {address}: {source}")]
    Bind { address: SocketAddr, source: std::io::Error },
    #[error("the metrics and health-check server failed: {0}")]
    Serve(std::io::Error),
}

/// Reads upstream's `--address`: `host:port`, where an empty host (`:8085`) means every
/// interface, the host is an IP address (`[::1]:8085` for IPv6) or a name resolved now
/// (`localhost:8085`), and the port is a number.
pub fn parse_address(address: &str) -> Result<SocketAddr, String> {
    let invalid = |why: &str| format!("invalid --address {address:?}: {why}");
    let (host, port) = address.rsplit_once(':').ok_or_else(|| invalid("expected host:port, e.g. :8085"))?;
    let port: u16 = port.parse().map_err(|_| invalid("the port must be a number from 0 to 65535"))?;
    if host.is_empty() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    let unbracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if let Some(ip) = unbracketed {
        let ip: IpAddr = ip.parse().map_err(|_| invalid("the bracketed host is not an IPv6 address"))?;
        return Ok(SocketAddr::new(ip, port));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        if ip.is_ipv6() {
            return Err(invalid("an IPv6 host must be in brackets, e.g. [::1]:8085"));
        }
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| invalid(&format!("cannot resolve host {host:?}: {e}")))?
        .next()
        .ok_or_else(|| invalid(&format!("host {host:?} has no address")))
}

#[derive(Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    health: Arc<HealthCheck>,
}

/// The metrics and health-check server, bound and ready to run.
pub struct HttpServer {
    listener: TcpListener,
    router: Router,
}

impl HttpServer {
    /// Listens on `address` (port 0 picks a free one; see [`HttpServer::local_addr`]).
    pub async fn bind(
        address: SocketAddr,
        metrics: Arc<Metrics>,
        health: Arc<HealthCheck>,
    ) -> Result<Self, ServeError> {
        let listener = TcpListener::bind(address).await.map_err(|source| ServeError::Bind { address, source })?;
        Ok(HttpServer { listener, router: router(metrics, health) })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        axum::serve(self.listener, self.router).with_graceful_shutdown(shutdown).await.map_err(ServeError::Serve)
    }
}

/// Binds `address` and serves `/metrics` and `/health-check` until `shutdown` completes.
pub async fn serve(
    address: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<HealthCheck>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    HttpServer::bind(address, metrics, health).await?.run(shutdown).await
}

fn router(metrics: Arc<Metrics>, health: Arc<HealthCheck>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/health-check", get(health_handler))
        .with_state(AppState { metrics, health })
}

async fn health_handler(State(state): State<AppState>) -> Response {
    match state.health.check_now() {
        Ok(()) => (StatusCode::OK, "OK").into_response(),
        Err(unhealthy) => (StatusCode::INTERNAL_SERVER_ERROR, unhealthy.to_string()).into_response(),
    }
}

async fn metrics_handler(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let mut text = String::new();
    if let Err(e) = state.metrics.encode(&mut text) {
        return (StatusCode::INTERNAL_SERVER_ERROR, format!("encoding the metrics failed: {e}")).into_response();
    }
    let wants_openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if wants_openmetrics {
        ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], text).into_response()
    } else {
        ([(header::CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE)], openmetrics_to_prometheus_text(&text)).into_response()
    }
}

/// Converts prometheus-client's OpenMetrics text to the Prometheus text format 0.0.4: a counter
/// family is named after its samples (`x_total`, where OpenMetrics names it `x`), and the
/// `# EOF` line goes. Everything else (gauges, histograms, label syntax) is the same.
pub fn openmetrics_to_prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "].into_iter().find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match descriptor {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if counters.contains(name) {
                    out.push_str(&format!("{prefix}{name}_total {tail}"));
                } else {
                    out.push_str(line);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}
