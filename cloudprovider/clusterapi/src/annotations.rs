//! What a scalable resource's annotations (and its Machine template's labels and taints) say
//! about it as a node group: its bounds, its scale-from-zero capacity, labels and taints, and
//! its per-group options.
//!
//! Upstream's rules, with one difference: a value that cannot be read is a [`Problem`] that
//! keeps the whole resource out of the node groups (the provider reports it with a Warning
//! Event on the resource), where upstream fails every node group for a bad size annotation and
//! silently ignores a bad capacity label, taint or option. A group whose configuration is only
//! half understood would scale on guesses.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::DynamicObject;
use serde_json::Value;

use cloudprovider::NodeGroupOptionOverrides;
use cloudprovider::duration::parse_go_duration;
use cloudprovider::quantity::quantity_value;

use crate::keys::{self, Keys};
use crate::object::{annotations, value_at};

/// Upstream's default `maxPods` for scale from zero (kubelet's default).
pub const DEFAULT_MAX_PODS: i64 = 110;

/// One unreadable field of a resource: which field, and what is wrong with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The field's path in the object, e.g. `metadata.annotations["…/max-size"]`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

fn annotation_field(key: &str) -> String {
    format!("metadata.annotations[\"{key}\"]")
}

/// A resource's node group settings, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupConfig {
    pub min: usize,
    pub max: usize,
    /// The `autoscaling-options-*` annotations; `None` when there are none.
    pub options: Option<NodeGroupOptionOverrides>,
    /// Capacity from the annotations (`cpu`, `memory`, `ephemeral-storage`, the GPU resource,
    /// `pods`).
    pub capacity: BTreeMap<String, Quantity>,
    /// Labels a new node gets: the Machine template's Cluster API-managed labels, overridden by
    /// the labels annotation.
    pub labels: BTreeMap<String, String>,
    /// Taints a new node gets: the Machine template's, with the taints annotation replacing
    /// those of the same key and effect.
    pub taints: Vec<Taint>,
    /// Option annotations this version does not know (ignored, as upstream; worth a log line).
    pub unknown_options: Vec<String>,
}

/// What the annotations make of a resource.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Not an autoscaled node group (no size annotations, or a maximum of 0): why, for the log.
    NotAutoscaled(&'static str),
    Autoscaled(GroupConfig),
    /// Meant to be a node group, but some values cannot be read.
    Malformed(Vec<Problem>),
}

/// Reads a MachineDeployment's, MachineSet's or MachinePool's node group settings.
pub fn read_group(object: &DynamicObject, keys: &Keys) -> Verdict {
    let annotations = annotations(object);
    let min_text = annotations.get(&keys.min_size);
    let max_text = annotations.get(&keys.max_size);
    if min_text.is_none() && max_text.is_none() {
        return Verdict::NotAutoscaled("no size annotations");
    }
    let mut problems = Vec::new();
    let mut size = |key: &str, text: Option<&String>| -> Option<usize> {
        let Some(text) = text else { return Some(0) };
        match text.parse::<i64>() {
            Ok(n) if n >= 0 => usize::try_from(n).ok(),
            Ok(n) => {
                problems.push(Problem { field: annotation_field(key), message: format!("{n} is negative") });
                None
            }
            Err(_) => {
                problems.push(Problem { field: annotation_field(key), message: format!("{text:?} is not an integer") });
                None
            }
        }
    };
    let min = size(&keys.min_size, min_text);
    let max = size(&keys.max_size, max_text);
    if let (Some(min), Some(max)) = (min, max) {
        if max < min {
            let message = match max_text {
                None => format!("missing, while the minimum size is {min}"),
                Some(_) => format!("{max} is below the minimum size {min}"),
            };
            problems.push(Problem { field: annotation_field(&keys.max_size), message });
        } else if max == 0 {
            return Verdict::NotAutoscaled("a maximum size of 0");
        }
    }
    let capacity = read_capacity(annotations, &mut problems);
    let labels = read_labels(object, annotations, &mut problems);
    let taints = read_taints(object, annotations, &mut problems);
    let (options, unknown_options) = read_options(annotations, keys, &mut problems);
    match (min, max) {
        (Some(min), Some(max)) if problems.is_empty() => {
            Verdict::Autoscaled(GroupConfig { min, max, options, capacity, labels, taints, unknown_options })
        }
        _ => Verdict::Malformed(problems),
    }
}

/// A quantity annotation; empty and zero values count as absent, as upstream.
fn quantity(annotations: &BTreeMap<String, String>, key: &str, problems: &mut Vec<Problem>) -> Option<Quantity> {
    let text = annotations.get(key).filter(|t| !t.is_empty())?;
    match quantity_value(text) {
        Ok(value) if value < 0.0 => {
            problems.push(Problem { field: annotation_field(key), message: format!("{text:?} is negative") });
            None
        }
        Ok(0.0) => None,
        Ok(_) => Some(Quantity(text.clone())),
        Err(message) => {
            problems.push(Problem { field: annotation_field(key), message });
            None
        }
    }
}

/// An integer annotation; empty and zero values count as absent.
fn integer(annotations: &BTreeMap<String, String>, key: &str, problems: &mut Vec<Problem>) -> Option<i64> {
    let text = annotations.get(key).filter(|t| !t.is_empty())?;
    match text.parse::<i64>() {
        Ok(n) if n < 0 => {
            problems.push(Problem { field: annotation_field(key), message: format!("{n} is negative") });
            None
        }
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(_) => {
            problems.push(Problem { field: annotation_field(key), message: format!("{text:?} is not an integer") });
            None
        }
    }
}

fn read_capacity(annotations: &BTreeMap<String, String>, problems: &mut Vec<Problem>) -> BTreeMap<String, Quantity> {
    let mut capacity = BTreeMap::new();
    for (key, resource) in [(keys::CPU, "cpu"), (keys::MEMORY, "memory"), (keys::EPHEMERAL_DISK, "ephemeral-storage")] {
        if let Some(q) = quantity(annotations, key, problems) {
            capacity.insert(resource.to_string(), q);
        }
    }
    // As upstream, GPUs count only with both their resource name and their number.
    let gpu_count = integer(annotations, keys::GPU_COUNT, problems);
    if let (Some(count), Some(gpu_type)) = (gpu_count, annotations.get(keys::GPU_TYPE).filter(|t| !t.is_empty())) {
        capacity.insert(gpu_type.clone(), Quantity(count.to_string()));
    }
    // The default of 110 is applied by `Group::capacity`, after the infrastructure template's
    // own `pods` (upstream's default would override the template's).
    if let Some(pods) = integer(annotations, keys::MAX_PODS, problems) {
        capacity.insert("pods".to_string(), Quantity(pods.to_string()));
    }
    capacity
}

/// Label keys Cluster API copies from a Machine template to its Nodes (its metadata
/// propagation rules): `node-role.kubernetes.io/*`, and the `node-restriction.kubernetes.io`
/// and `node.cluster.x-k8s.io` domains with their subdomains.
fn is_managed_label(key: &str) -> bool {
    let domain = key.split('/').next().unwrap_or_default();
    domain == "node-role.kubernetes.io"
        || ["node-restriction.kubernetes.io", "node.cluster.x-k8s.io"]
            .iter()
            .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
}

fn read_labels(
    object: &DynamicObject,
    annotations: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = value_at(object, &["spec", "template", "spec", "metadata", "labels"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| is_managed_label(key))
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
        .collect();
    if let Some(text) = annotations.get(keys::LABELS) {
        for item in text.split(',').filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some((key, value)) if !key.is_empty() => {
                    labels.insert(key.to_string(), value.to_string());
                }
                _ => problems.push(Problem {
                    field: annotation_field(keys::LABELS),
                    message: format!("{item:?} is not key=value"),
                }),
            }
        }
    }
    labels
}

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One taint of the annotation: `key=value:Effect` or `key:Effect`.
fn parse_taint(text: &str) -> Result<Taint, String> {
    let Some((key_value, effect)) = text.split_once(':') else {
        return Err(format!("{text:?} has no effect (key=value:Effect)"));
    };
    if !EFFECTS.contains(&effect) {
        return Err(format!("{text:?}: the effect {effect:?} is not one of {}", EFFECTS.join(", ")));
    }
    let (key, value) = match key_value.split_once('=') {
        Some((key, value)) => (key, Some(value)),
        None => (key_value, None),
    };
    if key.is_empty() || key.contains(['=', ' ']) || value.is_some_and(|v| v.contains(['=', ' '])) {
        return Err(format!("{text:?} is not key=value:Effect"));
    }
    Ok(Taint { key: key.to_string(), value: value.map(str::to_string), effect: effect.to_string(), time_added: None })
}

fn read_taints(
    object: &DynamicObject,
    annotations: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) -> Vec<Taint> {
    // The Machine template's taints (Cluster API 1.12's MachineTaintPropagation).
    let mut taints: Vec<Taint> = value_at(object, &["spec", "template", "spec", "taints"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some(Taint {
                key: t.get("key")?.as_str()?.to_string(),
                value: t.get("value").and_then(Value::as_str).map(str::to_string),
                effect: t.get("effect").and_then(Value::as_str).unwrap_or_default().to_string(),
                time_added: None,
            })
        })
        .collect();
    if let Some(text) = annotations.get(keys::TAINTS) {
        for item in text.split(',').filter(|i| !i.is_empty()) {
            match parse_taint(item) {
                Ok(taint) => match taints.iter_mut().find(|t| t.key == taint.key && t.effect == taint.effect) {
                    Some(existing) => *existing = taint,
                    None => taints.push(taint),
                },
                Err(message) => problems.push(Problem { field: annotation_field(keys::TAINTS), message }),
            }
        }
    }
    taints
}

fn read_options(
    annotations: &BTreeMap<String, String>,
    keys: &Keys,
    problems: &mut Vec<Problem>,
) -> (Option<NodeGroupOptionOverrides>, Vec<String>) {
    let mut options = NodeGroupOptionOverrides::default();
    let mut any = false;
    let mut unknown = Vec::new();
    for (key, value) in annotations {
        let Some(name) = key.strip_prefix(&keys.options_prefix).filter(|n| !n.is_empty()) else { continue };
        if value.is_empty() {
            continue;
        }
        // Upstream lower-cases the values (durations and floats read the same either way).
        let value = value.to_lowercase();
        let field = annotation_field(key);
        let ratio = |problems: &mut Vec<Problem>| match value.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
            _ => {
                problems.push(Problem { field: field.clone(), message: format!("{value:?} is not a number >= 0") });
                None
            }
        };
        let duration = |problems: &mut Vec<Problem>| match parse_go_duration(&value) {
            Ok(d) => Some(d),
            Err(message) => {
                problems.push(Problem { field: field.clone(), message });
                None
            }
        };
        match name {
            "scaledownutilizationthreshold" => options.scale_down_utilization_threshold = ratio(problems),
            "scaledowngpuutilizationthreshold" => options.scale_down_gpu_utilization_threshold = ratio(problems),
            "scaledownunneededtime" => options.scale_down_unneeded_time = duration(problems),
            "scaledownunreadytime" => options.scale_down_unready_time = duration(problems),
            "maxnodeprovisiontime" => options.max_node_provision_time = duration(problems),
            "maxnodestartuptime" => options.max_node_startup_time = duration(problems),
            _ => {
                unknown.push(key.clone());
                continue;
            }
        }
        any = true;
    }
    (any.then_some(options), unknown)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn resource(annotations: Value, template_spec: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": {"name": "md", "namespace": "ns", "annotations": annotations},
            "spec": {"replicas": 0, "template": {"spec": template_spec}},
        }))
        .unwrap()
    }

    fn sized(extra: &[(&str, &str)]) -> Value {
        let mut annotations = json!({
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1",
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
        });
        for (k, v) in extra {
            annotations[*k] = json!(v);
        }
        annotations
    }

    fn config(verdict: Verdict) -> GroupConfig {
        match verdict {
            Verdict::Autoscaled(config) => config,
            other => panic!("expected a node group, got {other:?}"),
        }
    }

    fn problems(verdict: Verdict) -> Vec<Problem> {
        match verdict {
            Verdict::Malformed(problems) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    }

    #[test]
    fn sizes_follow_upstreams_rules() {
        let keys = Keys::default();
        let c = config(read_group(&resource(sized(&[]), json!({})), &keys));
        assert_eq!((c.min, c.max), (1, 5));
        let only_max = json!({"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "3"});
        assert_eq!((config(read_group(&resource(only_max, json!({})), &keys)).min), 0, "a missing minimum is 0");
        assert_eq!(read_group(&resource(json!({}), json!({})), &keys), Verdict::NotAutoscaled("no size annotations"));
        let zero = json!({"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "0"});
        assert_eq!(read_group(&resource(zero, json!({})), &keys), Verdict::NotAutoscaled("a maximum size of 0"));
        let equal = sized(&[("cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size", "1")]);
        assert_eq!(config(read_group(&resource(equal, json!({})), &keys)).max, 1, "max = min is allowed");
    }

    #[test]
    fn bad_sizes_are_problems_naming_the_annotation_and_the_value() {
        let keys = Keys::default();
        let bad = sized(&[("cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size", "five")]);
        let p = problems(read_group(&resource(bad, json!({})), &keys));
        assert_eq!(
            p[0].to_string(),
            "metadata.annotations[\"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size\"]: \"five\" is not an integer"
        );
        let below = sized(&[("cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size", "0")]);
        assert!(
            problems(read_group(&resource(below, json!({})), &keys))[0].message.contains("below the minimum size 1")
        );
        let only_min = json!({"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "2"});
        assert!(problems(read_group(&resource(only_min, json!({})), &keys))[0].message.contains("missing"));
        let negative = sized(&[("cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size", "-1")]);
        assert!(problems(read_group(&resource(negative, json!({})), &keys))[0].message.contains("negative"));
    }

    #[test]
    fn capacity_comes_from_the_annotations() {
        let annotations = sized(&[
            (keys::CPU, "16"),
            (keys::MEMORY, "128G"),
            (keys::EPHEMERAL_DISK, "100Gi"),
            (keys::GPU_TYPE, "nvidia.com/gpu"),
            (keys::GPU_COUNT, "2"),
        ]);
        let c = config(read_group(&resource(annotations, json!({})), &Keys::default()));
        let expected: BTreeMap<String, Quantity> =
            [("cpu", "16"), ("memory", "128G"), ("ephemeral-storage", "100Gi"), ("nvidia.com/gpu", "2")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect();
        assert_eq!(c.capacity, expected);
        let pods = sized(&[(keys::MAX_PODS, "200"), (keys::GPU_COUNT, "2")]);
        let c = config(read_group(&resource(pods, json!({})), &Keys::default()));
        assert_eq!(c.capacity["pods"], Quantity("200".into()));
        assert!(!c.capacity.contains_key("nvidia.com/gpu"), "a GPU count without a type adds nothing");
        let bad = sized(&[(keys::MEMORY, "lots"), (keys::MAX_PODS, "1.5")]);
        let p = problems(read_group(&resource(bad, json!({})), &Keys::default()));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].field.contains("memory") && p[0].message.contains("\"lots\""), "{p:?}");
    }

    #[test]
    fn labels_and_taints_merge_the_template_with_the_annotations() {
        let annotations = sized(&[
            (keys::LABELS, "pool=gpu,node-role.kubernetes.io/worker=x"),
            (keys::TAINTS, "dedicated=override:NoSchedule,b:NoExecute"),
        ]);
        let template = json!({
            "metadata": {"labels": {"node-role.kubernetes.io/worker": "", "team": "a", "x.node.cluster.x-k8s.io/y": "z"}},
            "taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule", "propagation": "Always"},
                {"key": "setup", "value": "true", "effect": "NoSchedule"},
            ],
        });
        let c = config(read_group(&resource(annotations, template), &Keys::default()));
        let labels: Vec<(&str, &str)> = c.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            labels,
            [("node-role.kubernetes.io/worker", "x"), ("pool", "gpu"), ("x.node.cluster.x-k8s.io/y", "z")]
        );
        let taints: Vec<(&str, Option<&str>, &str)> =
            c.taints.iter().map(|t| (t.key.as_str(), t.value.as_deref(), t.effect.as_str())).collect();
        assert_eq!(
            taints,
            [
                ("dedicated", Some("override"), "NoSchedule"),
                ("setup", Some("true"), "NoSchedule"),
                ("b", None, "NoExecute")
            ]
        );
        let bad = sized(&[(keys::TAINTS, "a=b:Sometimes"), (keys::LABELS, "novalue")]);
        let p = problems(read_group(&resource(bad, json!({})), &Keys::default()));
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn options_override_the_defaults_and_bad_values_are_problems() {
        let prefix = "cluster.x-k8s.io/autoscaling-options-";
        let annotations = sized(&[
            (&format!("{prefix}scaledownutilizationthreshold"), "0.3"),
            (&format!("{prefix}scaledownunneededtime"), "5M"),
            (&format!("{prefix}maxnodeprovisiontime"), "20m0s"),
            (&format!("{prefix}somethingnew"), "1"),
        ]);
        let c = config(read_group(&resource(annotations, json!({})), &Keys::default()));
        let options = c.options.unwrap();
        assert_eq!(options.scale_down_utilization_threshold, Some(0.3));
        assert_eq!(options.scale_down_unneeded_time, Some(Duration::from_secs(300)), "values are lower-cased");
        assert_eq!(options.max_node_provision_time, Some(Duration::from_secs(1200)));
        assert_eq!(c.unknown_options, [format!("{prefix}somethingnew")]);
        assert_eq!(config(read_group(&resource(sized(&[]), json!({})), &Keys::default())).options, None);
        let bad = sized(&[(&format!("{prefix}scaledownunreadytime"), "soon")]);
        let p = problems(read_group(&resource(bad, json!({})), &Keys::default()));
        assert!(p[0].field.ends_with("scaledownunreadytime\"]") && p[0].message.contains("\"soon\""), "{p:?}");
    }
}
