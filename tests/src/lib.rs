//! Shared fixtures for the end-to-end tests in `tests/tests/`.
//!
//! - [`fake_apiserver`]: an in-process fake Kubernetes API server for kube-rs and kubectl.
//! - [`controller`]: the real `cluster-autoscaler` binary as a child process.
//! - [`moto`]: an AWS API server (moto) as a child process, for the `aws` provider's tests.
//! - [`private_iaas`]: the private-IaaS example's processes (IaaS API, gRPC server) and a cluster
//!   around them, for the end-to-end tests of that example and of restarts.
//! - [`browser`]: headless Chromium as a child process, for the `simulate` report's browser test.
//! - [`eventually`]: waits for a condition that an asynchronous system reaches eventually.
//! - [`TestDir`]: a test's scratch directory, removed when the test passes.
//! - [`unschedulable_status`]: the status kube-scheduler leaves on a pod it could not place;
//!   [`bind`]: what the scheduler and the kubelet do to a pod placed on a node.

pub mod browser;
pub mod controller;
pub mod fake_apiserver;
pub mod moto;
pub mod private_iaas;

use std::future::Future;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `tests` package directory. Read from cargo's run-time environment first: CI reuses a
/// target directory across clones at different paths, and a cached build would carry the
/// compile-time path of another clone.
pub fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// A test's scratch directory (kubeconfigs, configs, the logs of the processes it starts) under
/// the system's temporary directory, named `<prefix><random>`. Removed when dropped, except while
/// the thread panics: a failed test leaves its files, logs included, for a look (the path is
/// printed). Dereferences to its path.
pub struct TestDir(tempfile::TempDir);

impl TestDir {
    pub fn new(prefix: &str) -> TestDir {
        TestDir(tempfile::Builder::new().prefix(prefix).tempdir().expect("creating the test's directory"))
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!("the failed test's files are kept in {}", self.0.path().display());
        }
    }
}

/// How long [`eventually`] waits before failing the test. Generous: it bounds a hang, it does not
/// measure anything.
pub const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Polls `probe` until it yields `Some`, and returns that value; panics naming `what` after
/// [`EVENTUALLY_TIMEOUT`].
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + EVENTUALLY_TIMEOUT;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {EVENTUALLY_TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The status kube-scheduler leaves on a pod it could not place: `Pending`, with
/// `PodScheduled=False` / `Unschedulable`, the condition changed at `changed` when given.
pub fn unschedulable_status(changed: Option<Timestamp>) -> PodStatus {
    PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            last_transition_time: changed.map(Time),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// What the scheduler and the kubelet do to a pod placed on `node`.
pub fn bind(pod: &mut Pod, node: &str) {
    pod.spec.get_or_insert_with(Default::default).node_name = Some(node.into());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
}
