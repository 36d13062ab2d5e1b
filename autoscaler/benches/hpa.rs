//! Reconciling 1,000 HPAs over 50,000 pods (50 per HPA, cpu utilization metrics): the cost of
//! one HPA sync period of the embedded pod autoscaler. Target: ≤ 50 ms on one core.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use autoscaler::hpa::{
    HpaConfig, HpaState, MetricsError, MetricsSource, PodMetricsInfo, PodResourceMetric, PodResourceMetrics,
    ScaleTarget, reconcile_hpa,
};
use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler, MetricIdentifier};
use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use simulator::labels::Selector;
use simulator::testing;

const HPAS: usize = 1_000;
const PODS_PER_HPA: usize = 50;

/// Per-namespace cpu usage, as a metrics source caching one metrics-server answer per sync.
struct Metrics {
    cpu: HashMap<String, Arc<PodResourceMetrics>>,
}

impl MetricsSource for Metrics {
    fn pod_resource_metrics(
        &self,
        namespace: &str,
        _: &Selector,
        _: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError> {
        self.cpu.get(namespace).cloned().ok_or_else(|| MetricsError::new("no metrics"))
    }

    fn pods_metric(&self, _: &str, _: &MetricIdentifier, _: &Selector) -> Result<Arc<PodMetricsInfo>, MetricsError> {
        Err(MetricsError::new("not served"))
    }

    fn object_metric(
        &self,
        _: &str,
        _: &MetricIdentifier,
        _: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError> {
        Err(MetricsError::new("not served"))
    }

    fn external_metric(&self, _: &str, _: &MetricIdentifier) -> Result<Vec<i64>, MetricsError> {
        Err(MetricsError::new("not served"))
    }
}

struct Fixture {
    hpas: Vec<HorizontalPodAutoscaler>,
    pods: Vec<Vec<Arc<simulator::PodInfo>>>,
    metrics: Metrics,
}

fn fixture(start: Timestamp) -> Fixture {
    let started = Time(start.saturating_sub(Duration::from_secs(3600)).unwrap());
    let mut hpas = Vec::with_capacity(HPAS);
    let mut pods = Vec::with_capacity(HPAS);
    let mut cpu = HashMap::with_capacity(HPAS);
    for i in 0..HPAS {
        let namespace = format!("ns-{i}");
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 200,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50 + (i % 30) as i32}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}},
            },
        }))
        .expect("valid HPA");
        let mut group = Vec::with_capacity(PODS_PER_HPA);
        let mut usage = PodResourceMetrics::with_capacity_and_hasher(PODS_PER_HPA, Default::default());
        for p in 0..PODS_PER_HPA {
            let name = format!("web-{i}-{p}");
            let mut pod = testing::with_namespace(testing::pod(&name, "500m", "512Mi"), &namespace);
            let status = pod.status.get_or_insert_with(Default::default);
            status.start_time = Some(started.clone());
            status.conditions = Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(started.clone()),
                ..Default::default()
            }]);
            group.push(Arc::new(simulator::PodInfo::from(pod)));
            let millicores = 150 + ((i * 7 + p * 13) % 300) as i64;
            usage.insert(name, PodResourceMetric::single(millicores, start, Duration::from_secs(30)));
        }
        hpas.push(hpa);
        pods.push(group);
        cpu.insert(namespace, Arc::new(usage));
    }
    Fixture { hpas, pods, metrics: Metrics { cpu } }
}

fn reconcile_all(c: &mut Criterion) {
    let start = Timestamp::from_second(1_700_000_000).unwrap();
    let fixture = fixture(start);
    let config = HpaConfig::default();
    let mut states: Vec<HpaState> = (0..HPAS).map(|_| HpaState::new()).collect();
    let mut tick = 0i64;
    c.bench_function("reconcile 1000 HPAs over 50000 pods", |b| {
        b.iter(|| {
            // One sync period later each iteration, so the recommendation history stays at its
            // steady-state size (slots older than the windows are reused).
            tick += 1;
            let now = Timestamp::from_second(1_700_000_000 + 15 * tick).unwrap();
            let mut rescaled = 0usize;
            for (i, state) in states.iter_mut().enumerate() {
                let scale = ScaleTarget::new(PODS_PER_HPA as i32, Selector::everything());
                let decision =
                    reconcile_hpa(&fixture.hpas[i], &scale, &fixture.pods[i], &fixture.metrics, &config, state, now);
                rescaled += usize::from(decision.rescale);
            }
            black_box(rescaled)
        })
    });
}

criterion_group!(benches, reconcile_all);
criterion_main!(benches);
