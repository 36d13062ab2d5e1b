//! Which node belongs to which group, and the instance id of a node.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Node;

use super::config::StaticNodeGroupConfig;

/// The instance id of a node: its `spec.providerID`, or `static:///<node-name>` when it has
/// none (or an empty one). Upstream requires `Instance.id == node.spec.providerID`; nodes without
/// a providerID get a stable made-up id so they can still be tracked. The core must use this same
/// rule when it matches nodes with `NodeGroup::nodes()`.
///
/// Borrowed when the node has a providerID: the control loop reads every node's id a few times
/// per loop, mostly to look it up.
pub fn instance_id_for_node(node: &Node) -> Cow<'_, str> {
    match node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()) {
        Some(provider_id) if !provider_id.is_empty() => Cow::Borrowed(provider_id),
        _ => Cow::Owned(format!("static:///{}", node.metadata.name.as_deref().unwrap_or_default())),
    }
}

fn provider_id(node: &Node) -> Option<&str> {
    node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).filter(|id| !id.is_empty())
}

fn matches_prefix(group: &StaticNodeGroupConfig, node: &Node) -> bool {
    match (&group.provider_id_prefix, provider_id(node)) {
        (Some(prefix), Some(provider_id)) => provider_id.starts_with(prefix.as_str()),
        _ => false,
    }
}

fn matches_selector(group: &StaticNodeGroupConfig, node: &Node) -> bool {
    if group.node_selector.is_empty() {
        return false;
    }
    let Some(labels) = node.metadata.labels.as_ref() else { return false };
    group.node_selector.iter().all(|(key, value)| labels.get(key) == Some(value))
}

/// The index of the group a node belongs to: a providerID-prefix match wins over a label match;
/// among equals, the group listed first wins.
pub(crate) fn group_index_for_node(groups: &[StaticNodeGroupConfig], node: &Node) -> Option<usize> {
    groups
        .iter()
        .position(|group| matches_prefix(group, node))
        .or_else(|| groups.iter().position(|group| matches_selector(group, node)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::NodeSpec;

    use super::*;
    use crate::spec::NodeGroupSpec;

    fn node(name: &str, provider_id: Option<&str>, labels: &[(&str, &str)]) -> Node {
        let mut node = Node::default();
        node.metadata.name = Some(name.to_string());
        node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        node.spec = Some(NodeSpec { provider_id: provider_id.map(str::to_string), ..Default::default() });
        node
    }

    fn selector_group(id: &str, labels: &[(&str, &str)]) -> StaticNodeGroupConfig {
        let mut group = StaticNodeGroupConfig::from_spec(&NodeGroupSpec { min: 0, max: 10, id: id.to_string() });
        group.provider_id_prefix = None;
        group.node_selector = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
        group
    }

    fn prefix_group(id: &str, prefix: &str) -> StaticNodeGroupConfig {
        let mut group = StaticNodeGroupConfig::from_spec(&NodeGroupSpec { min: 0, max: 10, id: id.to_string() });
        group.provider_id_prefix = Some(prefix.to_string());
        group
    }

    #[test]
    fn instance_id_is_provider_id_or_static_node_name() {
        assert_eq!(instance_id_for_node(&node("n1", Some("aws:///i-1"), &[])), "aws:///i-1");
        assert_eq!(instance_id_for_node(&node("n1", None, &[])), "static:///n1");
        assert_eq!(instance_id_for_node(&node("n1", Some(""), &[])), "static:///n1");
    }

    #[test]
    fn membership_by_labels_needs_all_selector_labels() {
        let groups = [selector_group("general", &[("pool", "general"), ("tier", "a")])];
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[("pool", "general"), ("tier", "a")])), Some(0));
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[("pool", "general")])), None);
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[("pool", "gpu"), ("tier", "a")])), None);
    }

    #[test]
    fn membership_by_provider_id_prefix() {
        let groups = [prefix_group("g", "static://g/")];
        assert_eq!(group_index_for_node(&groups, &node("n", Some("static://g/n"), &[])), Some(0));
        assert_eq!(group_index_for_node(&groups, &node("n", Some("static://h/n"), &[])), None);
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[])), None);
    }

    #[test]
    fn membership_either_configured_criterion_suffices() {
        let mut group = selector_group("g", &[("pool", "g")]);
        group.provider_id_prefix = Some("static://g/".to_string());
        let groups = [group];
        assert_eq!(group_index_for_node(&groups, &node("a", Some("static://g/a"), &[])), Some(0));
        assert_eq!(group_index_for_node(&groups, &node("b", Some("other://b"), &[("pool", "g")])), Some(0));
    }

    #[test]
    fn membership_provider_id_match_wins_over_label_match() {
        let groups = [selector_group("by-label", &[("pool", "x")]), prefix_group("by-prefix", "static://p/")];
        let node = node("n", Some("static://p/n"), &[("pool", "x")]);
        assert_eq!(group_index_for_node(&groups, &node), Some(1));
    }

    #[test]
    fn membership_ties_go_to_the_first_group() {
        let groups = [selector_group("first", &[("pool", "x")]), selector_group("second", &[("pool", "x")])];
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[("pool", "x")])), Some(0));
        let groups = [prefix_group("first", "static://"), prefix_group("second", "static://p/")];
        assert_eq!(group_index_for_node(&groups, &node("n", Some("static://p/n"), &[])), Some(0));
    }

    #[test]
    fn node_matching_no_group_has_none() {
        let groups = [selector_group("g", &[("pool", "g")])];
        assert_eq!(group_index_for_node(&groups, &node("n", None, &[])), None);
    }
}
