//! Metrics for the embedded pod autoscalers from the cluster's metrics APIs
//! (`metrics.k8s.io`, `custom.metrics.k8s.io`, `external.metrics.k8s.io`).
//!
//! The pod autoscalers' decision is synchronous, the API is not: before each sync the
//! controller calls [`KubeMetrics::refresh`], which fetches the pod metrics of the namespaces
//! whose autoscalers use resource metrics (one call per namespace) and the custom / external
//! metrics the autoscalers reference, and the `MetricsSource` answers from that. Without pod
//! autoscalers nothing is fetched. An API that is not installed (404) just leaves its
//! metrics missing, and the autoscalers report it as upstream's controllers do.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use ::kube::Client;
use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, MetricIdentifier};
use serde_json::Value;
use simulator::labels::{Selector, format_label_selector};

use crate::core::ClusterView;
use crate::hpa::{MetricsError, MetricsSource, PodMetricsInfo, PodResourceMetrics};
use crate::podscaling::file_metrics::{FileMetrics, MetricLists};
use crate::podscaling::{PodsByNamespace, PodsRead};

#[derive(Default)]
struct Fetched {
    lists: MetricLists,
    pods: PodsByNamespace,
}

pub struct KubeMetrics {
    client: Client,
    fetched: RwLock<Fetched>,
    /// The `custom.metrics.k8s.io` version the API server serves (`v1beta2` preferred, as
    /// kube-controller-manager), found by discovery once.
    custom_version: RwLock<Option<&'static str>>,
}

/// `metric.selector` as the `labelSelector` query parameter.
fn label_selector(metric: &MetricIdentifier) -> String {
    metric.selector.as_ref().map(format_label_selector).unwrap_or_default()
}

/// How the custom metrics API names the kind of a described object: the plural resource,
/// qualified by its API group unless it is core (`services`, `deployments.apps`,
/// `ingresses.networking.k8s.io`). Without a RESTMapper the plural follows English rules, as
/// Kubernetes' own default pluralisation does.
fn custom_metrics_resource(object: &CrossVersionObjectReference) -> String {
    let kind = object.kind.to_lowercase();
    let plural = if kind.ends_with('s') || kind.ends_with('x') || kind.ends_with("ch") || kind.ends_with("sh") {
        format!("{kind}es")
    } else if let Some(stem) = kind.strip_suffix('y').filter(|s| !s.ends_with(['a', 'e', 'i', 'o', 'u'])) {
        format!("{stem}ies")
    } else {
        format!("{kind}s")
    };
    let group = object.api_version.as_deref().and_then(|v| v.split_once('/')).map(|(g, _)| g).unwrap_or_default();
    if group.is_empty() { plural } else { format!("{plural}.{group}") }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl KubeMetrics {
    pub fn new(client: Client) -> Self {
        KubeMetrics { client, fetched: RwLock::new(Fetched::default()), custom_version: RwLock::new(None) }
    }

    async fn get(&self, path: &str) -> Option<Value> {
        let request = ::http::Request::get(path).body(Vec::new()).ok()?;
        match self.client.request::<Value>(request).await {
            Ok(v) => Some(v),
            Err(error) => {
                tracing::debug!(%path, %error, "metrics API call failed");
                None
            }
        }
    }

    /// The custom metrics API version to ask: `v1beta2` when the server lists it, else `v1beta1`.
    /// A failed discovery is not remembered, so a metrics adapter installed later is found.
    async fn custom_metrics_version(&self) -> &'static str {
        if let Some(version) = *self.custom_version.read().unwrap_or_else(|p| p.into_inner()) {
            return version;
        }
        let Some(group) = self.get("/apis/custom.metrics.k8s.io").await else { return "v1beta1" };
        let serves = |v: &str| {
            group
                .get("versions")
                .and_then(Value::as_array)
                .is_some_and(|versions| versions.iter().any(|e| e.get("version").and_then(Value::as_str) == Some(v)))
        };
        let version = if serves("v1beta2") { "v1beta2" } else { "v1beta1" };
        *self.custom_version.write().unwrap_or_else(|p| p.into_inner()) = Some(version);
        version
    }

    /// Fetches what the autoscalers of `view` will read.
    pub async fn refresh(&self, view: &ClusterView) {
        let mut lists = MetricLists::default();
        // Resource metrics (cpu, memory); an HPA without metrics defaults to cpu.
        let mut resource_namespaces: BTreeSet<String> = BTreeSet::new();
        for hpa in &view.hpas {
            let metrics = hpa.spec.as_ref().and_then(|s| s.metrics.as_deref()).unwrap_or_default();
            if metrics.is_empty() || metrics.iter().any(|m| m.resource.is_some() || m.container_resource.is_some()) {
                resource_namespaces.insert(hpa.metadata.namespace.clone().unwrap_or_else(|| "default".into()));
            }
        }
        for wpa in &view.wpas {
            if wpa.spec.metrics.iter().any(|m| m.resource.is_some()) {
                resource_namespaces.insert(wpa.metadata.namespace.clone().unwrap_or_else(|| "default".into()));
            }
        }
        let pods = PodsByNamespace::new(&view.pods);
        let read = PodsRead::of(view, &pods);
        for namespace in &resource_namespaces {
            if let Some(doc) = self.get(&format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods")).await {
                let _ = lists.add_where(&doc, &|namespace, name| read.keeps(namespace, name));
            }
        }
        let mut external: BTreeSet<(String, String, String)> = BTreeSet::new();
        let mut pods_metrics: BTreeSet<(String, String, String)> = BTreeSet::new();
        let mut objects: BTreeSet<(String, String, String, String, String)> = BTreeSet::new();
        for hpa in &view.hpas {
            let namespace = hpa.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            for m in hpa.spec.iter().flat_map(|s| s.metrics.iter().flatten()) {
                if let Some(e) = &m.external {
                    external.insert((namespace.clone(), e.metric.name.clone(), label_selector(&e.metric)));
                }
                if let Some(p) = &m.pods {
                    pods_metrics.insert((namespace.clone(), p.metric.name.clone(), label_selector(&p.metric)));
                }
                if let Some(o) = &m.object {
                    objects.insert((
                        namespace.clone(),
                        custom_metrics_resource(&o.described_object),
                        o.described_object.name.clone(),
                        o.metric.name.clone(),
                        label_selector(&o.metric),
                    ));
                }
            }
        }
        for wpa in &view.wpas {
            let namespace = wpa.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            for m in &wpa.spec.metrics {
                if let Some(e) = &m.external {
                    let selector = e.metric_selector.as_ref().map(format_label_selector).unwrap_or_default();
                    external.insert((namespace.clone(), e.metric_name.clone(), selector));
                }
            }
        }
        for (namespace, metric, selector) in external {
            let path = format!(
                "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{}?labelSelector={}",
                encode(&metric),
                encode(&selector)
            );
            if let Some(mut doc) = self.get(&path).await {
                // The answer is for this namespace only.
                let meta = doc
                    .as_object_mut()
                    .map(|o| o.entry("metadata").or_insert_with(|| Value::Object(Default::default())));
                if let Some(m) = meta.and_then(Value::as_object_mut) {
                    m.insert("namespace".into(), Value::String(namespace.clone()));
                }
                let _ = lists.add(&doc);
            }
        }
        let custom =
            if pods_metrics.is_empty() && objects.is_empty() { "v1beta1" } else { self.custom_metrics_version().await };
        for (namespace, metric, selector) in pods_metrics {
            let path = format!(
                "/apis/custom.metrics.k8s.io/{custom}/namespaces/{namespace}/pods/*/{}?metricLabelSelector={}",
                encode(&metric),
                encode(&selector)
            );
            if let Some(doc) = self.get(&path).await {
                let _ = lists.add(&doc);
            }
        }
        for (namespace, resource, name, metric, selector) in objects {
            let path = format!(
                "/apis/custom.metrics.k8s.io/{custom}/namespaces/{namespace}/{resource}/{name}/{}?metricLabelSelector={}",
                encode(&metric),
                encode(&selector)
            );
            if let Some(doc) = self.get(&path).await {
                let _ = lists.add(&doc);
            }
        }
        let mut fetched = self.fetched.write().unwrap_or_else(|p| p.into_inner());
        *fetched = Fetched { lists, pods };
    }

    /// Drops what the last refresh fetched, once the sync that reads it is done: the selected
    /// pods' usage and an index of the pods by namespace (at 150,000 pods, before only the
    /// selected pods were kept, about 35 MB), otherwise held from one sync to the next, and
    /// twice while the next refresh fetched. The controller calls it after every sync, so a
    /// refresh never starts with the last one's metrics still held.
    pub fn release(&self) {
        let old = std::mem::take(&mut *self.fetched.write().unwrap_or_else(|p| p.into_inner()));
        drop(old);
    }

    fn with<T>(&self, f: impl FnOnce(&FileMetrics) -> T) -> T {
        let fetched = self.fetched.read().unwrap_or_else(|p| p.into_inner());
        f(&FileMetrics { lists: &fetched.lists, pods: &fetched.pods })
    }
}

impl MetricsSource for KubeMetrics {
    fn pod_resource_metrics(
        &self,
        namespace: &str,
        selector: &Selector,
        resource: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError> {
        self.with(|m| m.pod_resource_metrics(namespace, selector, resource))
    }

    fn pods_metric(
        &self,
        namespace: &str,
        metric: &MetricIdentifier,
        selector: &Selector,
    ) -> Result<Arc<PodMetricsInfo>, MetricsError> {
        self.with(|m| m.pods_metric(namespace, metric, selector))
    }

    fn object_metric(
        &self,
        namespace: &str,
        metric: &MetricIdentifier,
        object: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError> {
        self.with(|m| m.object_metric(namespace, metric, object))
    }

    fn external_metric(&self, namespace: &str, metric: &MetricIdentifier) -> Result<Vec<i64>, MetricsError> {
        self.with(|m| m.external_metric(namespace, metric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(api_version: &str, kind: &str) -> CrossVersionObjectReference {
        CrossVersionObjectReference {
            api_version: (!api_version.is_empty()).then(|| api_version.to_string()),
            kind: kind.into(),
            name: "x".into(),
        }
    }

    /// What a refresh fetched answers the sync after it, and nothing once released.
    #[tokio::test]
    async fn released_metrics_answer_nothing() {
        let config = ::kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let metrics = KubeMetrics::new(Client::try_from(config).unwrap());
        let pod = simulator::testing::with_labels(simulator::testing::pod("web-1", "100m", "1Mi"), &[("app", "web")]);
        let mut lists = MetricLists::default();
        let doc = serde_json::json!({"kind": "PodMetricsList", "items": [{
            "metadata": {"name": "web-1", "namespace": "default"},
            "timestamp": "2026-11-29T08:00:00Z", "window": "30s",
            "containers": [{"name": "app", "usage": {"cpu": "50m", "memory": "1Mi"}}]}]});
        assert_eq!(lists.add(&doc), Ok(true));
        let pods = PodsByNamespace::new(&[Arc::new(simulator::PodInfo::from(pod))]);
        *metrics.fetched.write().unwrap() = Fetched { lists, pods };
        let selector = Selector::parse("app=web").unwrap();
        let usage = metrics.pod_resource_metrics("default", &selector, "cpu").expect("fetched");
        assert_eq!(usage.len(), 1);
        metrics.release();
        assert!(metrics.pod_resource_metrics("default", &selector, "cpu").is_err(), "released");
    }

    #[test]
    fn custom_metrics_resources_are_plural_and_group_qualified() {
        assert_eq!(custom_metrics_resource(&object("v1", "Service")), "services");
        assert_eq!(custom_metrics_resource(&object("", "Pod")), "pods");
        assert_eq!(custom_metrics_resource(&object("apps/v1", "Deployment")), "deployments.apps");
        assert_eq!(custom_metrics_resource(&object("networking.k8s.io/v1", "Ingress")), "ingresses.networking.k8s.io");
        assert_eq!(custom_metrics_resource(&object("example.com/v1", "Policy")), "policies.example.com");
        assert_eq!(custom_metrics_resource(&object("example.com/v1", "Gateway")), "gateways.example.com");
    }
}
