//! Turning a group's `template` from the file into the Node a fresh node of the group looks like.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::quantity_value;

pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Kubelet's default `--max-pods`; upstream providers give their templates the same number.
const DEFAULT_PODS: &str = "110";

/// A problem in a template: the field below `template` and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TemplateProblem {
    pub field: String,
    pub message: String,
}

fn problem(field: impl Into<String>, message: impl Into<String>) -> TemplateProblem {
    TemplateProblem { field: field.into(), message: message.into() }
}

/// The default template name for a group.
pub(crate) fn default_template_name(group_id: &str) -> String {
    format!("template-node-for-{group_id}")
}

/// Validates and completes a template:
/// - every capacity / allocatable quantity must parse and must not be negative;
/// - `capacity` and `allocatable` default to each other (at least one is required), and `pods`
///   defaults to 110 like upstream's provider templates;
/// - the name defaults to `template-node-for-<id>`, the hostname label to the name;
/// - the group's `nodeSelector` labels are added, so nodes built from the template belong to the
///   group; a template label contradicting the selector is an error;
/// - without conditions, the template gets upstream's "ready" conditions.
pub(crate) fn complete_template(
    mut node: Node,
    group_id: &str,
    node_selector: &BTreeMap<String, String>,
) -> Result<Node, TemplateProblem> {
    let status = node.status.get_or_insert_with(NodeStatus::default);
    check_quantities(status.capacity.as_ref(), "status.capacity")?;
    check_quantities(status.allocatable.as_ref(), "status.allocatable")?;
    if status.capacity.is_none() && status.allocatable.is_none() {
        return Err(problem("status.capacity", "a template needs status.capacity (or status.allocatable)"));
    }
    if status.allocatable.is_none() {
        status.allocatable = status.capacity.clone();
    }
    if status.capacity.is_none() {
        status.capacity = status.allocatable.clone();
    }
    for resources in [status.capacity.as_mut(), status.allocatable.as_mut()].into_iter().flatten() {
        resources.entry("pods".to_string()).or_insert_with(|| Quantity(DEFAULT_PODS.to_string()));
    }
    if status.conditions.as_ref().is_none_or(Vec::is_empty) {
        status.conditions = Some(ready_conditions());
    }

    let name = node.metadata.name.get_or_insert_with(|| default_template_name(group_id)).clone();
    let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.entry(HOSTNAME_LABEL.to_string()).or_insert(name);
    for (key, value) in node_selector {
        match labels.get(key) {
            Some(existing) if existing != value => {
                return Err(problem(
                    format!("metadata.labels.{key}"),
                    format!("label value {existing:?} contradicts the group's nodeSelector {key}={value:?}"),
                ));
            }
            Some(_) => {}
            None => {
                labels.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(node)
}

fn check_quantities(resources: Option<&BTreeMap<String, Quantity>>, field: &str) -> Result<(), TemplateProblem> {
    for (name, quantity) in resources.into_iter().flatten() {
        match quantity_value(&quantity.0) {
            Ok(value) if value < 0.0 => {
                return Err(problem(
                    format!("{field}.{name}"),
                    format!("quantity {:?} must not be negative", quantity.0),
                ));
            }
            Ok(_) => {}
            Err(message) => return Err(problem(format!("{field}.{name}"), message)),
        }
    }
    Ok(())
}

/// The conditions upstream gives template nodes built by providers (`BuildReadyConditions`).
fn ready_conditions() -> Vec<NodeCondition> {
    [("Ready", "True"), ("NetworkUnavailable", "False"), ("DiskPressure", "False"), ("MemoryPressure", "False")]
        .into_iter()
        .map(|(type_, status)| NodeCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            ..Default::default()
        })
        .collect()
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
    fn template_allocatable_defaults_to_capacity() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g", &BTreeMap::new()).unwrap();
        let status = node.status.unwrap();
        assert_eq!(status.allocatable, status.capacity);
        assert_eq!(status.allocatable.unwrap()["cpu"], Quantity("4".into()));
    }

    #[test]
    fn template_pods_default_to_110() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g", &BTreeMap::new()).unwrap();
        assert_eq!(node.status.unwrap().capacity.unwrap()["pods"], Quantity("110".into()));
    }

    #[test]
    fn template_name_and_hostname_label_default() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "general", &BTreeMap::new()).unwrap();
        assert_eq!(node.metadata.name.as_deref(), Some("template-node-for-general"));
        assert_eq!(node.metadata.labels.unwrap()[HOSTNAME_LABEL], "template-node-for-general");
    }

    #[test]
    fn template_gets_ready_conditions_when_it_has_none() {
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g", &BTreeMap::new()).unwrap();
        let conditions = node.status.unwrap().conditions.unwrap();
        assert!(conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    }

    #[test]
    fn template_gets_the_node_selector_labels() {
        let selector = BTreeMap::from([("pool".to_string(), "general".to_string())]);
        let node = complete_template(node_with_capacity(&[("cpu", "4")]), "g", &selector).unwrap();
        assert_eq!(node.metadata.labels.unwrap()["pool"], "general");
    }

    #[test]
    fn template_label_contradicting_node_selector_is_refused() {
        let selector = BTreeMap::from([("pool".to_string(), "general".to_string())]);
        let mut node = node_with_capacity(&[("cpu", "4")]);
        node.metadata.labels = Some(BTreeMap::from([("pool".to_string(), "gpu".to_string())]));
        let error = complete_template(node, "g", &selector).unwrap_err();
        assert_eq!(error.field, "metadata.labels.pool");
    }

    #[test]
    fn template_invalid_quantity_names_the_resource() {
        let error = complete_template(node_with_capacity(&[("memory", "16GB")]), "g", &BTreeMap::new()).unwrap_err();
        assert_eq!(error.field, "status.capacity.memory");
        assert!(error.message.contains("\"16GB\""), "{}", error.message);
    }

    #[test]
    fn template_negative_quantity_is_refused() {
        let error = complete_template(node_with_capacity(&[("cpu", "-1")]), "g", &BTreeMap::new()).unwrap_err();
        assert_eq!(error.field, "status.capacity.cpu");
    }

    #[test]
    fn template_without_resources_is_refused() {
        let error = complete_template(Node::default(), "g", &BTreeMap::new()).unwrap_err();
        assert_eq!(error.field, "status.capacity");
    }
}
