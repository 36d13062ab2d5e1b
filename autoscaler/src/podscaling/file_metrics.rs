//! Metric values from files, for `plan`: exactly what `kubectl get --raw` returns from the
//! metrics APIs — `metrics.k8s.io` `PodMetricsList`, `custom.metrics.k8s.io` `MetricValueList`
//! and `external.metrics.k8s.io` `ExternalMetricValueList`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, MetricIdentifier};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use simulator::PodInfo;
use simulator::labels::Selector;
use simulator::quantity::parse_milli;

use crate::hpa::{
    ContainerUsage, MetricsError, MetricsSource, PodMetric, PodMetricsInfo, PodResourceMetric, PodResourceMetrics,
};
use cloudprovider::duration::parse_go_duration;

/// One `PodMetrics` item: each container's usage by resource, in milli-units. Held for every
/// pod of the namespaces the pod autoscalers read (150,000 at 5,000 nodes), so kept small:
/// boxed slices, the common resource names without a string of their own.
#[derive(Clone, Debug)]
struct PodUsage {
    containers: Box<[ContainerUsageLine]>,
    timestamp: Timestamp,
    window: Duration,
}

/// A container's name and its usage by resource.
type ContainerUsageLine = (Box<str>, Box<[(ResourceName, i64)]>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum ResourceName {
    Cpu,
    Memory,
    Other(Box<str>),
}

impl ResourceName {
    fn new(name: &str) -> ResourceName {
        match name {
            "cpu" => ResourceName::Cpu,
            "memory" => ResourceName::Memory,
            other => ResourceName::Other(other.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            ResourceName::Cpu => "cpu",
            ResourceName::Memory => "memory",
            ResourceName::Other(name) => name,
        }
    }
}

#[derive(Clone, Debug)]
struct CustomValue {
    kind: String,
    namespace: String,
    name: String,
    metric: String,
    value: i64,
    timestamp: Timestamp,
    window: Duration,
}

#[derive(Clone, Debug)]
struct ExternalValue {
    /// The list's `metadata.namespace`; `None` applies to every namespace.
    namespace: Option<String>,
    metric: String,
    labels: std::collections::BTreeMap<String, String>,
    value: i64,
}

/// Metric lists read from files or dumps.
#[derive(Clone, Debug, Default)]
pub struct MetricLists {
    /// Namespace → pod name → usage.
    pod_usage: HashMap<String, HashMap<Box<str>, PodUsage>>,
    custom: Vec<CustomValue>,
    external: Vec<ExternalValue>,
}

fn time(v: &Value) -> Timestamp {
    v.get("timestamp").and_then(Value::as_str).and_then(|t| t.parse().ok()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A custom metric value's name: `metricName` in `custom.metrics.k8s.io/v1beta1`,
/// `metric.name` in `v1beta2`.
fn custom_metric_name(item: &Value) -> &str {
    item.get("metricName").or_else(|| item.pointer("/metric/name")).and_then(Value::as_str).unwrap_or("")
}

fn window(v: &Value) -> Duration {
    v.get("window")
        .and_then(Value::as_str)
        .and_then(|w| parse_go_duration(w).ok())
        .or_else(|| v.get("windowSeconds").and_then(Value::as_u64).map(Duration::from_secs))
        .unwrap_or(Duration::from_secs(60))
}

fn milli(v: Option<&Value>, what: &str) -> Result<i64, String> {
    let s = match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format!("{what}: missing value")),
    };
    parse_milli(&s).map_err(|e| format!("{what}: {e}"))
}

impl MetricLists {
    pub fn is_empty(&self) -> bool {
        self.pod_usage.is_empty() && self.custom.is_empty() && self.external.is_empty()
    }

    /// Whether a document of this kind is a metrics API answer (read by [`Self::add`]).
    pub fn is_metrics_kind(kind: &str) -> bool {
        matches!(kind, "PodMetricsList" | "PodMetrics" | "MetricValueList" | "ExternalMetricValueList")
    }

    /// Adds a metrics list document; returns false for documents of other kinds.
    pub fn add(&mut self, doc: &Value) -> Result<bool, String> {
        self.add_where(doc, &|_, _| true)
    }

    /// As `add`, keeping only the pod usage of the pods `keep` names (namespace, name).
    pub fn add_where(&mut self, doc: &Value, keep: &dyn Fn(&str, &str) -> bool) -> Result<bool, String> {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        if !Self::is_metrics_kind(kind) {
            return Ok(false);
        }
        let items = doc.get("items").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        match kind {
            "PodMetricsList" | "PodMetrics" => {
                let items = if kind == "PodMetrics" { std::slice::from_ref(doc) } else { items };
                for (i, item) in items.iter().enumerate() {
                    let meta = item.get("metadata");
                    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
                    let namespace = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("default");
                    if !keep(namespace, name) {
                        continue;
                    }
                    let mut containers = Vec::new();
                    for c in item.get("containers").and_then(Value::as_array).into_iter().flatten() {
                        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
                        let mut usage: Vec<(ResourceName, i64)> = Vec::new();
                        for (resource, q) in c.get("usage").and_then(Value::as_object).into_iter().flatten() {
                            let value = milli(Some(q), &format!("items[{i}].containers.usage.{resource}"))?;
                            let name = ResourceName::new(resource);
                            // A resource named twice counts once, the last value, as a map keeps it.
                            usage.retain(|(r, _)| *r != name);
                            usage.push((name, value));
                        }
                        containers.push((cname.into(), usage.into_boxed_slice()));
                    }
                    let usage = PodUsage {
                        containers: containers.into_boxed_slice(),
                        timestamp: time(item),
                        window: window(item),
                    };
                    self.pod_usage.entry(namespace.to_string()).or_default().insert(name.into(), usage);
                }
                Ok(true)
            }
            "MetricValueList" => {
                for (i, item) in items.iter().enumerate() {
                    let d = item.get("describedObject");
                    let field = |k: &str| d.and_then(|d| d.get(k)).and_then(Value::as_str).unwrap_or("").to_string();
                    self.custom.push(CustomValue {
                        kind: field("kind"),
                        namespace: if field("namespace").is_empty() { "default".into() } else { field("namespace") },
                        name: field("name"),
                        metric: custom_metric_name(item).to_string(),
                        value: milli(item.get("value"), &format!("items[{i}].value"))?,
                        timestamp: time(item),
                        window: window(item),
                    });
                }
                Ok(true)
            }
            "ExternalMetricValueList" => {
                let namespace = doc.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_string);
                for (i, item) in items.iter().enumerate() {
                    let labels = item
                        .get("metricLabels")
                        .and_then(Value::as_object)
                        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
                        .unwrap_or_default();
                    self.external.push(ExternalValue {
                        namespace: namespace.clone(),
                        metric: item.get("metricName").and_then(Value::as_str).unwrap_or("").to_string(),
                        labels,
                        value: milli(item.get("value"), &format!("items[{i}].value"))?,
                    });
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// A `MetricsSource` answering from metric lists, selecting pods through the view's pods.
pub struct FileMetrics<'a> {
    pub lists: &'a MetricLists,
    pub pods: &'a super::PodsByNamespace,
}

impl FileMetrics<'_> {
    fn selected<'p>(&'p self, namespace: &'p str, selector: &'p Selector) -> impl Iterator<Item = &'p PodInfo> + 'p {
        self.pods.selected(namespace, selector).map(|p| &**p)
    }
}

impl MetricsSource for FileMetrics<'_> {
    fn pod_resource_metrics(
        &self,
        namespace: &str,
        selector: &Selector,
        resource: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError> {
        let mut out = PodResourceMetrics::default();
        for pod in self.selected(namespace, selector) {
            let usage = self.lists.pod_usage.get(namespace).and_then(|pods| pods.get(pod.name()));
            let Some(usage) = usage else { continue };
            let value_of = |usage: &[(ResourceName, i64)]| {
                usage.iter().find(|(r, _)| r.as_str() == resource).map(|(_, value)| *value)
            };
            out.insert(
                pod.name().to_string(),
                PodResourceMetric {
                    containers: usage
                        .containers
                        .iter()
                        .map(|(c, u)| ContainerUsage { name: c.to_string(), value: value_of(u) })
                        .collect(),
                    timestamp: usage.timestamp,
                    window: usage.window,
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
        namespace: &str,
        metric: &MetricIdentifier,
        selector: &Selector,
    ) -> Result<Arc<PodMetricsInfo>, MetricsError> {
        let names: Vec<String> = self.selected(namespace, selector).map(|p| p.name().to_string()).collect();
        let mut out = PodMetricsInfo::new();
        for v in &self.lists.custom {
            if v.kind == "Pod" && v.namespace == namespace && v.metric == metric.name && names.contains(&v.name) {
                out.insert(v.name.clone(), PodMetric { value: v.value, timestamp: v.timestamp, window: v.window });
            }
        }
        if out.is_empty() {
            return Err(MetricsError::new(format!(
                "unable to fetch metrics from custom metrics API: no metric {} for the pods",
                metric.name
            )));
        }
        Ok(Arc::new(out))
    }

    fn object_metric(
        &self,
        namespace: &str,
        metric: &MetricIdentifier,
        object: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError> {
        self.lists
            .custom
            .iter()
            .find(|v| {
                v.kind == object.kind && v.name == object.name && v.namespace == namespace && v.metric == metric.name
            })
            .map(|v| v.value)
            .ok_or_else(|| {
                MetricsError::new(format!(
                    "unable to fetch metrics from custom metrics API: no metric {} for {} {}",
                    metric.name, object.kind, object.name
                ))
            })
    }

    fn external_metric(&self, namespace: &str, metric: &MetricIdentifier) -> Result<Vec<i64>, MetricsError> {
        let selector = Selector::from_label_selector(metric.selector.as_ref()).clone();
        let selector = if metric.selector.is_none() { Selector::everything() } else { selector };
        let values: Vec<i64> = self
            .lists
            .external
            .iter()
            .filter(|v| v.metric == metric.name && v.namespace.as_deref().is_none_or(|n| n == namespace))
            .filter(|v| selector.matches(Some(&v.labels)))
            .map(|v| v.value)
            .collect();
        if values.is_empty() {
            return Err(MetricsError::new(format!(
                "unable to fetch metrics from external metrics API: no metric {}",
                metric.name
            )));
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn custom_metric_values_are_read_in_both_api_versions() {
        let object = json!({"kind": "Service", "namespace": "web", "name": "front", "apiVersion": "v1"});
        let v1beta1 = json!({"describedObject": object, "metricName": "rps", "timestamp": "2026-11-21T12:00:00Z",
            "value": "150"});
        let v1beta2 = json!({"describedObject": object, "metric": {"name": "rps"}, "timestamp": "2026-11-21T12:00:00Z",
            "windowSeconds": 30, "value": "150"});
        for item in [v1beta1, v1beta2] {
            let mut lists = MetricLists::default();
            assert!(lists.add(&json!({"kind": "MetricValueList", "items": [item]})).unwrap());
            let metrics = FileMetrics { lists: &lists, pods: &Default::default() };
            let metric = MetricIdentifier { name: "rps".into(), selector: None };
            let target = CrossVersionObjectReference {
                kind: "Service".into(),
                name: "front".into(),
                api_version: Some("v1".into()),
            };
            assert_eq!(metrics.object_metric("web", &metric, &target).unwrap(), 150_000);
        }
    }
}
