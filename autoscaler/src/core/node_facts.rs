//! What a loop reads of each node that only a new version of the node can change: whether it
//! reports itself ready for pods, when it was created, and its GPU configuration (a provider
//! answer). Every loop reads them for every node, and a `Node` is large: read from it afresh,
//! they cost more than the rest of a quiet loop's per-node work. The control loop keeps them per
//! node version ([`NodeFactsMemo`]); `plan` reads them once.

use std::sync::Arc;
use std::time::Duration;

use cloudprovider::{CloudProvider, GpuConfig};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap;

use super::node_positions::{NodePositions, name_of};
use super::readiness::{Readiness, readiness_at, ready_for_pods};
use crate::config::AutoscalingOptions;

/// One version of a node, as the loop reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeFacts {
    /// The address of the `Node` read: tells whether these facts are of a given node version.
    version: usize,
    /// `ready_for_pods`.
    pub ready: bool,
    pub created: Option<Timestamp>,
    /// The provider's `node_gpu_config`.
    pub gpu: Option<GpuConfig>,
}

impl NodeFacts {
    pub fn read(node: &Arc<Node>, options: &AutoscalingOptions, provider: &dyn CloudProvider) -> Self {
        NodeFacts {
            version: version_of(node),
            ready: ready_for_pods(node, options, provider.gpu_label()),
            created: node.metadata.creation_timestamp.as_ref().map(|t| t.0),
            gpu: provider.node_gpu_config(node),
        }
    }

    /// Whether these are the facts of this very version of a node.
    pub fn are_of(&self, node: &Arc<Node>) -> bool {
        self.version == version_of(node)
    }

    /// The node's readiness at `now` (upstream's cluster state registry, §8).
    pub fn readiness(&self, now: Timestamp, max_node_startup_time: Duration) -> Readiness {
        readiness_at(self.ready, self.created, now, max_node_startup_time)
    }
}

fn version_of(node: &Arc<Node>) -> usize {
    Arc::as_ptr(node) as usize
}

/// The facts of the node versions the last loop listed, in its order. A changed node is a new
/// `Arc` (the sources never change a listed node in place); the memo keeps the versions it read,
/// so no other node can be given the same address while it stands. The options and the provider
/// must be the same at every call: one memo belongs to one loop.
#[derive(Clone, Debug, Default)]
pub struct NodeFactsMemo {
    last: Vec<(Arc<Node>, NodeFacts)>,
    /// The names' positions in the list last time: kept while the names and their order are.
    positions: Arc<NodePositions>,
}

impl NodeFactsMemo {
    /// The facts of `nodes`, in their order: remembered for versions listed last time, read for
    /// the others. Versions no longer listed are forgotten. With them, the nodes' positions by
    /// name: last time's while the names are the same, in the same order.
    pub fn facts(
        &mut self,
        nodes: &[Arc<Node>],
        options: &AutoscalingOptions,
        provider: &dyn CloudProvider,
    ) -> (Vec<NodeFacts>, Arc<NodePositions>) {
        let last = std::mem::take(&mut self.last);
        // Lists mostly come in the same order as last time: a node is first looked for at its
        // position, and by version only once the lists differ.
        let mut by_version: Option<FxHashMap<usize, &NodeFacts>> = None;
        // Whether every node has the name of the node at its position last time (the same
        // version has: a node's name never changes).
        let mut same_names = last.len() == nodes.len();
        let facts: Vec<NodeFacts> = nodes
            .iter()
            .enumerate()
            .map(|(position, node)| match last.get(position) {
                Some((_, facts)) if facts.are_of(node) => facts.clone(),
                at_position => {
                    same_names &= at_position.is_some_and(|(old, _)| name_of(old) == name_of(node));
                    let by_version = by_version
                        .get_or_insert_with(|| last.iter().map(|(_, facts)| (facts.version, facts)).collect());
                    match by_version.get(&version_of(node)) {
                        Some(facts) => (*facts).clone(),
                        None => NodeFacts::read(node, options, provider),
                    }
                }
            })
            .collect();
        if !same_names {
            self.positions = Arc::new(NodePositions::of(nodes));
        }
        self.last = nodes.iter().cloned().zip(facts.iter().cloned()).collect();
        (facts, self.positions.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::readiness::readiness;
    use cloudprovider_memory::{MemoryCloudProvider, MemoryProviderConfig, SharedTime};
    use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn node(name: &str, ready: &str) -> Arc<Node> {
        let mut node = Node::default();
        node.metadata.name = Some(name.to_string());
        node.metadata.creation_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        node.status = Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_string(),
                status: ready.to_string(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        Arc::new(node)
    }

    fn provider() -> MemoryCloudProvider {
        MemoryCloudProvider::new(MemoryProviderConfig::new(Vec::new()), SharedTime::new(Timestamp::UNIX_EPOCH)).unwrap()
    }

    #[test]
    fn a_new_version_of_a_node_is_read_again() {
        let provider = provider();
        let options = AutoscalingOptions::default();
        let mut memo = NodeFactsMemo::default();
        let (a, b) = (node("a", "False"), node("b", "True"));
        let (first, first_positions) = memo.facts(&[a.clone(), b.clone()], &options, &provider);
        assert_eq!((first_positions.get("a"), first_positions.get("b")), (Some(0), Some(1)));
        assert_eq!(first.iter().map(|f| f.ready).collect::<Vec<_>>(), [false, true]);
        assert!(first[0].are_of(&a) && !first[0].are_of(&b));

        // `a` becomes ready: a new version, read again; `b` is remembered.
        let a_ready = node("a", "True");
        let (second, second_positions) = memo.facts(&[a_ready.clone(), b.clone()], &options, &provider);
        assert!(second[0].ready && second[0].are_of(&a_ready));
        assert!(Arc::ptr_eq(&first_positions, &second_positions), "the same names in the same order: kept");
        assert_eq!(second[1], first[1]);
        // The old version of `a` is forgotten, and only the listed versions are kept.
        assert_eq!(memo.last.len(), 2);
        assert!(memo.last.iter().all(|(node, _)| !Arc::ptr_eq(node, &a)));

        // Another order, a node gone and one new: each found by its version.
        let c = node("c", "True");
        let (third, third_positions) = memo.facts(&[b.clone(), c.clone()], &options, &provider);
        assert_eq!(third[0], first[1]);
        assert_eq!(
            (third_positions.get("b"), third_positions.get("c"), third_positions.get("a")),
            (Some(0), Some(1), None)
        );
        // A node renamed in place (a new version at the same position) is found by its new name.
        let d = node("d", "True");
        let (_, fourth_positions) = memo.facts(&[b.clone(), d.clone()], &options, &provider);
        assert_eq!((fourth_positions.get("d"), fourth_positions.get("c")), (Some(1), None));
        assert!(third[1].are_of(&c) && third[1].ready);
    }

    #[test]
    fn facts_give_the_readiness_a_node_reads_to() {
        let provider = provider();
        let options = AutoscalingOptions::default();
        let startup = Duration::from_secs(900);
        for (ready, seconds) in [("True", 60), ("False", 60), ("False", 3600), ("Unknown", 0)] {
            let node = node("n", ready);
            let now = Timestamp::from_second(seconds).unwrap();
            let facts = NodeFacts::read(&node, &options, &provider);
            let direct = readiness(&node, now, startup, &options, provider.gpu_label());
            assert_eq!(facts.readiness(now, startup), direct, "Ready={ready} at {seconds} s");
        }
        let now = Timestamp::from_second(60).unwrap();
        assert_eq!(
            NodeFacts::read(&node("n", "False"), &options, &provider).readiness(now, startup),
            Readiness::NotStarted
        );
        let later = Timestamp::from_second(3600).unwrap();
        assert_eq!(
            NodeFacts::read(&node("n", "False"), &options, &provider).readiness(later, startup),
            Readiness::Unready
        );
    }
}
