//! The real `cluster-autoscaler` binary as a child process, for end-to-end tests of the
//! controller against the fake API server.
//!
//! [`controller_binary`] builds the binary (once per test process, with the cargo that runs the
//! tests, into the same target directory) so a test never runs a stale one. [`Controller`] starts
//! it with a kubeconfig for a [`FakeApiServer`](crate::fake_apiserver::FakeApiServer), keeps its
//! log in a file, sends SIGTERM, and kills it when dropped. The rest is what the tests of the
//! controller share: a scratch directory and quick flags, pods as the scheduler and the kubelet
//! leave them, what the fake API server holds (nodes, events, taints), and the controller's
//! `/metrics` and `/health-check`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Event, Node, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::fake_apiserver::FakeApiServer;
use crate::{TestDir, bind, eventually};

/// The target directory's profile folder (`target/debug`), from the test executable's path
/// (`target/debug/deps/<test>-<hash>`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent().and_then(Path::parent).expect("tests run from <target>/<profile>/deps").to_path_buf()
}

/// Builds `cluster-autoscaler` (debug profile, locked) and returns its path.
pub fn controller_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let profile = profile_dir();
        let target_dir = profile.parent().expect("a target directory").to_path_buf();
        let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()))
            .args(["build", "--locked", "-p", "autoscaler", "--bin", "cluster-autoscaler"])
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(crate::package_dir())
            .output()
            .expect("running cargo build for the controller binary");
        assert!(
            output.status.success(),
            "building cluster-autoscaler failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let binary = target_dir.join("debug").join("cluster-autoscaler");
        assert!(binary.exists(), "cargo built no {}", binary.display());
        binary
    })
}

/// A free local TCP port (bound and released at once: good enough for a test's `--address`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// A running controller process.
pub struct Controller {
    child: Child,
    log: PathBuf,
    name: String,
    /// The directory of its kubeconfig, cloud-config and log when the controller owns it
    /// ([`start_on_memory`]): removed after the process is stopped (fields drop after `drop`).
    workdir: Option<TestDir>,
}

impl Controller {
    /// Starts the binary with `args`, logging (at debug level) to `<dir>/<name>.log`.
    pub fn start(dir: &Path, name: &str, args: &[String]) -> Controller {
        Controller::start_with_env(dir, name, args, &[])
    }

    /// [`Controller::start`] with extra environment variables (e.g. the AWS SDK's
    /// `AWS_ENDPOINT_URL` and credentials).
    pub fn start_with_env(dir: &Path, name: &str, args: &[String], env: &[(&str, String)]) -> Controller {
        Controller::start_binary(controller_binary(), dir, name, args, env)
    }

    /// [`Controller::start_with_env`] with a given binary (the load harness runs a release
    /// build). `env` may override the default `RUST_LOG`.
    pub fn start_binary(binary: &Path, dir: &Path, name: &str, args: &[String], env: &[(&str, String)]) -> Controller {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("creating the controller's log file");
        let child = Command::new(binary)
            .args(args)
            .env("RUST_LOG", "info,autoscaler=debug")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("a second handle on the log file"))
            .stderr(file)
            .spawn()
            .expect("starting cluster-autoscaler");
        Controller { child, log, name: name.into(), workdir: None }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file's path.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The process's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM (the kubelet's way of stopping a pod).
    pub fn terminate(&self) {
        let pid = i32::try_from(self.child.id()).expect("a pid fits in pid_t");
        // SAFETY: kill(2) on our own child's pid with a valid signal number has no memory effects.
        let result = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(result, 0, "sending SIGTERM to {}", self.name);
    }

    /// The exit status, if the process has ended.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("polling the controller process")
    }

    /// Waits (polling, at most `timeout`) for the process to end; panics with its log otherwise.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit() {
                return status;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("{} did not exit within {timeout:?}; its log:\n{}", self.name, self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if self.try_exit().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.name, self.log());
        }
    }
}

/// A blocking HTTP/1.1 GET (the tests need no HTTP client crate): (status, body).
pub fn http_get(address: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split(' ').nth(1)?.parse().ok()?;
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Some((status, if chunked { dechunk(body) } else { body.to_string() }))
}

/// The body of a `Transfer-Encoding: chunked` answer.
pub(crate) fn dechunk(mut body: &str) -> String {
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

/// A scratch directory holding the kubeconfig, the memory provider's `cloud_config` and the
/// controllers' logs; kept if the test fails, for the logs.
pub fn workdir(server: &FakeApiServer, test: &str, cloud_config: &str) -> TestDir {
    let dir = TestDir::new(&format!("ca-controller-{test}-"));
    std::fs::write(dir.join("kubeconfig"), server.kubeconfig_yaml()).unwrap();
    std::fs::write(dir.join("cloud-config.yaml"), cloud_config).unwrap();
    dir
}

/// The flags of a quick controller on the memory provider of [`workdir`]: one-second loops, no
/// scale-down delays, no leader election, `/metrics` on `port`; then `extra`.
pub fn quick_flags(dir: &Path, port: u16, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        format!("--kubeconfig={}", dir.join("kubeconfig").display()),
        "--cloud-provider=memory".to_string(),
        format!("--cloud-config={}", dir.join("cloud-config.yaml").display()),
        format!("--address=127.0.0.1:{port}"),
        "--scan-interval=1s".into(),
        "--scale-down-unneeded-time=1s".into(),
        "--scale-down-delay-after-add=0s".into(),
        "--horizontal-pod-autoscaler-sync-period=1s".into(),
        "--leader-elect=false".into(),
        "--kube-client-qps=-1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Object metadata with a namespace, a name and labels.
pub fn meta(namespace: &str, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        labels: (!labels.is_empty()).then(|| labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

/// Requests of `millis` millicores.
pub fn cpu(millis: u32) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(format!("{millis}m")))])),
        ..Default::default()
    }
}

/// One container requesting `millis` millicores.
pub fn container(millis: u32) -> Container {
    Container { name: "app".into(), image: Some("app".into()), resources: Some(cpu(millis)), ..Default::default() }
}

/// A pod the scheduler could not place, as the scheduler marks it.
pub fn pending_pod(name: &str, millis: u32) -> Pod {
    Pod {
        metadata: meta("default", name, &[]),
        spec: Some(PodSpec { containers: vec![container(millis)], ..Default::default() }),
        status: Some(crate::unschedulable_status(None)),
    }
}

/// A pod bound to `node` and running.
pub fn running_pod(name: &str, millis: u32, node: &str) -> Pod {
    let mut pod = pending_pod(name, millis);
    bind(&mut pod, node);
    pod
}

/// The names of the Node objects.
pub fn node_names(server: &FakeApiServer) -> Vec<String> {
    server.list::<Node>().into_iter().filter_map(|n| n.metadata.name).collect()
}

/// The reasons of the events recorded on one object.
pub fn event_reasons(server: &FakeApiServer, kind: &str, name: &str) -> Vec<String> {
    server
        .list::<Event>()
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some(kind) && e.involved_object.name.as_deref() == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

/// Whether the node carries a taint with this key.
pub fn has_taint(server: &FakeApiServer, node: &str, key: &str) -> bool {
    server
        .get::<Node>(None, node)
        .and_then(|n| n.spec)
        .and_then(|s| s.taints)
        .is_some_and(|t| t.iter().any(|t| t.key == key))
}

/// The controller's `/metrics` text (empty when it does not answer).
pub async fn metrics_text(port: u16) -> String {
    let address = format!("127.0.0.1:{port}");
    tokio::task::spawn_blocking(move || http_get(&address, "/metrics").map(|(_, body)| body).unwrap_or_default())
        .await
        .unwrap()
}

/// The status of the controller's `/health-check`, if it answers.
pub async fn health(port: u16) -> Option<u16> {
    let address = format!("127.0.0.1:{port}");
    tokio::task::spawn_blocking(move || http_get(&address, "/health-check").map(|(status, _)| status)).await.unwrap()
}

/// The value of a sample in Prometheus text, named as printed: `name` or `name{labels}`.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

/// Waits for the memory provider's first node (registered at start-up).
pub async fn first_node(server: &FakeApiServer, controller: &Controller) -> String {
    eventually(&format!("the initial node to register (log: {})", controller.log()), || async {
        node_names(server).into_iter().next()
    })
    .await
}

/// A memory provider node group in the `nodeGroups` format of [`workdir`]'s cloud-config:
/// `cpu`-core nodes that register a second after IncreaseSize.
pub fn memory_group(id: &str, cpu: u32, min: usize, max: usize, initial: usize) -> String {
    format!(
        r#"  - id: {id}
    minSize: {min}
    maxSize: {max}
    initialSize: {initial}
    provisioningDelay: 1s
    template:
      metadata:
        labels: {{pool: {id}, kubernetes.io/os: linux}}
      status:
        capacity: {{cpu: "{cpu}", memory: 32Gi, pods: "110"}}
        allocatable: {{cpu: "{cpu}", memory: 32Gi, pods: "110"}}
"#
    )
}

/// How many loop iterations the controller has run (`function_duration_seconds{main}`).
pub fn iterations(text: &str) -> f64 {
    sample(text, r#"cluster_autoscaler_function_duration_seconds_count{function="main"}"#).unwrap_or(0.0)
}

/// Waits until the controller has run `more` iterations after the ones `text` counted: what
/// it decided meanwhile is settled, whatever the machine's speed.
pub async fn more_iterations(port: u16, text: &str, more: f64) {
    let start = iterations(text);
    eventually(&format!("{more} more loop iterations"), || async {
        (iterations(&metrics_text(port).await) >= start + more).then_some(())
    })
    .await;
}

/// Lets the controller run three more iterations from the ones `text` counted, then checks
/// that nothing more was asked for: `nodes` Nodes, `scaled_up_nodes_total` at `added`, and one
/// successful IncreaseSize, whose event says `size_change`. Returns the metrics then.
pub async fn settled_after_one_scale_up(
    server: &FakeApiServer,
    port: u16,
    text: &str,
    nodes: usize,
    added: f64,
    size_change: &str,
) -> String {
    more_iterations(port, text, 3.0).await;
    let text = metrics_text(port).await;
    assert_eq!(node_names(server).len(), nodes, "no second scale-up for the same pods");
    assert_eq!(sample(&text, "cluster_autoscaler_scaled_up_nodes_total"), Some(added), "{text}");
    let increases = crate::private_iaas::succeeded_scale_ups(server);
    assert_eq!(increases.len(), 1, "one IncreaseSize: {increases:?}");
    assert!(increases[0].contains(size_change), "{increases:?}");
    text
}

/// A memory provider's cloud-config: `groups` ([`memory_group`]) and the `faults` armed at
/// start, each a flow mapping such as `{group: pool, type: failDeleteNodes, times: 1}`.
pub fn memory_cloud_config(groups: &[String], faults: &[&str]) -> String {
    let mut text = format!("nodeGroups:\n{}", groups.concat());
    if !faults.is_empty() {
        text.push_str("faults:\n");
        for fault in faults {
            text.push_str(&format!("  - {fault}\n"));
        }
    }
    text
}

/// Starts a controller on the memory provider with `cloud_config` in a [`workdir`] named after
/// `test`, with [`quick_flags`] and `extra`: the controller and its `/metrics` port.
pub fn start_on_memory(server: &FakeApiServer, test: &str, cloud_config: &str, extra: &[&str]) -> (Controller, u16) {
    let dir = workdir(server, test, cloud_config);
    let port = free_port();
    let mut controller = Controller::start(&dir, "controller", &quick_flags(&dir, port, extra));
    // The process reads its files and writes its log there: the directory lives as long as it.
    controller.workdir = Some(dir);
    (controller, port)
}
