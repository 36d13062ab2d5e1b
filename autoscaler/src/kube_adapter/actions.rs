//! The action side: node taints and cordons, evictions, the scale subresource, the status
//! ConfigMap and Events.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ::kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Taint};
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta};
use serde_json::json;

use super::client::KubeClients;
use super::errors::{api_status, port_error};
use super::events::{CorrelatorOptions, EventRecorder};
use crate::ports::{ClusterActions, Event, EvictionError, PortError, Scale, ScaleTarget};

/// The annotation of the status ConfigMap that holds the time of the last write.
pub const STATUS_LAST_UPDATED_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/last-updated";

/// Options of [`KubeActions`]; the defaults are upstream's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeActionsOptions {
    /// Wait between attempts after a conflict (upstream: 750 ms).
    pub conflict_retry_interval: Duration,
    /// No new attempt after this long since the first (upstream: 5 s).
    pub conflict_retry_deadline: Duration,
    /// Bound on one eviction call; past it the eviction fails (and is retried by the caller).
    pub eviction_timeout: Duration,
    /// `--record-duplicated-events`: client-go's default event correlation instead of upstream's
    /// stricter spam filter (see `events`).
    pub record_duplicated_events: bool,
    /// The status ConfigMap (`namespace`, `name`), whose events upstream keeps per message.
    pub status_config_map: (String, String),
    /// `reportingInstance` of Events (upstream: the host name).
    pub reporting_instance: Option<String>,
}

impl Default for KubeActionsOptions {
    fn default() -> Self {
        KubeActionsOptions {
            conflict_retry_interval: Duration::from_millis(750),
            conflict_retry_deadline: Duration::from_secs(5),
            eviction_timeout: Duration::from_secs(30),
            record_duplicated_events: false,
            status_config_map: ("kube-system".into(), "cluster-autoscaler-status".into()),
            reporting_instance: std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()),
        }
    }
}

/// `ClusterActions` over the Kubernetes API.
pub struct KubeActions {
    clients: KubeClients,
    options: KubeActionsOptions,
    /// Events are written off the loop.
    events: EventRecorder,
}

impl KubeActions {
    pub fn new(clients: KubeClients) -> KubeActions {
        KubeActions::with_options(clients, KubeActionsOptions::default())
    }

    /// Deletes the status ConfigMap, as upstream does when it exits cleanly (a missing one is
    /// fine: nothing to clean up).
    pub async fn delete_status(&self, namespace: &str, name: &str) -> Result<(), PortError> {
        let api: Api<ConfigMap> = Api::namespaced(self.clients.client.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if api_status(&e) == Some(404) => Ok(()),
            Err(e) => Err(port_error(e, "ConfigMap", name)),
        }
    }

    /// Must be called on a tokio runtime: it starts the event writer.
    pub fn with_options(clients: KubeClients, options: KubeActionsOptions) -> KubeActions {
        let (namespace, name) = &options.status_config_map;
        let correlation = if options.record_duplicated_events {
            CorrelatorOptions::client_go_defaults(namespace, name)
        } else {
            CorrelatorOptions::upstream(namespace, name)
        };
        let events = EventRecorder::start(clients.clone(), options.reporting_instance.clone(), correlation);
        KubeActions { clients, options, events }
    }

    /// The event pipeline (its drop count, and flushing at shutdown or in tests).
    pub fn events(&self) -> &EventRecorder {
        &self.events
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.clients.client.clone())
    }

    /// Read-modify-write of a node with retry on conflict, as upstream does: each attempt reads
    /// the node fresh; `change` returns false when nothing needs writing. A missing node is an
    /// error unless `missing_ok`.
    async fn update_node(
        &self,
        name: &str,
        missing_ok: bool,
        change: impl Fn(&mut Node) -> bool,
    ) -> Result<(), PortError> {
        let api = self.nodes();
        let deadline = Instant::now() + self.options.conflict_retry_deadline;
        loop {
            let mut node = match api.get(name).await {
                Ok(node) => node,
                Err(e) if missing_ok && api_status(&e) == Some(404) => return Ok(()),
                Err(e) => return Err(port_error(e, "Node", name)),
            };
            if !change(&mut node) {
                return Ok(());
            }
            match api.replace(name, &PostParams::default(), &node).await {
                Ok(_) => return Ok(()),
                Err(e) if api_status(&e) == Some(409) && Instant::now() < deadline => {
                    tracing::debug!(node = name, "conflict updating node; retrying");
                    tokio::time::sleep(self.options.conflict_retry_interval).await;
                }
                Err(e) if missing_ok && api_status(&e) == Some(404) => return Ok(()),
                Err(e) => return Err(port_error(e, "Node", name)),
            }
        }
    }

    fn scale_api(&self, target: &ScaleTarget) -> Result<Api<DynamicObject>, PortError> {
        if target.api_version.is_empty() || target.kind.is_empty() || target.name.is_empty() {
            return Err(PortError::Api(format!(
                "invalid scale target {target:?}: apiVersion, kind and name are required"
            )));
        }
        let (group, version) = target.api_version.split_once('/').unwrap_or(("", target.api_version.as_str()));
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &target.kind));
        Ok(Api::namespaced_with(self.clients.client.clone(), &target.namespace, &resource))
    }
}

#[async_trait]
impl ClusterActions for KubeActions {
    async fn taint_node(&self, node: &str, taint: Taint, cordon: bool) -> Result<(), PortError> {
        self.update_node(node, false, |n| {
            let spec = n.spec.get_or_insert_with(Default::default);
            let mut changed = false;
            let taints = spec.taints.get_or_insert_with(Vec::new);
            if !taints.contains(&taint) {
                taints.retain(|t| t.key != taint.key);
                taints.push(taint.clone());
                changed = true;
            }
            if cordon && spec.unschedulable != Some(true) {
                spec.unschedulable = Some(true);
                changed = true;
            }
            changed
        })
        .await
    }

    async fn untaint_node(&self, node: &str, key: &str, uncordon: bool) -> Result<(), PortError> {
        self.update_node(node, true, |n| {
            let Some(spec) = n.spec.as_mut() else { return false };
            let mut changed = false;
            if let Some(taints) = spec.taints.as_mut() {
                let before = taints.len();
                taints.retain(|t| t.key != key);
                changed = taints.len() != before;
                if taints.is_empty() {
                    spec.taints = None;
                }
            }
            if uncordon && spec.unschedulable == Some(true) {
                spec.unschedulable = None;
                changed = true;
            }
            changed
        })
        .await
    }

    /// The `policy/v1` Eviction body is built here (kube's `Api::evict` sends the grace period
    /// under a key real servers ignore) and sent with the no-retry client, so a PDB's 429
    /// answers at once.
    async fn evict_pod(&self, namespace: &str, name: &str, grace_period_seconds: i64) -> Result<(), EvictionError> {
        let pod = format!("{namespace}/{name}");
        let api: Api<Pod> = Api::namespaced(self.clients.eviction_client.clone(), namespace);
        let eviction = Eviction {
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some(namespace.into()), ..Default::default() },
            delete_options: Some(DeleteOptions {
                grace_period_seconds: Some(grace_period_seconds),
                ..Default::default()
            }),
        };
        let params = PostParams::default();
        let call = api.create_subresource::<_, serde_json::Value>("eviction", name, &params, &eviction);
        match tokio::time::timeout(self.options.eviction_timeout, call).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => match api_status(&e) {
                Some(429) => Err(EvictionError::BlockedByPdb(pod)),
                Some(404) => Err(EvictionError::NotFound(pod)),
                _ => Err(EvictionError::Failed { pod, message: e.to_string() }),
            },
            Err(_) => Err(EvictionError::Failed {
                pod,
                message: format!("no answer within {:?}", self.options.eviction_timeout),
            }),
        }
    }

    async fn get_scale(&self, target: &ScaleTarget) -> Result<Scale, PortError> {
        let api = self.scale_api(target)?;
        let scale = api.get_scale(&target.name).await.map_err(|e| port_error(e, &target.kind, &target.name))?;
        Ok(Scale {
            spec_replicas: scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            status_replicas: scale.status.as_ref().map(|s| s.replicas).unwrap_or(0),
            selector: scale.status.and_then(|s| s.selector).unwrap_or_default(),
        })
    }

    async fn set_scale(&self, target: &ScaleTarget, replicas: i32) -> Result<(), PortError> {
        let api = self.scale_api(target)?;
        let patch = json!({"spec": {"replicas": replicas}});
        api.patch_scale(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| port_error(e, &target.kind, &target.name))?;
        Ok(())
    }

    /// Get, then replace (with the read version) or create, as upstream does; a conflict (a
    /// concurrent writer, or a create race) starts over within the conflict deadline.
    async fn write_status(
        &self,
        namespace: &str,
        name: &str,
        status_yaml: &str,
        last_updated: &str,
    ) -> Result<(), PortError> {
        let api: Api<ConfigMap> = Api::namespaced(self.clients.client.clone(), namespace);
        let deadline = Instant::now() + self.options.conflict_retry_deadline;
        loop {
            let existing = api.get_opt(name).await.map_err(|e| port_error(e, "ConfigMap", name))?;
            let result = match existing {
                Some(mut config_map) => {
                    config_map.data.get_or_insert_with(BTreeMap::new).insert("status".into(), status_yaml.into());
                    config_map
                        .metadata
                        .annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(STATUS_LAST_UPDATED_ANNOTATION.into(), last_updated.into());
                    api.replace(name, &PostParams::default(), &config_map).await
                }
                None => {
                    let config_map = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(name.into()),
                            namespace: Some(namespace.into()),
                            annotations: Some(BTreeMap::from([(
                                STATUS_LAST_UPDATED_ANNOTATION.into(),
                                last_updated.into(),
                            )])),
                            ..Default::default()
                        },
                        data: Some(BTreeMap::from([("status".into(), status_yaml.into())])),
                        ..Default::default()
                    };
                    api.create(&PostParams::default(), &config_map).await
                }
            };
            match result {
                Ok(_) => return Ok(()),
                Err(e) if api_status(&e) == Some(409) && Instant::now() < deadline => {
                    tokio::time::sleep(self.options.conflict_retry_interval).await;
                }
                Err(e) => return Err(port_error(e, "ConfigMap", name)),
            }
        }
    }

    async fn update_hpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        let api: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
            Api::namespaced(self.clients.client.clone(), namespace);
        let patch = json!({"status": status});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| port_error(e, "HorizontalPodAutoscaler", name))?;
        Ok(())
    }

    async fn update_wpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: crate::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        let api: Api<crate::hpa::wpa::WatermarkPodAutoscaler> = Api::namespaced(self.clients.client.clone(), namespace);
        let patch = json!({"status": status});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| port_error(e, "WatermarkPodAutoscaler", name))?;
        Ok(())
    }

    /// Queued for the event writer: the loop never waits on the API server for an event.
    async fn record_event(&self, event: Event) -> Result<(), PortError> {
        self.events.record(event);
        Ok(())
    }
}
