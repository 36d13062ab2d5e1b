//! The resources the fake API server knows, and the discovery documents built from them.

use serde_json::{Value, json};

/// One REST resource: where it lives, what it is called, and which subresources it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group; `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Subresources served: `status`, `scale`, `eviction`.
    pub subresources: &'static [&'static str],
    /// Served (and discoverable) only when the server was built with it enabled.
    pub optional: bool,
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_string() } else { format!("{}/{}", self.group, self.version) }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `pods` or `deployments.apps`: how the API server names a resource in error messages.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() { self.plural.to_string() } else { format!("{}.{}", self.plural, self.group) }
    }

    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.contains(&name)
    }
}

const NO_SHORT: &[&str] = &[];

macro_rules! res {
    ($group:expr, $version:expr, $plural:expr, $singular:expr, $kind:expr, $namespaced:expr, $short:expr, $sub:expr) => {
        ResourceDef {
            group: $group,
            version: $version,
            plural: $plural,
            singular: $singular,
            kind: $kind,
            namespaced: $namespaced,
            short_names: $short,
            subresources: $sub,
            optional: false,
        }
    };
}

/// Every resource served. Identified elsewhere by its index in this table.
pub const RESOURCES: &[ResourceDef] = &[
    res!("", "v1", "nodes", "node", "Node", false, &["no"], &["status"]),
    res!("", "v1", "pods", "pod", "Pod", true, &["po"], &["status", "eviction"]),
    res!("", "v1", "configmaps", "configmap", "ConfigMap", true, &["cm"], &[]),
    res!("", "v1", "events", "event", "Event", true, &["ev"], &[]),
    res!("", "v1", "namespaces", "namespace", "Namespace", false, &["ns"], &["status"]),
    res!(
        "",
        "v1",
        "replicationcontrollers",
        "replicationcontroller",
        "ReplicationController",
        true,
        &["rc"],
        &["status", "scale"]
    ),
    res!("apps", "v1", "deployments", "deployment", "Deployment", true, &["deploy"], &["status", "scale"]),
    res!("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, &["rs"], &["status", "scale"]),
    res!("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, &["sts"], &["status", "scale"]),
    res!("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true, &["ds"], &["status"]),
    res!("batch", "v1", "jobs", "job", "Job", true, NO_SHORT, &["status"]),
    res!(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &["status"]
    ),
    res!("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, NO_SHORT, &[]),
    res!("events.k8s.io", "v1", "events", "event", "Event", true, &["ev"], &[]),
    res!(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        &["status"]
    ),
    // What the scheduler's volume filters read (claims, volumes, classes, CSI attach limits).
    res!(
        "",
        "v1",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &["status"]
    ),
    res!("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false, &["pv"], &["status"]),
    res!("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", false, &["sc"], &[]),
    res!("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", false, NO_SHORT, &[]),
    ResourceDef {
        group: "datadoghq.com",
        version: "v1alpha1",
        plural: "watermarkpodautoscalers",
        singular: "watermarkpodautoscaler",
        kind: "WatermarkPodAutoscaler",
        namespaced: true,
        short_names: &["wpa"],
        subresources: &["status"],
        optional: true,
    },
    // Cluster API (`FakeApiServerBuilder::cluster_api`): v1beta2 first, so a server serving
    // both prefers it, as Cluster API 1.11+ does.
    capi("v1beta2", "machinedeployments", "machinedeployment", "MachineDeployment", &["md"], &["status", "scale"]),
    capi("v1beta2", "machinesets", "machineset", "MachineSet", &["ms"], &["status", "scale"]),
    capi("v1beta2", "machinepools", "machinepool", "MachinePool", &["mp"], &["status", "scale"]),
    capi("v1beta2", "machines", "machine", "Machine", &["ma"], &["status"]),
    capi("v1beta1", "machinedeployments", "machinedeployment", "MachineDeployment", &["md"], &["status", "scale"]),
    capi("v1beta1", "machinesets", "machineset", "MachineSet", &["ms"], &["status", "scale"]),
    capi("v1beta1", "machinepools", "machinepool", "MachinePool", &["mp"], &["status", "scale"]),
    capi("v1beta1", "machines", "machine", "Machine", &["ma"], &["status"]),
    // An infrastructure provider's machine template (Cluster API's Docker provider, CAPD).
    ResourceDef {
        group: INFRASTRUCTURE_GROUP,
        version: "v1beta1",
        plural: "dockermachinetemplates",
        singular: "dockermachinetemplate",
        kind: "DockerMachineTemplate",
        namespaced: true,
        short_names: NO_SHORT,
        subresources: &[],
        optional: true,
    },
];

/// The Cluster API group.
pub const CLUSTER_API_GROUP: &str = "cluster.x-k8s.io";
/// The group of Cluster API infrastructure providers' resources.
pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";

const fn capi(
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
) -> ResourceDef {
    ResourceDef {
        group: CLUSTER_API_GROUP,
        version,
        plural,
        singular,
        kind,
        namespaced: true,
        short_names,
        subresources,
        optional: true,
    }
}

/// Which resources a server instance serves (optional ones only when enabled).
#[derive(Debug, Clone, Copy, Default)]
pub struct Catalog {
    pub watermark_pod_autoscalers: bool,
    /// Cluster API `v1beta1` and the infrastructure template kind.
    pub cluster_api: bool,
    /// Cluster API `v1beta2` (preferred when both are served) and the infrastructure template kind.
    pub cluster_api_v1beta2: bool,
}

impl Catalog {
    pub fn served(&self, index: usize) -> bool {
        let def = &RESOURCES[index];
        !def.optional
            || (def.plural == "watermarkpodautoscalers" && self.watermark_pod_autoscalers)
            || (def.group == CLUSTER_API_GROUP && def.version == "v1beta1" && self.cluster_api)
            || (def.group == CLUSTER_API_GROUP && def.version == "v1beta2" && self.cluster_api_v1beta2)
            || (def.group == INFRASTRUCTURE_GROUP && (self.cluster_api || self.cluster_api_v1beta2))
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<usize> {
        RESOURCES
            .iter()
            .position(|r| r.group == group && r.version == version && r.plural == plural)
            .filter(|&i| self.served(i))
    }

    /// The resource of an object by its `apiVersion` and `kind`.
    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        RESOURCES.iter().position(|r| r.api_version() == api_version && r.kind == kind).filter(|&i| self.served(i))
    }

    fn served_defs(&self) -> impl Iterator<Item = &'static ResourceDef> + '_ {
        RESOURCES.iter().enumerate().filter(|(i, _)| self.served(*i)).map(|(_, r)| r)
    }

    /// Served `(group, version)` pairs of the named groups, in table order, without repeats.
    fn group_versions(&self) -> Vec<(&'static str, &'static str)> {
        let mut out: Vec<(&str, &str)> = Vec::new();
        for r in self.served_defs().filter(|r| !r.group.is_empty()) {
            if !out.contains(&(r.group, r.version)) {
                out.push((r.group, r.version));
            }
        }
        out
    }

    /// `GET /api`.
    pub fn core_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    fn group_doc(group: &str, versions: &[&str]) -> Value {
        let versions: Vec<Value> =
            versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
        json!({
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": versions,
            "preferredVersion": versions[0].clone(),
        })
    }

    /// `GET /apis`.
    pub fn group_list(&self) -> Value {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for (g, v) in self.group_versions() {
            match groups.iter_mut().find(|(name, _)| *name == g) {
                Some((_, versions)) => versions.push(v),
                None => groups.push((g, vec![v])),
            }
        }
        let groups: Vec<Value> = groups
            .iter()
            .map(|(g, vs)| {
                let mut doc = Self::group_doc(g, vs);
                let obj = doc.as_object_mut().expect("group doc is an object");
                obj.remove("kind");
                obj.remove("apiVersion");
                doc
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/{group}`.
    pub fn group(&self, group: &str) -> Option<Value> {
        let versions: Vec<&str> =
            self.group_versions().into_iter().filter(|(g, _)| *g == group).map(|(_, v)| v).collect();
        (!versions.is_empty()).then(|| Self::group_doc(group, &versions))
    }

    /// `GET /api/v1` or `GET /apis/{group}/{version}`.
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let defs: Vec<&ResourceDef> = self.served_defs().filter(|r| r.group == group && r.version == version).collect();
        if defs.is_empty() {
            return None;
        }
        let mut resources = Vec::new();
        for r in defs {
            resources.push(json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": r.short_names,
            }));
            for sub in r.subresources {
                let (kind, sub_group, sub_version, verbs) = match *sub {
                    "scale" => ("Scale", "autoscaling", "v1", vec!["get", "patch", "update"]),
                    "eviction" => ("Eviction", "policy", "v1", vec!["create"]),
                    _ => (r.kind, r.group, r.version, vec!["get", "patch", "update"]),
                };
                resources.push(json!({
                    "name": format!("{}/{}", r.plural, sub),
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "group": sub_group,
                    "version": sub_version,
                    "kind": kind,
                    "verbs": verbs,
                }));
            }
        }
        let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
        )
    }
}

/// `GET /version`.
pub fn version_doc() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}
