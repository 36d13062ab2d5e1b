//! The load model: metric values for the pod autoscalers in a simulation, from load traces.
//!
//! ```yaml
//! loads:
//!   # cpu of a workload's pods: the load (e.g. requests/s) times costPerUnit, shared by its
//!   # ready pods
//!   - target: {kind: Deployment, namespace: shop, name: web}
//!     costPerUnit: 6m
//!     trace: [{at: 0h, value: 200}, {at: 9h, value: 1500}, {at: 12h, value: 2400}]
//!   # an external metric (for HPA External metrics and WPAs)
//!   - external: {metricName: queue.depth, namespace: batch, labels: {queue: jobs}}
//!     trace: [{at: 0h, value: 10}, {at: 14h, value: 400}]
//! ```
//! Between trace points the value moves linearly; before the first and after the last it holds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, MetricIdentifier};
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;
use simulator::PodInfo;
use simulator::labels::Selector;
use simulator::quantity::parse_milli;

use crate::hpa::{ContainerUsage, MetricsError, MetricsSource, PodMetricsInfo, PodResourceMetric, PodResourceMetrics};
use crate::memory::MemoryClusterHandle;
use crate::ports::ScaleTarget;
use cloudprovider::duration::parse_go_duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLoad {
    target: Option<RawTarget>,
    cost_per_unit: Option<String>,
    external: Option<RawExternal>,
    trace: Vec<RawPoint>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTarget {
    kind: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawExternal {
    metric_name: String,
    namespace: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPoint {
    at: String,
    value: f64,
}

fn default_namespace() -> String {
    "default".into()
}

#[derive(Clone, Debug)]
struct Trace(Vec<(Duration, f64)>);

impl Trace {
    fn at(&self, offset: Duration) -> f64 {
        let points = &self.0;
        match points.iter().position(|(t, _)| *t > offset) {
            None => points.last().map_or(0.0, |p| p.1),
            Some(0) => points[0].1,
            Some(i) => {
                let (t0, v0) = points[i - 1];
                let (t1, v1) = points[i];
                let share = (offset - t0).as_secs_f64() / (t1 - t0).as_secs_f64().max(1e-9);
                v0 + (v1 - v0) * share
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Load {
    Cpu { target: ScaleTarget, cost_milli_per_unit: f64, trace: Trace },
    External { metric: String, namespace: Option<String>, labels: BTreeMap<String, String>, trace: Trace },
}

/// Parses the scenario's `loads` entries; errors name the entry and field.
/// Reads one `loads` entry. An error is (the field inside the entry, what is wrong); the
/// scenario reader adds the file, the line and `loads[i]`.
pub fn parse_load(v: &Value) -> Result<LoadSpec, (String, String)> {
    let raw: RawLoad =
        serde_path_to_error::deserialize(v.clone()).map_err(|e| (e.path().to_string(), e.inner().to_string()))?;
    let mut points = Vec::new();
    for (j, p) in raw.trace.iter().enumerate() {
        let at = parse_go_duration(&p.at).map_err(|m| (format!("trace[{j}].at"), m))?;
        if !p.value.is_finite() || p.value < 0.0 {
            return Err((format!("trace[{j}].value"), "must be a non-negative number".into()));
        }
        points.push((at, p.value));
    }
    if points.is_empty() {
        return Err(("trace".into(), "needs at least one point".into()));
    }
    points.sort_by_key(|p| p.0);
    let trace = Trace(points);
    let load = match (raw.target, raw.external) {
        (Some(t), None) => {
            let cost = raw.cost_per_unit.as_deref().unwrap_or("1m");
            let cost = parse_milli(cost).map_err(|e| ("costPerUnit".to_string(), e.to_string()))?;
            if cost <= 0 {
                return Err(("costPerUnit".into(), "must be positive".into()));
            }
            Load::Cpu {
                target: ScaleTarget {
                    api_version: "apps/v1".into(),
                    kind: t.kind,
                    namespace: t.namespace,
                    name: t.name,
                },
                cost_milli_per_unit: cost as f64,
                trace,
            }
        }
        (None, Some(e)) => Load::External { metric: e.metric_name, namespace: e.namespace, labels: e.labels, trace },
        _ => return Err((String::new(), "needs exactly one of target or external".into())),
    };
    Ok(LoadSpec(load))
}

/// One parsed `loads` entry.
#[derive(Clone, Debug)]
pub struct LoadSpec(Load);

/// A `MetricsSource` driven by load traces over the simulated time and the cluster's pods.
pub struct LoadModel {
    loads: Vec<LoadSpec>,
    start: Timestamp,
    cluster: Arc<MemoryClusterHandle>,
}

fn ready(pod: &PodInfo) -> bool {
    pod.phase() == "Running" && pod.is_ready() && !pod.terminating
}

impl LoadModel {
    pub fn new(loads: Vec<LoadSpec>, start: Timestamp, cluster: Arc<MemoryClusterHandle>) -> Self {
        LoadModel { loads, start, cluster }
    }

    fn offset(&self, now: Timestamp) -> Duration {
        now.duration_since(self.start).unsigned_abs()
    }
}

impl MetricsSource for LoadModel {
    fn pod_resource_metrics(
        &self,
        namespace: &str,
        selector: &Selector,
        resource: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError> {
        // The selected pods straight from the cluster's label index (the pods
        // `PodsByNamespace` would select from a view, in the same order), and the load's
        // target looked up by key: a whole view per call would copy every pod of the cluster.
        let mut cluster = self.cluster.lock();
        let now = cluster.now();
        let selected = cluster.selected_pods(namespace, selector);
        // The load whose target's pods these are.
        let load = self.loads.iter().find_map(|l| match &l.0 {
            Load::Cpu { target, cost_milli_per_unit, trace } if target.namespace == namespace => {
                let sel = cluster.scale_target_selector(target)?;
                selected.iter().any(|p| sel.matches(p.labels())).then_some((*cost_milli_per_unit, trace))
            }
            _ => None,
        });
        drop(cluster);
        let ready_pods: Vec<&Arc<PodInfo>> = selected.iter().filter(|p| ready(p)).collect();
        let mut out = PodResourceMetrics::with_capacity_and_hasher(ready_pods.len(), Default::default());
        for p in &ready_pods {
            let value = match (resource, load) {
                ("cpu", Some((cost, trace))) => {
                    (trace.at(self.offset(now)) * cost / ready_pods.len().max(1) as f64).round() as i64
                }
                ("cpu", None) => p.requests().cpu_millis / 2,
                // Memory stays at the pods' requests (milli-bytes).
                (_, _) => p.requests().get(resource).saturating_mul(1000),
            };
            let container = p.spec().containers.first().map(|c| c.name.clone()).unwrap_or_default();
            out.insert(
                p.name().to_string(),
                PodResourceMetric {
                    containers: vec![ContainerUsage { name: container, value: Some(value) }],
                    timestamp: now,
                    window: Duration::from_secs(30),
                },
            );
        }
        if out.is_empty() {
            return Err(MetricsError::new("no metrics returned from resource metrics API"));
        }
        Ok(Arc::new(out))
    }

    fn pods_metric(
        &self,
        _: &str,
        metric: &MetricIdentifier,
        _: &Selector,
    ) -> Result<Arc<PodMetricsInfo>, MetricsError> {
        Err(MetricsError::new(format!("the simulation's load model has no pods metric {}", metric.name)))
    }

    fn object_metric(
        &self,
        _: &str,
        metric: &MetricIdentifier,
        _: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError> {
        Err(MetricsError::new(format!("the simulation's load model has no object metric {}", metric.name)))
    }

    fn external_metric(&self, namespace: &str, metric: &MetricIdentifier) -> Result<Vec<i64>, MetricsError> {
        let now = self.cluster.lock().now();
        let selector =
            metric.selector.as_ref().map_or_else(Selector::everything, |s| Selector::from_label_selector(Some(s)));
        let values: Vec<i64> = self
            .loads
            .iter()
            .filter_map(|l| match &l.0 {
                Load::External { metric: name, namespace: ns, labels, trace }
                    if *name == metric.name
                        && ns.as_deref().is_none_or(|n| n == namespace)
                        && selector.matches(Some(labels)) =>
                {
                    Some((trace.at(self.offset(now)) * 1000.0).round() as i64)
                }
                _ => None,
            })
            .collect();
        if values.is_empty() {
            return Err(MetricsError::new(format!(
                "no external metric {} in the simulation's load model",
                metric.name
            )));
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_interpolate_linearly_and_hold_at_the_ends() {
        let t = Trace(vec![(Duration::from_secs(3600), 100.0), (Duration::from_secs(7200), 300.0)]);
        assert_eq!(t.at(Duration::ZERO), 100.0);
        assert_eq!(t.at(Duration::from_secs(5400)), 200.0);
        assert_eq!(t.at(Duration::from_secs(9000)), 300.0);
    }

    #[test]
    fn load_entries_need_a_target_or_an_external_metric() {
        let err = parse_load(&serde_json::json!({"trace": [{"at": "0s", "value": 1}]})).unwrap_err();
        assert_eq!(err.0, "");
        let err = parse_load(
            &serde_json::json!({"target": {"kind": "Deployment", "name": "w"}, "trace": [{"at": "soon", "value": 1}]}),
        )
        .unwrap_err();
        assert_eq!(err.0, "trace[0].at");
    }
}
