use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, HostPathVolumeSource, Pod, Volume};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

use super::*;
use crate::controllers::ControllerKind;
use crate::testing::{node, pod, with_annotation, with_labels, with_namespace, with_owner};
use crate::well_known::{DAEMONSET_POD, MIRROR_POD, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES};

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn ago(seconds: i64) -> Time {
    Time(now().checked_sub(SignedDuration::from_secs(seconds)).unwrap())
}

fn info(p: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(&p))
}

/// A pod owned by the `web` ReplicaSet, which exists: moved under every default rule.
fn web(name: &str) -> Pod {
    with_labels(with_owner(pod(name, "100m", "100Mi"), "ReplicaSet", "web"), &[("app", "web")])
}

fn bare(name: &str) -> Pod {
    pod(name, "100m", "100Mi")
}

fn system(p: Pod) -> Pod {
    with_namespace(p, KUBE_SYSTEM_NAMESPACE)
}

fn with_volume(mut p: Pod, volume: Volume) -> Pod {
    p.spec.get_or_insert_with(Default::default).volumes.get_or_insert_with(Vec::new).push(volume);
    p
}

fn empty_dir(name: &str, medium: Option<&str>) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource { medium: medium.map(String::from), ..Default::default() }),
        ..Default::default()
    }
}

fn host_path(name: &str) -> Volume {
    Volume {
        name: name.into(),
        host_path: Some(HostPathVolumeSource { path: "/var/data".into(), ..Default::default() }),
        ..Default::default()
    }
}

fn deleted(mut p: Pod, seconds_ago: i64, grace: Option<i64>) -> Pod {
    p.metadata.deletion_timestamp = Some(ago(seconds_ago));
    p.spec.get_or_insert_with(Default::default).termination_grace_period_seconds = grace;
    p
}

fn created(mut p: Pod, seconds_ago: i64) -> Pod {
    p.metadata.creation_timestamp = Some(ago(seconds_ago));
    p
}

fn phase(mut p: Pod, phase: &str, restart_policy: Option<&str>) -> Pod {
    p.status.get_or_insert_with(Default::default).phase = Some(phase.into());
    p.spec.get_or_insert_with(Default::default).restart_policy = restart_policy.map(String::from);
    p
}

fn pdb(namespace: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{app}-pdb"), "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    }))
    .unwrap()
}

/// The controllers every test cluster has.
fn controllers() -> Controllers {
    let mut c = Controllers::empty();
    for (kind, namespace, name, replicas) in [
        (ControllerKind::ReplicaSet, "default", "web", Some(3)),
        (ControllerKind::ReplicaSet, "default", "single", Some(1)),
        (ControllerKind::ReplicationController, "default", "rc", Some(3)),
        (ControllerKind::ReplicationController, "default", "rc-single", Some(1)),
        (ControllerKind::StatefulSet, "default", "db", None),
        (ControllerKind::Job, "default", "batch", None),
        (ControllerKind::DaemonSet, "default", "agent", None),
        (ControllerKind::ReplicaSet, KUBE_SYSTEM_NAMESPACE, "dns", Some(2)),
    ] {
        c.insert(kind, namespace, name.into(), replicas);
    }
    c
}

/// A cluster: its PDBs, controllers and flags.
struct Cluster {
    pdbs: PdbTracker,
    controllers: Controllers,
    options: DrainOptions,
}

impl Cluster {
    fn new() -> Self {
        Cluster { pdbs: PdbTracker::default(), controllers: controllers(), options: DrainOptions::default() }
    }

    fn with_pdbs(mut self, pdbs: &[PodDisruptionBudget]) -> Self {
        self.pdbs = PdbTracker::new(pdbs);
        self
    }

    fn with_options(mut self, f: impl FnOnce(&mut DrainOptions)) -> Self {
        f(&mut self.options);
        self
    }

    fn ctx(&self) -> DrainContext<'_> {
        DrainContext { pdbs: &self.pdbs, controllers: &self.controllers, options: &self.options, now: now() }
    }

    fn outcome(&self, p: Pod) -> PodDrainOutcome {
        pod_drain_outcome(&info(p), &self.ctx())
    }
}

fn outcome(p: Pod) -> PodDrainOutcome {
    Cluster::new().outcome(p)
}

fn blocked(reason: BlockingReason) -> PodDrainOutcome {
    PodDrainOutcome::Block(reason)
}

fn node_with(name: &str, pods: Vec<Pod>) -> NodeInfo {
    let mut n = NodeInfo::new(Arc::new(node(name, "4", "8Gi")));
    for p in pods {
        n.push_pod(info(p));
    }
    n
}

fn names(pods: &[Arc<PodInfo>]) -> Vec<&str> {
    pods.iter().map(|p| p.name()).collect()
}

#[test]
fn drain_options_default_to_upstream_flags() {
    let o = DrainOptions::default();
    assert!(
        o.skip_nodes_with_system_pods && o.skip_nodes_with_local_storage && o.skip_nodes_with_custom_controller_pods
    );
    assert_eq!(o.min_replica_count, 0);
    assert_eq!(o.blocking_system_pod_disruption_timeout, Duration::from_secs(3600));
}

#[test]
fn replicated_pods_move() {
    assert_eq!(outcome(web("a")), PodDrainOutcome::Move);
    assert_eq!(outcome(with_owner(bare("a"), "StatefulSet", "db")), PodDrainOutcome::Move);
    assert_eq!(outcome(with_owner(bare("a"), "Job", "batch")), PodDrainOutcome::Move);
    assert_eq!(outcome(with_owner(bare("a"), "ReplicationController", "rc")), PodDrainOutcome::Move);
}

#[test]
fn mirror_pods_are_skipped() {
    // Unreplicated, in kube-system, with local storage: none of it matters for a static pod.
    let p = with_volume(system(with_annotation(bare("etcd"), MIRROR_POD, "abc")), host_path("data"));
    assert_eq!(outcome(p), PodDrainOutcome::Skip);
}

#[test]
fn long_terminating_pods_are_skipped() {
    // Default grace 30s + 30s: deleted 61s ago is past it, 60s ago is not yet (strictly after).
    assert_eq!(outcome(deleted(bare("a"), 61, None)), PodDrainOutcome::Skip);
    assert_eq!(outcome(deleted(bare("a"), 60, None)), blocked(BlockingReason::NotReplicated));
    // The pod's own grace period counts.
    assert_eq!(outcome(deleted(bare("a"), 100, Some(120))), blocked(BlockingReason::NotReplicated));
    assert_eq!(outcome(deleted(bare("a"), 151, Some(120))), PodDrainOutcome::Skip);
    assert_eq!(outcome(deleted(web("a"), 5, Some(0))), PodDrainOutcome::Move);
}

#[test]
fn long_terminating_precedes_controller_check() {
    assert_eq!(outcome(deleted(with_owner(bare("a"), "ReplicaSet", "gone"), 120, None)), PodDrainOutcome::Skip);
}

#[test]
fn controller_not_found_blocks() {
    for kind in ["ReplicaSet", "ReplicationController", "StatefulSet", "Job", "DaemonSet"] {
        assert_eq!(outcome(with_owner(bare("a"), kind, "gone")), blocked(BlockingReason::ControllerNotFound), "{kind}");
    }
    // The owner is looked up in the pod's namespace.
    assert_eq!(outcome(system(web("a"))), blocked(BlockingReason::ControllerNotFound));
}

#[test]
fn controller_check_is_off_without_custom_controller_flag() {
    let c = Cluster::new().with_options(|o| o.skip_nodes_with_custom_controller_pods = false);
    assert_eq!(c.outcome(with_owner(bare("a"), "ReplicaSet", "gone")), PodDrainOutcome::Move);
}

#[test]
fn unchecked_controllers_skip_owner_check() {
    let mut c = Cluster::new();
    c.controllers = Controllers::unchecked();
    assert_eq!(c.outcome(with_owner(bare("a"), "ReplicaSet", "gone")), PodDrainOutcome::Move);
    assert_eq!(c.outcome(bare("b")), blocked(BlockingReason::NotReplicated));
}

#[test]
fn controllers_of_other_kinds_or_groups_are_not_looked_up() {
    let mut kruise_ss = with_owner(bare("a"), "StatefulSet", "x");
    kruise_ss.metadata.owner_references.as_mut().unwrap()[0].api_version = "apps.kruise.io/v1beta1".into();
    assert_eq!(outcome(kruise_ss), PodDrainOutcome::Move);
    let mut kruise_ds = with_owner(bare("b"), "DaemonSet", "x");
    kruise_ds.metadata.owner_references.as_mut().unwrap()[0].api_version = "apps.kruise.io/v1alpha1".into();
    assert_eq!(outcome(kruise_ds), PodDrainOutcome::DaemonSet);
    // A pod annotated as a DaemonSet pod is checked as one, so its Job owner is not looked up.
    let annotated_job = with_annotation(with_owner(bare("c"), "Job", "gone"), DAEMONSET_POD, "true");
    assert_eq!(outcome(annotated_job), PodDrainOutcome::DaemonSet);
}

#[test]
fn min_replicas_reached_blocks() {
    let c = Cluster::new().with_options(|o| o.min_replica_count = 2);
    assert_eq!(c.outcome(with_owner(bare("a"), "ReplicaSet", "single")), blocked(BlockingReason::MinReplicasReached));
    assert_eq!(
        c.outcome(with_owner(bare("a"), "ReplicationController", "rc-single")),
        blocked(BlockingReason::MinReplicasReached)
    );
    assert_eq!(c.outcome(web("a")), PodDrainOutcome::Move);
    // Exactly the minimum is enough.
    let c = Cluster::new().with_options(|o| o.min_replica_count = 3);
    assert_eq!(c.outcome(web("a")), PodDrainOutcome::Move);
}

#[test]
fn min_replicas_unchecked_when_replicas_unset() {
    let mut c = Cluster::new().with_options(|o| o.min_replica_count = 5);
    c.controllers.insert(ControllerKind::ReplicaSet, "default", "unset".into(), None);
    assert_eq!(c.outcome(with_owner(bare("a"), "ReplicaSet", "unset")), PodDrainOutcome::Move);
}

#[test]
fn daemonset_pods_are_drained_not_moved() {
    // Local storage and an exhausted PDB do not matter for a DaemonSet pod.
    let ds = with_labels(
        with_volume(with_owner(bare("agent-x"), "DaemonSet", "agent"), host_path("logs")),
        &[("app", "agent")],
    );
    let c = Cluster::new().with_pdbs(&[pdb("default", "agent", 0)]);
    assert_eq!(c.outcome(ds), PodDrainOutcome::DaemonSet);
}

#[test]
fn daemonset_pod_annotation_counts_as_daemonset() {
    assert_eq!(outcome(with_annotation(bare("a"), DAEMONSET_POD, "true")), PodDrainOutcome::DaemonSet);
    assert_eq!(outcome(with_annotation(bare("a"), DAEMONSET_POD, "false")), blocked(BlockingReason::NotReplicated));
}

#[test]
fn missing_daemonset_blocks_before_daemonset_rule() {
    assert_eq!(outcome(with_owner(bare("a"), "DaemonSet", "gone")), blocked(BlockingReason::ControllerNotFound));
}

#[test]
fn safe_to_evict_true_overrides_not_replicated() {
    assert_eq!(outcome(with_annotation(bare("a"), SAFE_TO_EVICT, "true")), PodDrainOutcome::Move);
}

#[test]
fn safe_to_evict_true_overrides_pdb() {
    let c = Cluster::new().with_pdbs(&[pdb("default", "web", 0)]);
    assert_eq!(c.outcome(web("a")), blocked(BlockingReason::NotEnoughPdb));
    assert_eq!(c.outcome(with_annotation(web("a"), SAFE_TO_EVICT, "true")), PodDrainOutcome::Move);
}

#[test]
fn safe_to_evict_true_overrides_kube_system_and_local_storage() {
    let p = with_annotation(system(with_volume(bare("a"), host_path("data"))), SAFE_TO_EVICT, "true");
    assert_eq!(outcome(p), PodDrainOutcome::Move);
}

#[test]
fn safe_to_evict_true_does_not_override_controller_not_found() {
    let p = with_annotation(with_owner(bare("a"), "ReplicaSet", "gone"), SAFE_TO_EVICT, "true");
    assert_eq!(outcome(p), blocked(BlockingReason::ControllerNotFound));
}

#[test]
fn safe_to_evict_false_blocks() {
    assert_eq!(
        outcome(with_annotation(web("a"), SAFE_TO_EVICT, "false")),
        blocked(BlockingReason::NotSafeToEvictAnnotation)
    );
    // Other values mean nothing.
    assert_eq!(outcome(with_annotation(web("a"), SAFE_TO_EVICT, "False")), PodDrainOutcome::Move);
}

#[test]
fn terminal_pods_are_skipped() {
    assert_eq!(outcome(phase(bare("a"), "Failed", Some("Always"))), PodDrainOutcome::Skip);
    assert_eq!(outcome(phase(bare("a"), "Succeeded", Some("Never"))), PodDrainOutcome::Skip);
    assert_eq!(outcome(phase(bare("a"), "Succeeded", Some("OnFailure"))), PodDrainOutcome::Skip);
    // Succeeded with restartPolicy Always (or unset) is not terminal for upstream.
    assert_eq!(outcome(phase(bare("a"), "Succeeded", Some("Always"))), blocked(BlockingReason::NotReplicated));
    assert_eq!(outcome(phase(bare("a"), "Succeeded", None)), blocked(BlockingReason::NotReplicated));
}

#[test]
fn terminal_pod_with_missing_controller_still_blocks() {
    let p = phase(with_owner(bare("a"), "Job", "gone"), "Succeeded", Some("Never"));
    assert_eq!(outcome(p), blocked(BlockingReason::ControllerNotFound));
}

#[test]
fn on_completion_waits() {
    // Waiting comes before the not-replicated, kube-system and PDB checks.
    let p = system(with_annotation(bare("a"), SAFE_TO_EVICT, "on-completion"));
    assert_eq!(outcome(p), PodDrainOutcome::WaitForCompletion);
    // A finished on-completion pod no longer holds the node.
    let done = phase(with_annotation(bare("b"), SAFE_TO_EVICT, "on-completion"), "Succeeded", Some("Never"));
    assert_eq!(outcome(done), PodDrainOutcome::Skip);
}

#[test]
fn on_completion_pods_do_not_stop_the_walk() {
    let c = Cluster::new();
    let waiting = with_annotation(web("job-1"), SAFE_TO_EVICT, "on-completion");
    let n = node_with("n1", vec![waiting.clone(), web("a")]);
    let moved = pods_to_move(&n, &c.ctx()).unwrap();
    assert_eq!(names(&moved.pods), ["a"]);
    assert_eq!(names(&moved.on_completion_pods), ["job-1"]);
    assert!(moved.waits_for_completion());
    // A later blocking pod is still found.
    let n = node_with("n2", vec![waiting, bare("unreplicated")]);
    let err = pods_to_move(&n, &c.ctx()).unwrap_err();
    assert_eq!((err.pod.name(), err.reason), ("unreplicated", BlockingReason::NotReplicated));
}

#[test]
fn not_replicated_blocks() {
    assert_eq!(outcome(bare("a")), blocked(BlockingReason::NotReplicated));
}

#[test]
fn custom_controller_not_replicated_when_flag_set() {
    let custom = with_owner(bare("a"), "Rollout", "canary");
    assert_eq!(outcome(custom.clone()), blocked(BlockingReason::NotReplicated));
    let c = Cluster::new().with_options(|o| o.skip_nodes_with_custom_controller_pods = false);
    assert_eq!(c.outcome(custom), PodDrainOutcome::Move);
}

#[test]
fn non_controller_owner_does_not_count_as_replicated() {
    let mut p = with_owner(bare("a"), "ReplicaSet", "web");
    p.metadata.owner_references.as_mut().unwrap()[0].controller = None;
    let c = Cluster::new().with_options(|o| o.skip_nodes_with_custom_controller_pods = false);
    assert_eq!(c.outcome(p), blocked(BlockingReason::NotReplicated));
}

#[test]
fn kube_system_pod_without_pdb_blocks() {
    let dns = with_labels(system(with_owner(bare("coredns"), "ReplicaSet", "dns")), &[("app", "dns")]);
    assert_eq!(outcome(dns.clone()), blocked(BlockingReason::UnmovableKubeSystemPod));
    // A PDB in another namespace or for other pods does not count.
    let c = Cluster::new().with_pdbs(&[pdb("default", "dns", 1), pdb(KUBE_SYSTEM_NAMESPACE, "other", 1)]);
    assert_eq!(c.outcome(dns), blocked(BlockingReason::UnmovableKubeSystemPod));
}

#[test]
fn kube_system_pod_with_pdb_moves() {
    let dns = with_labels(system(with_owner(bare("coredns"), "ReplicaSet", "dns")), &[("app", "dns")]);
    let c = Cluster::new().with_pdbs(&[pdb(KUBE_SYSTEM_NAMESPACE, "dns", 1)]);
    assert_eq!(c.outcome(dns), PodDrainOutcome::Move);
}

#[test]
fn kube_system_pod_with_exhausted_pdb_is_not_enough_pdb() {
    let dns = with_labels(system(with_owner(bare("coredns"), "ReplicaSet", "dns")), &[("app", "dns")]);
    let c = Cluster::new().with_pdbs(&[pdb(KUBE_SYSTEM_NAMESPACE, "dns", 0)]);
    assert_eq!(c.outcome(dns), blocked(BlockingReason::NotEnoughPdb));
}

#[test]
fn kube_system_rule_is_off_without_flag() {
    let dns = system(with_owner(bare("coredns"), "ReplicaSet", "dns"));
    let c = Cluster::new().with_options(|o| o.skip_nodes_with_system_pods = false);
    assert_eq!(c.outcome(dns), PodDrainOutcome::Move);
}

#[test]
fn kube_system_pod_older_than_timeout_moves() {
    let dns = || system(with_owner(bare("coredns"), "ReplicaSet", "dns"));
    assert_eq!(outcome(created(dns(), 3601)), PodDrainOutcome::Move);
    // Strictly older than the timeout; without a creation time the pod never qualifies.
    assert_eq!(outcome(created(dns(), 3600)), blocked(BlockingReason::UnmovableKubeSystemPod));
    assert_eq!(outcome(dns()), blocked(BlockingReason::UnmovableKubeSystemPod));
    let c = Cluster::new().with_options(|o| o.blocking_system_pod_disruption_timeout = Duration::from_secs(60));
    assert_eq!(c.outcome(created(dns(), 61)), PodDrainOutcome::Move);
}

#[test]
fn kube_system_pod_past_timeout_skips_later_checks() {
    // Upstream answers "drainable" for it, which ends the rule walk.
    let p = created(
        with_volume(
            with_annotation(system(with_owner(bare("x"), "ReplicaSet", "dns")), SAFE_TO_EVICT, "false"),
            host_path("d"),
        ),
        7200,
    );
    assert_eq!(outcome(p), PodDrainOutcome::Move);
}

#[test]
fn not_replicated_precedes_kube_system() {
    assert_eq!(outcome(system(bare("a"))), blocked(BlockingReason::NotReplicated));
}

#[test]
fn kube_system_precedes_safe_to_evict_false() {
    let p = with_annotation(system(with_owner(bare("a"), "ReplicaSet", "dns")), SAFE_TO_EVICT, "false");
    assert_eq!(outcome(p), blocked(BlockingReason::UnmovableKubeSystemPod));
}

#[test]
fn safe_to_evict_false_precedes_local_storage() {
    let p = with_annotation(with_volume(web("a"), host_path("d")), SAFE_TO_EVICT, "false");
    assert_eq!(outcome(p), blocked(BlockingReason::NotSafeToEvictAnnotation));
}

#[test]
fn local_storage_blocks() {
    assert_eq!(outcome(with_volume(web("a"), host_path("d"))), blocked(BlockingReason::LocalStorageRequested));
    assert_eq!(
        outcome(with_volume(web("a"), empty_dir("scratch", None))),
        blocked(BlockingReason::LocalStorageRequested)
    );
    assert_eq!(
        outcome(with_volume(web("a"), empty_dir("scratch", Some("HugePages")))),
        blocked(BlockingReason::LocalStorageRequested)
    );
}

#[test]
fn local_storage_precedes_pdb() {
    let c = Cluster::new().with_pdbs(&[pdb("default", "web", 0)]);
    assert_eq!(c.outcome(with_volume(web("a"), host_path("d"))), blocked(BlockingReason::LocalStorageRequested));
}

#[test]
fn memory_empty_dir_does_not_block() {
    assert_eq!(outcome(with_volume(web("a"), empty_dir("cache", Some("Memory")))), PodDrainOutcome::Move);
}

#[test]
fn local_storage_allowed_without_flag() {
    let c = Cluster::new().with_options(|o| o.skip_nodes_with_local_storage = false);
    assert_eq!(c.outcome(with_volume(web("a"), host_path("d"))), PodDrainOutcome::Move);
}

#[test]
fn safe_to_evict_local_volumes_allows() {
    let two = || with_volume(with_volume(web("a"), empty_dir("scratch-1", None)), host_path("scratch-2"));
    let listed = |value: &str| with_annotation(two(), SAFE_TO_EVICT_LOCAL_VOLUMES, value);
    assert_eq!(outcome(listed("scratch-1,scratch-2")), PodDrainOutcome::Move);
    // Extra names are ignored; every local volume must be listed; names are taken verbatim.
    assert_eq!(outcome(listed("scratch-2,other,scratch-1")), PodDrainOutcome::Move);
    assert_eq!(outcome(listed("scratch-1")), blocked(BlockingReason::LocalStorageRequested));
    assert_eq!(outcome(listed("scratch-1, scratch-2")), blocked(BlockingReason::LocalStorageRequested));
    assert_eq!(outcome(listed(",")), blocked(BlockingReason::LocalStorageRequested));
    assert_eq!(outcome(listed("")), blocked(BlockingReason::LocalStorageRequested));
}

#[test]
fn not_enough_pdb_blocks() {
    let c = Cluster::new().with_pdbs(&[pdb("default", "web", 0)]);
    assert_eq!(c.outcome(web("a")), blocked(BlockingReason::NotEnoughPdb));
    let c = Cluster::new().with_pdbs(&[pdb("default", "web", 1), pdb("default", "web", -1)]);
    assert_eq!(c.outcome(web("a")), blocked(BlockingReason::NotEnoughPdb));
    let c = Cluster::new().with_pdbs(&[pdb("default", "web", 1)]);
    assert_eq!(c.outcome(web("a")), PodDrainOutcome::Move);
}

#[test]
fn pdb_budget_is_consumed_across_nodes() {
    let mut c = Cluster::new().with_pdbs(&[pdb("default", "web", 1)]);
    let first = node_with("n1", vec![web("a")]);
    let second = node_with("n2", vec![web("b")]);
    let moved = pods_to_move(&first, &c.ctx()).unwrap();
    assert!(c.pdbs.can_remove_pods(&moved.pods).is_ok());
    c.pdbs.remove_pods(&moved.pods);
    let err = pods_to_move(&second, &c.ctx()).unwrap_err();
    assert_eq!((err.pod.name(), err.reason), ("b", BlockingReason::NotEnoughPdb));
}

#[test]
fn first_blocking_pod_stops_the_walk() {
    let n = node_with(
        "n1",
        vec![
            web("a"),
            with_annotation(web("b"), SAFE_TO_EVICT, "false"),
            bare("c"),
            with_volume(web("d"), host_path("x")),
        ],
    );
    let err = pods_to_move(&n, &Cluster::new().ctx()).unwrap_err();
    assert_eq!((err.pod.name(), err.reason), ("b", BlockingReason::NotSafeToEvictAnnotation));
    assert_eq!(err.to_string(), "pod default/b blocks scale-down: NotSafeToEvictAnnotation");
}

#[test]
fn pods_to_move_sorts_pods_by_what_draining_does_with_them() {
    let n = node_with(
        "n1",
        vec![
            with_annotation(bare("static"), MIRROR_POD, "x"),
            with_owner(bare("agent-1"), "DaemonSet", "agent"),
            web("a"),
            deleted(bare("gone"), 3600, None),
            phase(bare("done"), "Failed", None),
            with_annotation(bare("free"), SAFE_TO_EVICT, "true"),
        ],
    );
    let out = pods_to_move(&n, &Cluster::new().ctx()).unwrap();
    assert_eq!(names(&out.pods), ["a", "free"]);
    assert_eq!(names(&out.daemonset_pods), ["agent-1"]);
    assert!(out.on_completion_pods.is_empty());
    assert!(!out.is_empty());
    let only_daemonsets = node_with("n2", vec![with_owner(bare("agent-2"), "DaemonSet", "agent")]);
    assert!(pods_to_move(&only_daemonsets, &Cluster::new().ctx()).unwrap().is_empty());
}

#[test]
fn nothing_to_move_agrees_with_pods_to_move() {
    let ctx_cluster = Cluster::new();
    let ctx = ctx_cluster.ctx();
    let cases = [
        (
            "daemonsets and skipped pods only",
            vec![with_owner(bare("agent"), "DaemonSet", "agent"), with_annotation(bare("static"), MIRROR_POD, "x")],
            true,
        ),
        ("on-completion pod", vec![with_annotation(web("job"), SAFE_TO_EVICT, "on-completion")], true),
        ("a pod to move", vec![with_owner(bare("agent"), "DaemonSet", "agent"), web("a")], false),
        ("a blocking pod", vec![with_annotation(bare("static"), MIRROR_POD, "x"), bare("c")], false),
        ("no pods", vec![], true),
    ];
    for (what, pods, expected) in cases {
        let n = node_with("n", pods);
        assert_eq!(nothing_to_move(&n, &ctx), expected, "{what}");
        assert_eq!(pods_to_move(&n, &ctx).is_ok_and(|p| p.is_empty()), expected, "{what}");
    }
}

#[test]
fn blocking_reason_names_match_upstream() {
    let all = [
        (BlockingReason::ControllerNotFound, "ControllerNotFound"),
        (BlockingReason::MinReplicasReached, "MinReplicasReached"),
        (BlockingReason::NotReplicated, "NotReplicated"),
        (BlockingReason::LocalStorageRequested, "LocalStorageRequested"),
        (BlockingReason::NotSafeToEvictAnnotation, "NotSafeToEvictAnnotation"),
        (BlockingReason::UnmovableKubeSystemPod, "UnmovableKubeSystemPod"),
        (BlockingReason::NotEnoughPdb, "NotEnoughPdb"),
        (BlockingReason::UnexpectedError, "UnexpectedError"),
    ];
    for (reason, name) in all {
        assert_eq!(reason.to_string(), name);
        assert_eq!(reason.as_str(), name);
    }
}
