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

/// The facts of the node versions the last loop listed. A changed node is a new `Arc` (the
/// sources never change a listed node in place); an entry keeps its version alive, so no other
/// node can be given the same address while the entry stands. The options and the provider must
/// be the same at every call: one memo belongs to one loop.
#[derive(Clone, Debug, Default)]
pub struct NodeFactsMemo {
    by_version: FxHashMap<usize, (Arc<Node>, NodeFacts)>,
}

impl NodeFactsMemo {
    /// The facts of `nodes`, in their order: remembered for versions listed last time, read for
    /// the others. Versions no longer listed are forgotten.
    pub fn facts(
        &mut self,
        nodes: &[Arc<Node>],
        options: &AutoscalingOptions,
        provider: &dyn CloudProvider,
    ) -> Vec<NodeFacts> {
        let mut last = std::mem::take(&mut self.by_version);
        self.by_version.reserve(nodes.len());
        nodes
            .iter()
            .map(|node| {
                let version = version_of(node);
                let facts = match last.remove(&version) {
                    Some((_, facts)) => facts,
                    None => NodeFacts::read(node, options, provider),
                };
                self.by_version.insert(version, (node.clone(), facts.clone()));
                facts
            })
            .collect()
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
        let first = memo.facts(&[a.clone(), b.clone()], &options, &provider);
        assert_eq!(first.iter().map(|f| f.ready).collect::<Vec<_>>(), [false, true]);
        assert!(first[0].are_of(&a) && !first[0].are_of(&b));

        // `a` becomes ready: a new version, read again; `b` is remembered.
        let a_ready = node("a", "True");
        let second = memo.facts(&[a_ready.clone(), b.clone()], &options, &provider);
        assert!(second[0].ready && second[0].are_of(&a_ready));
        assert_eq!(second[1], first[1]);
        // The old version of `a` is forgotten, and only the listed versions are kept.
        assert_eq!(memo.by_version.len(), 2);
        assert!(!memo.by_version.contains_key(&version_of(&a)));
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
