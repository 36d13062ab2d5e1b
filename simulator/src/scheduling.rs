//! Finding a node for a pod in the snapshot.
//!
//! Like upstream's hinting simulator, a search starts where the previous successful search
//! ended: when many similar pods are placed one after the other, each search is O(1) amortized
//! instead of rescanning the full nodes from the start.

use std::sync::Arc;

use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::predicates::Unfit;
use crate::snapshot::{ClusterSnapshot, NodeId, SnapshotError};

/// A rotating start position for node searches.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchHint {
    next: usize,
}

impl ClusterSnapshot {
    /// The first node (from the hint, wrapping around) that `accept`s and passes every predicate.
    pub fn find_node_for(
        &mut self,
        pod: &PodInfo,
        hint: &mut SearchHint,
        mut accept: impl FnMut(NodeId, &NodeInfo) -> bool,
    ) -> Option<NodeId> {
        let prepared = self.prepare(pod);
        let bound = self.position_bound();
        if bound == 0 {
            return None;
        }
        let start = hint.next % bound;
        // From the hint to the end, then from the start to the hint: no division per node (a
        // search that fails passes over every node, and scale-down runs one per candidate).
        for index in (start..bound).chain(0..start) {
            let Some((id, node)) = self.node_at(index) else { continue };
            if accept(id, node) && self.fits(&prepared, id) {
                hint.next = index;
                return Some(id);
            }
        }
        None
    }

    /// Whether `pod` fits none of the nodes `accept`s, now and whatever happens to the pods of
    /// the nodes it rejects (removed, the nodes marked as being deleted). Only answers true for
    /// a pod whose fit on a node depends on that node alone: no inter-pod affinity,
    /// anti-affinity or topology spread of its own, no existing pod's anti-affinity term that
    /// matches it, no claims. Scale-down asks it before draining a candidate: when the first pod
    /// to move can go nowhere, removing the candidate's pods and reverting them again would end
    /// the same way.
    pub fn fits_no_accepted_node(
        &mut self,
        pod: &PodInfo,
        hint: SearchHint,
        accept: impl FnMut(NodeId, &NodeInfo) -> bool,
    ) -> bool {
        let shape = &pod.shape;
        if !pod.claims.is_empty()
            || !shape.affinity_terms.is_empty()
            || !shape.anti_affinity_terms.is_empty()
            || !shape.spread_constraints.is_empty()
            || self.has_blocking_carriers(pod)
        {
            return false;
        }
        // A copy of the hint: the caller's next search starts where it would have anyway.
        let mut hint = hint;
        self.find_node_for(pod, &mut hint, accept).is_none()
    }

    /// Places the pod on the first fitting node and returns that node.
    pub fn schedule_anywhere(
        &mut self,
        pod: Arc<PodInfo>,
        hint: &mut SearchHint,
        accept: impl FnMut(NodeId, &NodeInfo) -> bool,
    ) -> Result<Option<NodeId>, SnapshotError> {
        match self.find_node_for(&pod, hint, accept) {
            Some(id) => {
                self.add_pod(pod, id)?;
                Ok(Some(id))
            }
            None => Ok(None),
        }
    }

    /// Checks the pod on one node and places it there when it fits.
    pub fn schedule_on(&mut self, pod: Arc<PodInfo>, node: NodeId) -> Result<Result<(), Unfit>, SnapshotError> {
        match self.check_pod(&pod, node) {
            Ok(()) => {
                self.add_pod(pod, node)?;
                Ok(Ok(()))
            }
            Err(unfit) => Ok(Err(unfit)),
        }
    }
}
