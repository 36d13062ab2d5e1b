//! Helpers for the scenario tests: run a scenario YAML on the real control loop with an
//! observer, and read what the tests assert on (group targets, nodes, pods, taints).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use autoscaler::control::LoopReport;
use autoscaler::core::counting::Calls;
use autoscaler::simulate::world::World;
use autoscaler::simulate::{Observer, Outcome, run_observed, run_with_crash, scenario};
use cloudprovider::{InstanceState, NodeGroup};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use simulator::well_known::TO_BE_DELETED_TAINT;

/// An observer made of a closure.
pub struct Watch<F>(pub F);

impl<F: FnMut(Timestamp, &World, Option<&LoopReport>)> Observer for Watch<F> {
    fn after_step(&mut self, now: Timestamp, world: &World, report: Option<&LoopReport>) {
        (self.0)(now, world, report)
    }
}

/// Parses `yaml` and runs it to the end with `observer`. Panics with the scenario on any error.
pub fn run(yaml: &str, observer: &mut dyn Observer) -> Outcome {
    run_with_flags(yaml, &[], observer)
}

pub fn run_with_flags(yaml: &str, flags: &[&str], observer: &mut dyn Observer) -> Outcome {
    let scenario = scenario::parse(yaml, "test scenario").unwrap_or_else(|e| panic!("{e}\n---\n{yaml}"));
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    runtime
        .block_on(run_observed(&scenario, &flags, false, |_| {}, observer))
        .unwrap_or_else(|e| panic!("simulation failed: {e}\n---\n{yaml}"))
}

/// `run`, with the autoscaler's calls to the cloud and the cluster going through `calls`, which
/// log them and may kill the process at one (a fresh one takes over).
pub fn run_with_calls(yaml: &str, calls: Arc<Calls>, observer: &mut dyn Observer) -> Outcome {
    let scenario = scenario::parse(yaml, "test scenario").unwrap_or_else(|e| panic!("{e}\n---\n{yaml}"));
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    runtime
        .block_on(run_with_crash(&scenario, &[], calls, observer))
        .unwrap_or_else(|e| panic!("simulation failed: {e}\n---\n{yaml}"))
}

/// Seconds since `start`.
pub fn secs(start: Timestamp, now: Timestamp) -> i64 {
    now.duration_since(start).as_secs()
}

/// The value of a future of the in-memory cloud, which never waits (the observer is called
/// inside the simulation's runtime, so it cannot block on one).
pub fn ready_now<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("an in-memory cloud call did not complete at once"),
    }
}

/// The cloud's target size of a group (the in-memory futures never wait).
pub fn target(world: &World, group: &str) -> usize {
    let g = world.cloud.group(group).unwrap_or_else(|| panic!("no node group {group}"));
    ready_now(g.target_size()).expect("target size")
}

/// Instances of a group that are not being deleted, by state.
pub fn live_instances(world: &World, group: &str) -> Vec<(String, InstanceState)> {
    let g = world.cloud.group(group).unwrap_or_else(|| panic!("no node group {group}"));
    ready_now(g.nodes())
        .expect("instances")
        .into_iter()
        .filter_map(|i| {
            let state = i.status.map(|s| s.state).unwrap_or(InstanceState::Running);
            (state != InstanceState::Deleting).then_some((i.id, state))
        })
        .collect()
}

pub fn node_names(world: &World) -> Vec<String> {
    world.handle.lock().nodes().filter_map(|n| n.metadata.name.clone()).collect()
}

pub fn has_taint(node: &Node, key: &str) -> bool {
    node.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| t.iter().any(|t| t.key == key))
}

/// Nodes carrying `ToBeDeletedByClusterAutoscaler`.
pub fn to_be_deleted(world: &World) -> Vec<String> {
    world
        .handle
        .lock()
        .nodes()
        .filter(|n| has_taint(n, TO_BE_DELETED_TAINT))
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

/// Node name → node group id, from the provider id `memory://<group>/<n>`.
pub fn group_of(node: &Node) -> Option<String> {
    let id = node.spec.as_ref()?.provider_id.as_deref()?;
    let rest = id.strip_prefix("memory://")?;
    Some(rest.split('/').next()?.to_string())
}

/// Registered nodes per group.
pub fn nodes_per_group(world: &World) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for n in world.handle.lock().nodes() {
        if let Some(g) = group_of(n) {
            *out.entry(g).or_insert(0) += 1;
        }
    }
    out
}

pub fn pod_key(p: &Pod) -> String {
    format!("{}/{}", p.metadata.namespace.as_deref().unwrap_or("default"), p.metadata.name.as_deref().unwrap_or(""))
}

pub fn pod_node(p: &Pod) -> Option<&str> {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

pub fn pod_phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

pub fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn is_terminating(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
}

/// Pods of one app label (namespace `default`), not terminating.
pub fn app_pods(world: &World, app: &str) -> Vec<Pod> {
    world
        .handle
        .lock()
        .pods()
        .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str) == Some(app))
        .filter(|p| !is_terminating(p))
        .map(|p| (**p).clone())
        .collect()
}

/// A node group entry of a scenario. `extra` holds more keys of the entry, one per line, each
/// indented by two spaces; the provisioning delay is 1m unless `extra` sets it.
pub fn group_yaml(id: &str, min: usize, max: usize, initial: usize, cpu: &str, memory: &str, extra: &str) -> String {
    let delay = if extra.contains("provisioningDelay:") { "" } else { "  provisioningDelay: 1m\n" };
    format!(
        "- id: {id}\n  minSize: {min}\n  maxSize: {max}\n  initialSize: {initial}\n{delay}{extra}  template: {{metadata: {{labels: {{pool: {id}}}}}, status: {{capacity: {{cpu: \"{cpu}\", memory: {memory}, pods: \"110\"}}}}}}\n"
    )
}

/// A Deployment in namespace `default` with pods labelled `app: <name>`.
pub fn deployment_yaml(name: &str, replicas: usize, cpu: &str, memory: &str, pod_spec_extra: &str) -> String {
    format!(
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {{name: {name}, namespace: default}}\n  spec:\n    replicas: {replicas}\n    selector: {{matchLabels: {{app: {name}}}}}\n    template:\n      metadata: {{labels: {{app: {name}}}}}\n      spec:\n{pod_spec_extra}        containers: [{{name: c, image: c, resources: {{requests: {{cpu: \"{cpu}\", memory: {memory}}}}}}}]\n"
    )
}
