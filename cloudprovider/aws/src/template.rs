//! Scale from zero: the template node of an ASG, built from its instance type and its tags as
//! upstream builds it, and the per-group options from its tags.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use cloudprovider::duration::parse_go_duration;
use cloudprovider::options::NodeGroupOptionOverrides;
use cloudprovider::quantity::quantity_value;
use cloudprovider::template::{complete_template, ready_conditions};
use cloudprovider::{GPU_RESOURCE, NodeTemplate};

use crate::instance_types::InstanceType;

pub const LABEL_TAG_PREFIX: &str = "k8s.io/cluster-autoscaler/node-template/label/";
pub const TAINT_TAG_PREFIX: &str = "k8s.io/cluster-autoscaler/node-template/taint/";
pub const RESOURCE_TAG_PREFIX: &str = "k8s.io/cluster-autoscaler/node-template/resources/";
pub const OPTION_TAG_PREFIX: &str = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/";
/// EKS managed node groups tag their ASGs `eks:<key>`; upstream turns these into labels too.
const EKS_TAG_PREFIX: &str = "eks:";
/// The EBS CSI driver's topology label, which upstream sets on templates.
pub const EBS_CSI_ZONE_LABEL: &str = "topology.ebs.csi.aws.com/zone";

/// What a template is built from.
pub struct TemplateInput<'a> {
    pub asg: &'a str,
    pub instance_type: &'a InstanceType,
    pub region: &'a str,
    /// The ASG's first availability zone, as upstream uses.
    pub zone: &'a str,
    pub tags: &'a BTreeMap<String, String>,
}

/// The template node: capacity from the instance type (vCPUs, memory, NVIDIA GPUs, the VPC
/// CNI's max pods), overridden by `…/node-template/resources/<name>` tags; allocatable equal to
/// capacity (as upstream); upstream's standard labels, then the tags' labels
/// (`…/node-template/label/<key>`, `eks:<key>`); taints from `…/node-template/taint/<key>`
/// tags valued `<value>:<effect>`. Tags whose value cannot be used are skipped, as upstream
/// does, and returned as warnings.
pub fn build_template(input: &TemplateInput<'_>) -> (NodeTemplate, Vec<String>) {
    let mut warnings = Vec::new();
    let t = input.instance_type;
    let mut capacity: BTreeMap<String, Quantity> = BTreeMap::new();
    capacity.insert("cpu".into(), Quantity(t.vcpus.to_string()));
    capacity.insert("memory".into(), Quantity(format!("{}Mi", t.memory_mib)));
    capacity.insert("pods".into(), Quantity(t.max_pods().to_string()));
    if t.gpus > 0 {
        capacity.insert(GPU_RESOURCE.into(), Quantity(t.gpus.to_string()));
    }
    for (key, value) in input.tags {
        let Some(resource) = key.strip_prefix(RESOURCE_TAG_PREFIX).filter(|r| !r.is_empty()) else { continue };
        match quantity_value(value) {
            Ok(v) if v >= 0.0 => {
                capacity.insert(resource.to_string(), Quantity(value.clone()));
            }
            Ok(_) => warnings.push(format!("ASG {} tag {key}: quantity {value:?} is negative", input.asg)),
            Err(message) => warnings.push(format!("ASG {} tag {key}: {message}", input.asg)),
        }
    }

    let name = cloudprovider::template::default_template_name(input.asg);
    let mut labels = BTreeMap::from([
        ("kubernetes.io/arch".to_string(), t.arch.label().to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("node.kubernetes.io/instance-type".to_string(), t.name.clone()),
        ("topology.kubernetes.io/region".to_string(), input.region.to_string()),
        ("topology.kubernetes.io/zone".to_string(), input.zone.to_string()),
        (EBS_CSI_ZONE_LABEL.to_string(), input.zone.to_string()),
        (cloudprovider::template::HOSTNAME_LABEL.to_string(), name.clone()),
    ]);
    for (key, value) in input.tags {
        let label = key.strip_prefix(LABEL_TAG_PREFIX).or_else(|| key.strip_prefix(EKS_TAG_PREFIX));
        if let Some(label) = label.filter(|l| !l.is_empty()) {
            labels.insert(label.to_string(), value.clone());
        }
    }

    let mut taints = Vec::new();
    for (key, value) in input.tags {
        let Some(taint_key) = key.strip_prefix(TAINT_TAG_PREFIX).filter(|k| !k.is_empty()) else { continue };
        match value.rsplit_once(':') {
            Some((taint_value, effect)) if ["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) => {
                taints.push(Taint {
                    key: taint_key.to_string(),
                    value: (!taint_value.is_empty()).then(|| taint_value.to_string()),
                    effect: effect.to_string(),
                    time_added: None,
                });
            }
            _ => warnings.push(format!(
                "ASG {} tag {key}: {value:?} is not <value>:<NoSchedule|PreferNoSchedule|NoExecute>",
                input.asg
            )),
        }
    }

    let node = Node {
        metadata: ObjectMeta { name: Some(name), labels: Some(labels), ..Default::default() },
        spec: Some(NodeSpec { taints: (!taints.is_empty()).then_some(taints), ..Default::default() }),
        status: Some(NodeStatus {
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            conditions: Some(ready_conditions(None)),
            ..Default::default()
        }),
    };
    // Every quantity was checked above, so completing cannot fail; keep the node if it did.
    let node = match complete_template(node.clone(), input.asg) {
        Ok(node) => node,
        Err(problem) => {
            warnings.push(format!("ASG {} template: {}: {}", input.asg, problem.field, problem.message));
            node
        }
    };
    (NodeTemplate { node, pods: Vec::new() }, warnings)
}

/// Per-group options from `…/node-template/autoscaling-options/<key>` tags, with upstream's
/// keys (`scaledownutilizationthreshold`, `scaledowngpuutilizationthreshold`,
/// `scaledownunneededtime`, `scaledownunreadytime`, `ignoredaemonsetsutilization`) plus
/// `maxnodeprovisiontime`. A value that does not parse is skipped with a warning, as upstream.
pub fn options_from_tags(
    asg: &str,
    tags: &BTreeMap<String, String>,
) -> (Option<NodeGroupOptionOverrides>, Vec<String>) {
    let mut overrides = NodeGroupOptionOverrides::default();
    let mut warnings = Vec::new();
    let mut any = false;
    for (key, value) in tags {
        let Some(option) = key.strip_prefix(OPTION_TAG_PREFIX) else { continue };
        let mut warn = |what: &str| warnings.push(format!("ASG {asg} tag {key}: {value:?} is not {what}"));
        let ratio = || value.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        let duration = || parse_go_duration(value.trim()).ok();
        match option {
            "scaledownutilizationthreshold" => match ratio() {
                Some(v) => overrides.scale_down_utilization_threshold = Some(v),
                None => warn("a number"),
            },
            "scaledowngpuutilizationthreshold" => match ratio() {
                Some(v) => overrides.scale_down_gpu_utilization_threshold = Some(v),
                None => warn("a number"),
            },
            "scaledownunneededtime" => match duration() {
                Some(v) => overrides.scale_down_unneeded_time = Some(v),
                None => warn("a duration"),
            },
            "scaledownunreadytime" => match duration() {
                Some(v) => overrides.scale_down_unready_time = Some(v),
                None => warn("a duration"),
            },
            "maxnodeprovisiontime" => match duration() {
                Some(v) => overrides.max_node_provision_time = Some(v),
                None => warn("a duration"),
            },
            "ignoredaemonsetsutilization" => match parse_go_bool(value.trim()) {
                Some(v) => overrides.ignore_daemonsets_utilization = Some(v),
                None => warn("a boolean"),
            },
            _ => {
                warnings.push(format!("ASG {asg} tag {key}: unknown autoscaling option"));
                continue;
            }
        }
        any = true;
    }
    (any.then_some(overrides), warnings)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::instance_types::builtin;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn template_has_capacity_standard_labels_and_tag_labels_taints_resources() {
        let t = builtin("g4dn.xlarge").unwrap();
        let tags = tags(&[
            ("k8s.io/cluster-autoscaler/node-template/label/pool", "gpu"),
            ("eks:nodegroup-name", "ng-1"),
            ("k8s.io/cluster-autoscaler/node-template/taint/dedicated", "gpu:NoSchedule"),
            ("k8s.io/cluster-autoscaler/node-template/taint/bad", "gpu"),
            ("k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage", "100G"),
            ("k8s.io/cluster-autoscaler/node-template/resources/pods", "58"),
            ("Name", "ignored"),
        ]);
        let input =
            TemplateInput { asg: "gpu", instance_type: &t, region: "eu-west-1", zone: "eu-west-1b", tags: &tags };
        let (template, warnings) = build_template(&input);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let node = template.node;
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "g4dn.xlarge");
        assert_eq!(labels["topology.kubernetes.io/region"], "eu-west-1");
        assert_eq!(labels["topology.kubernetes.io/zone"], "eu-west-1b");
        assert_eq!(labels[EBS_CSI_ZONE_LABEL], "eu-west-1b");
        assert_eq!(labels["kubernetes.io/hostname"], "template-node-for-gpu");
        assert_eq!(labels["pool"], "gpu");
        assert_eq!(labels["nodegroup-name"], "ng-1");
        let taints = node.spec.unwrap().taints.unwrap();
        assert_eq!(
            (taints[0].key.as_str(), taints[0].value.as_deref(), taints[0].effect.as_str()),
            ("dedicated", Some("gpu"), "NoSchedule")
        );
        let status = node.status.unwrap();
        let capacity = status.capacity.unwrap();
        assert_eq!(capacity["cpu"], Quantity("4".into()));
        assert_eq!(capacity["memory"], Quantity("16384Mi".into()));
        assert_eq!(capacity[GPU_RESOURCE], Quantity("1".into()));
        assert_eq!(capacity["pods"], Quantity("58".into()), "a resources tag overrides the ENI limit");
        assert_eq!(capacity["ephemeral-storage"], Quantity("100G".into()));
        assert_eq!(status.allocatable.unwrap(), capacity);
    }

    #[test]
    fn options_come_from_tags_and_bad_values_are_skipped() {
        let tags = tags(&[
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownutilizationthreshold", "0.7"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunneededtime", "2m"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/ignoredaemonsetsutilization", "true"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunreadytime", "soon"),
        ]);
        let (overrides, warnings) = options_from_tags("g", &tags);
        let overrides = overrides.unwrap();
        assert_eq!(overrides.scale_down_utilization_threshold, Some(0.7));
        assert_eq!(overrides.scale_down_unneeded_time, Some(Duration::from_secs(120)));
        assert_eq!(overrides.ignore_daemonsets_utilization, Some(true));
        assert_eq!(overrides.scale_down_unready_time, None);
        assert_eq!(warnings.len(), 1);
        assert_eq!(options_from_tags("g", &BTreeMap::new()).0, None);
    }
}
