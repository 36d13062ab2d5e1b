//! What a simulation measures: node-hours and cost per group, pending pods and how long they
//! waited, how long until capacity was requested for them, and packing efficiency against the
//! lower bound ⌈Σ requests / node allocatable⌉.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use simulator::resources::{CPU, MEMORY, NVIDIA_GPU, Resources, pod_requests};

use crate::core::ClusterView;

/// One point of the charts.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Seconds since the start.
    pub at: f64,
    pub nodes: BTreeMap<String, usize>,
    pub pending_pods: usize,
    pub cost: f64,
    pub packing_efficiency: Option<f64>,
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
    pub price_per_hour: f64,
    /// The template's allocatable (for the packing lower bound).
    pub allocatable: Resources,
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
    pending_since: HashMap<String, Timestamp>,
    pending_durations: Vec<f64>,
    requested_after: Vec<f64>,
    requested: HashMap<String, ()>,
    pub samples: Vec<Sample>,
    next_sample: Timestamp,
    sample_every: Duration,
    efficiency_sum: f64,
    efficiency_samples: usize,
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
            pending_since: HashMap::new(),
            pending_durations: Vec::new(),
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
    pub fn step(&mut self, now: Timestamp, instances: &BTreeMap<String, usize>, view: &ClusterView) {
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
        self.track_pending(now, view);
        if now >= self.next_sample {
            let efficiency = self.packing_efficiency(view);
            if let Some(e) = efficiency {
                self.efficiency_sum += e;
                self.efficiency_samples += 1;
            }
            let pending = self.pending_since.len();
            self.samples.push(Sample {
                at: seconds(self.start, now),
                nodes: instances.clone(),
                pending_pods: pending,
                cost: self.totals.values().map(|t| t.cost).sum(),
                packing_efficiency: efficiency,
            });
            self.next_sample = now + k8s_openapi::jiff::SignedDuration::try_from(self.sample_every).unwrap_or_default();
        }
    }

    fn track_pending(&mut self, now: Timestamp, view: &ClusterView) {
        let mut seen: HashMap<String, ()> = HashMap::new();
        for pod in &view.pods {
            if !crate::core::decide::is_unschedulable(pod) {
                continue;
            }
            let key = format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or("default"),
                pod.metadata.name.as_deref().unwrap_or("")
            );
            let created = pod.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
            self.pending_since.entry(key.clone()).or_insert(created);
            seen.insert(key, ());
        }
        let done: Vec<String> = self.pending_since.keys().filter(|k| !seen.contains_key(*k)).cloned().collect();
        for key in done {
            let since = self.pending_since.remove(&key).expect("listed");
            self.pending_durations.push(seconds(since, now));
        }
    }

    /// A pod's scale-up was requested now (a TriggeredScaleUp event).
    pub fn capacity_requested(&mut self, pod: &str, now: Timestamp) {
        if self.requested.insert(pod.to_string(), ()).is_some() {
            return;
        }
        if let Some(since) = self.pending_since.get(pod) {
            self.requested_after.push(seconds(*since, now));
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
    fn packing_efficiency(&self, view: &ClusterView) -> Option<f64> {
        let prefix = |g: &str| cloudprovider_memory::provider_id_prefix(g);
        let mut requests: BTreeMap<&str, Resources> = BTreeMap::new();
        let mut node_group: HashMap<&str, &str> = HashMap::new();
        let mut nodes = 0usize;
        for node in &view.nodes {
            let id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or("");
            if let Some(g) = self.groups.iter().find(|g| id.starts_with(&prefix(&g.id))) {
                node_group.insert(node.metadata.name.as_deref().unwrap_or(""), g.id.as_str());
                nodes += 1;
            }
        }
        if nodes == 0 {
            return None;
        }
        for pod in &view.pods {
            let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else { continue };
            let Some(group) = node_group.get(node) else { continue };
            if matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")) {
                continue;
            }
            requests.entry(group).or_default().add(&pod_requests(pod));
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

    pub fn finish(mut self, end: Timestamp, view: &ClusterView) -> MetricsSummary {
        let instances = self.current_nodes.clone();
        self.step(end, &instances, view);
        for (_, since) in self.pending_since.drain() {
            self.pending_durations.push(seconds(since, end));
        }
        let groups = self
            .groups
            .iter()
            .map(|g| {
                let t = &self.totals[&g.id];
                GroupSummary {
                    id: g.id.clone(),
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
}
