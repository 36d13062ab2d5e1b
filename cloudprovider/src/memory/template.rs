//! Group templates and the Nodes built from them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::NodeTemplate;
use crate::quantity::quantity_value;

pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Kubelet's default `--max-pods`, which upstream's provider templates use too.
const DEFAULT_PODS: &str = "110";

/// Completes a group's template the way the static provider completes its file templates:
/// `capacity` and `allocatable` default to each other (one is required, every quantity must
/// parse and not be negative), `pods` defaults to 110, the name to `template-node-for-<id>`,
/// the hostname label to the name, and a template without conditions is Ready.
/// Errors name the field below `template`.
pub(crate) fn complete_template(mut template: NodeTemplate, group_id: &str) -> Result<NodeTemplate, (String, String)> {
    let node = &mut template.node;
    let status = node.status.get_or_insert_with(NodeStatus::default);
    for (field, list) in [("node.status.capacity", &status.capacity), ("node.status.allocatable", &status.allocatable)]
    {
        for (name, quantity) in list.iter().flatten() {
            match quantity_value(&quantity.0) {
                Ok(value) if value < 0.0 => {
                    return Err((format!("{field}.{name}"), format!("quantity {:?} must not be negative", quantity.0)));
                }
                Ok(_) => {}
                Err(message) => return Err((format!("{field}.{name}"), message)),
            }
        }
    }
    match (&status.capacity, &status.allocatable) {
        (None, None) => {
            return Err((
                "node.status.capacity".to_string(),
                "a template needs status.capacity (or status.allocatable)".to_string(),
            ));
        }
        (Some(capacity), None) => status.allocatable = Some(capacity.clone()),
        (None, Some(allocatable)) => status.capacity = Some(allocatable.clone()),
        (Some(_), Some(_)) => {}
    }
    for list in [status.capacity.as_mut(), status.allocatable.as_mut()].into_iter().flatten() {
        list.entry("pods".to_string()).or_insert_with(|| Quantity(DEFAULT_PODS.to_string()));
    }
    if status.conditions.as_ref().is_none_or(Vec::is_empty) {
        status.conditions = Some(vec![ready_condition(None)]);
    }
    let name = node.metadata.name.get_or_insert_with(|| format!("template-node-for-{group_id}")).clone();
    node.metadata.labels.get_or_insert_with(BTreeMap::new).entry(HOSTNAME_LABEL.to_string()).or_insert(name);
    node.spec.get_or_insert_with(NodeSpec::default);
    Ok(template)
}

pub(crate) fn ready_condition(since: Option<Timestamp>) -> NodeCondition {
    NodeCondition {
        type_: "Ready".to_string(),
        status: "True".to_string(),
        reason: Some("KubeletReady".to_string()),
        message: Some("kubelet is posting ready status".to_string()),
        last_transition_time: since.map(Time),
        last_heartbeat_time: since.map(Time),
    }
}

/// The Node an instance registers: the template under the instance's name, with its providerID,
/// hostname label, creation time, and a Ready condition since `registered_at`.
pub(crate) fn node_for_instance(template: &Node, name: &str, instance_id: &str, registered_at: Timestamp) -> Node {
    let mut node = template.clone();
    let meta = &mut node.metadata;
    meta.name = Some(name.to_string());
    meta.uid = Some(format!("uid-node-{name}"));
    meta.creation_timestamp = Some(Time(registered_at));
    meta.resource_version = None;
    meta.labels.get_or_insert_with(BTreeMap::new).insert(HOSTNAME_LABEL.to_string(), name.to_string());
    node.spec.get_or_insert_with(NodeSpec::default).provider_id = Some(instance_id.to_string());
    let status = node.status.get_or_insert_with(NodeStatus::default);
    let mut conditions: Vec<NodeCondition> = status.conditions.take().unwrap_or_default();
    conditions.retain(|c| c.type_ != "Ready");
    conditions.insert(0, ready_condition(Some(registered_at)));
    for condition in conditions.iter_mut().skip(1) {
        condition.last_transition_time = Some(Time(registered_at));
        condition.last_heartbeat_time = Some(Time(registered_at));
    }
    status.conditions = Some(conditions);
    node
}

/// The value of one resource in a list, 0 when absent.
pub(crate) fn resource_value(list: Option<&BTreeMap<String, Quantity>>, name: &str) -> Result<f64, String> {
    match list.and_then(|l| l.get(name)) {
        Some(q) => quantity_value(&q.0).map_err(|message| format!("resource {name}: {message}")),
        None => Ok(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_completion_defaults_allocatable_pods_name_and_readiness() {
        let node = Node {
            status: Some(NodeStatus {
                capacity: Some([("cpu".to_string(), Quantity("4".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let t = complete_template(NodeTemplate { node, pods: vec![] }, "general").unwrap();
        let status = t.node.status.as_ref().unwrap();
        assert_eq!(status.allocatable, status.capacity);
        assert_eq!(status.allocatable.as_ref().unwrap()["pods"], Quantity("110".into()));
        assert_eq!(t.node.metadata.name.as_deref(), Some("template-node-for-general"));
        assert!(status.conditions.as_ref().unwrap().iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    }

    #[test]
    fn template_with_bad_or_missing_resources_names_the_field() {
        let (field, _) = complete_template(NodeTemplate::default(), "g").unwrap_err();
        assert_eq!(field, "node.status.capacity");
        let node = Node {
            status: Some(NodeStatus {
                allocatable: Some([("memory".to_string(), Quantity("16GB".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (field, message) = complete_template(NodeTemplate { node, pods: vec![] }, "g").unwrap_err();
        assert_eq!(field, "node.status.allocatable.memory");
        assert!(message.contains("16GB"), "{message}");
    }
}
