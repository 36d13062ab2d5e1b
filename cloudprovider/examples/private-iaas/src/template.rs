//! Template nodes from flavors: what a fresh VM of a pool will look like as a Node, so the
//! autoscaler can scale a pool up from zero. The labels and taints must match what the pool's
//! kubelets register with (the image's `--node-labels` / `--register-with-taints`), or the
//! autoscaler's predictions are wrong.

use std::collections::BTreeMap;

use cloudprovider::GPU_RESOURCE;
use cloudprovider::template::{DEFAULT_MAX_PODS, TemplateProblem, complete_template};
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::Flavor;
use crate::config::{INSTANCE_TYPE_LABEL, PoolGroupConfig};

/// The template Node of `group`'s pool, made of `flavor`.
///
/// Capacity is the flavor's (cpu, memory, 110 pods, `nvidia.com/gpu`), and so is allocatable:
/// this IaaS reports no system reservations. If your kubelets reserve resources
/// (`--kube-reserved`, `--system-reserved`), subtract them here, or scale-ups will be short.
pub fn template_node(group: &PoolGroupConfig, flavor: &Flavor, gpu_label: &str) -> Result<Node, TemplateProblem> {
    let mut labels = BTreeMap::from([
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
    ]);
    // The pool's labels may override os and arch (an arm64 pool); the configuration refuses
    // the labels set from the flavor below.
    labels.extend(group.labels.clone());
    labels.insert(INSTANCE_TYPE_LABEL.to_string(), flavor.name.clone());
    let mut capacity = BTreeMap::from([
        ("cpu".to_string(), Quantity(flavor.vcpus.to_string())),
        ("memory".to_string(), Quantity(format!("{}Mi", flavor.memory_mib))),
        ("pods".to_string(), Quantity(DEFAULT_MAX_PODS.to_string())),
    ]);
    if flavor.gpus > 0 {
        capacity.insert(GPU_RESOURCE.to_string(), Quantity(flavor.gpus.to_string()));
        if let Some(gpu_type) = &flavor.gpu_type {
            labels.insert(gpu_label.to_string(), gpu_type.clone());
        }
    }
    let node = Node {
        metadata: ObjectMeta { labels: Some(labels), ..Default::default() },
        spec: Some(NodeSpec { taints: (!group.taints.is_empty()).then(|| group.taints.clone()), ..Default::default() }),
        status: Some(NodeStatus { capacity: Some(capacity), ..Default::default() }),
    };
    complete_template(node, &group.pool)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Taint;

    use super::*;

    fn group() -> PoolGroupConfig {
        PoolGroupConfig {
            pool: "gpu".into(),
            min_size: 0,
            max_size: 3,
            flavor: "g1.xlarge".into(),
            image: "ubuntu".into(),
            labels: BTreeMap::from([("pool".into(), "gpu".into())]),
            taints: vec![Taint {
                key: "nvidia.com/gpu".into(),
                value: Some("present".into()),
                effect: "NoSchedule".into(),
                time_added: None,
            }],
            lines: Default::default(),
        }
    }

    #[test]
    fn a_gpu_flavor_makes_a_gpu_template() {
        let flavor = Flavor {
            name: "g1.xlarge".into(),
            vcpus: 4,
            memory_mib: 16384,
            gpus: 1,
            gpu_type: Some("Tesla-T4".into()),
            price_per_hour: 0.526,
        };
        let node = template_node(&group(), &flavor, "nvidia.com/gpu.product").unwrap();
        assert_eq!(node.metadata.name.as_deref(), Some("template-node-for-gpu"));
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["nvidia.com/gpu.product"], "Tesla-T4");
        assert_eq!(labels[INSTANCE_TYPE_LABEL], "g1.xlarge");
        assert_eq!(labels["pool"], "gpu");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        let status = node.status.as_ref().unwrap();
        let allocatable = status.allocatable.as_ref().unwrap();
        assert_eq!(allocatable["cpu"], Quantity("4".into()));
        assert_eq!(allocatable["memory"], Quantity("16384Mi".into()));
        assert_eq!(allocatable["pods"], Quantity("110".into()));
        assert_eq!(allocatable[GPU_RESOURCE], Quantity("1".into()));
        assert_eq!(node.spec.unwrap().taints.unwrap()[0].key, "nvidia.com/gpu");
    }
}
