//! The template node of a group (scale from zero), upstream's construction: capacity from the
//! infrastructure template's `status.capacity` overridden by the capacity annotations (110 pods
//! when neither says); labels, lowest priority first: `kubernetes.io/arch` (the
//! `CAPI_SCALE_ZERO_DEFAULT_ARCH` environment variable, else `amd64`), `kubernetes.io/os=linux`
//! and the hostname; the template's `status.nodeInfo` architecture and OS; the Machine
//! template's Cluster API-managed labels and the labels annotation; and, when the group has a
//! node already, that node's architecture, OS, instance type, region and zone labels. Taints
//! from the Machine template and the taints annotation; upstream's ready conditions.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, NodeSystemInfo};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use cloudprovider::template::{HOSTNAME_LABEL, TemplateProblem, complete_template, ready_conditions};

use crate::snapshot::Group;

pub const ARCH_LABEL: &str = "kubernetes.io/arch";
pub const OS_LABEL: &str = "kubernetes.io/os";
/// The architecture of templates when neither the environment nor the template says.
pub const DEFAULT_ARCH: &str = "amd64";
/// Upstream's recognised values of `CAPI_SCALE_ZERO_DEFAULT_ARCH`.
pub const KNOWN_ARCHS: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// The labels of an existing node a template copies (upstream's `extractNodeLabels`).
pub const COPIED_NODE_LABELS: [&str; 7] = [
    ARCH_LABEL,
    OS_LABEL,
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
];

/// The non-empty labels of `labels` a template copies.
pub fn copied_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    COPIED_NODE_LABELS
        .iter()
        .filter_map(|key| labels.get(*key).filter(|v| !v.is_empty()).map(|v| (key.to_string(), v.clone())))
        .collect()
}

/// The template node of `group`; `None` when it cannot scale from zero (CPU or memory unknown).
/// `node_labels`: the copied labels of one of the group's nodes, if it has one.
pub fn template_node(
    group: &Group,
    default_arch: &str,
    node_labels: Option<&BTreeMap<String, String>>,
) -> Option<Result<Node, TemplateProblem>> {
    if !group.can_scale_from_zero() {
        return None;
    }
    let capacity = group.capacity();
    let name = format!("{}-template", group.name);
    let mut labels = BTreeMap::from([
        (ARCH_LABEL.to_string(), default_arch.to_string()),
        (OS_LABEL.to_string(), "linux".to_string()),
        (HOSTNAME_LABEL.to_string(), name.clone()),
    ]);
    let infra = group.infra.as_ref();
    let architecture = infra.and_then(|i| i.architecture.clone());
    let operating_system = infra.and_then(|i| i.operating_system.clone());
    // Upstream writes the template's nodeInfo labels even when they are empty; an empty label
    // would match no pod's affinity, so only values that are set are used.
    if let Some(arch) = &architecture {
        labels.insert(ARCH_LABEL.to_string(), arch.clone());
    }
    if let Some(os) = &operating_system {
        labels.insert(OS_LABEL.to_string(), os.clone());
    }
    labels.extend(group.config.labels.clone());
    labels.extend(node_labels.cloned().unwrap_or_default());
    let node_info = (architecture.is_some() || operating_system.is_some()).then(|| NodeSystemInfo {
        architecture: architecture.unwrap_or_default(),
        operating_system: operating_system.unwrap_or_default(),
        ..Default::default()
    });
    let node = Node {
        metadata: ObjectMeta { name: Some(name), labels: Some(labels), ..Default::default() },
        spec: Some(NodeSpec {
            taints: (!group.config.taints.is_empty()).then(|| group.config.taints.clone()),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(capacity.clone()),
            allocatable: Some(capacity),
            conditions: Some(ready_conditions(None)),
            node_info,
            ..Default::default()
        }),
    };
    Some(complete_template(node, &group.id))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Taint;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;
    use crate::annotations::GroupConfig;
    use crate::snapshot::{InfraInfo, Kind};

    fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
    }

    fn group(capacity: &[(&str, &str)], infra: Option<InfraInfo>) -> Group {
        Group {
            id: "MachineDeployment/ns/md".into(),
            kind: Kind::MachineDeployment,
            namespace: "ns".into(),
            name: "md".into(),
            replicas: 0,
            config: GroupConfig {
                min: 0,
                max: 3,
                capacity: quantities(capacity),
                labels: [("pool".to_string(), "gpu".to_string())].into(),
                taints: vec![Taint { key: "gpu".into(), value: None, effect: "NoSchedule".into(), time_added: None }],
                ..Default::default()
            },
            infra_ref: None,
            infra,
            instances: Vec::new(),
            pool_provider_ids: Vec::new(),
        }
    }

    #[test]
    fn a_template_needs_cpu_and_memory() {
        assert!(template_node(&group(&[("cpu", "2")], None), DEFAULT_ARCH, None).is_none());
    }

    #[test]
    fn annotations_win_over_the_infrastructure_template() {
        let infra = InfraInfo {
            capacity: quantities(&[("cpu", "8"), ("memory", "32Gi"), ("nvidia.com/gpu", "1")]),
            architecture: Some("arm64".into()),
            operating_system: None,
        };
        let node = template_node(&group(&[("cpu", "16")], Some(infra)), DEFAULT_ARCH, None).unwrap().unwrap();
        let status = node.status.unwrap();
        assert_eq!(
            status.capacity.unwrap(),
            quantities(&[("cpu", "16"), ("memory", "32Gi"), ("nvidia.com/gpu", "1"), ("pods", "110")])
        );
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels[ARCH_LABEL], "arm64", "the template's architecture");
        assert_eq!(labels[OS_LABEL], "linux", "the default OS");
        assert_eq!(labels["pool"], "gpu");
        assert_eq!(status.node_info.unwrap().architecture, "arm64");
        assert_eq!(node.spec.unwrap().taints.unwrap()[0].key, "gpu");
        assert!(status.conditions.unwrap().iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    }

    #[test]
    fn an_existing_nodes_labels_come_last() {
        let copied = copied_labels(&BTreeMap::from([
            (ARCH_LABEL.to_string(), "s390x".to_string()),
            ("node.kubernetes.io/instance-type".to_string(), "big".to_string()),
            ("unrelated".to_string(), "x".to_string()),
        ]));
        assert_eq!(copied.len(), 2);
        let node =
            template_node(&group(&[("cpu", "2"), ("memory", "4Gi")], None), "ppc64le", Some(&copied)).unwrap().unwrap();
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels[ARCH_LABEL], "s390x");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "big");
        assert!(!labels.contains_key("unrelated"));
        let node = template_node(&group(&[("cpu", "2"), ("memory", "4Gi")], None), "ppc64le", None).unwrap().unwrap();
        assert_eq!(node.metadata.labels.unwrap()[ARCH_LABEL], "ppc64le", "the default architecture");
    }
}
