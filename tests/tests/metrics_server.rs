//! The `/metrics` and `/health-check` server (`autoscaler::serve`) over real HTTP on
//! 127.0.0.1, fetched with a raw HTTP/1.1 client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use autoscaler::control::{DeletedNode, LoopReport, RemovalReason};
use autoscaler::core::ClusterState;
use autoscaler::core::plan::GroupIncrease;
use autoscaler::memory::VirtualClock;
use autoscaler::serve::{
    Function, HealthCheck, HealthCheckConfig, HttpServer, Metrics, OPENMETRICS_CONTENT_TYPE,
    PROMETHEUS_TEXT_CONTENT_TYPE,
};
use cloudprovider_memory::SharedTime;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::oneshot;

struct Response {
    status: u16,
    content_type: String,
    body: String,
}

/// `GET path` with `Connection: close`; reads the whole answer (a blocking std socket on the
/// blocking pool: the workspace's tokio has no `io-util`).
async fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Response {
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n");
    let raw = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(addr).expect("connecting to the server");
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("an answer");
        raw
    })
    .await
    .unwrap();
    let raw = String::from_utf8(raw).expect("a text answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers end with an empty line");
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let body = if header("transfer-encoding").as_deref() == Some("chunked") { dechunk(body) } else { body.to_string() };
    Response { status, content_type: header("content-type").unwrap_or_default(), body }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hexadecimal chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

struct Running {
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<HealthCheck>,
    time: SharedTime,
    shutdown: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), autoscaler::serve::ServeError>>,
}

fn t0() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

async fn start() -> Running {
    let time = SharedTime::new(t0());
    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(HealthCheck::new(HealthCheckConfig::default(), Arc::new(VirtualClock::new(time.clone()))));
    let server = HttpServer::bind("127.0.0.1:0".parse().unwrap(), metrics.clone(), health.clone()).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (shutdown, stop) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stop.await;
    }));
    Running { addr, metrics, health, time, shutdown, task }
}

fn loop_report() -> LoopReport {
    LoopReport {
        time: t0().to_string(),
        scale_ups: vec![GroupIncrease { node_group: "g1".into(), delta: 2, current_size: 1, new_size: 3, max_size: 5 }],
        deleted: vec![DeletedNode { node: "n1".into(), node_group: "g1".into(), reason: RemovalReason::Empty }],
        ..Default::default()
    }
}

fn cluster_state() -> ClusterState {
    ClusterState { ready: 3, unready: 1, healthy: true, ..Default::default() }
}

#[tokio::test]
async fn metrics_endpoint_serves_upstream_names_in_the_prometheus_text_format_by_default() {
    let server = start().await;
    server.metrics.record_loop(&loop_report(), &cluster_state(), Duration::from_millis(1500));
    server.metrics.set_last_activity(Function::Main, t0());
    let response = get(server.addr, "/metrics", None).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.content_type, PROMETHEUS_TEXT_CONTENT_TYPE);
    let body = response.body;
    for line in [
        "# TYPE cluster_autoscaler_scaled_up_nodes_total counter",
        "cluster_autoscaler_scaled_up_nodes_total 2",
        "# TYPE cluster_autoscaler_scaled_down_nodes_total counter",
        r#"cluster_autoscaler_scaled_down_nodes_total{reason="empty"} 1"#,
        r#"cluster_autoscaler_errors_total{type="apiCallError"} 0"#,
        "# TYPE cluster_autoscaler_cluster_safe_to_autoscale gauge",
        "cluster_autoscaler_cluster_safe_to_autoscale 1",
        r#"cluster_autoscaler_nodes_count{state="ready"} 3"#,
        r#"cluster_autoscaler_nodes_count{state="unready"} 1"#,
        r#"cluster_autoscaler_last_activity{activity="main"} 1714564800"#,
        "# TYPE cluster_autoscaler_function_duration_seconds histogram",
        r#"cluster_autoscaler_function_duration_seconds_count{function="main"} 1"#,
        r#"cluster_autoscaler_function_duration_seconds_sum{function="mainSuccessful"} 1.5"#,
    ] {
        assert!(body.lines().any(|l| l == line), "missing {line:?} in:\n{body}");
    }
    assert!(!body.contains("# EOF"), "the classic text format has no EOF marker");
    let _ = server.shutdown.send(());
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn metrics_endpoint_serves_openmetrics_to_a_scraper_that_asks_for_it() {
    let server = start().await;
    server.metrics.record_loop(&loop_report(), &cluster_state(), Duration::from_millis(1500));
    let accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let response = get(server.addr, "/metrics", Some(accept)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.content_type, OPENMETRICS_CONTENT_TYPE);
    assert!(response.body.ends_with("# EOF\n"));
    // OpenMetrics names the counter family without `_total`; its samples carry it.
    assert!(response.body.contains("# TYPE cluster_autoscaler_scaled_up_nodes counter\n"));
    assert!(response.body.contains("\ncluster_autoscaler_scaled_up_nodes_total 2\n"));
}

#[tokio::test]
async fn health_check_is_ok_until_the_loop_stalls_past_max_inactivity_then_500() {
    let server = start().await;
    let before = get(server.addr, "/health-check", None).await;
    assert_eq!((before.status, before.body.as_str()), (200, "OK"));
    server.health.start_monitoring(t0());
    server.health.record_success(t0());
    server.time.advance_by(Duration::from_secs(10 * 60));
    let at_limit = get(server.addr, "/health-check", None).await;
    assert_eq!((at_limit.status, at_limit.body.as_str()), (200, "OK"));
    server.time.advance_by(Duration::from_secs(1));
    let stalled = get(server.addr, "/health-check", None).await;
    assert_eq!(stalled.status, 500);
    assert_eq!(stalled.body, "Error: last activity more than 10m1s ago, last success more than 10m1s ago");
    // A loop runs and succeeds again: healthy.
    server.health.record_success(server.time.now());
    let recovered = get(server.addr, "/health-check", None).await;
    assert_eq!((recovered.status, recovered.body.as_str()), (200, "OK"));
}

#[tokio::test]
async fn unknown_paths_are_not_found() {
    let server = start().await;
    assert_eq!(get(server.addr, "/snapshotz", None).await.status, 404);
}

#[tokio::test]
async fn binding_a_used_address_names_it_in_the_error() {
    let server = start().await;
    let err = HttpServer::bind(server.addr, server.metrics.clone(), server.health.clone()).await.err().unwrap();
    assert!(err.to_string().contains(&server.addr.to_string()), "{err}");
}
