//! What a simulation measures: node-hours and cost per group, pending pods and how long they
//! waited (in all and per workload), how long until capacity was requested for them, packing
//! efficiency against the lower bound ⌈Σ requests / node allocatable⌉, what each pod autoscaler
//! did against its load, and the nodes kept although underused (a PDB, the scale-down-disabled
//! annotation), so the report can show what each flag changes.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap;
use serde::Serialize;
use simulator::resources::{CPU, MEMORY, NVIDIA_GPU, Resources};

use crate::memory::{MemoryCluster, ObjectKey};

/// One point of the charts.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Seconds since the start.
    pub at: f64,
    pub nodes: BTreeMap<String, usize>,
    /// The most pods pending at once since the previous sample (a short wait between two
    /// samples still shows).
    pub pending_pods: usize,
    pub cost: f64,
    /// Cost so far per node group.
    pub cost_by_group: BTreeMap<String, f64>,
    pub packing_efficiency: Option<f64>,
}

/// One reading of a pod autoscaler.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAutoscalerPoint {
    pub at: f64,
    pub replicas: i32,
    pub desired: i32,
    /// The metric's current value, in the series' unit.
    pub value: Option<f64>,
}

/// A pod autoscaler over the run: its replicas against the load it measures and its target.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAutoscalerSeries {
    /// `namespace/name`.
    pub name: String,
    pub kind: String,
    /// `Kind/name` of the workload it scales.
    pub target: String,
    /// `namespace/name` of that workload (as in [`WorkloadPending`]).
    pub workload: String,
    /// What the first metric measures, e.g. `cpu use (% of requests)` or `queue.depth`.
    pub metric: String,
    /// The metric's targets: `target` for an HPA, the watermarks for a WPA.
    pub targets: Vec<(String, f64)>,
    pub points: Vec<PodAutoscalerPoint>,
}

/// Pods of one workload that waited.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPending {
    /// `namespace/name` of the Deployment, StatefulSet, Job, … (the pod's own name otherwise).
    pub workload: String,
    pub pods: usize,
    pub seconds: f64,
}

/// Why scale-down kept an underused node: the two protections the report explains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason")]
pub enum KeptBy {
    /// The node carries `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`.
    #[serde(rename = "ScaleDownDisabledAnnotation")]
    DisabledAnnotation,
    /// Evicting `blocking_pod` would leave its PodDisruptionBudget with too few pods.
    #[serde(rename = "NotEnoughPdb", rename_all = "camelCase")]
    PodDisruptionBudget { blocking_pod: String },
}

impl KeptBy {
    /// The reason in words, for the summary, the report and the activity table.
    pub fn explain(&self) -> String {
        match self {
            KeptBy::DisabledAnnotation => {
                "it carries the cluster-autoscaler.kubernetes.io/scale-down-disabled=true annotation".to_string()
            }
            KeptBy::PodDisruptionBudget { blocking_pod } => {
                format!("evicting pod {blocking_pod} would break its PodDisruptionBudget (NotEnoughPdb)")
            }
        }
    }
}

/// A node that scale-down would have removed but something kept.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptNode {
    pub node: String,
    pub node_group: String,
    /// Serialized as upstream's reason name (`reason`) and the blocking pod (`blockingPod`).
    #[serde(flatten)]
    pub kept_by: KeptBy,
    /// Hours it ran kept, under the scale-down utilization threshold.
    pub hours: f64,
    pub cost: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Distribution {
    pub count: usize,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
    pub total: f64,
}

impl Distribution {
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Distribution::default();
        }
        values.sort_by(f64::total_cmp);
        let pick =
            |q: f64| values[(((values.len() as f64) * q).ceil() as usize).saturating_sub(1).min(values.len() - 1)];
        Distribution {
            count: values.len(),
            p50: pick(0.5),
            p95: pick(0.95),
            max: values[values.len() - 1],
            total: values.iter().sum(),
        }
    }
}

pub struct GroupInfo {
    pub id: String,
    /// The node shape, e.g. `4 CPU, 16 GiB` (for the summary).
    pub shape: String,
    pub price_per_hour: f64,
    /// The template's allocatable (for the packing lower bound).
    pub allocatable: Resources,
}

/// The workload a pod belongs to: its controller, with a Deployment's ReplicaSet named after
/// the Deployment.
pub fn workload_of(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
    let name = match owner {
        Some(o) if o.kind == "ReplicaSet" => {
            let hash = pod.metadata.labels.as_ref().and_then(|l| l.get("pod-template-hash"));
            match hash.and_then(|h| o.name.strip_suffix(&format!("-{h}"))) {
                Some(deployment) => deployment.to_string(),
                None => o.name.clone(),
            }
        }
        Some(o) => o.name.clone(),
        None => pod.metadata.name.clone().unwrap_or_default(),
    };
    format!("{namespace}/{name}")
}

#[derive(Default)]
struct GroupTotals {
    node_seconds: f64,
    cost: f64,
    peak: usize,
    nodes_added: usize,
    nodes_removed: usize,
}

pub struct Metrics {
    start: Timestamp,
    last: Timestamp,
    groups: Vec<GroupInfo>,
    totals: BTreeMap<String, GroupTotals>,
    current_nodes: BTreeMap<String, usize>,
    /// Pending pods: since when, their workload, and the last step that saw them pending.
    pending_since: FxHashMap<ObjectKey, PendingPod>,
    /// Steps taken so far (what `PendingPod::seen` counts).
    steps: u64,
    pending_durations: Vec<f64>,
    /// Workload → pods that waited, and their waits added up exactly in nanoseconds: a sum of
    /// floating-point seconds would depend on the order pods stop pending in.
    pending_by_workload: BTreeMap<String, (usize, i128)>,
    pending_peak: usize,
    /// `MemoryCluster::unschedulable_changes` at the last pass over the pending pods.
    pending_changes_seen: Option<u64>,
    pod_autoscalers: Vec<PodAutoscalerSeries>,
    kept: BTreeMap<String, KeptNode>,
    last_loop: Option<Timestamp>,
    requested_after: Vec<f64>,
    requested: HashMap<String, ()>,
    pub samples: Vec<Sample>,
    next_sample: Timestamp,
    sample_every: Duration,
    efficiency_sum: f64,
    efficiency_samples: usize,
}

/// A pod the scheduler left unschedulable, as the metrics track it.
struct PendingPod {
    since: Timestamp,
    workload: String,
    /// The last step (`Metrics::steps`) that saw it pending.
    seen: u64,
}

/// Nanoseconds as seconds, the way `SignedDuration::as_secs_f64` converts (so a single wait
/// reads as `seconds` gives it).
fn nanos_as_seconds(nanos: i128) -> f64 {
    (nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9
}

fn seconds(a: Timestamp, b: Timestamp) -> f64 {
    b.duration_since(a).as_secs_f64().max(0.0)
}

impl Metrics {
    pub fn new(start: Timestamp, groups: Vec<GroupInfo>, sample_every: Duration) -> Self {
        let totals = groups.iter().map(|g| (g.id.clone(), GroupTotals::default())).collect();
        Metrics {
            start,
            last: start,
            groups,
            totals,
            current_nodes: BTreeMap::new(),
            pending_since: FxHashMap::default(),
            steps: 0,
            pending_durations: Vec::new(),
            pending_by_workload: BTreeMap::new(),
            pending_peak: 0,
            pending_changes_seen: None,
            pod_autoscalers: Vec::new(),
            kept: BTreeMap::new(),
            last_loop: None,
            requested_after: Vec::new(),
            requested: HashMap::new(),
            samples: Vec::new(),
            next_sample: start,
            sample_every,
            efficiency_sum: 0.0,
            efficiency_samples: 0,
        }
    }

    /// Accounts the time since the previous step with the node counts then in force, then takes
    /// the new counts (cloud instances per group: what is billed).
    pub fn step(&mut self, now: Timestamp, instances: &BTreeMap<String, usize>, cluster: &MemoryCluster) {
        let dt = seconds(self.last, now);
        for g in &self.groups {
            let n = self.current_nodes.get(&g.id).copied().unwrap_or(0);
            let t = self.totals.get_mut(&g.id).expect("known group");
            t.node_seconds += n as f64 * dt;
            t.cost += n as f64 * dt / 3600.0 * g.price_per_hour;
        }
        for (id, n) in instances {
            let t = self.totals.get_mut(id).expect("known group");
            t.peak = t.peak.max(*n);
        }
        self.current_nodes = instances.clone();
        self.last = now;
        self.track_pending(now, cluster);
        if now >= self.next_sample {
            let efficiency = self.packing_efficiency(cluster);
            if let Some(e) = efficiency {
                self.efficiency_sum += e;
                self.efficiency_samples += 1;
            }
            let pending = std::mem::take(&mut self.pending_peak).max(self.pending_since.len());
            self.samples.push(Sample {
                at: seconds(self.start, now),
                nodes: instances.clone(),
                pending_pods: pending,
                cost: self.totals.values().map(|t| t.cost).sum(),
                cost_by_group: self.totals.iter().map(|(g, t)| (g.clone(), t.cost)).collect(),
                packing_efficiency: efficiency,
            });
            self.next_sample = now + k8s_openapi::jiff::SignedDuration::try_from(self.sample_every).unwrap_or_default();
        }
    }

    /// Runs at every step, over every pending pod: it allocates only for a pod seen pending
    /// for the first time (its key and workload), and looks for the pods no longer pending only
    /// when fewer were seen than are tracked.
    fn track_pending(&mut self, now: Timestamp, cluster: &MemoryCluster) {
        self.steps += 1;
        // The same pods pending as at the last pass: every one tracked is still pending, none
        // is new (thousands wait through many steps while their nodes start).
        let changes = cluster.unschedulable_changes();
        if self.pending_changes_seen.replace(changes) == Some(changes) {
            return;
        }
        let step = self.steps;
        let mut seen = 0;
        for (key, pod) in cluster.unschedulable_pods_now() {
            seen += 1;
            if let Some(p) = self.pending_since.get_mut(key) {
                p.seen = step;
                continue;
            }
            let since = pod.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
            self.pending_since.insert(key.clone(), PendingPod { since, workload: workload_of(pod), seen: step });
        }
        self.pending_peak = self.pending_peak.max(self.pending_since.len());
        if seen == self.pending_since.len() {
            return;
        }
        let done: Vec<PendingPod> = self.pending_since.extract_if(|_, p| p.seen != step).map(|(_, p)| p).collect();
        for p in done {
            self.waited(p.since, now, p.workload);
        }
    }

    fn waited(&mut self, since: Timestamp, now: Timestamp, workload: String) {
        self.pending_durations.push(seconds(since, now));
        let entry = self.pending_by_workload.entry(workload).or_default();
        entry.0 += 1;
        entry.1 = entry.1.saturating_add(now.duration_since(since).as_nanos().max(0));
    }

    /// A pod autoscaler's reading at a sync. `describe` gives the series' description the first
    /// time the autoscaler is seen. At most one reading a minute is kept, plus every change of
    /// replicas.
    pub fn pod_autoscaler(
        &mut self,
        now: Timestamp,
        name: &str,
        describe: impl FnOnce() -> PodAutoscalerSeries,
        point: (i32, i32, Option<f64>),
    ) {
        let at = seconds(self.start, now);
        let index = match self.pod_autoscalers.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.pod_autoscalers.push(describe());
                self.pod_autoscalers.len() - 1
            }
        };
        let points = &mut self.pod_autoscalers[index].points;
        let (replicas, desired, value) = point;
        if let Some(last) = points.last()
            && at - last.at < 60.0
            && last.replicas == replicas
            && last.desired == desired
        {
            return;
        }
        points.push(PodAutoscalerPoint { at, replicas, desired, value });
    }

    /// The nodes scale-down kept at this loop although they were underused: each is charged the
    /// time since the previous loop.
    pub fn kept_nodes(&mut self, now: Timestamp, kept: Vec<(String, String, KeptBy)>) {
        let dt = self.last_loop.map_or(0.0, |last| seconds(last, now));
        self.last_loop = Some(now);
        for (node, group, kept_by) in kept {
            let price = self.groups.iter().find(|g| g.id == group).map_or(0.0, |g| g.price_per_hour);
            let entry = self.kept.entry(node.clone()).or_insert_with(|| KeptNode {
                node,
                node_group: group,
                kept_by: kept_by.clone(),
                hours: 0.0,
                cost: 0.0,
            });
            entry.kept_by = kept_by;
            entry.hours += dt / 3600.0;
            entry.cost += dt / 3600.0 * price;
        }
    }

    /// A pod's scale-up was requested now (a TriggeredScaleUp event).
    pub fn capacity_requested(&mut self, pod: &str, now: Timestamp) {
        if self.requested.insert(pod.to_string(), ()).is_some() {
            return;
        }
        let key = pod.split_once('/').map(|(namespace, name)| ObjectKey::new(namespace, name));
        if let Some(p) = key.and_then(|key| self.pending_since.get(&key)) {
            self.requested_after.push(seconds(p.since, now));
        }
    }

    pub fn nodes_added(&mut self, group: &str, n: usize) {
        if let Some(t) = self.totals.get_mut(group) {
            t.nodes_added += n;
        }
    }

    pub fn node_removed(&mut self, group: &str) {
        if let Some(t) = self.totals.get_mut(group) {
            t.nodes_removed += 1;
        }
    }

    /// Σ over groups of the lower bound, over the nodes there are; `None` without nodes.
    fn packing_efficiency(&self, cluster: &MemoryCluster) -> Option<f64> {
        let prefixes: Vec<(String, &GroupInfo)> =
            self.groups.iter().map(|g| (cloudprovider_memory::provider_id_prefix(&g.id), g)).collect();
        let mut requests: BTreeMap<&str, Resources> = BTreeMap::new();
        let mut node_group: FxHashMap<&str, &str> = FxHashMap::default();
        let mut nodes = 0usize;
        for node in cluster.nodes() {
            let id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or("");
            if let Some((_, g)) = prefixes.iter().find(|(prefix, _)| id.starts_with(prefix.as_str())) {
                node_group.insert(node.metadata.name.as_deref().unwrap_or(""), g.id.as_str());
                nodes += 1;
            }
        }
        if nodes == 0 {
            return None;
        }
        for (node, requested) in cluster.requested_by_node() {
            let Some(group) = node_group.get(node) else { continue };
            requests.entry(group).or_default().add(requested);
        }
        let mut bound = 0i64;
        for g in &self.groups {
            let Some(r) = requests.get(g.id.as_str()) else { continue };
            let ceil = |name: &str| {
                let alloc = g.allocatable.get(name);
                if alloc > 0 { (r.get(name) + alloc - 1) / alloc } else { 0 }
            };
            bound += ceil(CPU).max(ceil(MEMORY)).max(ceil(NVIDIA_GPU));
        }
        Some((bound as f64 / nodes as f64).min(1.0))
    }

    pub fn finish(mut self, end: Timestamp, cluster: &MemoryCluster) -> MetricsSummary {
        let instances = self.current_nodes.clone();
        self.step(end, &instances, cluster);
        let still_pending: Vec<(Timestamp, String)> =
            self.pending_since.drain().map(|(_, p)| (p.since, p.workload)).collect();
        for (since, workload) in still_pending {
            self.waited(since, end, workload);
        }
        let mut pending_by_workload: Vec<WorkloadPending> = self
            .pending_by_workload
            .iter()
            .map(|(w, (pods, nanos))| WorkloadPending {
                workload: w.clone(),
                pods: *pods,
                seconds: nanos_as_seconds(*nanos),
            })
            .collect();
        pending_by_workload.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then_with(|| a.workload.cmp(&b.workload)));
        let mut kept_nodes: Vec<KeptNode> = self.kept.values().filter(|k| k.hours > 0.0).cloned().collect();
        kept_nodes.sort_by(|a, b| b.hours.total_cmp(&a.hours).then_with(|| a.node.cmp(&b.node)));
        let groups = self
            .groups
            .iter()
            .map(|g| {
                let t = &self.totals[&g.id];
                GroupSummary {
                    id: g.id.clone(),
                    shape: g.shape.clone(),
                    price_per_hour: g.price_per_hour,
                    node_hours: t.node_seconds / 3600.0,
                    cost: t.cost,
                    peak_nodes: t.peak,
                    final_nodes: instances.get(&g.id).copied().unwrap_or(0),
                    nodes_added: t.nodes_added,
                    nodes_removed: t.nodes_removed,
                }
            })
            .collect::<Vec<_>>();
        MetricsSummary {
            total_cost: groups.iter().map(|g| g.cost).sum(),
            total_node_hours: groups.iter().map(|g| g.node_hours).sum(),
            groups,
            pending_seconds: Distribution::of(self.pending_durations),
            pending_by_workload,
            kept_nodes,
            pod_autoscalers: self.pod_autoscalers,
            time_to_capacity_request: Distribution::of(self.requested_after),
            packing_efficiency: if self.efficiency_samples > 0 {
                self.efficiency_sum / self.efficiency_samples as f64
            } else {
                0.0
            },
            samples: self.samples,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSummary {
    pub id: String,
    pub shape: String,
    pub price_per_hour: f64,
    pub node_hours: f64,
    pub cost: f64,
    pub peak_nodes: usize,
    pub final_nodes: usize,
    pub nodes_added: usize,
    pub nodes_removed: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsSummary {
    pub groups: Vec<GroupSummary>,
    pub total_cost: f64,
    pub total_node_hours: f64,
    /// Per pod that had to wait: seconds from creation until it was bound.
    pub pending_seconds: Distribution,
    /// The same, per workload, most waiting first.
    pub pending_by_workload: Vec<WorkloadPending>,
    /// Nodes kept although underused, longest first.
    pub kept_nodes: Vec<KeptNode>,
    /// What each pod autoscaler did (for the report's charts).
    #[serde(skip)]
    pub pod_autoscalers: Vec<PodAutoscalerSeries>,
    /// Per pod that triggered a scale-up: seconds from creation until capacity was requested.
    pub time_to_capacity_request: Distribution,
    /// Average over samples of lower bound / nodes (1.0 is perfect packing).
    pub packing_efficiency: f64,
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_quantiles() {
        let d = Distribution::of((1..=100).map(f64::from).collect());
        assert_eq!((d.count, d.p50, d.p95, d.max), (100, 50.0, 95.0, 100.0));
        assert_eq!(Distribution::of(vec![]).count, 0);
    }

    #[test]
    fn a_workloads_pending_seconds_do_not_depend_on_the_order_its_pods_stop_pending() {
        // Waits whose float sum changes with the order of addition.
        let start = Timestamp::from_second(1_800_000_000).unwrap();
        let waits_ms = [100_i64, 200, 300, 4_350_003, 7, 1_000_001, 13, 2_900];
        let total = |order: &mut dyn Iterator<Item = i64>| {
            let mut m = Metrics::new(start, Vec::new(), Duration::from_secs(60));
            for ms in order {
                m.waited(start, start + k8s_openapi::jiff::SignedDuration::from_millis(ms), "default/web".into());
            }
            nanos_as_seconds(m.pending_by_workload["default/web"].1)
        };
        let forward = total(&mut waits_ms.iter().copied());
        let backward = total(&mut waits_ms.iter().rev().copied());
        assert_eq!(forward.to_bits(), backward.to_bits());
        assert_eq!(forward, 5_353.524);
    }
}
