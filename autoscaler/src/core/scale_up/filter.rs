//! Pending pods that fit on existing or upcoming nodes: the scheduler will place them, so they
//! need no new node. As upstream, pods are tried in descending priority and every placed pod
//! takes its room in the snapshot, so later pods see less free capacity. Once one pod of an
//! equivalence class fits nowhere, its siblings are not tried again.

use std::collections::HashMap;
use std::sync::Arc;

use simulator::equivalence::scheduling_equivalent;
use simulator::scheduling::SearchHint;
use simulator::{ClusterSnapshot, PodInfo};

pub struct Filtered {
    pub fit_existing: Vec<Arc<PodInfo>>,
    pub still_pending: Vec<Arc<PodInfo>>,
}

pub fn filter_out_schedulable(snapshot: &mut ClusterSnapshot, mut pods: Vec<Arc<PodInfo>>) -> Filtered {
    pods.sort_by_key(|p| std::cmp::Reverse(p.priority));
    let mut hint = SearchHint::default();
    let mut failed_by_controller: HashMap<String, Vec<Arc<PodInfo>>> = HashMap::new();
    let mut out = Filtered { fit_existing: Vec::new(), still_pending: Vec::new() };
    for pod in pods {
        let controller = pod.controller().map(|c| c.uid.clone());
        if let Some(uid) = &controller
            && failed_by_controller.get(uid).is_some_and(|failed| failed.iter().any(|f| scheduling_equivalent(f, &pod)))
        {
            out.still_pending.push(pod);
            continue;
        }
        match snapshot.find_node_for(&pod, &mut hint, |_, _| true) {
            Some(node) => {
                // The pod key is unique in a consistent view; a duplicate would be a caller bug.
                if snapshot.add_pod(pod.clone(), node).is_ok() {
                    out.fit_existing.push(pod);
                } else {
                    out.still_pending.push(pod);
                }
            }
            None => {
                if let Some(uid) = controller {
                    failed_by_controller.entry(uid).or_default().push(pod.clone());
                }
                out.still_pending.push(pod);
            }
        }
    }
    out
}
