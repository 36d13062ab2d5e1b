//! Wrappers that count the calls they pass on — a provider's, by the externalgrpc rpc each one
//! would be, and the cluster actions' — for the tests that check which calls a loop makes and the
//! externalgrpc bench that prints them. They can also stop the process at a chosen call (`Halt`):
//! the restart tests and `simulate`'s crash faults kill the autoscaler between any two of its
//! actuation steps that way.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cloudprovider::{
    CloudProvider, GpuConfig, Instance, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate, PricingModel,
    ResourceLimiter,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::api::core::v1::{Node, Taint};
use simulator::well_known::{DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT};

use crate::ports::{ClusterActions, Event, EvictionError, PortError, Scale, ScaleTarget};

/// The calls that change the cloud or the cluster on the way to a scale-up or a scale-down, by
/// the names [`Calls`] counts them under: where a crash can leave work half done.
pub const ACTUATION_CALLS: &[&str] = &[
    "NodeGroupIncreaseSize",
    "NodeGroupAtomicIncreaseSize",
    "NodeGroupDeleteNodes",
    "NodeGroupForceDeleteNodes",
    "NodeGroupDecreaseTargetSize",
    "Taint DeletionCandidate",
    "Untaint DeletionCandidate",
    "Taint ToBeDeleted",
    "Untaint ToBeDeleted",
    "TaintNode",
    "UntaintNode",
    "EvictPod",
];

/// Where the process dies: before the call reaches the cloud or the API server, or after it took
/// effect but before its answer is read. `Before` / `After` count the watched calls from 0;
/// `BeforeNext` / `AfterNext` stop at the next call of that name from the moment the halt is
/// armed ([`Calls::arm`]: a scenario's crash event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    Before(usize),
    After(usize),
    BeforeNext(&'static str),
    AfterNext(&'static str),
}

#[derive(Default)]
struct Halting {
    watched: BTreeSet<&'static str>,
    /// The watched calls reached so far (made, or stopped at), in order, with what they were
    /// made on.
    log: Vec<(&'static str, String)>,
    halt: Option<Halt>,
    halted: bool,
    restarts: usize,
}

/// Calls a [`Counting`] provider or [`CountingActions`] passed on, by name (the externalgrpc rpc
/// for a provider call: `node_groups()` for the provider's `node_groups`, which our server also
/// uses to look a group up).
#[derive(Default)]
pub struct Calls {
    counts: Mutex<BTreeMap<&'static str, usize>>,
    halting: Mutex<Halting>,
}

impl Calls {
    /// Calls that log the `watched` calls in order and, with `halt`, stop the process at one:
    /// the call's future never completes, and neither does any call after it.
    pub fn halting(watched: &[&'static str], halt: Option<Halt>) -> Self {
        Calls {
            counts: Mutex::default(),
            halting: Mutex::new(Halting { watched: watched.iter().copied().collect(), halt, ..Default::default() }),
        }
    }

    fn add(&self, rpc: &'static str) {
        *self.counts.lock().unwrap_or_else(|e| e.into_inner()).entry(rpc).or_default() += 1;
    }

    /// The calls since the last `take`, by name.
    pub fn take(&self) -> BTreeMap<&'static str, usize> {
        std::mem::take(&mut *self.counts.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The watched calls reached so far (made, or stopped at), in order, with what each was
    /// made on.
    pub fn log(&self) -> Vec<(&'static str, String)> {
        self.halting.lock().unwrap_or_else(|e| e.into_inner()).log.clone()
    }

    /// Arms `halt` from now on, in place of any halt not reached yet (a halt happens once).
    pub fn arm(&self, halt: Halt) {
        self.halting.lock().unwrap_or_else(|e| e.into_inner()).halt = Some(halt);
    }

    /// Whether the process was stopped since the last `restarted` (its loop never finishes).
    pub fn halted(&self) -> bool {
        self.halting.lock().unwrap_or_else(|e| e.into_inner()).halted
    }

    /// A fresh process takes over: calls pass again (a halt happens once).
    pub fn restarted(&self) {
        let mut h = self.halting.lock().unwrap_or_else(|e| e.into_inner());
        h.halted = false;
        h.restarts += 1;
    }

    /// How many times a fresh process took over.
    pub fn restarts(&self) -> usize {
        self.halting.lock().unwrap_or_else(|e| e.into_inner()).restarts
    }

    /// Counts `rpc` and makes the call, unless the process is (or gets) stopped there.
    async fn pass<T>(&self, rpc: &'static str, on: impl FnOnce() -> String, call: impl Future<Output = T>) -> T {
        self.add(rpc);
        let (before, after) = {
            let mut h = self.halting.lock().unwrap_or_else(|e| e.into_inner());
            if h.halted {
                (true, false)
            } else {
                let index = h.watched.contains(rpc).then(|| {
                    h.log.push((rpc, on()));
                    h.log.len() - 1
                });
                let stop = match h.halt {
                    Some(Halt::Before(i)) if index == Some(i) => (true, false),
                    Some(Halt::After(i)) if index == Some(i) => (false, true),
                    Some(Halt::BeforeNext(name)) if name == rpc => (true, false),
                    Some(Halt::AfterNext(name)) if name == rpc => (false, true),
                    _ => (false, false),
                };
                if stop != (false, false) {
                    h.halt = None;
                    h.halted = true;
                }
                stop
            }
        };
        if before {
            std::future::pending::<()>().await;
        }
        let out = call.await;
        if after {
            std::future::pending::<()>().await;
        }
        out
    }
}

/// A provider counting the calls made of it and of its groups.
pub struct Counting {
    pub inner: Arc<dyn CloudProvider>,
    pub calls: Arc<Calls>,
}

#[async_trait]
impl CloudProvider for Counting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.calls.add("node_groups()");
        let groups = self.inner.node_groups().await;
        groups
            .into_iter()
            .map(|inner| Arc::new(CountingGroup { inner, calls: self.calls.clone() }) as Arc<dyn NodeGroup>)
            .collect()
    }
    async fn node_group_for_node(&self, node: &Node) -> cloudprovider::Result<Option<Arc<dyn NodeGroup>>> {
        self.calls.pass("NodeGroupForNode", String::new, self.inner.node_group_for_node(node)).await
    }
    fn pricing(&self) -> cloudprovider::Result<Arc<dyn PricingModel>> {
        self.calls.add("Pricing*");
        self.inner.pricing()
    }
    fn resource_limiter(&self) -> cloudprovider::Result<ResourceLimiter> {
        self.inner.resource_limiter()
    }
    fn gpu_label(&self) -> &str {
        self.calls.add("GPULabel");
        self.inner.gpu_label()
    }
    fn available_gpu_types(&self) -> Vec<String> {
        self.calls.add("GetAvailableGPUTypes");
        self.inner.available_gpu_types()
    }
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        self.inner.node_gpu_config(node)
    }
    async fn cleanup(&self) -> cloudprovider::Result<()> {
        self.calls.pass("Cleanup", String::new, self.inner.cleanup()).await
    }
    async fn refresh(&self) -> cloudprovider::Result<()> {
        self.calls.pass("Refresh", String::new, self.inner.refresh()).await
    }
    async fn has_instance(&self, node: &Node) -> cloudprovider::Result<bool> {
        self.calls.pass("HasInstance", String::new, self.inner.has_instance(node)).await
    }
    fn observe_nodes(&self, nodes: &[Arc<Node>]) {
        self.inner.observe_nodes(nodes)
    }
    fn balancing_ignored_labels(&self) -> Vec<String> {
        self.inner.balancing_ignored_labels()
    }
}

/// `group: node, node` for the log.
fn node_names(group: &str, nodes: &[Node]) -> String {
    let names: Vec<&str> = nodes.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    format!("{group}: {}", names.join(", "))
}

#[derive(Debug)]
struct CountingGroup {
    inner: Arc<dyn NodeGroup>,
    calls: Arc<Calls>,
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Calls")
    }
}

#[async_trait]
impl NodeGroup for CountingGroup {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn min_size(&self) -> usize {
        self.inner.min_size()
    }
    fn max_size(&self) -> usize {
        self.inner.max_size()
    }
    fn debug(&self) -> String {
        self.inner.debug()
    }
    async fn target_size(&self) -> cloudprovider::Result<usize> {
        self.calls.pass("NodeGroupTargetSize", || self.inner.id().to_string(), self.inner.target_size()).await
    }
    async fn increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.calls
            .pass(
                "NodeGroupIncreaseSize",
                || format!("{} by {delta}", self.inner.id()),
                self.inner.increase_size(delta),
            )
            .await
    }
    async fn delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.calls
            .pass("NodeGroupDeleteNodes", || node_names(self.inner.id(), nodes), self.inner.delete_nodes(nodes))
            .await
    }
    async fn atomic_increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.calls
            .pass(
                "NodeGroupAtomicIncreaseSize",
                || format!("{} by {delta}", self.inner.id()),
                self.inner.atomic_increase_size(delta),
            )
            .await
    }
    async fn force_delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.calls
            .pass(
                "NodeGroupForceDeleteNodes",
                || node_names(self.inner.id(), nodes),
                self.inner.force_delete_nodes(nodes),
            )
            .await
    }
    fn exist(&self) -> bool {
        self.inner.exist()
    }
    fn autoprovisioned(&self) -> bool {
        self.inner.autoprovisioned()
    }
    async fn decrease_target_size(&self, delta: i64) -> cloudprovider::Result<()> {
        self.calls
            .pass(
                "NodeGroupDecreaseTargetSize",
                || format!("{} by {delta}", self.inner.id()),
                self.inner.decrease_target_size(delta),
            )
            .await
    }
    async fn nodes(&self) -> cloudprovider::Result<Vec<Instance>> {
        self.calls.pass("NodeGroupNodes", || self.inner.id().to_string(), self.inner.nodes()).await
    }
    async fn template_node_info(&self) -> cloudprovider::Result<NodeTemplate> {
        self.calls
            .pass("NodeGroupTemplateNodeInfo", || self.inner.id().to_string(), self.inner.template_node_info())
            .await
    }
    async fn get_options(
        &self,
        defaults: &NodeGroupAutoscalingOptions,
    ) -> cloudprovider::Result<Option<NodeGroupAutoscalingOptions>> {
        self.calls.pass("NodeGroupGetOptions", || self.inner.id().to_string(), self.inner.get_options(defaults)).await
    }
}

/// Cluster actions counting the calls made of them. Taints are counted by their key
/// (`Taint ToBeDeleted`, `Untaint DeletionCandidate`; `TaintNode` for any other key).
pub struct CountingActions {
    pub inner: Arc<dyn ClusterActions>,
    pub calls: Arc<Calls>,
}

fn taint_call(key: &str, taint: bool) -> &'static str {
    match (key, taint) {
        (TO_BE_DELETED_TAINT, true) => "Taint ToBeDeleted",
        (TO_BE_DELETED_TAINT, false) => "Untaint ToBeDeleted",
        (DELETION_CANDIDATE_TAINT, true) => "Taint DeletionCandidate",
        (DELETION_CANDIDATE_TAINT, false) => "Untaint DeletionCandidate",
        (_, true) => "TaintNode",
        (_, false) => "UntaintNode",
    }
}

#[async_trait]
impl ClusterActions for CountingActions {
    async fn taint_node(&self, node: &str, taint: Taint, cordon: bool) -> Result<(), PortError> {
        let rpc = taint_call(&taint.key, true);
        self.calls.pass(rpc, || node.to_string(), self.inner.taint_node(node, taint, cordon)).await
    }
    async fn untaint_node(&self, node: &str, key: &str, uncordon: bool) -> Result<(), PortError> {
        let rpc = taint_call(key, false);
        self.calls.pass(rpc, || node.to_string(), self.inner.untaint_node(node, key, uncordon)).await
    }
    async fn evict_pod(&self, namespace: &str, name: &str, grace_period_seconds: i64) -> Result<(), EvictionError> {
        let on = || format!("{namespace}/{name}");
        self.calls.pass("EvictPod", on, self.inner.evict_pod(namespace, name, grace_period_seconds)).await
    }
    async fn get_scale(&self, target: &ScaleTarget) -> Result<Scale, PortError> {
        self.calls.pass("GetScale", || target.name.clone(), self.inner.get_scale(target)).await
    }
    async fn set_scale(&self, target: &ScaleTarget, replicas: i32) -> Result<(), PortError> {
        self.calls.pass("SetScale", || target.name.clone(), self.inner.set_scale(target, replicas)).await
    }
    async fn write_status(
        &self,
        namespace: &str,
        name: &str,
        status_yaml: &str,
        last_updated: &str,
    ) -> Result<(), PortError> {
        let call = self.inner.write_status(namespace, name, status_yaml, last_updated);
        self.calls.pass("WriteStatus", || name.to_string(), call).await
    }
    async fn record_event(&self, event: Event) -> Result<(), PortError> {
        self.calls.pass("RecordEvent", String::new, self.inner.record_event(event)).await
    }
    async fn update_hpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: HorizontalPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        self.calls
            .pass("UpdateHpaStatus", || name.to_string(), self.inner.update_hpa_status(namespace, name, status))
            .await
    }
    async fn update_wpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: crate::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        self.calls
            .pass("UpdateWpaStatus", || name.to_string(), self.inner.update_wpa_status(namespace, name, status))
            .await
    }
}
