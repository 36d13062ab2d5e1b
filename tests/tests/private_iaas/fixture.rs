//! The private-IaaS example as real processes, for the end-to-end tests in `private_iaas.rs`:
//! its binaries built by cargo ([`example_binary`]), started on free ports with their address
//! read from their first line ([`Process`]), the IaaS API's admin and `/v1` calls ([`Iaas`]),
//! test certificates for mutual TLS ([`pki`]), and what the kubelet and the scheduler do to
//! Nodes and Pods.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Event, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use tests::EVENTUALLY_TIMEOUT;
use tests::fake_apiserver::FakeApiServer;

/// The target directory's profile folder (`target/debug`), from the test executable's path
/// (`target/debug/deps/<test>-<hash>`), as `tests::controller` finds it.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent().and_then(Path::parent).expect("tests run from <target>/<profile>/deps").to_path_buf()
}

/// A binary of the `private-iaas` crate (`iaas-api`, `private-iaas-grpc`,
/// `private-iaas-autoscaler`). The three are built once per test process (debug profile,
/// locked, into this target directory), so a test never runs a stale one.
pub fn example_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let debug = BUILT.get_or_init(|| {
        let profile = profile_dir();
        let target_dir = profile.parent().expect("a target directory").to_path_buf();
        let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()))
            .args(["build", "--locked", "-p", "private-iaas", "--bins"])
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(tests::package_dir())
            .output()
            .expect("running cargo build for the private-iaas binaries");
        assert!(output.status.success(), "building private-iaas failed:\n{}", String::from_utf8_lossy(&output.stderr));
        target_dir.join("debug")
    });
    let binary = debug.join(name);
    assert!(binary.exists(), "cargo built no {}", binary.display());
    binary
}

/// A scratch directory for one test: configs, certificates, logs.
pub fn workdir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ca-private-iaas-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the test's directory");
    dir
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
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.into() };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
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

/// A pod of `millis` cpu the scheduler could not place, as the scheduler marks it.
pub fn pending_pod(name: &str, millis: u32) -> Pod {
    let requests = BTreeMap::from([("cpu".to_string(), Quantity(format!("{millis}m")))]);
    Pod {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("app".into()),
                resources: Some(ResourceRequirements { requests: Some(requests), ..Default::default() }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(tests::unschedulable_status(None)),
    }
}

/// What the scheduler and the kubelet do to a pod placed on `node`.
pub use tests::controller::bind;

pub fn running_pod(name: &str, millis: u32, node: &str) -> Pod {
    let mut pod = pending_pod(name, millis);
    bind(&mut pod, node);
    pod
}

pub fn node_names(server: &FakeApiServer) -> Vec<String> {
    server.list::<Node>().into_iter().filter_map(|n| n.metadata.name).collect()
}

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

/// Events the autoscaler records on its status ConfigMap (scale-ups, failures, instance errors).
pub fn status_events(server: &FakeApiServer) -> Vec<(String, String)> {
    events(server, "ConfigMap", STATUS_CONFIG_MAP)
}

#[allow(unused_imports)]
pub use tests::controller::has_taint;

/// How many lines of `log` contain every one of `parts`.
pub fn lines_with(log: &str, parts: &[&str]) -> usize {
    log.lines().filter(|line| parts.iter().all(|p| line.contains(p))).count()
}
