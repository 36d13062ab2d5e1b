//! Template nodes: what a new node of each group looks like (upstream §6.5).
//!
//! Per group, in upstream's order: a ready, stable, schedulable real node of the group; the
//! provider's `TemplateNodeInfo` plus the DaemonSet pods that would run on it; as a last resort
//! an unready or unschedulable node of the group. Every template is sanitized: renamed, stripped
//! of autoscaler, node-condition, startup and status taints, and left with only DaemonSet and
//! mirror pods.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use simulator::predicates::{matches_node_selection, untolerated_taint};
use simulator::well_known::{
    DELETION_CANDIDATE_TAINT, HOSTNAME_LABEL, NODE_CONDITION_TAINTS, TEMPLATE_NODE_LABEL, TO_BE_DELETED_TAINT,
};
use simulator::{NodeInfo, PodInfo};

use super::cloud::CloudState;
use super::cluster_state::ClusterState;
use super::readiness::to_be_deleted_since;
use super::view::ClusterView;
use crate::config::AutoscalingOptions;

/// Where a group's template came from (shown by `plan`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateSource {
    Node(String),
    CloudProvider,
    UnreadyNode(String),
}

#[derive(Clone, Debug)]
pub struct Template {
    pub node_info: Arc<NodeInfo>,
    pub source: TemplateSource,
}

fn strip_taint(key: &str, options: &AutoscalingOptions) -> bool {
    key == TO_BE_DELETED_TAINT
        || key == DELETION_CANDIDATE_TAINT
        || NODE_CONDITION_TAINTS.contains(&key)
        || options.is_startup_taint(key)
        || options.is_status_taint(key)
}

/// A clean copy of `node` named for `group`.
pub fn sanitize_node(node: &Node, group: &str, options: &AutoscalingOptions) -> Node {
    let name = format!("template-node-for-{group}");
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let mut clean = Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            uid: Some(format!("{name}-uid")),
            labels: Some(labels),
            annotations: node.metadata.annotations.clone(),
            ..Default::default()
        },
        spec: node.spec.clone(),
        status: node.status.clone(),
    };
    let labels = clean.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(HOSTNAME_LABEL.into(), name.clone());
    labels.insert(TEMPLATE_NODE_LABEL.into(), "true".into());
    let spec = clean.spec.get_or_insert_with(Default::default);
    spec.provider_id = None;
    if let Some(taints) = spec.taints.as_mut() {
        taints.retain(|t| !strip_taint(&t.key, options));
    }
    if options.scale_from_unschedulable {
        spec.unschedulable = None;
    }
    if let Some(status) = clean.status.as_mut() {
        if status.allocatable.as_ref().is_none_or(|a| a.is_empty()) {
            status.allocatable = status.capacity.clone();
        }
        // A fresh node is ready.
        status.conditions = Some(vec![k8s_openapi::api::core::v1::NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]);
    }
    clean
}

/// Tolerations the DaemonSet controller adds to every DaemonSet pod.
fn daemonset_default_tolerations() -> Vec<Toleration> {
    let t = |key: &str, effect: &str| Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Default::default()
    };
    vec![
        t("node.kubernetes.io/not-ready", "NoExecute"),
        t("node.kubernetes.io/unreachable", "NoExecute"),
        t("node.kubernetes.io/disk-pressure", "NoSchedule"),
        t("node.kubernetes.io/memory-pressure", "NoSchedule"),
        t("node.kubernetes.io/pid-pressure", "NoSchedule"),
        t("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

/// The pod a DaemonSet would run on `node`, if the node passes the pod's node selection and
/// taints (what the DaemonSet controller checks).
pub fn daemonset_pod_for_node(ds: &DaemonSet, node: &Node) -> Option<PodInfo> {
    let template = ds.spec.as_ref()?.template.clone();
    let node_name = node.metadata.name.clone().unwrap_or_default();
    let ds_name = ds.metadata.name.clone().unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    spec.node_name = Some(node_name.clone());
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    tolerations.extend(daemonset_default_tolerations());
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("{ds_name}-{node_name}")),
            namespace: ds.metadata.namespace.clone(),
            uid: Some(format!("{ds_name}-{node_name}-uid")),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            annotations: template.metadata.as_ref().and_then(|m| m.annotations.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "DaemonSet".into(),
                name: ds_name,
                uid: ds.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: Some(spec),
        status: Some(k8s_openapi::api::core::v1::PodStatus { phase: Some("Running".into()), ..Default::default() }),
    };
    let info = PodInfo::from(pod);
    let node_info = NodeInfo::new(Arc::new(node.clone()));
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    (matches_node_selection(&info, &node_info) && untolerated_taint(taints, info.tolerations()).is_none())
        .then_some(info)
}

fn node_info_with_pods(node: Node, pods: impl IntoIterator<Item = PodInfo>) -> NodeInfo {
    let mut info = NodeInfo::new(Arc::new(node));
    let snapshot_free = pods.into_iter().map(Arc::new).collect::<Vec<_>>();
    // NodeInfo's pod list is filled through the snapshot normally; templates carry their pods
    // along and the snapshot accounts for them when the template is added.
    for p in snapshot_free {
        info.pods.push(p);
    }
    info.requested = info.pods.iter().fold(Default::default(), |mut acc: simulator::Resources, p| {
        acc.add(p.requests());
        acc
    });
    info
}

/// Re-homes a real node's DaemonSet / mirror pod onto the template.
fn template_pod(pod: &PodInfo, template_name: &str) -> PodInfo {
    pod.renamed(&format!("{}-{template_name}", pod.name()), template_name)
}

/// Upstream's test (§6.5, step 1) for a real node to stand as its group's template: `ready`
/// (the node's readiness as the cluster state counts it), Ready for at least a minute,
/// schedulable, and not being deleted. `CloudState::gather` applies it too, so that the provider's
/// template is asked for exactly when `build_templates` will need it.
pub fn qualifies_as_template(node: &Node, ready: bool, now: Timestamp) -> bool {
    let schedulable = !node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    ready && schedulable && to_be_deleted_since(node).is_none() && stable_for_a_minute(node, now)
}

fn stable_for_a_minute(node: &Node, now: Timestamp) -> bool {
    let ready =
        node.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    match ready.and_then(|c| c.last_transition_time.as_ref()) {
        Some(t) => now.duration_since(t.0).as_secs() >= 60,
        None => true,
    }
}

/// Builds one template per node group.
pub fn build_templates(
    view: &ClusterView,
    cloud: &CloudState,
    state: &ClusterState,
    pods_by_node: &rustc_hash::FxHashMap<&str, super::classify::NodePods>,
    options: &AutoscalingOptions,
    now: Timestamp,
) -> HashMap<String, Template> {
    let mut out: HashMap<String, Template> = HashMap::new();
    let from_node = |node: &Node, group: &str| -> NodeInfo {
        let clean = sanitize_node(node, group, options);
        let template_name = clean.metadata.name.clone().unwrap_or_default();
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let mut pods: Vec<PodInfo> = pods_by_node
            .get(node_name.as_str())
            .into_iter()
            .flat_map(|pods| pods.iter())
            .filter(|p| p.daemonset || p.mirror)
            .map(|p| template_pod(p, &template_name))
            .collect();
        if options.force_ds {
            for ds in &view.daemonsets {
                let covered =
                    pods.iter().any(|p| p.controller().is_some_and(|c| Some(&c.uid) == ds.metadata.uid.as_ref()));
                if !covered && let Some(p) = daemonset_pod_for_node(ds, &clean) {
                    pods.push(p);
                }
            }
        }
        node_info_with_pods(clean, pods)
    };
    // Every group has its template once `out` holds as many: the walks of the nodes stop there
    // (they looked each node's group up, hundreds per loop, long after the last was found).
    let all_found = |out: &HashMap<String, Template>| out.len() == cloud.groups.len();
    // 1. A good real node of the group.
    for (position, node) in view.nodes.iter().enumerate() {
        if all_found(&out) {
            break;
        }
        let name = node.metadata.name.as_deref().unwrap_or("");
        let Some(group) = cloud.group_at(position, node) else { continue };
        if out.contains_key(&group.id) {
            continue;
        }
        if qualifies_as_template(node, state.is_ready(name), now) {
            out.insert(
                group.id.clone(),
                Template { node_info: Arc::new(from_node(node, &group.id)), source: TemplateSource::Node(name.into()) },
            );
        }
    }
    // 2. The provider's template, with the DaemonSet pods that would run on it (gathered only
    //    for the groups step 1 left without one).
    for group in &cloud.groups {
        if out.contains_key(&group.id) {
            continue;
        }
        let Some(t) = group.template.as_ref() else { continue };
        let clean = sanitize_node(&t.node, &group.id, options);
        let template_name = clean.metadata.name.clone().unwrap_or_default();
        let mut pods: Vec<PodInfo> = t.pods.iter().map(|p| template_pod(&PodInfo::new(p), &template_name)).collect();
        pods.extend(view.daemonsets.iter().filter_map(|ds| daemonset_pod_for_node(ds, &clean)));
        out.insert(
            group.id.clone(),
            Template { node_info: Arc::new(node_info_with_pods(clean, pods)), source: TemplateSource::CloudProvider },
        );
    }
    // 3. Last resort: any node of the group.
    for (position, node) in view.nodes.iter().enumerate() {
        if all_found(&out) {
            break;
        }
        let name = node.metadata.name.as_deref().unwrap_or("");
        let Some(group) = cloud.group_at(position, node) else { continue };
        if out.contains_key(&group.id) {
            continue;
        }
        out.insert(
            group.id.clone(),
            Template {
                node_info: Arc::new(from_node(node, &group.id)),
                source: TemplateSource::UnreadyNode(name.into()),
            },
        );
    }
    out
}
