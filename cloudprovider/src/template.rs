//! Template nodes: what a fresh node of a group looks like. Providers build them from their own
//! descriptions (a config file, a machine flavor, an instance type) and complete them with the
//! same defaults, so every provider's templates look alike to the core.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::quantity::quantity_value;

/// The node label carrying the node's host name.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Kubelet's default `--max-pods`; upstream's providers give their templates the same number.
pub const DEFAULT_MAX_PODS: &str = "110";

/// A problem in a template: the field (below the template node) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateProblem {
    pub field: String,
    pub message: String,
}

impl TemplateProblem {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> TemplateProblem {
        TemplateProblem { field: field.into(), message: message.into() }
    }
}

/// The default template name for a group, upstream's `template-node-for-<group>`.
pub fn default_template_name(group_id: &str) -> String {
    format!("template-node-for-{group_id}")
}

/// Validates and completes a template node:
/// - every capacity / allocatable quantity must parse and must not be negative;
/// - `capacity` and `allocatable` default to each other (at least one is required), and `pods`
///   defaults to 110;
/// - the name defaults to `template-node-for-<group>`, the hostname label to the name, and the
///   spec to an empty one;
/// - without conditions, the template gets upstream's ready conditions.
pub fn complete_template(mut node: Node, group_id: &str) -> Result<Node, TemplateProblem> {
    let status = node.status.get_or_insert_with(NodeStatus::default);
    check_quantities(status.capacity.as_ref(), "status.capacity")?;
    check_quantities(status.allocatable.as_ref(), "status.allocatable")?;
    match (&status.capacity, &status.allocatable) {
        (None, None) => {
            return Err(TemplateProblem::new(
                "status.capacity",
                "a template needs status.capacity (or status.allocatable)",
            ));
        }
        (Some(capacity), None) => status.allocatable = Some(capacity.clone()),
        (None, Some(allocatable)) => status.capacity = Some(allocatable.clone()),
        (Some(_), Some(_)) => {}
    }
    for resources in [status.capacity.as_mut(), status.allocatable.as_mut()].into_iter().flatten() {
        resources.entry("pods".to_string()).or_insert_with(|| Quantity(DEFAULT_MAX_PODS.to_string()));
    }
    if status.conditions.as_ref().is_none_or(Vec::is_empty) {
        status.conditions = Some(ready_conditions(None));
    }
    let name = node.metadata.name.get_or_insert_with(|| default_template_name(group_id)).clone();
    node.metadata.labels.get_or_insert_with(BTreeMap::new).entry(HOSTNAME_LABEL.to_string()).or_insert(name);
    node.spec.get_or_insert_with(NodeSpec::default);
    Ok(node)
}

fn check_quantities(resources: Option<&BTreeMap<String, Quantity>>, field: &str) -> Result<(), TemplateProblem> {
    for (name, quantity) in resources.into_iter().flatten() {
        match quantity_value(&quantity.0) {
            Ok(value) if value < 0.0 => {
                return Err(TemplateProblem::new(
                    format!("{field}.{name}"),
                    format!("quantity {:?} must not be negative", quantity.0),
                ));
            }
            Ok(_) => {}
            Err(message) => return Err(TemplateProblem::new(format!("{field}.{name}"), message)),
        }
    }
    Ok(())
}

/// The conditions upstream gives template nodes built by providers (`BuildReadyConditions`):
/// Ready, and no network, disk or memory pressure, since `since` when given.
pub fn ready_conditions(since: Option<Timestamp>) -> Vec<NodeCondition> {
    [("Ready", "True"), ("NetworkUnavailable", "False"), ("DiskPressure", "False"), ("MemoryPressure", "False")]
        .into_iter()
        .map(|(type_, status)| NodeCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: (type_ == "Ready").then(|| "KubeletReady".to_string()),
            message: (type_ == "Ready").then(|| "kubelet is posting ready status".to_string()),
            last_transition_time: since.map(Time),
            last_heartbeat_time: since.map(Time),
        })
        .collect()
}

/// The value of one resource in a list, 0 when absent.
pub fn resource_value(list: Option<&BTreeMap<String, Quantity>>, name: &str) -> Result<f64, String> {
    match list.and_then(|l| l.get(name)) {
        Some(q) => quantity_value(&q.0).map_err(|message| format!("resource {name}: {message}")),
        None => Ok(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
    }

    fn node_with_capacity(pairs: &[(&str, &str)]) -> Node {
        Node {
            status: Some(NodeStatus { capacity: Some(resources(pairs)), ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn template_allocatable_defaults_to_capacity_and_back() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g").unwrap();
        let status = node.status.unwrap();
        assert_eq!(status.allocatable, status.capacity);
        assert_eq!(status.allocatable.unwrap()["cpu"], Quantity("4".into()));
        let only_allocatable = Node {
            status: Some(NodeStatus { allocatable: Some(resources(&[("cpu", "2")])), ..Default::default() }),
            ..Default::default()
        };
        let status = complete_template(only_allocatable, "g").unwrap().status.unwrap();
        assert_eq!(status.capacity.unwrap()["cpu"], Quantity("2".into()));
    }

    #[test]
    fn template_pods_default_to_110() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g").unwrap();
        assert_eq!(node.status.unwrap().capacity.unwrap()["pods"], Quantity("110".into()));
    }

    #[test]
    fn template_name_and_hostname_label_default() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "general").unwrap();
        assert_eq!(node.metadata.name.as_deref(), Some("template-node-for-general"));
        assert_eq!(node.metadata.labels.unwrap()[HOSTNAME_LABEL], "template-node-for-general");
    }

    #[test]
    fn template_gets_ready_conditions_when_it_has_none() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g").unwrap();
        let conditions = node.status.unwrap().conditions.unwrap();
        assert!(conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        assert!(conditions.iter().any(|c| c.type_ == "MemoryPressure" && c.status == "False"));
    }

    #[test]
    fn template_invalid_quantity_names_the_resource() {
        let error = complete_template(node_with_capacity(&[("memory", "16GB")]), "g").unwrap_err();
        assert_eq!(error.field, "status.capacity.memory");
        assert!(error.message.contains("\"16GB\""), "{}", error.message);
    }

    #[test]
    fn template_negative_quantity_is_refused() {
        let error = complete_template(node_with_capacity(&[("cpu", "-1")]), "g").unwrap_err();
        assert_eq!(error.field, "status.capacity.cpu");
    }

    #[test]
    fn template_without_resources_is_refused() {
        let error = complete_template(Node::default(), "g").unwrap_err();
        assert_eq!(error.field, "status.capacity");
    }
}
