//! DaemonSets: one pod per node the DaemonSet's pods select (nodeSelector, required node
//! affinity) and whose `NoSchedule` / `NoExecute` taints they tolerate, with the tolerations
//! the DaemonSet controller adds to every pod. Like the real controller, pods are created
//! unbound with required node affinity to their node (`matchFields metadata.name`) and the
//! scheduler binds them; a node whose new `NoSchedule` taint the pods do not tolerate keeps its
//! pod (only untolerated `NoExecute` taints, or no longer matching selection, remove it).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSetStatus;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};
use simulator::predicates::{matches_node_selection, tolerates};
use simulator::{NodeInfo, PodInfo};

use super::super::cluster::MemoryCluster;
use super::super::pods::{bound_node, is_active, is_ready};
use super::super::store::ObjectKey;
use super::{controller_ref, first_to_remove};

/// Tolerations the DaemonSet controller adds to every DaemonSet pod.
pub fn daemonset_default_tolerations() -> Vec<Toleration> {
    let toleration = |key: &str, effect: &str| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some(effect.to_string()),
        ..Default::default()
    };
    vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

fn untolerated(taints: &[Taint], tolerations: &[Toleration], effects: &[&str]) -> bool {
    taints
        .iter()
        .filter(|t| effects.contains(&t.effect.as_str()))
        .any(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
}

/// The node a DaemonSet pod is for: where it is bound, else its `metadata.name` node affinity.
fn target_node(pod: &Pod) -> Option<String> {
    if let Some(node) = bound_node(pod) {
        return Some(node.to_string());
    }
    let terms = &pod.spec.as_ref()?.affinity.as_ref()?.node_affinity.as_ref()?;
    let terms = &terms.required_during_scheduling_ignored_during_execution.as_ref()?.node_selector_terms;
    terms.iter().flat_map(|t| t.match_fields.iter().flatten()).find_map(|f| {
        (f.key == "metadata.name" && f.operator == "In").then(|| f.values.as_ref()?.first().cloned()).flatten()
    })
}

/// The controller's `ReplaceDaemonSetPodNodeNameNodeAffinity`: every required term gets the
/// node-name field requirement (label requirements stay), or one term holds it alone.
fn pin_to_node(affinity: &mut Option<Affinity>, node: &str) {
    let field = NodeSelectorRequirement {
        key: "metadata.name".to_string(),
        operator: "In".to_string(),
        values: Some(vec![node.to_string()]),
    };
    let node_affinity =
        affinity.get_or_insert_with(Default::default).node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector { node_selector_terms: Vec::new() });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields = Some(vec![field.clone()]);
    }
}

impl MemoryCluster {
    pub(in crate::memory) fn sync_daemon_set(&mut self, key: &ObjectKey) {
        let Some(ds) = self.daemonsets.get(key).cloned() else { return };
        let Some(spec) = ds.spec.as_ref() else { return };
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let mut template = spec.template.clone();
        let pod_spec = template.spec.get_or_insert_with(Default::default);
        pod_spec.tolerations.get_or_insert_with(Vec::new).extend(daemonset_default_tolerations());
        // A pod as the DaemonSet would make it, for the placement checks.
        let probe = PodInfo::new(&Pod {
            metadata: template.metadata.clone().unwrap_or_default(),
            spec: template.spec.clone(),
            status: None,
        });

        let mut by_node: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
        let mut orphans: Vec<Arc<Pod>> = Vec::new();
        for pod in self.owned_pods(&uid).into_iter().filter(|p| is_active(p)) {
            match target_node(&pod).filter(|n| self.node_infos.contains_key(n)) {
                Some(node) => by_node.entry(node).or_default().push(pod),
                None => orphans.push(pod),
            }
        }
        self.terminate_pods(&orphans);

        let nodes: Vec<(String, Arc<NodeInfo>)> = self.node_infos.iter().map(|(n, i)| (n.clone(), i.clone())).collect();
        let owner = controller_ref("apps/v1", "DaemonSet", &ds.metadata);
        let (mut desired, mut misscheduled) = (0, 0);
        for (node, info) in &nodes {
            let selected = matches_node_selection(&probe, info);
            let should_run = selected && !untolerated(info.taints(), probe.tolerations(), &["NoSchedule", "NoExecute"]);
            let may_stay = selected && !untolerated(info.taints(), probe.tolerations(), &["NoExecute"]);
            let pods = by_node.remove(node).unwrap_or_default();
            if should_run {
                desired += 1;
            }
            if should_run && pods.is_empty() {
                let name = self.next_pod_name(&uid, &key.namespace, &key.name);
                self.create_pod(ObjectKey::new(&key.namespace, name), &template, owner.clone(), &[], &[], |spec| {
                    pin_to_node(&mut spec.affinity, node);
                });
            } else if !may_stay && !pods.is_empty() {
                misscheduled += 1;
                self.terminate_pods(&pods);
            } else if pods.len() > 1 {
                let removed = first_to_remove(&pods, pods.len() - 1);
                self.terminate_pods(&removed);
            }
        }

        let pods: Vec<Arc<Pod>> = self.owned_pods(&uid).into_iter().filter(|p| is_active(p)).collect();
        let scheduled: Vec<&Arc<Pod>> = pods.iter().filter(|p| bound_node(p).is_some()).collect();
        let ready = i32::try_from(scheduled.iter().filter(|p| is_ready(p)).count()).unwrap_or(i32::MAX);
        let scheduled_count = i32::try_from(scheduled.len()).unwrap_or(i32::MAX);
        let status = DaemonSetStatus {
            desired_number_scheduled: desired,
            current_number_scheduled: scheduled_count,
            updated_number_scheduled: Some(scheduled_count),
            number_ready: ready,
            number_available: Some(ready),
            number_unavailable: Some((desired - ready).max(0)),
            number_misscheduled: misscheduled,
            observed_generation: ds.metadata.generation,
            ..Default::default()
        };
        if ds.status.as_ref() != Some(&status) {
            let mut ds = (*ds).clone();
            ds.status = Some(status);
            self.daemonsets.insert(key.clone(), Arc::new(ds));
        }
    }
}
