//! Test fixtures: real providers behind our server on a loopback socket (on a runtime of its
//! own, so synchronous client calls can never starve it), certificates made with rcgen, and
//! clients built through the real factory from a cloud-config file.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cloudprovider::{CloudProvider, NodeGroupAutoscalingOptions, NodeTemplate, ProviderContext, Purpose};
use cloudprovider_externalgrpc::server::{ServerTls, service};
use cloudprovider_memory::{MemoryCloudProvider, MemoryGroupSpec, MemoryProviderConfig, SharedTime};
use k8s_openapi::api::core::v1::{Node, NodeStatus, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use tokio::sync::oneshot;

pub const START: &str = "2026-01-02T00:00:00Z";

/// A multi-thread runtime for the client side of a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Calls per rpc path (`NodeGroups`, …), counted on the server before the service sees them.
#[derive(Clone, Default)]
pub struct Counts(Arc<Mutex<HashMap<String, usize>>>);

impl Counts {
    pub fn of(&self, rpc: &str) -> usize {
        self.0.lock().unwrap().get(rpc).copied().unwrap_or(0)
    }

    fn add(&self, path: &str) {
        let rpc = path.rsplit('/').next().unwrap_or(path).to_string();
        *self.0.lock().unwrap().entry(rpc).or_default() += 1;
    }
}

/// Our server on 127.0.0.1, on a thread and runtime of its own.
pub struct TestServer {
    pub address: SocketAddr,
    pub counts: Counts,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(provider: Arc<dyn CloudProvider>, tls: Option<ServerTls>) -> TestServer {
        TestServer::start_on("127.0.0.1:0".parse().unwrap(), provider, tls)
    }

    /// On a given address (to bring a server back where a client expects it).
    pub fn start_on(address: SocketAddr, provider: Arc<dyn CloudProvider>, tls: Option<ServerTls>) -> TestServer {
        let counts = Counts::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready, bound) = std::sync::mpsc::channel();
        let server_counts = counts.clone();
        let thread = std::thread::spawn(move || {
            let runtime = runtime();
            runtime.block_on(async move {
                let listener = bind_retrying(address).await;
                ready.send(listener.local_addr().unwrap()).unwrap();
                let counting = tower::util::MapRequestLayer::new(move |request: http::Request<tonic::body::Body>| {
                    server_counts.add(request.uri().path());
                    request
                });
                let mut builder = tonic::transport::Server::builder();
                if let Some(tls) = tls {
                    builder = builder.tls_config(tls.to_tonic()).unwrap();
                }
                let incoming = tonic::transport::server::TcpIncoming::from(listener);
                builder
                    .layer(counting)
                    .add_service(service(provider))
                    .serve_with_incoming_shutdown(incoming, async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let address = bound.recv_timeout(Duration::from_secs(10)).unwrap();
        TestServer { address, counts, stop: Some(stop), thread: Some(thread) }
    }

    /// Stops accepting and closes connections; the port is free afterwards.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn bind_retrying(address: SocketAddr) -> tokio::net::TcpListener {
    for _ in 0..100 {
        if let Ok(listener) = tokio::net::TcpListener::bind(address).await {
            return listener;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cannot bind {address}");
}

/// A fresh directory for this test's files, removed when dropped.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("externalgrpc-test-{name}-")).tempdir().unwrap()
}

/// Writes `text` as a cloud-config file in `dir` and returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Our client, built by the real factory from a cloud-config file.
pub fn client(config: &Path) -> Arc<dyn CloudProvider> {
    try_client(config).unwrap()
}

pub fn try_client(config: &Path) -> Result<Arc<dyn CloudProvider>, cloudprovider::BuildError> {
    let mut context = ProviderContext::new(cloudprovider_externalgrpc::PROVIDER_NAME, Purpose::Controller);
    context.cloud_config = Some(config.to_path_buf());
    runtime().block_on(cloudprovider_externalgrpc::build(context))
}

/// A plaintext client of `address`.
pub fn plaintext_client(address: SocketAddr, timeout: &str) -> Arc<dyn CloudProvider> {
    let dir = temp_dir("plaintext");
    client(&write(dir.path(), "cloud.yaml", &format!("address: {address}\ngrpc_timeout: {timeout}\n")))
}

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate.
pub struct Pki {
    pub ca_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, format!("{name} test CA"));
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().unwrap();
        let mut server_params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();

        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params.distinguished_name.push(DnType::CommonName, "cluster-autoscaler");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client_params.signed_by(&client_key, &issuer).unwrap();

        Pki {
            ca_pem: ca_cert.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        }
    }

    /// Server TLS requiring client certificates signed by this CA.
    pub fn server_tls(&self) -> ServerTls {
        ServerTls {
            cert_pem: self.server_cert_pem.clone().into_bytes(),
            key_pem: self.server_key_pem.clone().into_bytes(),
            client_ca_pem: Some(self.ca_pem.clone().into_bytes()),
        }
    }

    /// Writes ca.crt, tls.crt and tls.key (the client's) into `dir`.
    pub fn write_client_files(&self, dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        (
            write(dir, "ca.crt", &self.ca_pem),
            write(dir, "tls.crt", &self.client_cert_pem),
            write(dir, "tls.key", &self.client_key_pem),
        )
    }
}

pub fn quantities(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
}

/// A template node with labels and capacity.
pub fn template_node(labels: &[(&str, &str)], capacity: &[(&str, &str)]) -> Node {
    let mut node = Node::default();
    node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    node.status = Some(NodeStatus {
        capacity: Some(quantities(capacity)),
        allocatable: Some(quantities(capacity)),
        ..NodeStatus::default()
    });
    node
}

/// The memory provider with a general group (2 nodes, per-group options, a price), a GPU group
/// and a group that starts empty; plus its clock.
pub fn memory_provider() -> (Arc<MemoryCloudProvider>, SharedTime) {
    let mut general = MemoryGroupSpec::new(
        "general",
        1,
        10,
        NodeTemplate {
            node: template_node(&[("pool", "general")], &[("cpu", "4"), ("memory", "16Gi"), ("pods", "110")]),
            pods: Vec::<Pod>::new(),
        },
    );
    general.initial_size = 2;
    general.price_per_hour = Some(0.192);
    general.options = Some(NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.65,
        scale_down_gpu_utilization_threshold: 0.25,
        scale_down_unneeded_time: Duration::from_secs(300),
        scale_down_unready_time: Duration::from_secs(450),
        max_node_provision_time: Duration::from_secs(1200),
        ignore_daemonsets_utilization: true,
        ..NodeGroupAutoscalingOptions::default()
    });
    let mut gpu = MemoryGroupSpec::new(
        "gpu",
        0,
        4,
        NodeTemplate {
            node: template_node(
                &[("pool", "gpu"), ("nvidia.com/gpu.product", "tesla-t4")],
                &[("cpu", "8"), ("memory", "32Gi"), ("nvidia.com/gpu", "1")],
            ),
            pods: Vec::new(),
        },
    );
    gpu.initial_size = 1;
    let spare = MemoryGroupSpec::new(
        "spare",
        0,
        3,
        NodeTemplate {
            node: template_node(&[("pool", "spare")], &[("cpu", "2"), ("memory", "8Gi")]),
            pods: Vec::new(),
        },
    );
    let time = SharedTime::new(START.parse::<Timestamp>().unwrap());
    let provider =
        MemoryCloudProvider::new(MemoryProviderConfig::new(vec![general, gpu, spare]), time.clone()).unwrap();
    (Arc::new(provider), time)
}

/// The defaults the core would pass.
pub fn defaults() -> NodeGroupAutoscalingOptions {
    NodeGroupAutoscalingOptions::default()
}
