//! Our gRPC expander client against an expander service built on our generated server, over TLS
//! on loopback, inside the real expander chain.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use expander::{Expander, ExpanderContext, ExpanderName, ExpansionOption};
use expander_grpc::proto::{BestOptionsRequest, BestOptionsResponse, Option as WireOption};
use expander_grpc::server::{Expander as ExpanderService, ServerTls, serve};
use expander_grpc::{GrpcExpanderClient, GrpcExpanderError};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use simulator::{NodeInfo, PodInfo, testing};
use tokio::sync::oneshot;
use tonic::{Request, Response, Status};

/// Answers the ids it is told, after `delay`, and keeps the last request.
#[derive(Clone)]
struct Service {
    answer: Vec<String>,
    delay: Duration,
    last: Arc<Mutex<Option<BestOptionsRequest>>>,
}

#[tonic::async_trait]
impl ExpanderService for Service {
    async fn best_options(
        &self,
        request: Request<BestOptionsRequest>,
    ) -> Result<Response<BestOptionsResponse>, Status> {
        tokio::time::sleep(self.delay).await;
        *self.last.lock().unwrap() = Some(request.into_inner());
        let options =
            self.answer.iter().map(|id| WireOption { node_group_id: id.clone(), ..WireOption::default() }).collect();
        Ok(Response::new(BestOptionsResponse { options }))
    }
}

struct Pki {
    ca_pem: String,
    tls: ServerTls,
}

fn make_pki(name: &str) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, format!("{name} CA"));
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        tls: ServerTls {
            cert_pem: cert.pem().into_bytes(),
            key_pem: key.serialize_pem().into_bytes(),
            client_ca_pem: None,
        },
    }
}

/// The service on 127.0.0.1 over TLS, on a runtime of its own; stops when dropped.
struct Running {
    address: SocketAddr,
    last: Arc<Mutex<Option<BestOptionsRequest>>>,
    _stop: oneshot::Sender<()>,
    _runtime: tokio::runtime::Runtime,
}

fn start(tls: ServerTls, answer: &[&str], delay: Duration) -> Running {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let address = listener.local_addr().unwrap();
    let last = Arc::new(Mutex::new(None));
    let service = Service { answer: answer.iter().map(|s| s.to_string()).collect(), delay, last: last.clone() };
    let (stop, stopped) = oneshot::channel::<()>();
    runtime.spawn(async move {
        serve(service, listener, Some(tls), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Running { address, last, _stop: stop, _runtime: runtime }
}

/// The CA certificate as a file, removed when dropped (the client reads it when made).
fn write_ca(pem: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().prefix("grpc-expander-test-").suffix(".crt").tempfile().unwrap();
    std::fs::write(file.path(), pem).unwrap();
    file
}

fn client(address: SocketAddr, ca_pem: &str) -> GrpcExpanderClient {
    GrpcExpanderClient::new(&address.to_string(), write_ca(ca_pem).path().to_str().unwrap()).unwrap()
}

fn option(id: &str, node_count: usize, pod_count: usize) -> ExpansionOption {
    ExpansionOption {
        node_group_id: id.to_string(),
        node_count,
        pods: (0..pod_count)
            .map(|i| Arc::new(PodInfo::new(&testing::pod(&format!("{id}-pod-{i}"), "100m", "100Mi"))))
            .collect(),
        template: Arc::new(NodeInfo::new(Arc::new(testing::node(&format!("{id}-template"), "4", "16Gi")))),
        exists: true,
        similar_node_groups: Vec::new(),
        debug: format!("{id} debug"),
    }
}

fn options() -> Vec<ExpansionOption> {
    vec![option("a", 3, 2), option("b", 1, 2), option("c", 2, 1)]
}

fn ctx() -> ExpanderContext<'static> {
    ExpanderContext {
        cluster_node_count: 3,
        now: "2026-01-01T00:00:00Z".parse().unwrap(),
        ..ExpanderContext::default()
    }
}

fn chain(spec: &str, backend: GrpcExpanderClient) -> Expander {
    Expander::with_seed(spec, 7).unwrap().with_external(Arc::new(backend))
}

#[test]
fn the_service_chooses_over_tls_and_sees_options_pods_and_templates() {
    let pki = make_pki("good");
    let server = start(pki.tls.clone(), &["b"], Duration::ZERO);
    let mut expander = chain("grpc", client(server.address, &pki.ca_pem));
    let options = options();
    let decision = expander.best_option(&options, &ctx());
    assert_eq!(decision.chosen, Some(1));
    assert_eq!(decision.trace[0].expander, ExpanderName::Grpc);

    let request = server.last.lock().unwrap().take().unwrap();
    let ids: Vec<&str> = request.options.iter().map(|o| o.node_group_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(request.options[0].node_count, 3);
    assert_eq!(request.options[0].debug, "a debug");
    assert_eq!(request.options[0].pod_bytes.len(), 2);
    let pod = k8s_protobuf::pod_from_bytes(&request.options[0].pod_bytes[1]).unwrap();
    assert_eq!(pod, options[0].pods[1].to_pod());
    let mut keys: Vec<&String> = request.node_bytes_map.keys().collect();
    keys.sort();
    assert_eq!(keys, ["a", "b", "c"]);
    let template = k8s_protobuf::node_from_bytes(&request.node_bytes_map["c"]).unwrap();
    assert_eq!(template, *options[2].template.node);
}

#[test]
fn unknown_ids_are_dropped_and_only_unknown_ids_pass_every_option() {
    let pki = make_pki("ids");
    let server = start(pki.tls.clone(), &["zzz", "c", "a"], Duration::ZERO);
    let decision = chain("grpc,least-nodes", client(server.address, &pki.ca_pem)).best_option(&options(), &ctx());
    // grpc keeps a and c (in the options' order); least-nodes then picks c (2 nodes).
    assert_eq!(decision.trace[0].kept, vec![0, 2]);
    assert_eq!(decision.chosen, Some(2));

    let server = start(pki.tls.clone(), &["zzz", "yyy"], Duration::ZERO);
    let decision = chain("grpc,least-nodes", client(server.address, &pki.ca_pem)).best_option(&options(), &ctx());
    assert_eq!(decision.trace[0].kept, vec![0, 1, 2]);
    assert_eq!(decision.chosen, Some(1), "least-nodes among all");
}

#[test]
fn an_empty_answer_means_no_option() {
    let pki = make_pki("empty");
    let server = start(pki.tls.clone(), &[], Duration::ZERO);
    let decision = chain("grpc,least-waste", client(server.address, &pki.ca_pem)).best_option(&options(), &ctx());
    assert_eq!(decision.chosen, None);
    assert_eq!(decision.trace.len(), 1);
}

#[test]
fn a_failed_call_passes_every_option_to_the_next_step() {
    let pki = make_pki("fail");
    let other = make_pki("other");
    // Nothing listening.
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let backend = client(address, &pki.ca_pem);
    let error = expander::ExternalExpander::best_options(&backend, &[&options()[0]]).unwrap_err();
    assert!(error.contains(&format!("BestOptions at {address}: unavailable")), "{error}");
    let decision = chain("grpc,least-nodes", backend).best_option(&options(), &ctx());
    assert_eq!(decision.trace[0].kept, vec![0, 1, 2]);
    assert_eq!(decision.chosen, Some(1));

    // A server whose certificate the client does not trust: refused, everything passes.
    let server = start(pki.tls.clone(), &["a"], Duration::ZERO);
    let backend = client(server.address, &other.ca_pem);
    let error = expander::ExternalExpander::best_options(&backend, &[&options()[0]]).unwrap_err();
    assert!(error.to_lowercase().contains("certificate") || error.contains("UnknownIssuer"), "{error}");
    let decision = chain("grpc", backend).best_option(&options(), &ctx());
    assert_eq!(decision.trace[0].kept, vec![0, 1, 2]);
}

#[test]
fn a_slow_service_is_a_deadline_and_everything_passes() {
    let pki = make_pki("slow");
    let server = start(pki.tls.clone(), &["a"], Duration::from_secs(3));
    let backend = client(server.address, &pki.ca_pem).with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let error = expander::ExternalExpander::best_options(&backend, &[&options()[0]]).unwrap_err();
    let elapsed = started.elapsed();
    assert!(error.contains("deadline exceeded"), "{error}");
    assert!(elapsed >= Duration::from_millis(290) && elapsed < Duration::from_millis(1500), "{elapsed:?}");
}

#[test]
fn the_chain_calls_the_service_from_inside_an_async_runtime_without_deadlock() {
    let pki = make_pki("runtime");
    let server = start(pki.tls.clone(), &["c"], Duration::ZERO);
    let mut expander = chain("grpc", client(server.address, &pki.ca_pem));
    // The decision function runs on a current-thread runtime in the controller and benches.
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let decision = runtime.block_on(async { expander.best_option(&options(), &ctx()) });
    assert_eq!(decision.chosen, Some(2));
}

#[test]
fn tls_is_required_and_bad_settings_are_named() {
    assert_eq!(GrpcExpanderClient::new("localhost:7000", "").unwrap_err(), GrpcExpanderError::MissingCert);
    assert_eq!(GrpcExpanderClient::new("", "/etc/ca.crt").unwrap_err(), GrpcExpanderError::MissingUrl);
    let error = GrpcExpanderClient::new("localhost:7000", "/nowhere/ca.crt").unwrap_err();
    assert!(error.to_string().starts_with("--grpc-expander-cert=/nowhere/ca.crt: "), "{error}");
    let not_pem = write_ca("hello");
    let error = GrpcExpanderClient::new("localhost:7000", not_pem.path().to_str().unwrap()).unwrap_err();
    assert!(error.to_string().contains("no PEM certificate"), "{error}");
    let ca = write_ca(&make_pki("url").ca_pem);
    let error = GrpcExpanderClient::new("localhost", ca.path().to_str().unwrap()).unwrap_err();
    assert!(error.to_string().starts_with("--grpc-expander-url=localhost: "), "{error}");
    assert!(GrpcExpanderClient::new("dns:///localhost:7000", ca.path().to_str().unwrap()).is_ok());
}
