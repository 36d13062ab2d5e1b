//! The private-IaaS example as real processes, for the end-to-end tests in `private_iaas.rs`
//! and `controller_restarts.rs`: a [`Cluster`] (the fake API server, the IaaS API process, the
//! example's gRPC server and the autoscaler binaries started against them), the binaries built
//! by cargo ([`example_binary`]), started on free ports with their address read from their
//! first line ([`Process`]), the IaaS API's admin and `/v1` calls ([`Iaas`]), test certificates
//! for mutual TLS ([`pki`]), and what the kubelet and the scheduler do to Nodes and Pods.
//!
//! The IaaS holds the cloud's state (VMs and so target sizes) outside the autoscaler process,
//! as a real cloud does: an autoscaler killed and started again finds what the dead one made.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, NodeCondition, NodeSpec, NodeStatus, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};

use crate::EVENTUALLY_TIMEOUT;
use crate::controller::{controller_binary, free_port};
use crate::fake_apiserver::FakeApiServer;
use crate::{TestDir, bind, eventually};

/// A binary of the `private-iaas` crate (`iaas-api`, `private-iaas-grpc`,
/// `private-iaas-autoscaler`). The three are built once per test process (debug profile,
/// locked, into this target directory), so a test never runs a stale one.
pub fn example_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let debug = BUILT.get_or_init(|| {
        let profile = crate::controller::profile_dir();
        let target_dir = profile.parent().expect("a target directory").to_path_buf();
        let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()))
            .args(["build", "--locked", "-p", "private-iaas", "--bins"])
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(crate::package_dir())
            .output()
            .expect("running cargo build for the private-iaas binaries");
        assert!(output.status.success(), "building private-iaas failed:\n{}", String::from_utf8_lossy(&output.stderr));
        target_dir.join("debug")
    });
    let binary = debug.join(name);
    assert!(binary.exists(), "cargo built no {}", binary.display());
    binary
}

/// A scratch directory for one test: configs, certificates, logs; kept if the test fails.
pub fn workdir(test: &str) -> TestDir {
    TestDir::new(&format!("ca-private-iaas-{test}-"))
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writing a test file");
    path
}

/// A child process whose first line on stdout is `listening on ADDRESS`; its output goes to
/// `<dir>/<name>.log`, printed if the test fails. Killed when dropped.
pub struct Process {
    child: Child,
    name: String,
    log: PathBuf,
    /// What followed `listening on ` (`127.0.0.1:PORT`, or `http://127.0.0.1:PORT`).
    pub address: String,
}

impl Process {
    /// Starts a server and reads where it listens.
    pub fn start(binary: &Path, args: &[String], env: &[(&str, &str)], dir: &Path, name: &str) -> Process {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("the log file");
        let mut child = Command::new(binary)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file.try_clone().expect("a second handle on the log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        // The first line says where it listens; the rest goes to the log.
        let stdout = child.stdout.take().expect("the child's stdout");
        let (first_tx, first_rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut first = String::new();
            let _ = lines.read_line(&mut first);
            let _ = first_tx.send(first);
            let mut file = file;
            let _ = std::io::copy(&mut lines, &mut file);
        });
        let mut process = Process { child, name: name.to_string(), log, address: String::new() };
        let first = first_rx.recv_timeout(EVENTUALLY_TIMEOUT).unwrap_or_default();
        match first.trim().strip_prefix("listening on ") {
            Some(address) => process.address = address.to_string(),
            None => panic!("{name} said {first:?} instead of where it listens; its log:\n{}", process.log()),
        }
        process
    }

    /// Starts a process that says nothing about an address (an autoscaler): all of its output
    /// goes to the log.
    pub fn run(binary: &Path, args: &[String], env: &[(&str, &str)], dir: &Path, name: &str) -> Process {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("the log file");
        let child = Command::new(binary)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("a second handle on the log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        Process { child, name: name.to_string(), log, address: String::new() }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, and waits for the exit: nothing is finished or flushed, as in a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.name, self.log());
        }
    }
}

/// One HTTP/1.1 request on a fresh connection: (status, body as JSON, or `Value::Null`).
fn http(method: &str, url: &str, body: Option<&str>) -> (u16, Value) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (address, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
    let mut stream = TcpStream::connect(address).unwrap_or_else(|e| panic!("connecting to {address}: {e}"));
    stream.set_read_timeout(Some(EVENTUALLY_TIMEOUT)).expect("a read timeout");
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("sending a request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap_or_else(|e| panic!("reading the answer to {method} {url}: {e}"));
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("not an HTTP answer: {raw:?}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        crate::controller::dechunk(body)
    } else {
        body.into()
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The stand-in IaaS's configuration: one flavor, one pool; VMs build until the test settles
/// them ([`Iaas::settle`]), and deletions are immediate.
pub const IAAS_CONFIG: &str = "buildSeconds: null
deleteSeconds: 0
flavors:
- {name: m1.large, vcpus: 4, memoryMiB: 16384, pricePerHour: 0.192}
images: [ubuntu]
pools:
- {name: compute, quota: 4}
";

pub const POOL: &str = "compute";
pub const FLAVOR_CPU: &str = "4";
pub const FLAVOR_MEMORY: &str = "16384Mi";

/// Routes as the IaaS counts them (`GET /admin/stats`).
pub const CREATES: &str = "POST /v1/pools/{pool}/vms";
pub const DELETES: &str = "DELETE /v1/pools/{pool}/vms/{id}";

/// The provider's cloud-config (the `private-iaas` provider, in or out of process) for
/// `endpoint`: the pool as a node group of 0 to 3 VMs.
pub fn provider_config(endpoint: &str) -> String {
    format!(
        "endpoint: {endpoint}
timeout: 30s
nodeGroups:
- pool: {POOL}
  minSize: 0
  maxSize: 3
  flavor: m1.large
  image: ubuntu
  labels: {{pool: {POOL}}}
"
    )
}

/// The `iaas-api` process.
pub struct Iaas {
    /// Killed with the `Iaas`.
    _process: Process,
    /// `http://127.0.0.1:PORT`
    pub url: String,
}

impl Iaas {
    pub fn start(dir: &Path) -> Iaas {
        let config = write(dir, "iaas.yaml", IAAS_CONFIG);
        let args = ["--listen".to_string(), "127.0.0.1:0".into(), "--config".into(), config.display().to_string()];
        let process = Process::start(&example_binary("iaas-api"), &args, &[], dir, "iaas-api");
        let url = process.address.clone();
        Iaas { _process: process, url }
    }

    /// A request off the async workers (the fake API server shares them).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let (method, url) = (method.to_string(), format!("{}{path}", self.url));
        let body = body.map(|b| b.to_string());
        tokio::task::spawn_blocking(move || http(&method, &url, body.as_deref())).await.expect("an HTTP call")
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body.clone()).await;
        assert!((200..300).contains(&status), "{method} {path} {body:?}: {status} {answer}");
        answer
    }

    /// The pool's VMs, as the API lists them. A `/v1` request: it uses up request faults.
    pub async fn vms(&self) -> Vec<Value> {
        self.ok("GET", &format!("/v1/pools/{POOL}/vms"), None).await["vms"].as_array().cloned().unwrap_or_default()
    }

    /// Creates a VM as someone else would (not the autoscaler).
    pub async fn create_vm(&self) -> Value {
        self.ok("POST", &format!("/v1/pools/{POOL}/vms"), Some(json!({"image": "ubuntu", "flavor": "m1.large"}))).await
    }

    pub async fn arm(&self, faults: Value) {
        self.ok("POST", "/admin/faults", Some(faults)).await;
    }

    pub async fn faults(&self) -> Value {
        self.ok("GET", "/admin/faults", None).await
    }

    /// Every building VM is active now.
    pub async fn settle(&self) -> Value {
        self.ok("POST", "/admin/settle", None).await
    }

    /// Requests served on a route so far (faults included).
    pub async fn requests(&self, route: &str) -> u64 {
        self.ok("GET", "/admin/stats", None).await["requests"][route].as_u64().unwrap_or(0)
    }
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in `dir`
/// (`ca.crt`, `server.crt`, `server.key`, `client.crt`, `client.key`).
pub fn pki(dir: &Path) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "externalgrpc test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, sans, usage) in [
        ("server", vec!["127.0.0.1".to_string()], ExtendedKeyUsagePurpose::ServerAuth),
        ("client", Vec::new(), ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).unwrap();
        write(dir, &format!("{name}.crt"), &cert.pem());
        write(dir, &format!("{name}.key"), &key.serialize_pem());
    }
    write(dir, "ca.crt", &ca.pem());
}

/// What a VM's kubelet registers once the VM is up: the VM's name, its providerID, the pool's
/// labels and the flavor's capacity, Ready.
pub fn node_of(vm: &Value) -> Node {
    let name = vm["name"].as_str().expect("a VM name").to_string();
    let id = vm["id"].as_str().expect("a VM id");
    let labels = BTreeMap::from([
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        ("kubernetes.io/hostname".to_string(), name.clone()),
        ("node.kubernetes.io/instance-type".to_string(), vm["flavor"].as_str().unwrap_or_default().to_string()),
        ("pool".to_string(), POOL.to_string()),
    ]);
    let resources = BTreeMap::from([
        ("cpu".to_string(), Quantity(FLAVOR_CPU.into())),
        ("memory".to_string(), Quantity(FLAVOR_MEMORY.into())),
        ("pods".to_string(), Quantity("110".into())),
    ]);
    Node {
        metadata: ObjectMeta { name: Some(name), labels: Some(labels), ..Default::default() },
        spec: Some(NodeSpec { provider_id: Some(format!("private-iaas://{POOL}/{id}")), ..Default::default() }),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: Some("KubeletReady".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

pub use crate::controller::{node_names, pending_pod, running_pod};

/// `(reason, message)` of the events on an object.
pub fn events(server: &FakeApiServer, kind: &str, name: &str) -> Vec<(String, String)> {
    server
        .list::<Event>()
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some(kind) && e.involved_object.name.as_deref() == Some(name))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

pub const STATUS_CONFIG_MAP: &str = "cluster-autoscaler-status";

/// The status ConfigMap's `status` text.
pub fn status_text(server: &FakeApiServer) -> Option<String> {
    server.get::<ConfigMap>(Some("kube-system"), STATUS_CONFIG_MAP)?.data?.remove("status")
}

/// The status ConfigMap's entry for node group `group` (`health`, `scaleUp`, `scaleDown`).
pub fn node_group_status(server: &FakeApiServer, group: &str) -> Option<Value> {
    let status: Value = serde_saphyr::from_str(&status_text(server)?).ok()?;
    status["nodeGroups"].as_array()?.iter().find(|g| g["name"] == group).cloned()
}

/// Events the autoscaler records on its status ConfigMap (scale-ups, failures, instance errors).
pub fn status_events(server: &FakeApiServer) -> Vec<(String, String)> {
    events(server, "ConfigMap", STATUS_CONFIG_MAP)
}

/// The messages of the `ScaledUpGroup` events written after an IncreaseSize succeeded (one per
/// call; upstream writes another before each call).
pub fn succeeded_scale_ups(server: &FakeApiServer) -> Vec<String> {
    status_events(server)
        .into_iter()
        .filter(|(reason, message)| reason == "ScaledUpGroup" && message.contains("succeeded"))
        .map(|(_, message)| message)
        .collect()
}

pub use crate::controller::has_taint;

/// How many lines of `log` contain every one of `parts`.
pub fn lines_with(log: &str, parts: &[&str]) -> usize {
    log.lines().filter(|line| parts.iter().all(|p| line.contains(p))).count()
}

pub const TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";
pub const LOG_FILTER: &str = "info,autoscaler=debug,cloudprovider_externalgrpc=debug,private_iaas=debug";

/// The fake API server, the IaaS API process and the files the processes read.
pub struct Cluster {
    pub server: FakeApiServer,
    pub iaas: Iaas,
    /// The provider's cloud-config (for `private-iaas-grpc`, or the in-process provider).
    pub provider_config: PathBuf,
    /// Last: dropped after the IaaS process that logs there. The files stay for a failed test
    /// (its logs are printed too); a passing one leaves nothing.
    pub dir: TestDir,
}

/// How the autoscaler reaches the gRPC server.
#[derive(Clone, Copy, PartialEq)]
pub enum Tls {
    Plaintext,
    Mutual,
}

impl Cluster {
    pub async fn start(test: &str) -> Cluster {
        let server = FakeApiServer::start().await;
        let dir = workdir(test);
        write(&dir, "kubeconfig", &server.kubeconfig_yaml());
        let iaas_dir = dir.to_path_buf();
        // Builds the example's binaries on first use: off the async workers.
        let iaas = tokio::task::spawn_blocking(move || Iaas::start(&iaas_dir)).await.expect("starting iaas-api");
        let provider_config = write(&dir, "provider.yaml", &provider_config(&iaas.url));
        Cluster { server, iaas, provider_config, dir }
    }

    /// `private-iaas-grpc` on `listen` (`127.0.0.1:0` for a free port), its log appended to
    /// `private-iaas-grpc.log` across restarts.
    pub fn grpc_server(&self, listen: &str, tls: Tls) -> Process {
        let file = |name: &str| self.dir.join(name).display().to_string();
        let mut args = vec!["--listen".to_string(), listen.to_string(), "--cloud-config".into(), file("provider.yaml")];
        if tls == Tls::Mutual {
            pki(&self.dir);
            args.extend(
                ["--cert", &file("server.crt"), "--key", &file("server.key"), "--cacert", &file("ca.crt")]
                    .map(String::from),
            );
        }
        Process::start(&example_binary("private-iaas-grpc"), &args, &[("RUST_LOG", LOG_FILTER)], &self.dir, "grpc")
    }

    /// Upstream's externalgrpc cloud-config for `address`.
    pub fn externalgrpc_config(&self, address: &str, grpc_timeout: &str, tls: Tls) -> PathBuf {
        let mut text = format!("address: {address}\ngrpc_timeout: {grpc_timeout}\n");
        if tls == Tls::Mutual {
            let file = |name: &str| self.dir.join(name).display().to_string();
            text.push_str(&format!(
                "cert: {}\nkey: {}\ncacert: {}\n",
                file("client.crt"),
                file("client.key"),
                file("ca.crt")
            ));
        }
        write(&self.dir, "externalgrpc.yaml", &text)
    }

    /// The flags of a quick controller: one-second loops, scale-down of an empty node after a
    /// second, no delays after scale-up or tainting, no leader election.
    pub fn flags(&self, provider: &str, cloud_config: &Path, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            format!("--kubeconfig={}", self.dir.join("kubeconfig").display()),
            format!("--cloud-provider={provider}"),
            format!("--cloud-config={}", cloud_config.display()),
            format!("--address=127.0.0.1:{}", free_port()),
            "--scan-interval=1s".into(),
            "--scale-down-unneeded-time=1s".into(),
            "--scale-down-delay-after-add=0s".into(),
            "--node-delete-delay-after-taint=0s".into(),
            "--leader-elect=false".into(),
            "--kube-client-qps=-1".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// Our `cluster-autoscaler` with `--cloud-provider=externalgrpc`.
    pub fn externalgrpc_autoscaler(&self, cloud_config: &Path, extra: &[&str]) -> Process {
        let args = self.flags("externalgrpc", cloud_config, extra);
        Process::run(controller_binary(), &args, &[("RUST_LOG", LOG_FILTER)], &self.dir, "cluster-autoscaler")
    }

    /// The example's own binary: our controller with the provider linked in.
    pub fn in_process_autoscaler(&self, extra: &[&str]) -> Process {
        let args = self.flags("private-iaas", &self.provider_config, extra);
        let binary = example_binary("private-iaas-autoscaler");
        Process::run(&binary, &args, &[("RUST_LOG", LOG_FILTER)], &self.dir, "private-iaas-autoscaler")
    }

    /// The kubelet of `vm` registers its Node; returns the Node's name.
    pub fn register(&self, vm: &Value) -> String {
        let node = self.server.seed(&node_of(vm));
        node.metadata.name.expect("a node name")
    }

    /// A VM someone made before, up, with a Node and a pod (3 of its 4 cpus, no controller):
    /// nothing may remove it. Returns (VM id, Node name).
    pub async fn keeper(&self) -> (String, String) {
        let vm = self.iaas.create_vm().await;
        self.iaas.settle().await;
        let node = self.register(&vm);
        self.server.seed(&running_pod("keeper", 3000, &node));
        (vm["id"].as_str().expect("a VM id").to_string(), node)
    }

    /// The one VM not in `known`, once it exists.
    pub async fn new_vm(&self, known: &[&str]) -> Value {
        eventually(&format!("a VM besides {known:?}"), || async {
            self.iaas.vms().await.into_iter().find(|vm| !known.contains(&vm["id"].as_str().unwrap_or_default()))
        })
        .await
    }

    /// The VM boots, its kubelet registers, the scheduler binds `pod` there. Returns the Node.
    pub async fn boot_and_bind(&self, vm: &Value, pod: &str) -> String {
        let settled = self.iaas.settle().await;
        assert!(settled["active"].as_array().is_some_and(|ids| ids.contains(&vm["id"])), "{settled}");
        let node = self.register(vm);
        self.server.modify::<Pod>(Some("default"), pod, |p| bind(p, &node)).expect("the pod to bind");
        node
    }

    /// The keeper's VM is up, its Node there and not marked for deletion.
    pub async fn assert_keeper_kept(&self, (vm, node): &(String, String)) {
        let vms = self.iaas.vms().await;
        let kept = vms.iter().find(|v| v["id"] == vm.as_str());
        assert_eq!(kept.map(|v| v["state"].clone()), Some(json!("active")), "the keeper's VM: {vms:?}");
        assert!(node_names(&self.server).contains(node), "the keeper's Node is gone");
        assert!(!has_taint(&self.server, node, TO_BE_DELETED), "the keeper's Node is marked for deletion");
        assert!(self.server.get::<Pod>(Some("default"), "keeper").is_some());
    }

    /// Events on the status ConfigMap with this reason whose message contains `part`.
    pub fn status_event(&self, reason: &str, part: &str) -> Option<String> {
        status_events(&self.server).into_iter().find(|(r, m)| r == reason && m.contains(part)).map(|(_, m)| m)
    }

    pub fn pod_event(&self, pod: &str, reason: &str, part: &str) -> Option<String> {
        events(&self.server, "Pod", pod).into_iter().find(|(r, m)| r == reason && m.contains(part)).map(|(_, m)| m)
    }

    /// The `time` of the status ConfigMap: it changes once per loop.
    pub fn status_time(&self) -> Option<String> {
        let status: Value = serde_saphyr::from_str(&status_text(&self.server)?).ok()?;
        status["time"].as_str().map(str::to_string)
    }

    /// Waits for `loops` more statuses: an autoscaler that wrote so many ran as many loops
    /// (each decided and acted on what it saw).
    pub async fn loops(&self, loops: usize) {
        for _ in 0..loops {
            let before = self.status_time();
            eventually("another loop's status", || async { (self.status_time() != before).then_some(()) }).await;
        }
    }

    /// The status ConfigMap's entry for the pool's node group.
    pub fn group_status(&self) -> Option<Value> {
        node_group_status(&self.server, POOL)
    }
}
