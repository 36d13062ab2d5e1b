//! The fake scheduler: filters, scoring, unschedulable conditions, priority and preemption.

use k8s_openapi::api::core::v1::{Pod, Taint};
use simulator::testing::{node, with_node_labels, with_taint};

use super::*;
use crate::core::classify::is_unschedulable;

fn with_priority(mut pod: Pod, priority: i32) -> Pod {
    pod.spec.as_mut().unwrap().priority = Some(priority);
    pod
}

fn created_at(mut pod: Pod, seconds: i64) -> Pod {
    pod.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(seconds)));
    pod
}

#[test]
fn pending_pod_is_bound_when_it_fits_and_runs_on_the_next_advance() {
    let mut c = cluster();
    c.apply(node("n1", "4", "8Gi")).unwrap();
    c.apply(pending_pod("p1", "1", "1Gi")).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "p1").as_deref(), Some("n1"));
    assert_eq!(scheduled_condition(&c, "default", "p1").unwrap().0, "True");
    assert_eq!(phase_of(&c, "default", "p1"), "Pending", "the kubelet starts it on the next step");
    c.advance(t(2));
    assert_eq!(phase_of(&c, "default", "p1"), "Running");
    let pod = c.pod("default", "p1").unwrap();
    let ready = pod.status.as_ref().unwrap().conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.status, "True");
}

#[test]
fn pod_that_fits_nowhere_stays_pending_with_unschedulable_condition() {
    let mut c = cluster();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    c.apply(pending_pod("big", "2", "1Gi")).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "big"), None);
    assert_eq!(phase_of(&c, "default", "big"), "Pending");
    let (status, reason, message) = scheduled_condition(&c, "default", "big").unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Unschedulable"));
    assert_eq!(message, "0/1 nodes are available: 1 Insufficient cpu.");
    let big = simulator::PodInfo::new(c.pod("default", "big").unwrap());
    assert!(is_unschedulable(&big), "the autoscaler sees it as unschedulable");
}

#[test]
fn pods_marked_unschedulable_are_reported_with_the_time_they_were_marked() {
    let mut c = cluster();
    let signal = c.unschedulable_pods();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    c.apply(pending_pod("fits", "500m", "1Gi")).unwrap();
    c.advance(t(1));
    assert_eq!(signal.take(), None, "a bound pod is not reported");
    c.apply(pending_pod("big", "2", "1Gi")).unwrap();
    c.advance(t(3));
    c.apply(pending_pod("bigger", "3", "1Gi")).unwrap();
    c.advance(t(4));
    let seen = signal.take().expect("reported");
    assert_eq!((seen.first, seen.last), (t(3), t(4)));
    // Still unschedulable later: nothing new to report.
    c.advance(t(30));
    assert_eq!(signal.take(), None);
}

#[test]
fn unschedulable_pod_is_bound_once_a_node_that_fits_appears() {
    let mut c = cluster();
    c.apply(node("small", "1", "8Gi")).unwrap();
    c.apply(pending_pod("big", "2", "1Gi")).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "big"), None);
    c.apply(node("large", "8", "32Gi")).unwrap();
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "big").as_deref(), Some("large"));
}

/// The pods a pass that retries every pending pod reads: the scheduler's index of waiting pods,
/// which must always be the pods a scan of the store finds waiting.
fn assert_waiting_index_matches_the_store(c: &MemoryCluster) {
    let scanned: Vec<ObjectKey> =
        c.pods.iter().filter(|(_, p)| crate::memory::pods::waiting_for_scheduler(p)).map(|(k, _)| k.clone()).collect();
    let indexed: Vec<ObjectKey> = c.scheduler.waiting.iter().cloned().collect();
    assert_eq!(indexed, scanned);
}

#[test]
fn the_index_of_waiting_pods_follows_binding_deletion_and_new_pods() {
    let mut c = cluster();
    c.apply(node("small", "1", "8Gi")).unwrap();
    c.apply(pending_pod("big", "2", "1Gi")).unwrap();
    c.apply(pending_pod("fits", "1", "1Gi")).unwrap();
    assert_waiting_index_matches_the_store(&c);
    c.advance(t(1));
    assert_waiting_index_matches_the_store(&c);
    assert_eq!(c.scheduler.waiting.len(), 1, "only the pod that fits nowhere waits");
    c.apply(pending_pod("other", "2", "1Gi")).unwrap();
    assert!(c.delete(ObjectKind::Pod, &ObjectKey::new("default", "big")));
    assert_waiting_index_matches_the_store(&c);
    assert!(c.delete(ObjectKind::Pod, &ObjectKey::new("default", "fits")));
    c.apply(node("large", "8", "32Gi")).unwrap();
    c.advance(t(2));
    assert_waiting_index_matches_the_store(&c);
    assert_eq!(node_of(&c, "default", "other").as_deref(), Some("large"));
    assert!(c.scheduler.waiting.is_empty());
}

#[test]
fn cordoned_and_tainted_nodes_take_no_pods_that_do_not_tolerate_them() {
    let mut c = cluster();
    let mut cordoned = node("a-cordoned", "4", "8Gi");
    cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
    c.apply(cordoned).unwrap();
    c.apply(with_taint(node("b-tainted", "4", "8Gi"), "dedicated", "gpu", "NoSchedule")).unwrap();
    c.apply(pending_pod("p", "1", "1Gi")).unwrap();
    c.advance(t(1));
    let (_, _, message) = scheduled_condition(&c, "default", "p").unwrap();
    assert_eq!(
        message,
        "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable."
    );
    let mut tolerant = pending_pod("tolerant", "1", "1Gi");
    tolerant.spec.as_mut().unwrap().tolerations =
        Some(vec![from_json(json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}))]);
    c.apply(tolerant).unwrap();
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "tolerant").as_deref(), Some("b-tainted"));
    c.apply(node("c-open", "4", "8Gi")).unwrap();
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "p").as_deref(), Some("c-open"));
}

#[test]
fn uncordoning_a_node_lets_waiting_pods_onto_it() {
    let mut c = cluster();
    c.apply(node("n1", "4", "8Gi")).unwrap();
    c.advance(t(1));
    let taint =
        Taint { key: "ToBeDeletedByClusterAutoscaler".into(), effect: "NoSchedule".into(), ..Default::default() };
    assert!(c.taint("n1", taint, true));
    c.apply(pending_pod("p", "1", "1Gi")).unwrap();
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "p"), None);
    assert!(c.untaint("n1", "ToBeDeletedByClusterAutoscaler", true));
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "p").as_deref(), Some("n1"));
}

#[test]
fn least_allocated_node_is_preferred() {
    let mut c = cluster();
    c.apply(node("a", "4", "8Gi")).unwrap();
    c.apply(node("b", "4", "8Gi")).unwrap();
    c.apply(simulator::testing::on_node(pending_pod("resident", "3", "1Gi"), "a")).unwrap();
    c.apply(pending_pod("newcomer", "500m", "512Mi")).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "newcomer").as_deref(), Some("b"));
}

#[test]
fn prefer_no_schedule_taint_is_avoided_while_another_node_fits() {
    let mut c = cluster();
    c.apply(with_taint(
        node("a-candidate", "8", "16Gi"),
        "DeletionCandidateOfClusterAutoscaler",
        "1",
        "PreferNoSchedule",
    ))
    .unwrap();
    c.apply(node("b-busy", "4", "8Gi")).unwrap();
    c.apply(simulator::testing::on_node(pending_pod("resident", "2", "1Gi"), "b-busy")).unwrap();
    c.apply(pending_pod("p1", "1", "1Gi")).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "p1").as_deref(), Some("b-busy"), "soft taint wins over free space");
    c.apply(pending_pod("p2", "2", "1Gi")).unwrap();
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "p2").as_deref(), Some("a-candidate"), "the only node left that fits");
}

#[test]
fn higher_priority_pods_are_scheduled_first_then_older_ones() {
    let mut c = cluster();
    c.apply(node("n1", "2", "8Gi")).unwrap();
    c.apply(created_at(pending_pod("old-low", "1", "1Gi"), -20)).unwrap();
    c.apply(created_at(with_priority(pending_pod("new-high", "1", "1Gi"), 100), -5)).unwrap();
    c.apply(created_at(pending_pod("newer-low", "1", "1Gi"), -10)).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "new-high").as_deref(), Some("n1"));
    assert_eq!(node_of(&c, "default", "old-low").as_deref(), Some("n1"));
    assert_eq!(node_of(&c, "default", "newer-low"), None);
}

#[test]
fn preemption_evicts_lower_priority_pods_to_make_room() {
    let mut c = cluster();
    c.apply(node("n1", "2", "8Gi")).unwrap();
    c.apply(with_priority(pending_pod("pause-1", "1", "1Gi"), -1)).unwrap();
    c.apply(with_priority(pending_pod("pause-2", "1", "1Gi"), -1)).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    c.apply(with_priority(pending_pod("important", "1", "1Gi"), 1000)).unwrap();
    c.advance(t(3));
    let important = c.pod("default", "important").unwrap();
    assert_eq!(important.status.as_ref().unwrap().nominated_node_name.as_deref(), Some("n1"));
    assert_eq!(node_of(&c, "default", "important"), None, "waits for the victim to go");
    let terminating: Vec<String> = pod_names(&c, "pause")
        .into_iter()
        .filter(|n| c.pod("default", n).unwrap().metadata.deletion_timestamp.is_some())
        .collect();
    assert_eq!(terminating.len(), 1, "one victim is enough: {terminating:?}");
    c.advance(t(40));
    assert_eq!(node_of(&c, "default", "important").as_deref(), Some("n1"));
    assert_eq!(pod_names(&c, "pause").len(), 1);
}

#[test]
fn a_pod_retried_in_a_pass_preempts_a_lower_priority_pod_bound_earlier_in_that_pass() {
    // `important` fails first for its affinity (no `anchor` yet) with nothing below its
    // priority placed; `anchor` and then `filler` (priority -5) are bound in the same pass;
    // retried, `important` fits only by preempting `filler`, bound after the pass first asked
    // which priorities were placed.
    let mut c = cluster();
    c.apply(node("n1", "3", "8Gi")).unwrap();
    let mut important = created_at(pending_pod("important", "2", "1Gi"), 1);
    important.spec.as_mut().unwrap().affinity = Some(
        serde_json::from_value(serde_json::json!({
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "anchor"}}, "topologyKey": "kubernetes.io/hostname"}
            ]}
        }))
        .unwrap(),
    );
    c.apply(important).unwrap();
    c.apply(created_at(pending_pod("anchor", "1", "1Gi"), 2)).unwrap();
    c.apply(with_priority(created_at(pending_pod("filler", "1", "1Gi"), 3), -5)).unwrap();
    c.advance(t(4));
    assert_eq!(node_of(&c, "default", "anchor").as_deref(), Some("n1"));
    let important = c.pod("default", "important").unwrap();
    assert_eq!(important.status.as_ref().unwrap().nominated_node_name.as_deref(), Some("n1"));
    assert!(c.pod("default", "filler").unwrap().metadata.deletion_timestamp.is_some(), "filler is the victim");
}

#[test]
fn pods_of_one_priority_never_preempt_each_other() {
    let mut c = cluster();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    c.apply(pending_pod("first", "1", "1Gi")).unwrap();
    c.advance(t(1));
    c.apply(pending_pod("second", "1", "1Gi")).unwrap();
    c.advance(t(2));
    assert!(c.pod("default", "first").unwrap().metadata.deletion_timestamp.is_none());
    let second = c.pod("default", "second").unwrap();
    assert_eq!(second.status.as_ref().unwrap().nominated_node_name, None);
    assert_eq!(scheduled_condition(&c, "default", "second").unwrap().1, "Unschedulable");
}

#[test]
fn the_count_of_changes_to_the_unschedulable_pods_moves_only_when_the_set_does() {
    let mut c = cluster();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    let start = c.unschedulable_changes();
    c.apply(pending_pod("big", "2", "1Gi")).unwrap();
    c.advance(t(1));
    let marked = c.unschedulable_changes();
    assert_eq!(marked, start + 1, "big became unschedulable");
    c.apply(pending_pod("small", "1", "1Gi")).unwrap();
    c.advance(t(2));
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "small").as_deref(), Some("n1"));
    assert_eq!(c.unschedulable_changes(), marked, "binding and starting another pod changes nothing");
    c.apply(node("n2", "4", "8Gi")).unwrap();
    c.advance(t(4));
    assert_eq!(node_of(&c, "default", "big").as_deref(), Some("n2"));
    assert_eq!(c.unschedulable_changes(), marked + 1, "big was bound");
    assert_eq!(c.unschedulable_pods_now().count(), 0);
}

#[test]
fn pods_with_preemption_policy_never_do_not_preempt() {
    let mut c = cluster();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    c.apply(with_priority(pending_pod("low", "1", "1Gi"), -1)).unwrap();
    c.advance(t(1));
    let mut polite = with_priority(pending_pod("polite", "1", "1Gi"), 1000);
    polite.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    c.apply(polite).unwrap();
    c.advance(t(2));
    assert!(c.pod("default", "low").unwrap().metadata.deletion_timestamp.is_none());
    assert_eq!(scheduled_condition(&c, "default", "polite").unwrap().1, "Unschedulable");
}

#[test]
fn priority_class_name_sets_the_priority_and_unknown_classes_are_refused() {
    let mut c = cluster();
    let mut critical = pending_pod("critical", "1", "1Gi");
    critical.spec.as_mut().unwrap().priority_class_name = Some("system-cluster-critical".into());
    c.apply(critical).unwrap();
    assert_eq!(c.pod("default", "critical").unwrap().spec.as_ref().unwrap().priority, Some(2_000_000_000));
    let mut unknown = pending_pod("unknown", "1", "1Gi");
    unknown.spec.as_mut().unwrap().priority_class_name = Some("gold".into());
    let error = c.apply(unknown).unwrap_err();
    assert!(error.to_string().contains("no PriorityClass with name gold was found"), "{error}");
}

fn labelled(mut pod: Pod, app: &str) -> Pod {
    pod.metadata.labels = Some([("app".to_string(), app.to_string())].into());
    pod
}

#[test]
fn pods_alike_but_for_labels_are_each_checked_against_placed_pods_anti_affinity() {
    let mut c = cluster();
    c.apply(node("n1", "4", "8Gi")).unwrap();
    let mut guard = pending_pod("guard", "100m", "128Mi");
    let spec = guard.spec.as_mut().unwrap();
    spec.node_name = Some("n1".into());
    spec.affinity = Some(from_json(serde_json::json!({"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}})));
    c.apply(guard).unwrap();
    c.advance(t(1));
    // The same spec (one compiled shape), the first in the queue repelled by the guard.
    c.apply(created_at(labelled(pending_pod("first", "1", "1Gi"), "a"), 2)).unwrap();
    c.apply(created_at(labelled(pending_pod("second", "1", "1Gi"), "b"), 3)).unwrap();
    c.apply(created_at(labelled(pending_pod("third", "1", "1Gi"), "a"), 4)).unwrap();
    c.advance(t(5));
    assert_eq!(node_of(&c, "default", "first"), None);
    assert_eq!(node_of(&c, "default", "second").as_deref(), Some("n1"));
    assert_eq!(node_of(&c, "default", "third"), None);
    let message = |name: &str| scheduled_condition(&c, "default", name).unwrap().2;
    assert_eq!(
        message("first"),
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    );
    assert_eq!(message("third"), message("first"));
}

#[test]
fn replicas_that_fit_nowhere_get_the_message_each_would_get_alone() {
    let mut c = cluster();
    c.apply(node("n1", "2", "8Gi")).unwrap();
    c.apply(with_taint(node("n2", "8", "8Gi"), "dedicated", "x", "NoSchedule")).unwrap();
    for i in 0..3 {
        c.apply(created_at(labelled(pending_pod(&format!("r{i}"), "3", "1Gi"), "a"), i)).unwrap();
    }
    c.advance(t(5));
    for i in 0..3 {
        let (status, reason, message) = scheduled_condition(&c, "default", &format!("r{i}")).unwrap();
        assert_eq!((status.as_str(), reason.as_str()), ("False", "Unschedulable"));
        assert_eq!(
            message,
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: x}."
        );
    }
    // Room for one: the first in the queue is bound, the others are checked again and stay.
    c.apply(node("n3", "4", "8Gi")).unwrap();
    c.advance(t(6));
    assert_eq!(node_of(&c, "default", "r0").as_deref(), Some("n3"));
    assert_eq!(node_of(&c, "default", "r1"), None);
    assert_eq!(
        scheduled_condition(&c, "default", "r1").unwrap().2,
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: x}, 2 Insufficient cpu."
    );
}

#[test]
fn pods_alike_that_fit_nowhere_get_the_reasons_of_the_nodes_as_they_are_when_each_is_tried() {
    let mut c = cluster();
    c.apply(node("n1", "1", "8Gi")).unwrap();
    c.apply(node("n2", "1", "2Gi")).unwrap();
    // One spec and one label set: pods alike for the scheduler's filters.
    let big = |name: &str, at: i64| {
        let mut pod = created_at(pending_pod(name, "2", "1Gi"), at);
        pod.metadata.labels = Some([("app".to_string(), "big".to_string())].into());
        pod
    };
    c.apply(big("big-1", 1)).unwrap();
    c.apply(created_at(pending_pod("small", "500m", "7680Mi"), 2)).unwrap();
    c.apply(big("big-2", 3)).unwrap();
    c.apply(big("big-3", 4)).unwrap();
    c.advance(t(10));
    assert_eq!(node_of(&c, "default", "small").as_deref(), Some("n1"));
    let message = |name: &str| scheduled_condition(&c, "default", name).unwrap().2;
    assert_eq!(message("big-1"), "0/2 nodes are available: 2 Insufficient cpu.");
    // `small`, placed between them, changed why n1 does not fit: the later pods are not
    // answered with big-1's reasons.
    assert_eq!(message("big-2"), "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.");
    assert_eq!(message("big-3"), message("big-2"));
}

/// Pods of one kind placed one after another, with nodes removed, added and replaced between
/// them: each goes where a full search would put it (debug builds also compare every pick with
/// one), never onto a node gone.
#[test]
fn pods_of_a_kind_follow_nodes_removed_added_and_replaced_between_them() {
    let mut c = cluster();
    c.apply(node("n1", "4", "8Gi")).unwrap();
    c.apply(node("n2", "8", "8Gi")).unwrap();
    let a = |name: &str, at: i64| created_at(labelled(pending_pod(name, "1", "100Mi"), "a"), at);
    c.apply(a("a-1", 1)).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "a-1").as_deref(), Some("n2"), "the most free share");
    c.delete(ObjectKind::Node, &ObjectKey::cluster("n2"));
    c.apply(a("a-2", 2)).unwrap();
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "a-2").as_deref(), Some("n1"), "not the node gone");
    c.apply(node("n3", "16", "8Gi")).unwrap();
    c.apply(a("a-3", 3)).unwrap();
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "a-3").as_deref(), Some("n3"), "the node added");
    // n3 replaced by a cordoned n3: out of the choice.
    let mut cordoned = node("n3", "16", "8Gi");
    cordoned.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
    c.apply(cordoned).unwrap();
    c.apply(a("a-4", 4)).unwrap();
    c.advance(t(4));
    assert_eq!(node_of(&c, "default", "a-4").as_deref(), Some("n1"));
    // Nothing fits: the message counts the live nodes only.
    c.apply(created_at(labelled(pending_pod("a-big", "1", "100Mi"), "a"), 5)).unwrap();
    c.apply(created_at(labelled(pending_pod("a-huge", "64", "100Mi"), "a"), 6)).unwrap();
    c.advance(t(5));
    assert_eq!(node_of(&c, "default", "a-big").as_deref(), Some("n1"));
    assert_eq!(
        scheduled_condition(&c, "default", "a-huge").unwrap().2,
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."
    );
}

/// A kind asked again after more node changes than are kept in order (5,000 pods of another
/// kind placed on nodes of their own, the node it chose last filled, a node removed after) reads
/// every node: the node filled since is not chosen again from a stale answer.
#[test]
fn a_kind_asked_after_more_changes_than_are_kept_reads_every_node() {
    let mut c = cluster();
    for (name, cpu) in [("n1", "64"), ("n2", "48"), ("n3", "128")] {
        c.apply(node(name, cpu, "64Gi")).unwrap();
    }
    let a = |name: &str, at: i64| created_at(labelled(pending_pod(name, "4", "100Mi"), "a"), at);
    c.apply(a("a-1", 0)).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "a-1").as_deref(), Some("n3"), "the emptiest");
    // n3 filled by 100 cpus of pods pinned to it by its hostname; 5,000 more pods placed on
    // 50 nodes of their own: a change each.
    let pinned = |mut pod: Pod, key: &str, value: &str| {
        pod.spec.as_mut().unwrap().node_selector = Some([(key.to_string(), value.to_string())].into());
        pod
    };
    for i in 0..50 {
        c.apply(with_node_labels(node(&format!("m{i}"), "16", "64Gi"), &[("pool", "b")])).unwrap();
    }
    for i in 0..100 {
        c.apply(pinned(pending_pod(&format!("c-{i}"), "1", "1Mi"), "kubernetes.io/hostname", "n3")).unwrap();
    }
    for i in 0..5000 {
        c.apply(pinned(labelled(pending_pod(&format!("b-{i}"), "10m", "1Mi"), "b"), "pool", "b")).unwrap();
    }
    c.advance(t(2));
    let placed = |prefix: &str| pod_names(&c, prefix).iter().filter(|p| node_of(&c, "default", p).is_some()).count();
    assert_eq!((placed("c-"), placed("b-")), (100, 5000));
    c.delete(ObjectKind::Node, &ObjectKey::cluster("n1"));
    c.apply(a("a-2", 3)).unwrap();
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "a-2").as_deref(), Some("n2"), "n3 is now the fullest");
}
