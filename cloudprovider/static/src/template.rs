//! Turning a group's `template` from the file into the Node a fresh node of the group looks like:
//! the shared completion (`cloudprovider::template`), plus the group's `nodeSelector` labels so
//! that nodes built from the template belong to the group.

use std::collections::BTreeMap;

use cloudprovider::template::{TemplateProblem, complete_template as complete_node};
use k8s_openapi::api::core::v1::Node;

/// Completes a template (see `cloudprovider::template::complete_template`) and adds the group's
/// `nodeSelector` labels; a template label contradicting the selector is an error.
pub(crate) fn complete_template(
    node: Node,
    group_id: &str,
    node_selector: &BTreeMap<String, String>,
) -> Result<Node, TemplateProblem> {
    let mut node = complete_node(node, group_id)?;
    let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
    for (key, value) in node_selector {
        match labels.get(key) {
            Some(existing) if existing != value => {
                return Err(TemplateProblem::new(
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

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::NodeStatus;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn node_with_cpu() -> Node {
        Node {
            status: Some(NodeStatus {
                capacity: Some([("cpu".to_string(), Quantity("4".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn template_gets_the_node_selector_labels() {
        let selector = BTreeMap::from([("pool".to_string(), "general".to_string())]);
        let node = complete_template(node_with_cpu(), "g", &selector).unwrap();
        assert_eq!(node.metadata.labels.unwrap()["pool"], "general");
    }

    #[test]
    fn template_label_contradicting_node_selector_is_refused() {
        let selector = BTreeMap::from([("pool".to_string(), "general".to_string())]);
        let mut node = node_with_cpu();
        node.metadata.labels = Some(BTreeMap::from([("pool".to_string(), "gpu".to_string())]));
        let error = complete_template(node, "g", &selector).unwrap_err();
        assert_eq!(error.field, "metadata.labels.pool");
    }
}
