//! Group templates and the Nodes built from them.

use std::collections::BTreeMap;

use cloudprovider::NodeTemplate;
use cloudprovider::template::{HOSTNAME_LABEL, complete_template as complete_node, ready_conditions};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Completes a group's template with the shared defaults (`cloudprovider::template`). Errors
/// name the field below `template` (`node.status.capacity`, …).
pub(crate) fn complete_template(mut template: NodeTemplate, group_id: &str) -> Result<NodeTemplate, (String, String)> {
    template.node = complete_node(std::mem::take(&mut template.node), group_id)
        .map_err(|problem| (format!("node.{}", problem.field), problem.message))?;
    Ok(template)
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
    let ready = ready_conditions(Some(registered_at)).into_iter().find(|c| c.type_ == "Ready");
    conditions.splice(0..0, ready);
    for condition in conditions.iter_mut().skip(1) {
        condition.last_transition_time = Some(Time(registered_at));
        condition.last_heartbeat_time = Some(Time(registered_at));
    }
    status.conditions = Some(conditions);
    node
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    #[test]
    fn template_errors_name_the_field_below_template() {
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

    #[test]
    fn a_registered_node_is_ready_since_registration() {
        let template = complete_template(
            NodeTemplate {
                node: Node {
                    status: Some(NodeStatus {
                        capacity: Some([("cpu".to_string(), Quantity("4".into()))].into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                pods: vec![],
            },
            "g",
        )
        .unwrap();
        let at = Timestamp::from_second(1_000).unwrap();
        let node = node_for_instance(&template.node, "g-1", "memory://g/1", at);
        let conditions = node.status.unwrap().conditions.unwrap();
        assert_eq!(conditions[0].type_, "Ready");
        assert!(conditions.iter().all(|c| c.last_transition_time == Some(Time(at))));
        assert_eq!(node.spec.unwrap().provider_id.as_deref(), Some("memory://g/1"));
    }
}
