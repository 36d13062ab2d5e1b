//! The controller's calls to the API server, recorded: the kube adapter (reflectors, WPAs
//! included; every action; the metrics refresh), the status ConfigMap's deletion on exit and a
//! leader election round, run against the fake API server. `deploy_manifests/rbac.rs`
//! authorizes every recorded request against the manifests' RBAC rules.

use std::sync::OnceLock;
use std::time::Duration;

use autoscaler::hpa::wpa::WatermarkPodAutoscalerStatus;
use autoscaler::kube_adapter::{
    KubeActions, KubeActionsOptions, KubeClients, KubeCluster, KubeClusterOptions, KubeMetrics, wpa_crd_installed,
};
use autoscaler::leader::{ElectionOutcome, LeaderElector, LeaseConfig};
use autoscaler::ports::{ClusterActions, ClusterReader, Event, EventReason, EventType, ObjectRef, ScaleTarget};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, ExternalMetricSource, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    MetricIdentifier, MetricSpec, MetricTarget, ObjectMetricSource, PodsMetricSource, ResourceMetricSource,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Node, Pod, PodSpec, PodStatus, ReplicationController, ReplicationControllerSpec, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::json;
use tests::eventually;
use tests::fake_apiserver::{FakeApiServer, RequestRecord, Verb};

/// The metrics the HPA and WPA of the run reference.
pub(super) const PODS_METRIC: &str = "packets-per-second";
pub(super) const OBJECT_METRIC: &str = "requests-per-second";
pub(super) const HPA_EXTERNAL_METRIC: &str = "queue_messages_ready";
pub(super) const WPA_EXTERNAL_METRIC: &str = "requests";

/// Every request the controller makes to the API server when each of its reads and actions is
/// used once (twice where the second call takes another path: the status ConfigMap's update,
/// an Event's bump). Run once, on a runtime of its own, and shared by the tests that read it.
pub(super) fn recorded_requests() -> &'static [RequestRecord] {
    static REQUESTS: OnceLock<Vec<RequestRecord>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(record())
        })
        .join()
        .unwrap_or_else(|_| panic!("recording the controller's requests failed (see the panic above)"))
    })
}

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.into()), namespace: namespace.map(String::from), ..Default::default() }
}

fn app_selector(app: &str) -> LabelSelector {
    LabelSelector { match_labels: Some([("app".to_string(), app.to_string())].into()), ..Default::default() }
}

fn metric(name: &str) -> MetricIdentifier {
    MetricIdentifier { name: name.into(), selector: Some(app_selector("web")) }
}

fn average_value(value: &str) -> MetricTarget {
    MetricTarget { type_: "AverageValue".into(), average_value: Some(Quantity(value.into())), ..Default::default() }
}

/// An HPA on the Deployment `web` with a pods, an object and an external metric, so the metrics
/// refresh asks each metrics API.
fn hpa_with_every_metric_api() -> HorizontalPodAutoscaler {
    let web = |kind: &str, api_version: &str| CrossVersionObjectReference {
        api_version: Some(api_version.into()),
        kind: kind.into(),
        name: "web".into(),
    };
    let metrics = vec![
        MetricSpec {
            type_: "Resource".into(),
            resource: Some(ResourceMetricSource {
                name: "cpu".into(),
                target: MetricTarget {
                    type_: "Utilization".into(),
                    average_utilization: Some(60),
                    ..Default::default()
                },
            }),
            ..Default::default()
        },
        MetricSpec {
            type_: "Pods".into(),
            pods: Some(PodsMetricSource { metric: metric(PODS_METRIC), target: average_value("1k") }),
            ..Default::default()
        },
        MetricSpec {
            type_: "Object".into(),
            object: Some(ObjectMetricSource {
                described_object: web("Service", "v1"),
                metric: metric(OBJECT_METRIC),
                target: MetricTarget {
                    type_: "Value".into(),
                    value: Some(Quantity("10k".into())),
                    ..Default::default()
                },
            }),
            ..Default::default()
        },
        MetricSpec {
            type_: "External".into(),
            external: Some(ExternalMetricSource { metric: metric(HPA_EXTERNAL_METRIC), target: average_value("30") }),
            ..Default::default()
        },
    ];
    HorizontalPodAutoscaler {
        metadata: meta(Some("default"), "web"),
        spec: Some(HorizontalPodAutoscalerSpec {
            max_replicas: 5,
            scale_target_ref: web("Deployment", "apps/v1"),
            metrics: Some(metrics),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A WPA on the Deployment `web` with an external metric.
fn wpa_with_an_external_metric() -> serde_json::Value {
    json!({
        "apiVersion": "datadoghq.com/v1alpha1",
        "kind": "WatermarkPodAutoscaler",
        "metadata": {"namespace": "default", "name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [{"type": "External", "external": {
                "metricName": WPA_EXTERNAL_METRIC, "metricSelector": {"matchLabels": {"app": "web"}},
                "highWatermark": "100", "lowWatermark": "50"
            }}]
        }
    })
}

async fn record() -> Vec<RequestRecord> {
    let server = FakeApiServer::builder().watermark_pod_autoscalers(true).start().await;
    server.seed(&Node { metadata: meta(None, "n1"), ..Default::default() });
    server.seed(&Pod {
        metadata: meta(Some("default"), "p1"),
        spec: Some(PodSpec { node_name: Some("n1".into()), ..Default::default() }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    });
    server.seed(&Deployment {
        metadata: meta(Some("default"), "web"),
        spec: Some(DeploymentSpec { replicas: Some(2), selector: app_selector("web"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&ReplicaSet {
        metadata: meta(Some("default"), "rs"),
        spec: Some(ReplicaSetSpec { replicas: Some(1), selector: app_selector("rs"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&StatefulSet {
        metadata: meta(Some("default"), "db"),
        spec: Some(StatefulSetSpec { replicas: Some(1), selector: app_selector("db"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&ReplicationController {
        metadata: meta(Some("default"), "rc"),
        spec: Some(ReplicationControllerSpec {
            replicas: Some(1),
            selector: Some([("app".to_string(), "rc".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    server.seed(&hpa_with_every_metric_api());
    server.seed_value(wpa_with_an_external_metric()).expect("the fake server takes the WPA");
    server.seed(&ConfigMap {
        metadata: meta(Some("kube-system"), expander::priority::PRIORITY_CONFIG_MAP_NAME),
        data: Some([("priorities".to_string(), "10:\n- .*\n".to_string())].into()),
        ..Default::default()
    });

    // No client-side rate limit: the run issues a burst of requests.
    let clients = KubeClients::from_config(server.kube_config(), -1.0, 0).unwrap();
    let run = super::parse_flags(&[]).unwrap();
    let namespace = run.flags.namespace.clone();
    // As the controller: WPAs are watched when discovery finds their CRD.
    assert!(wpa_crd_installed(&clients.client).await, "the fake server serves the WPA CRD");
    let options = KubeClusterOptions { watch_wpas: true, ..KubeClusterOptions::new(&namespace) };
    let cluster = KubeCluster::start_with(clients.client.clone(), options);
    let view = cluster.view().await.expect("the reflectors sync");
    assert_eq!((view.hpas.len(), view.wpas.len()), (1, 1), "the view holds the pod autoscalers");
    // Each reflector watches after its list; wait until every listed collection is watched.
    eventually("a watch after every list", || async {
        let records = server.requests();
        let watched = |path: &str| records.iter().any(|r| r.verb == Some(Verb::Watch) && r.path == path);
        records.iter().filter(|r| r.verb == Some(Verb::List)).all(|r| watched(&r.path)).then_some(())
    })
    .await;

    // The metrics APIs are not served by the fake server (404): the requests are still made,
    // recorded and authorized, and the refresh leaves the metrics missing.
    KubeMetrics::new(clients.client.clone()).refresh(&view).await;

    let actions = KubeActions::with_options(
        clients.clone(),
        KubeActionsOptions {
            conflict_retry_interval: Duration::from_millis(10),
            record_duplicated_events: true,
            ..Default::default()
        },
    );
    let taint =
        Taint { key: "ToBeDeletedByClusterAutoscaler".into(), effect: "NoSchedule".into(), ..Default::default() };
    actions.taint_node("n1", taint, true).await.unwrap();
    actions.untaint_node("n1", "ToBeDeletedByClusterAutoscaler", true).await.unwrap();
    actions.evict_pod("default", "p1", 30).await.unwrap();
    for (api_version, kind, name) in [
        ("apps/v1", "Deployment", "web"),
        ("apps/v1", "ReplicaSet", "rs"),
        ("apps/v1", "StatefulSet", "db"),
        ("v1", "ReplicationController", "rc"),
    ] {
        let target = ScaleTarget {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: "default".into(),
            name: name.into(),
        };
        let scale = actions.get_scale(&target).await.unwrap();
        actions.set_scale(&target, scale.spec_replicas + 1).await.unwrap();
    }
    let status = WatermarkPodAutoscalerStatus { current_replicas: 2, desired_replicas: 3, ..Default::default() };
    actions.update_wpa_status("default", "web", status).await.unwrap();
    for text in ["autoscalerStatus: Initializing\n", "autoscalerStatus: Running\n"] {
        actions.write_status(&namespace, &run.flags.status_config_map_name, text, "now").await.unwrap();
    }
    let on_node = Event {
        object: ObjectRef::node("n1"),
        event_type: EventType::Normal,
        reason: EventReason::ScaleDown,
        message: "m".into(),
    };
    actions.record_event(on_node.clone()).await.unwrap();
    actions.record_event(on_node).await.unwrap();
    let on_config_map = Event {
        object: ObjectRef::config_map(&namespace, &run.flags.status_config_map_name),
        event_type: EventType::Warning,
        reason: EventReason::ScaleUpFailed,
        message: "m".into(),
    };
    actions.record_event(on_config_map).await.unwrap();
    actions.events().flush(Duration::from_secs(10)).await;

    // Leader election as the controller runs it (`--leader-elect`, the Lease client): acquire
    // the missing Lease, then release it on shutdown.
    let elector = LeaderElector::new(
        clients.lease_client.clone(),
        &namespace,
        &run.leader_elect_resource_name,
        "cluster-autoscaler-0",
        LeaseConfig::default(),
    )
    .unwrap();
    let (shutdown, shutdown_requested) = tokio::sync::oneshot::channel::<()>();
    let mut handle = elector.start(async move {
        let _ = shutdown_requested.await;
    });
    handle.is_leader.wait_for(|leading| *leading).await.expect("the election leads");

    // The controller's clean exit: the status ConfigMap goes, then the Lease is released.
    actions.delete_status(&namespace, &run.flags.status_config_map_name).await.unwrap();
    shutdown.send(()).unwrap();
    assert_eq!(handle.task.await.unwrap(), ElectionOutcome::Stopped { released: true });
    cluster.stop();

    server.requests()
}
