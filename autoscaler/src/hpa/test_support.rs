//! Fixtures for the pod autoscaler tests: a scripted metrics source, pods in the states the
//! controllers distinguish, and objects built from the JSON users write.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler, MetricIdentifier};
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use simulator::PodInfo;
use simulator::labels::Selector;
use simulator::testing;

use super::{
    HpaConfig, HpaDecision, HpaState, MetricsError, MetricsSource, PodMetric, PodMetricsInfo, PodResourceMetric,
    PodResourceMetrics, ScaleTarget, reconcile_hpa,
};

/// A fixed instant plus `seconds`.
pub fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

/// Metric values by resource / metric name; anything not scripted fails like an absent metric.
#[derive(Default)]
pub struct FakeMetrics {
    pub resources: HashMap<String, PodResourceMetrics>,
    pub pods: HashMap<String, PodMetricsInfo>,
    pub objects: HashMap<String, i64>,
    pub external: HashMap<String, Vec<i64>>,
}

impl FakeMetrics {
    /// cpu usage in millicores per pod, sampled at `at` over a 30 s window.
    pub fn cpu(usages: &[(&str, i64)], at: Timestamp) -> Self {
        let mut fake = FakeMetrics::default();
        fake.set_resource("cpu", usages, at);
        fake
    }

    pub fn set_resource(&mut self, resource: &str, usages: &[(&str, i64)], at: Timestamp) {
        let metrics = usages
            .iter()
            .map(|(name, value)| (name.to_string(), PodResourceMetric::single(*value, at, Duration::from_secs(30))))
            .collect();
        self.resources.insert(resource.to_string(), metrics);
    }

    pub fn set_pods_metric(&mut self, metric: &str, values: &[(&str, i64)], at: Timestamp) {
        let metrics = values
            .iter()
            .map(|(name, value)| {
                (name.to_string(), PodMetric { value: *value, timestamp: at, window: Duration::from_secs(60) })
            })
            .collect();
        self.pods.insert(metric.to_string(), metrics);
    }
}

fn absent(what: &str) -> MetricsError {
    MetricsError::new(format!("the server could not find the metric {what}"))
}

impl MetricsSource for FakeMetrics {
    fn pod_resource_metrics(
        &self,
        _: &str,
        _: &Selector,
        resource: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError> {
        self.resources.get(resource).cloned().map(Arc::new).ok_or_else(|| absent(resource))
    }

    fn pods_metric(
        &self,
        _: &str,
        metric: &MetricIdentifier,
        _: &Selector,
    ) -> Result<Arc<PodMetricsInfo>, MetricsError> {
        self.pods.get(&metric.name).cloned().map(Arc::new).ok_or_else(|| absent(&metric.name))
    }

    fn object_metric(
        &self,
        _: &str,
        metric: &MetricIdentifier,
        _: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError> {
        self.objects.get(&metric.name).copied().ok_or_else(|| absent(&metric.name))
    }

    fn external_metric(&self, _: &str, metric: &MetricIdentifier) -> Result<Vec<i64>, MetricsError> {
        self.external.get(&metric.name).cloned().ok_or_else(|| absent(&metric.name))
    }
}

fn set_ready(pod: &mut Pod, status: &str, transition: Timestamp) {
    let pod_status = pod.status.get_or_insert_with(Default::default);
    pod_status.conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: status.into(),
        last_transition_time: Some(Time(transition)),
        ..Default::default()
    }]);
}

/// A Running, Ready pod requesting `cpu` (with one container `main`), started and ready an hour
/// before `t(0)`, owned by the ReplicaSet `app-5d4f8` of Deployment `app`.
pub fn pod(name: &str, cpu: &str) -> Pod {
    let mut pod = testing::with_owner(testing::pod(name, cpu, "1Gi"), "ReplicaSet", "app-5d4f8");
    pod.status.get_or_insert_with(Default::default).start_time = Some(Time(t(-3600)));
    set_ready(&mut pod, "True", t(-3600));
    pod
}

/// Started at `start`, readiness `status` since `transition`.
pub fn with_readiness(mut pod: Pod, start: Timestamp, status: &str, transition: Timestamp) -> Pod {
    pod.status.get_or_insert_with(Default::default).start_time = Some(Time(start));
    set_ready(&mut pod, status, transition);
    pod
}

pub fn with_phase(mut pod: Pod, phase: &str) -> Pod {
    pod.status.get_or_insert_with(Default::default).phase = Some(phase.into());
    pod
}

pub fn deleted(mut pod: Pod) -> Pod {
    pod.metadata.deletion_timestamp = Some(Time(t(-5)));
    pod
}

pub fn arcs(pods: Vec<Pod>) -> Vec<Arc<PodInfo>> {
    pods.into_iter().map(|p| Arc::new(PodInfo::from(p))).collect()
}

/// `n` ready pods `p0..p{n-1}` requesting `cpu`.
pub fn pods(n: usize, cpu: &str) -> Vec<Arc<PodInfo>> {
    arcs((0..n).map(|i| pod(&format!("p{i}"), cpu)).collect())
}

/// An HPA in `default` scaling Deployment `app`, built from its JSON spec fields.
pub fn hpa(spec: Value) -> HorizontalPodAutoscaler {
    let mut full = json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"}});
    for (key, value) in spec.as_object().expect("spec is an object") {
        full[key] = value.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": full,
    }))
    .expect("valid HPA")
}

pub fn cpu_utilization(target: i32) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}})
}

/// Behavior with no stabilization in either direction and the default policies otherwise.
pub fn no_stabilization() -> Value {
    json!({"scaleUp": {"stabilizationWindowSeconds": 0}, "scaleDown": {"stabilizationWindowSeconds": 0}})
}

pub fn target(replicas: i32) -> ScaleTarget {
    ScaleTarget::new(replicas, Selector::everything())
}

/// One reconcile with the default controller configuration.
pub fn run(
    hpa: &HorizontalPodAutoscaler,
    replicas: i32,
    pods: &[Arc<PodInfo>],
    metrics: &FakeMetrics,
    state: &mut HpaState,
    now: Timestamp,
) -> HpaDecision {
    reconcile_hpa(hpa, &target(replicas), pods, metrics, &HpaConfig::default(), state, now)
}

pub fn condition<'a>(decision: &'a HpaDecision, type_: &str) -> (&'a str, &'a str, &'a str) {
    let c = decision.conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status.as_str(), c.reason.as_deref().unwrap_or(""), c.message.as_deref().unwrap_or(""))
}
