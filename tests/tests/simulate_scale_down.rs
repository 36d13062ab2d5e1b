//! Scale-down end to end: unneeded time, the scale-down-disabled annotation, PodDisruptionBudgets,
//! the delay after a scale-up, the parallelism budgets and the fate of drained pods.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use autoscaler::control::LoopReport;
use autoscaler::core::plan::{ScaleDownStatus, UnremovableReason};
use autoscaler::simulate::world::World;
use k8s_openapi::jiff::Timestamp;
use simulator::well_known::TO_BE_DELETED_TAINT;
use support::*;

const PDB_WEB_MIN_3: &str = "- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata: {name: web, namespace: default}\n  spec:\n    minAvailable: 3\n    selector: {matchLabels: {app: web}}\n";

/// `pool` of 4-CPU nodes, with `initial` nodes, min `min`.
fn pool(min: usize, initial: usize) -> String {
    group_yaml("pool", min, 10, initial, "4", "16Gi", "")
}

/// When each node was first reported unneeded, when its deletion started, and whether it was
/// still there, untainted, at each loop.
#[derive(Default)]
struct ScaleDownLog {
    start: Option<Timestamp>,
    unneeded_since: BTreeMap<String, i64>,
    deletion_started: BTreeMap<String, i64>,
    drained: BTreeSet<String>,
}

impl ScaleDownLog {
    fn record(&mut self, now: Timestamp, report: Option<&LoopReport>) {
        let start = *self.start.get_or_insert(now);
        let Some(report) = report else { return };
        let t = secs(start, now);
        if let Some(plan) = &report.plan {
            let unneeded: BTreeSet<&str> = plan.scale_down.unneeded.iter().map(|n| n.node.as_str()).collect();
            // A node that drops out of the unneeded list starts over.
            self.unneeded_since.retain(|n, _| unneeded.contains(n.as_str()) || self.deletion_started.contains_key(n));
            for n in unneeded {
                self.unneeded_since.entry(n.to_string()).or_insert(t);
            }
            for n in &report.deletions_started {
                if plan.scale_down.delete_now.drain.contains(n) {
                    self.drained.insert(n.clone());
                }
            }
        }
        for n in &report.deletions_started {
            self.deletion_started.entry(n.clone()).or_insert(t);
        }
    }
}

#[test]
fn unneeded_node_is_removed_only_after_scale_down_unneeded_time() {
    // Three nodes with one 3-CPU pod each; at 10m the Deployment drops to one replica and two
    // nodes become empty.
    let yaml = format!(
        "duration: 40m\nflags: [--scale-down-unneeded-time=7m]\nnodeGroups:\n{}objects:\n{}events:\n- {{at: 10m, scale: {{kind: Deployment, name: web, replicas: 1}}}}\n",
        pool(1, 3),
        deployment_yaml("web", 3, "3", "1Gi", ""),
    );
    let mut log = ScaleDownLog::default();
    let mut presence: Vec<(i64, BTreeSet<String>, BTreeSet<String>)> = Vec::new();
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            log.record(now, report);
            let t = secs(log.start.unwrap(), now);
            presence.push((t, node_names(world).into_iter().collect(), to_be_deleted(world).into_iter().collect()));
        }),
    );
    assert_eq!(log.deletion_started.len(), 2, "two nodes removed: {:?}", log.deletion_started);
    for (node, started) in &log.deletion_started {
        let since = log.unneeded_since[node];
        assert!(since >= 600, "{node} unneeded at {since}s, before the load dropped");
        // Removable once unneeded for longer than 7 minutes (upstream: since + threshold must be
        // before now), so at the first loop after that, not earlier.
        assert!(*started > since + 420, "{node}: unneeded at {since}s, deletion at {started}s");
        assert!(*started <= since + 420 + 10, "{node}: unneeded at {since}s, deletion only at {started}s");
        // At the loop one scan interval before, and at the 7-minute mark itself, the node is
        // there and carries no taint.
        for at in [since + 410, since + 420] {
            let (t, nodes, tainted) =
                presence.iter().rev().find(|(t, _, _)| *t <= at).expect("a step before the deadline");
            assert!(nodes.contains(node) && !tainted.contains(node), "{node} touched at {t}s, before its time");
        }
    }
    let (_, final_nodes, _) = presence.last().unwrap();
    assert_eq!(final_nodes.len(), 1, "{final_nodes:?}");
}

#[test]
fn node_with_scale_down_disabled_annotation_is_kept() {
    // Three empty nodes of a group with min 0: all unneeded, but pool-2 is annotated.
    let yaml = format!(
        "duration: 30m\nflags: [--scale-down-unneeded-time=2m]\nnodeGroups:\n{}events:\n- {{at: 0s, annotateNode: {{node: pool-2, annotations: {{cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"}}}}}}\n",
        pool(0, 3),
    );
    let mut reasons = BTreeSet::new();
    let mut final_nodes = Vec::new();
    let mut ever_tainted = BTreeSet::new();
    run(
        &yaml,
        &mut Watch(|_, world: &World, report: Option<&LoopReport>| {
            if let Some(plan) = report.and_then(|r| r.plan.as_ref()) {
                for u in &plan.scale_down.unremovable {
                    if u.node == "pool-2" {
                        reasons.insert(u.reason);
                    }
                }
            }
            ever_tainted.extend(to_be_deleted(world));
            final_nodes = node_names(world);
        }),
    );
    assert_eq!(final_nodes, vec!["pool-2".to_string()], "the other empty nodes are removed");
    assert!(!ever_tainted.contains("pool-2"), "pool-2 was never marked for deletion");
    assert_eq!(reasons, BTreeSet::from([UnremovableReason::ScaleDownDisabledAnnotation]));
}

#[test]
fn pdb_min_available_holds_while_nodes_are_drained() {
    // Four nodes, each with one 1-CPU web pod (spread by the scheduler) and a PDB asking for 3
    // available. Replacements take 20s to become Ready, so evictions must wait for them. Three
    // drains may run at once, so only the PDB keeps them apart.
    let yaml = format!(
        "duration: 1h\nflags: [--scale-down-unneeded-time=2m, --max-drain-parallelism=3]\ncluster: {{podStartupDelay: 20s}}\nnodeGroups:\n{}objects:\n{}{PDB_WEB_MIN_3}",
        pool(1, 4),
        deployment_yaml("web", 4, "1", "1Gi", ""),
    );
    let mut armed = false;
    let mut lowest = usize::MAX;
    let mut log = ScaleDownLog::default();
    let mut evicted = 0;
    let mut final_nodes = 0;
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            log.record(now, report);
            evicted += report.map_or(0, |r| r.evicted.len());
            let ready = app_pods(world, "web").iter().filter(|p| pod_ready(p)).count();
            armed |= ready == 4;
            if armed {
                lowest = lowest.min(ready);
            }
            let pdb = world.handle.lock().pdb("default", "web").cloned().expect("the PDB");
            let status = pdb.status.clone().unwrap_or_default();
            assert!(status.disruptions_allowed >= 0, "disruptionsAllowed {} at {now}", status.disruptions_allowed);
            final_nodes = node_names(world).len();
        }),
    );
    assert!(armed, "the web pods became ready");
    assert!(lowest >= 3, "ready web pods dropped to {lowest}, below minAvailable 3");
    assert!(log.drained.len() >= 2, "nodes were drained: {:?}", log.drained);
    assert!(evicted >= 2, "pods were evicted: {evicted}");
    assert!(final_nodes < 4, "the cluster shrank: {final_nodes} nodes");
}

#[test]
fn scale_down_waits_for_scale_down_delay_after_add() {
    // One node; three 3-CPU pods make the loop add two. At 5m the load drops to one pod, so
    // two nodes are unneeded after 1m, but nothing may be removed until 20m after the scale-up.
    let yaml = format!(
        "duration: 40m\nflags: [--scale-down-unneeded-time=1m, --scale-down-delay-after-add=20m]\nnodeGroups:\n{}objects:\n{}events:\n- {{at: 5m, scale: {{kind: Deployment, name: web, replicas: 1}}}}\n",
        pool(1, 1),
        deployment_yaml("web", 3, "3", "1Gi", ""),
    );
    let mut last_scale_up = None;
    let mut log = ScaleDownLog::default();
    let mut statuses = BTreeSet::new();
    run(
        &yaml,
        &mut Watch(|now, _: &World, report: Option<&LoopReport>| {
            log.record(now, report);
            if let Some(r) = report {
                if !r.scale_ups.is_empty() {
                    last_scale_up = Some(secs(log.start.unwrap(), now));
                }
                if let Some(plan) = &r.plan
                    && !plan.scale_down.unneeded.is_empty()
                {
                    statuses.insert(plan.scale_down.status);
                }
            }
        }),
    );
    let scale_up = last_scale_up.expect("the loop scaled up");
    assert!(scale_up < 60, "scale-up at {scale_up}s");
    let first_deletion = *log.deletion_started.values().min().expect("nodes were removed later");
    assert!(first_deletion >= scale_up + 1200, "deletion at {first_deletion}s, scale-up at {scale_up}s");
    assert!(first_deletion <= scale_up + 1200 + 10, "deletion only at {first_deletion}s");
    assert!(statuses.contains(&ScaleDownStatus::InCooldown), "the plan reported the cooldown: {statuses:?}");
}

/// Nodes tainted ToBeDeleted whose instance is still live: deletions in flight, as the budget
/// counts them (a node whose instance is already being deleted no longer uses the budget).
fn deletions_in_flight(world: &World) -> BTreeSet<String> {
    let live: BTreeSet<String> = ["pool"].iter().flat_map(|g| live_instances(world, g)).map(|(id, _)| id).collect();
    let guard = world.handle.lock();
    guard
        .nodes()
        .filter(|n| has_taint(n, TO_BE_DELETED_TAINT))
        .filter(|n| n.spec.as_ref().and_then(|s| s.provider_id.as_ref()).is_some_and(|id| live.contains(id)))
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

#[test]
fn max_scale_down_parallelism_caps_deletions_in_flight() {
    // Seven empty nodes, all unneeded at once; at most two deletions may be in flight.
    let yaml = format!(
        "duration: 30m\nflags: [--scale-down-unneeded-time=1m, --max-scale-down-parallelism=2, --scale-down-delay-after-delete=0s]\nnodeGroups:\n{}",
        pool(0, 7),
    );
    let mut most = 0;
    let mut final_nodes = usize::MAX;
    run(
        &yaml,
        &mut Watch(|now, world: &World, _: Option<&LoopReport>| {
            let in_flight = deletions_in_flight(world);
            assert!(in_flight.len() <= 2, "{} deletions in flight at {now}: {in_flight:?}", in_flight.len());
            most = most.max(in_flight.len());
            final_nodes = node_names(world).len();
        }),
    );
    assert_eq!(most, 2, "the budget was used");
    assert_eq!(final_nodes, 0, "every empty node went in the end");
}

#[test]
fn max_drain_parallelism_caps_drains_in_flight() {
    // Six nodes with one 1-CPU pod each: every node needs a drain. Up to 10 deletions may run,
    // but only two drains.
    let yaml = format!(
        "duration: 1h\nflags: [--scale-down-unneeded-time=1m, --max-drain-parallelism=2, --scale-down-delay-after-delete=0s]\ncluster: {{podStartupDelay: 5s}}\nnodeGroups:\n{}objects:\n{}",
        pool(1, 6),
        deployment_yaml("web", 6, "1", "1Gi", ""),
    );
    let mut log = ScaleDownLog::default();
    let mut most = 0;
    let mut final_nodes = 0;
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            log.record(now, report);
            let draining: Vec<String> =
                deletions_in_flight(world).into_iter().filter(|n| log.drained.contains(n)).collect();
            assert!(draining.len() <= 2, "{} drains in flight at {now}: {draining:?}", draining.len());
            most = most.max(draining.len());
            final_nodes = node_names(world).len();
        }),
    );
    assert_eq!(most, 2, "the drain budget was used: {:?}", log.drained);
    assert_eq!(final_nodes, 2, "six 1-CPU pods pack onto two 4-CPU nodes");
}

#[test]
fn drained_pods_are_recreated_and_scheduled_on_remaining_nodes() {
    // A Deployment and a StatefulSet spread over four nodes; after the drains every replica
    // runs again, on a node that stays, and no pod was still on its node when the node went.
    let statefulset = "- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: db, namespace: default}\n  spec:\n    replicas: 2\n    serviceName: db\n    selector: {matchLabels: {app: db}}\n    template:\n      metadata: {labels: {app: db}}\n      spec:\n        containers: [{name: db, image: db, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n";
    let yaml = format!(
        "duration: 1h\nflags: [--scale-down-unneeded-time=2m]\ncluster: {{podStartupDelay: 5s}}\nnodeGroups:\n{}objects:\n{}{statefulset}",
        pool(1, 4),
        deployment_yaml("web", 4, "500m", "1Gi", ""),
    );
    let mut log = ScaleDownLog::default();
    let mut previous: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut evicted = BTreeSet::new();
    let mut final_state = (Vec::new(), Vec::new(), Vec::new());
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            log.record(now, report);
            if let Some(r) = report {
                evicted.extend(r.evicted.iter().cloned());
            }
            let nodes: BTreeSet<String> = node_names(world).into_iter().collect();
            for (gone, pods) in previous.iter().filter(|(n, _)| !nodes.contains(*n)) {
                assert!(pods.is_empty(), "node {gone} went away at {now} with pods on it: {pods:?}");
            }
            let guard = world.handle.lock();
            previous = nodes
                .iter()
                .map(|n| {
                    let pods = guard
                        .pods_on_node(n)
                        .iter()
                        .filter(|p| pod_phase(p) != "Succeeded")
                        .map(|p| pod_key(p))
                        .collect();
                    (n.clone(), pods)
                })
                .collect();
            drop(guard);
            final_state = (app_pods(world, "web"), app_pods(world, "db"), nodes.into_iter().collect());
        }),
    );
    let (web, db, nodes) = final_state;
    assert!(!log.drained.is_empty() && !evicted.is_empty(), "nodes were drained: {:?} {evicted:?}", log.drained);
    assert!(nodes.len() < 4, "the cluster shrank: {nodes:?}");
    for (app, pods, replicas) in [("web", &web, 4), ("db", &db, 2)] {
        let running: Vec<&str> = pods
            .iter()
            .filter(|p| pod_phase(p) == "Running" && pod_node(p).is_some_and(|n| nodes.iter().any(|m| m == n)))
            .map(|p| p.metadata.name.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(running.len(), replicas, "{app}: {running:?}");
    }
    // StatefulSet pods come back under their own names.
    let db_names: BTreeSet<&str> = db.iter().filter_map(|p| p.metadata.name.as_deref()).collect();
    assert_eq!(db_names, BTreeSet::from(["db-0", "db-1"]));
}
