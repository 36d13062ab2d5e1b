//! `NodePositions`: node name → its position in one list of nodes, so that what a loop works
//! out per node (its group, its readiness) is kept in vectors by position and found by name
//! with one lookup. The control loop keeps one across loops while its nodes keep their names
//! and order ([`NodeFactsMemo`](super::node_facts::NodeFactsMemo)): made afresh every loop, the
//! maps keyed by node name were a copy of every name and a hash insert per node, several times
//! a loop.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use rustc_hash::FxHashMap;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct NodePositions {
    by_name: FxHashMap<Box<str>, usize>,
}

impl NodePositions {
    /// The positions of `nodes`. Names are unique in a cluster; where a list repeats one (a
    /// hand-made dump), the last node of that name is the one found.
    pub fn of(nodes: &[Arc<Node>]) -> NodePositions {
        let mut by_name = FxHashMap::with_capacity_and_hasher(nodes.len(), Default::default());
        for (position, node) in nodes.iter().enumerate() {
            by_name.insert(Box::from(name_of(node)), position);
        }
        NodePositions { by_name }
    }

    /// Where the node named `name` is in the list.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Every name and its position, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, usize)> {
        self.by_name.iter().map(|(name, &position)| (&**name, position))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// A node's name (`""` when it has none).
pub fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Arc<Node> {
        let mut node = Node::default();
        node.metadata.name = Some(name.to_string());
        Arc::new(node)
    }

    #[test]
    fn a_name_is_found_at_its_position_and_a_repeated_name_at_its_last() {
        let nodes = [node("a"), node("b"), node("a"), node("c")];
        let positions = NodePositions::of(&nodes);
        assert_eq!([positions.get("a"), positions.get("b"), positions.get("c")], [Some(2), Some(1), Some(3)]);
        assert_eq!(positions.get("d"), None);
        assert_eq!(positions.get(""), None);
        assert_eq!(positions.len(), 3);
    }
}
