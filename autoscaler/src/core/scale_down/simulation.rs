//! The removal simulation: can every pod a candidate must shed go somewhere else?

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Node;

use simulator::drainability::{DrainContext, pods_to_move};
use simulator::scheduling::SearchHint;
use simulator::utilization::UtilizationInfo;
use simulator::{ClusterSnapshot, NodeId, NodeSet, PodInfo};

use super::eligibility::Candidate;
use super::{ScaleDownContext, unremovable};
use crate::core::plan::UnremovableNode;
use crate::core::plan::UnremovableReason;

#[derive(Clone, Debug)]
pub struct Removable {
    pub name: Arc<str>,
    /// The node object (the view's), for its capacity.
    pub node: Arc<Node>,
    pub group: String,
    pub utilization: UtilizationInfo,
    pub pods_to_move: Vec<Arc<PodInfo>>,
    pub daemonset_pods: Vec<Arc<PodInfo>>,
    /// Runs `safe-to-evict: on-completion` pods: not deleted until they finish.
    pub waits_for_completion: bool,
    /// Its pods cannot all be evicted at once under the PDBs.
    pub risky: bool,
}

pub struct Simulated {
    pub removable: Vec<Removable>,
    pub unremovable: Vec<UnremovableNode>,
}

pub fn simulate(ctx: &mut ScaleDownContext, snapshot: &mut ClusterSnapshot, candidates: &[Candidate]) -> Simulated {
    let started = Instant::now();
    let mut out = Simulated { removable: Vec::new(), unremovable: Vec::new() };
    let mut removed = NodeSet::new();
    let mut hint = SearchHint::default();
    for c in candidates {
        if started.elapsed() > ctx.options.scale_down_simulation_timeout {
            // Upstream stops here too; the rest are looked at in the next loop.
            break;
        }
        let node = snapshot.node(c.id).expect("candidate node");
        let drain =
            DrainContext { pdbs: &ctx.pdbs, controllers: ctx.controllers, options: &ctx.options.drain, now: ctx.now };
        let node_object = node.node.clone();
        let to_move = match pods_to_move(node, &drain) {
            Ok(p) => p,
            Err(blocked) => {
                let mut u = unremovable(
                    &c.name,
                    Some(&c.group),
                    UnremovableReason::BlockedByPod,
                    Some(c.utilization.utilization),
                );
                u.blocking_pod = Some(blocked.pod.key.to_string());
                u.blocking_reason = Some(blocked.reason);
                out.unremovable.push(u);
                continue;
            }
        };
        // A first pod that fits no other node now fits none once the candidate is drained
        // either (see `fits_no_accepted_node`): the answer without removing the candidate's pods
        // and reverting them again, which is what most of a full cluster's candidates cost.
        let hopeless = to_move.pods.first().is_some_and(|first| {
            snapshot.fits_no_accepted_node(first, hint, destination(c.id, &removed, ctx.upcoming))
        });
        let placed = !hopeless && {
            snapshot.fork();
            move_pods(snapshot, c.id, &to_move.pods, &removed, ctx.upcoming, &mut hint)
        };
        if !placed {
            if !hopeless {
                snapshot.revert();
            }
            out.unremovable.push(unremovable(
                &c.name,
                Some(&c.group),
                UnremovableReason::NoPlaceToMovePods,
                Some(c.utilization.utilization),
            ));
            continue;
        }
        snapshot.commit();
        removed.insert(c.id);
        let risky = !ctx.pdbs.can_remove_in_parallel(&to_move.pods);
        ctx.pdbs.remove_pods(&to_move.pods);
        out.removable.push(Removable {
            name: c.name.clone(),
            node: node_object,
            group: c.group.clone(),
            utilization: c.utilization.clone(),
            waits_for_completion: to_move.waits_for_completion(),
            pods_to_move: to_move.pods,
            daemonset_pods: to_move.daemonset_pods,
            risky,
        });
    }
    out
}

/// Takes the pods off `node`, marks it as being deleted, and places every pod on another
/// registered node that is not being removed. Returns false at the first pod that fits nowhere.
fn move_pods(
    snapshot: &mut ClusterSnapshot,
    node: NodeId,
    pods: &[Arc<PodInfo>],
    removed: &NodeSet,
    upcoming: &NodeSet,
    hint: &mut SearchHint,
) -> bool {
    for pod in pods {
        if snapshot.remove_pod(&pod.key).is_err() {
            return false;
        }
    }
    if snapshot.mark_to_be_deleted(node).is_err() {
        return false;
    }
    for pod in pods {
        match snapshot.find_node_for(pod, hint, destination(node, removed, upcoming)) {
            Some(dest) => {
                if snapshot.add_pod(pod.clone(), dest).is_err() {
                    return false;
                }
            }
            None => return false,
        }
    }
    true
}

/// The nodes the pods of `node` may move to: registered nodes other than it that are not being
/// removed.
fn destination<'a>(
    node: NodeId,
    removed: &'a NodeSet,
    upcoming: &'a NodeSet,
) -> impl Fn(NodeId, &simulator::NodeInfo) -> bool + 'a {
    move |id, _| id != node && !removed.contains(id) && !upcoming.contains(id)
}
