//! Zonal volumes end to end: the real control loop against the in-memory cluster, whose
//! scheduler binds `WaitForFirstConsumer` claims in the chosen node's zone. A StatefulSet pod
//! bound to a zone-a volume makes the autoscaler scale the zone-a group and never the zone-b
//! one, and a scale-down moves it only within its zone.

mod support;

use std::collections::BTreeSet;

use autoscaler::control::LoopReport;
use autoscaler::simulate::world::World;
use k8s_openapi::jiff::Timestamp;
use support::*;

const ZONE: &str = "topology.kubernetes.io/zone";

/// A node group of 4-CPU nodes in `zone`.
fn zonal_group(id: &str, zone: &str, min: usize, initial: usize) -> String {
    format!(
        "- id: {id}\n  minSize: {min}\n  maxSize: 5\n  initialSize: {initial}\n  provisioningDelay: 1m\n  template: {{metadata: {{labels: {{pool: {id}, {ZONE}: {zone}}}}}, status: {{capacity: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}}}}}\n"
    )
}

const GP3: &str = "- apiVersion: storage.k8s.io/v1\n  kind: StorageClass\n  metadata: {name: gp3, annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}}\n  provisioner: ebs.csi.aws.com\n  volumeBindingMode: WaitForFirstConsumer\n";

/// The StatefulSet `db`: one 500m pod whose `data` claim comes from `volumeClaimTemplates`.
const DB: &str = "- apiVersion: apps/v1\n  kind: StatefulSet\n  metadata: {name: db, namespace: default}\n  spec:\n    replicas: 1\n    serviceName: db\n    selector: {matchLabels: {app: db}}\n    template:\n      metadata: {labels: {app: db}}\n      spec:\n        containers: [{name: c, image: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n    volumeClaimTemplates:\n    - metadata: {name: data}\n      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}\n";

/// Where `db-0` ran at each step, and the zone of each of those nodes.
#[derive(Default)]
struct DbLog {
    start: Option<Timestamp>,
    /// (seconds, node, zone of the node)
    placements: Vec<(i64, String, String)>,
    volume_zones: BTreeSet<String>,
    zone_b_targets: BTreeSet<usize>,
}

impl DbLog {
    fn record(&mut self, now: Timestamp, world: &World) {
        let start = *self.start.get_or_insert(now);
        let cluster = world.handle.lock();
        if let Some(node) = cluster.pod("default", "db-0").and_then(|p| pod_node(p).map(str::to_string)) {
            let zone =
                cluster.node(&node).and_then(|n| n.metadata.labels.as_ref()?.get(ZONE).cloned()).unwrap_or_default();
            if self.placements.last().is_none_or(|(_, last, _)| *last != node) {
                self.placements.push((secs(start, now), node, zone));
            }
        }
        let volume = cluster
            .persistent_volume_claim("default", "data-db-0")
            .and_then(|c| c.spec.as_ref()?.volume_name.clone())
            .and_then(|v| cluster.persistent_volume(&v).cloned());
        if let Some(pv) = volume {
            let terms = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref()).and_then(|a| a.required.as_ref());
            for term in terms.map(|t| t.node_selector_terms.clone()).unwrap_or_default() {
                for r in term.match_expressions.unwrap_or_default().into_iter().filter(|r| r.key == ZONE) {
                    self.volume_zones.extend(r.values.unwrap_or_default());
                }
            }
        }
        drop(cluster);
        self.zone_b_targets.insert(target(world, "zone-b"));
    }
}

#[test]
fn zonal_stateful_set_pod_stays_in_its_zone_when_scale_down_moves_it() {
    // zone-a-0 and zone-a-1 and a roomy zone-b node. db-0 goes first (name order) to the
    // emptiest node, zone-a-0, and its claim is provisioned in zone a; `steady` (pinned to zone a)
    // fills zone-a-1 to 62.5%. zone-a-0 is then underutilized: its pod may move to zone-a-1
    // only, never to the emptier zone-b node.
    let steady = "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: steady, namespace: default}\n  spec:\n    replicas: 1\n    selector: {matchLabels: {app: steady}}\n    template:\n      metadata: {labels: {app: steady}}\n      spec:\n        nodeSelector: {topology.kubernetes.io/zone: a}\n        containers: [{name: c, image: c, resources: {requests: {cpu: 2500m, memory: 1Gi}}}]\n";
    let yaml = format!(
        "duration: 40m\nflags: [--scale-down-unneeded-time=3m]\nnodeGroups:\n{}{}objects:\n{GP3}{DB}{steady}",
        zonal_group("zone-a", "a", 0, 2),
        zonal_group("zone-b", "b", 1, 1),
    );
    let mut log = DbLog::default();
    let mut drained: BTreeSet<String> = BTreeSet::new();
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            log.record(now, world);
            if let Some(report) = report {
                drained.extend(report.deletions_started.iter().cloned());
            }
        }),
    );
    assert!(log.placements.len() >= 2, "a scale-down moved db-0: {:?} (deleted {drained:?})", log.placements);
    for (t, node, zone) in &log.placements {
        assert_eq!(zone, "a", "db-0 on {node} at {t}s: {:?}", log.placements);
    }
    assert_eq!(log.volume_zones, BTreeSet::from(["a".to_string()]), "one zone-a volume all along");
    assert!(drained.contains(&log.placements[0].1), "its first node was drained: {drained:?}");
}

#[test]
fn zonal_volume_scales_up_the_zone_a_group_and_never_the_zone_b_one() {
    // db-0's claim is already bound to a zone-a volume; the only node is in zone b, with room.
    let volume = "- apiVersion: v1\n  kind: PersistentVolume\n  metadata: {name: pv-a}\n  spec:\n    capacity: {storage: 10Gi}\n    accessModes: [ReadWriteOnce]\n    storageClassName: gp3\n    csi: {driver: ebs.csi.aws.com, volumeHandle: vol-a}\n    claimRef: {namespace: default, name: data-db-0}\n    nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a]}]}]}}\n";
    let claim = "- apiVersion: v1\n  kind: PersistentVolumeClaim\n  metadata: {name: data-db-0, namespace: default}\n  spec: {storageClassName: gp3, accessModes: [ReadWriteOnce], volumeName: pv-a, resources: {requests: {storage: 10Gi}}}\n";
    let yaml = format!(
        "duration: 20m\nnodeGroups:\n{}{}objects:\n{GP3}{volume}{claim}{DB}",
        zonal_group("zone-b", "b", 1, 1),
        zonal_group("zone-a", "a", 0, 0),
    );
    let mut log = DbLog::default();
    let mut message = String::new();
    run(
        &yaml,
        &mut Watch(|now, world: &World, _report: Option<&LoopReport>| {
            log.record(now, world);
            if message.is_empty() {
                let cluster = world.handle.lock();
                let condition = cluster.pod("default", "db-0").and_then(|p| {
                    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled").cloned()
                });
                if let Some(c) = condition.filter(|c| c.status == "False") {
                    message = c.message.unwrap_or_default();
                }
            }
        }),
    );
    assert!(
        message.contains("node(s) had volume node affinity conflict"),
        "the scheduler's reason on the zone-b node: {message:?}"
    );
    assert_eq!(log.zone_b_targets, BTreeSet::from([1]), "zone-b never scaled");
    let (_, node, zone) = log.placements.first().unwrap_or_else(|| panic!("db-0 never ran"));
    assert_eq!(zone, "a", "db-0 on {node}");
    assert!(node.starts_with("zone-a-"), "{node}");
}
