//! What of an observed object the autoscaler keeps. Objects from the API server (the
//! controller's watches, `plan`'s live reads) and from dumps are trimmed as they arrive to the
//! parts a decision reads: on a large cluster most of a pod's bytes are its containers'
//! environment, commands and probes, `managedFields` and kubectl's last-applied copy of the
//! whole object, the containers' states, volumes of kinds nothing reads, and a node's list of
//! cached images. None of these is read by the scheduler's filters, the drain rules, the pod
//! autoscalers or the reports.

use std::any::Any;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// kubectl's copy of the object as last applied: as big as the object, never read.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Trims `object` (of any kind) to what the autoscaler reads.
pub fn compact<K: kube::Resource + Any>(object: &mut K) {
    compact_meta(object.meta_mut());
    let object = object as &mut dyn Any;
    if let Some(pod) = object.downcast_mut::<Pod>() {
        compact_pod(pod);
    } else if let Some(node) = object.downcast_mut::<Node>() {
        compact_node(node);
    } else if let Some(rs) = object.downcast_mut::<ReplicaSet>()
        && owned_by_deployment(&rs.metadata)
    {
        // Only its name, owner, replicas and selector are read (the drain rules, a pod
        // autoscaler's status); labels and annotations repeat the Deployment's.
        workload_meta(&mut rs.metadata);
        rs.metadata.labels = None;
        if let Some(spec) = rs.spec.as_mut() {
            spec.template = None;
        }
        if let Some(status) = rs.status.as_mut() {
            status.conditions = None;
        }
    } else if let Some(deployment) = object.downcast_mut::<Deployment>() {
        // Its replicas, selector and template are read (a pod autoscaler's target).
        workload_meta(&mut deployment.metadata);
        if let Some(status) = deployment.status.as_mut() {
            status.conditions = None;
        }
        if let Some(spec) = deployment.spec.as_mut() {
            compact_template(&mut spec.template);
        }
    } else if let Some(template) = pod_template(object) {
        compact_template(template);
    }
}

/// A Deployment's or its ReplicaSet's metadata keeps only the annotations the autoscaler reads
/// (its own keys, as on pods): `deployment.kubernetes.io/revision`, Helm's release names and
/// the like are on every one of them, thousands on a large cluster, and read by nothing here.
fn workload_meta(meta: &mut ObjectMeta) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.retain(|key, _| simulator::pod::read_annotation(key));
    }
    if meta.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        meta.annotations = None;
    }
}

/// Whether a Deployment controls this object. A Deployment's ReplicaSets (the live one and
/// the old ones it keeps for rollbacks, up to `revisionHistoryLimit`, 10 by default) each
/// repeat a pod template, and no decision reads it: pods are anticipated from the template of
/// a pod autoscaler's target, and an autoscaler that targets a Deployment's ReplicaSet
/// directly is undone by the Deployment (it sets the ReplicaSet's replicas back), so no pods
/// are anticipated for it (`podscaling`). On a cluster of 5,569 Deployments that was about
/// 5 KB per ReplicaSet kept for nothing.
fn owned_by_deployment(meta: &ObjectMeta) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.kind == "Deployment")
}

/// The pod template of a workload (the pod autoscalers' anticipated pods are made from it).
fn pod_template(object: &mut dyn Any) -> Option<&mut PodTemplateSpec> {
    if object.is::<ReplicaSet>() {
        return object.downcast_mut::<ReplicaSet>()?.spec.as_mut().and_then(|s| s.template.as_mut());
    }
    if object.is::<StatefulSet>() {
        return object.downcast_mut::<StatefulSet>()?.spec.as_mut().map(|s| &mut s.template);
    }
    if object.is::<DaemonSet>() {
        return object.downcast_mut::<DaemonSet>()?.spec.as_mut().map(|s| &mut s.template);
    }
    if object.is::<Job>() {
        return object.downcast_mut::<Job>()?.spec.as_mut().map(|s| &mut s.template);
    }
    if object.is::<ReplicationController>() {
        return object.downcast_mut::<ReplicationController>()?.spec.as_mut().and_then(|s| s.template.as_mut());
    }
    None
}

/// A workload's pod template keeps what its pods keep.
fn compact_template(template: &mut PodTemplateSpec) {
    if let Some(meta) = template.metadata.as_mut() {
        compact_meta(meta);
    }
    if let Some(spec) = template.spec.as_mut() {
        compact_pod_spec(spec);
    }
}

fn compact_meta(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
    shrink(&mut meta.owner_references);
}

/// Parsed lists grow by doubling (JSON says nothing of their length): a pod's one owner
/// reference takes room for four, its five conditions room for eight. Kept for the object's
/// life, that slack was about 1.9 KB of a typical pod's 14.4 KB.
fn shrink<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
}

/// The pod conditions decisions read: `Ready` (the pod autoscalers' readiness) and
/// `PodScheduled` (unschedulable pods). The kubelet's `Initialized`, `ContainersReady` and
/// `PodReadyToStartContainers` are on every running pod and read by nothing here.
fn read_condition(type_: &str) -> bool {
    !matches!(type_, "Initialized" | "ContainersReady" | "PodReadyToStartContainers")
}

/// Containers keep their name, image, resources, ports (host ports are a scheduling filter) and
/// restart policy (a sidecar's is); the rest only matters to the kubelet. Workloads' pod
/// templates are trimmed the same way.
/// The status keeps its phase, the conditions decisions read, start time and nominated node; the containers'
/// states and the pod's addresses are the kubelet's.
/// Volumes keep the kinds decisions read: claims and ephemeral claims (the scheduler's volume
/// filters) and local storage (hostPath, emptyDir: the drain rules). The others — service
/// account tokens, ConfigMaps, Secrets, downward API, on nearly every pod — go: each entry is
/// about 3 KB of mostly empty fields in memory.
fn compact_pod(pod: &mut Pod) {
    if let Some(status) = pod.status.as_mut() {
        status.container_statuses = None;
        status.init_container_statuses = None;
        status.ephemeral_container_statuses = None;
        status.pod_ips = None;
        status.host_ips = None;
        if let Some(conditions) = status.conditions.as_mut() {
            conditions.retain(|c| read_condition(&c.type_));
        }
        shrink(&mut status.conditions);
    }
    if let Some(spec) = pod.spec.as_mut() {
        compact_pod_spec(spec);
    }
}

fn compact_pod_spec(spec: &mut PodSpec) {
    if let Some(volumes) = spec.volumes.as_mut() {
        // The unread sources go from a volume that also has a read one (malformed, but
        // possible in a dump), as the lean parser never reads them (`kube_adapter::lean`).
        for v in volumes.iter_mut() {
            (v.projected, v.config_map, v.secret, v.downward_api) = (None, None, None, None);
        }
        volumes.retain(|v| {
            v.persistent_volume_claim.is_some()
                || v.ephemeral.is_some()
                || v.host_path.is_some()
                || v.empty_dir.is_some()
        });
    }
    shrink(&mut spec.volumes);
    shrink(&mut spec.tolerations);
    shrink(&mut spec.topology_spread_constraints);
    shrink(&mut spec.init_containers);
    spec.containers.shrink_to_fit();
    let containers = spec.containers.iter_mut().chain(spec.init_containers.iter_mut().flatten());
    containers.for_each(compact_container);
}

fn compact_container(container: &mut Container) {
    container.env = None;
    container.env_from = None;
    container.command = None;
    container.args = None;
    container.liveness_probe = None;
    container.readiness_probe = None;
    container.startup_probe = None;
    container.lifecycle = None;
    container.volume_mounts = None;
    container.volume_devices = None;
    container.security_context = None;
    shrink(&mut container.ports);
}

/// A node keeps everything but the images its kubelet has cached (dozens of names per node).
fn compact_node(node: &mut Node) {
    if let Some(status) = node.status.as_mut() {
        status.images = None;
        shrink(&mut status.conditions);
        shrink(&mut status.addresses);
    }
    if let Some(spec) = node.spec.as_mut() {
        shrink(&mut spec.taints);
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ConfigMapVolumeSource, EmptyDirVolumeSource, EnvVar, NodeStatus, PersistentVolumeClaimVolumeSource,
        PodCondition, PodSpec, PodStatus, ProjectedVolumeSource, ResourceRequirements, Volume,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    #[test]
    fn pods_keep_what_decisions_read_and_lose_the_rest() {
        let container = Container {
            name: "c".into(),
            env: Some(vec![EnvVar { name: "A".into(), ..Default::default() }]),
            command: Some(vec!["run".into()]),
            resources: Some(ResourceRequirements {
                requests: Some([("cpu".to_string(), Quantity("1".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut pod = Pod {
            metadata: ObjectMeta {
                annotations: Some(
                    [(LAST_APPLIED.to_string(), "{}".to_string()), ("keep".to_string(), "me".to_string())].into(),
                ),
                managed_fields: Some(vec![Default::default()]),
                owner_references: Some(vec![Default::default()]),
                ..Default::default()
            },
            status: Some(PodStatus {
                conditions: Some(
                    ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
                        .map(|t| PodCondition { type_: t.into(), status: "True".into(), ..Default::default() })
                        .into(),
                ),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![container.clone()],
                init_containers: Some(vec![container]),
                volumes: Some(vec![
                    Volume {
                        name: "token".into(),
                        projected: Some(ProjectedVolumeSource::default()),
                        ..Default::default()
                    },
                    Volume {
                        name: "data".into(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource::default()),
                        ..Default::default()
                    },
                    Volume {
                        name: "config".into(),
                        config_map: Some(ConfigMapVolumeSource::default()),
                        ..Default::default()
                    },
                    Volume {
                        name: "scratch".into(),
                        empty_dir: Some(EmptyDirVolumeSource::default()),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
        };
        let mut tolerations = Vec::with_capacity(8);
        tolerations.push(Default::default());
        pod.spec.as_mut().unwrap().tolerations = Some(tolerations);
        compact(&mut pod);
        let kept = pod.spec.as_ref().and_then(|s| s.tolerations.as_ref()).unwrap();
        assert_eq!((kept.len(), kept.capacity()), (1, 1), "lists keep no empty room");
        assert_eq!(pod.metadata.managed_fields, None);
        assert_eq!(
            pod.metadata.annotations.as_ref().map(|a| a.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["keep".to_string()])
        );
        let owners = pod.metadata.owner_references.unwrap();
        assert_eq!((owners.len(), owners.capacity()), (1, 1), "no room kept for more");
        let conditions = pod.status.unwrap().conditions.unwrap();
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "PodScheduled"]);
        assert_eq!(conditions.capacity(), 2);
        let spec = pod.spec.unwrap();
        let volumes: Vec<&str> = spec.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
        assert_eq!(volumes, ["data", "scratch"], "claims and local storage are read; the rest is not");
        for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
            assert_eq!((c.env.as_ref(), c.command.as_ref()), (None, None));
            assert!(c.resources.as_ref().and_then(|r| r.requests.as_ref()).is_some_and(|r| r.contains_key("cpu")));
        }
        let mut deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {
                "deployment.kubernetes.io/revision": "4", "cluster-autoscaler.kubernetes.io/x": "y"}},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "app", "env": [{"name": "A"}], "resources": {"requests": {"cpu": "1"}}}
            ]}}},
        }))
        .unwrap();
        compact(&mut deployment);
        let annotations = deployment.metadata.annotations.take().unwrap_or_default();
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["cluster-autoscaler.kubernetes.io/x"], "only ours");
        assert!(deployment.metadata.labels.is_some());
        let template = deployment.spec.unwrap().template.spec.unwrap();
        assert_eq!(template.containers[0].env, None, "workloads' pod templates are trimmed as pods are");
        assert!(template.containers[0].resources.is_some());
        let replicaset = |owner_kind: &str| -> ReplicaSet {
            let mut rs: ReplicaSet = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web-5d8f", "labels": {"app": "web"},
                    "annotations": {"deployment.kubernetes.io/revision": "4"}, "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": owner_kind, "name": "web", "uid": "u", "controller": true}]},
                "spec": {"replicas": 3, "selector": {}, "template": {"spec": {"containers": [
                    {"name": "app", "env": [{"name": "A"}], "resources": {"requests": {"cpu": "1"}}}
                ]}}},
            }))
            .unwrap();
            compact(&mut rs);
            rs
        };
        let of_deployment = replicaset("Deployment");
        assert_eq!((of_deployment.metadata.labels, of_deployment.metadata.annotations), (None, None));
        let spec = of_deployment.spec.unwrap();
        assert_eq!((spec.replicas, spec.template), (Some(3), None), "a Deployment's ReplicaSet");
        let other = replicaset("Other");
        assert!(other.metadata.labels.is_some() && other.metadata.annotations.is_some(), "kept whole");
        let template = other.spec.unwrap().template.unwrap().spec.unwrap();
        assert_eq!(template.containers[0].env, None, "any other ReplicaSet keeps its template, trimmed");
        assert!(template.containers[0].resources.is_some());
        let mut node = Node {
            status: Some(NodeStatus { images: Some(vec![Default::default()]), ..Default::default() }),
            ..Default::default()
        };
        compact(&mut node);
        assert_eq!(node.status.unwrap().images, None);
    }
}
