//! The management cluster's API, as this provider uses it: discovery of the Cluster API version
//! and of infrastructure template kinds, one paginated list per kind per refresh, the `scale`
//! subresource, the delete-machine annotation and Events. Nothing else is called, so the RBAC
//! rules in `deploy/` are exactly these calls.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

use cloudprovider::{CloudProviderError, Result};

use crate::error::{api_error, is_conflict};
use crate::snapshot::{InfraInfo, InfraRef, Kind, Listing, Rejected};

/// Items per list page.
const PAGE: u32 = 500;
/// How long a failed look-up of an infrastructure kind is remembered before it is tried again.
const KIND_RETRY: Duration = Duration::from_secs(60);
/// The component Events are reported as (upstream's).
pub const COMPONENT: &str = "cluster-autoscaler";

/// A resolved Cluster API version and the kinds it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub group: String,
    pub version: String,
    pub machine_deployments: bool,
    pub machine_pools: bool,
}

/// An infrastructure kind as a reference names it: `(group, version if named, kind)`.
type KindKey = (String, Option<String>, String);
/// A kind's resource, or when its look-up failed and why.
type KindLookups = HashMap<KindKey, std::result::Result<ApiResource, (Instant, String)>>;

pub struct ManagementApi {
    client: kube::Client,
    served: Served,
    infra_kinds: Mutex<KindLookups>,
}

impl ManagementApi {
    /// Finds the Cluster API version to use (`version`, or the group's preferred one) and which
    /// kinds it serves. MachineSets and Machines are required; MachineDeployments and
    /// MachinePools are used when served, as upstream.
    pub async fn connect(client: kube::Client, group: &str, version: Option<&str>) -> Result<ManagementApi, String> {
        let version = match version {
            Some(v) => v.to_string(),
            None => {
                let groups = client
                    .list_api_groups()
                    .await
                    .map_err(|e| format!("cannot list the management cluster's API groups: {e}"))?;
                let found = groups.groups.into_iter().find(|g| g.name == group).ok_or_else(|| {
                    format!("the management cluster serves no {group} API group: is Cluster API installed there?")
                })?;
                found
                    .preferred_version
                    .or_else(|| found.versions.into_iter().next())
                    .map(|v| v.version)
                    .ok_or_else(|| format!("the management cluster's {group} API group has no version"))?
            }
        };
        let resources = client
            .list_api_group_resources(&format!("{group}/{version}"))
            .await
            .map_err(|e| format!("cannot list the resources of {group}/{version} on the management cluster: {e}"))?;
        let names: BTreeSet<&str> = resources.resources.iter().map(|r| r.name.as_str()).collect();
        for required in ["machinesets", "machines"] {
            if !names.contains(required) {
                return Err(format!("the management cluster's {group}/{version} serves no {required}"));
            }
        }
        let served = Served {
            group: group.to_string(),
            version: version.clone(),
            machine_deployments: names.contains("machinedeployments"),
            machine_pools: names.contains("machinepools"),
        };
        tracing::info!(group, version = %version, machine_deployments = served.machine_deployments, machine_pools = served.machine_pools, "using the management cluster's Cluster API");
        Ok(ManagementApi { client, served, infra_kinds: Mutex::new(HashMap::new()) })
    }

    pub fn served(&self) -> &Served {
        &self.served
    }

    fn resource(&self, kind: &str, plural: &str) -> ApiResource {
        let gvk = GroupVersionKind::gvk(&self.served.group, &self.served.version, kind);
        ApiResource::from_gvk_with_plural(&gvk, plural)
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Every object of a resource in `namespaces` (every namespace with `None`), page by page.
    async fn list(&self, resource: &ApiResource, namespaces: Option<&BTreeSet<String>>) -> Result<Vec<DynamicObject>> {
        let scopes: Vec<Option<&str>> = match namespaces {
            Some(set) => set.iter().map(|ns| Some(ns.as_str())).collect(),
            None => vec![None],
        };
        let mut out = Vec::new();
        for scope in scopes {
            let api = self.api(resource, scope);
            let mut params = ListParams::default().limit(PAGE);
            loop {
                let page = api
                    .list(&params)
                    .await
                    .map_err(|e| api_error(&format!("listing {}.{}", resource.plural, resource.group), e))?;
                out.extend(page.items);
                match page.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
        }
        Ok(out)
    }

    /// The scalable resources and Machines, one list per kind (concurrently).
    pub async fn list_all(&self, namespaces: Option<&BTreeSet<String>>) -> Result<Listing> {
        let md = self.resource("MachineDeployment", "machinedeployments");
        let ms = self.resource("MachineSet", "machinesets");
        let mp = self.resource("MachinePool", "machinepools");
        let machines = self.resource("Machine", "machines");
        let (machine_deployments, machine_sets, machine_pools, machines) = futures::try_join!(
            async { if self.served.machine_deployments { self.list(&md, namespaces).await } else { Ok(Vec::new()) } },
            self.list(&ms, namespaces),
            async { if self.served.machine_pools { self.list(&mp, namespaces).await } else { Ok(Vec::new()) } },
            self.list(&machines, namespaces),
        )?;
        Ok(Listing { machine_deployments, machine_sets, machine_pools, machines })
    }

    /// The resource serving an infrastructure kind: the reference's version, or (a `v1beta2`
    /// reference names only the group) the first version of the group that serves the kind.
    async fn infra_resource(&self, reference: &InfraRef) -> std::result::Result<ApiResource, String> {
        let cache_key = (reference.group.clone(), reference.version.clone(), reference.kind.clone());
        if let Some(known) = self.lock_kinds().get(&cache_key) {
            match known {
                Ok(resource) => return Ok(resource.clone()),
                Err((at, why)) if at.elapsed() < KIND_RETRY => return Err(why.clone()),
                Err(_) => {}
            }
        }
        let found = self.discover_kind(reference).await;
        self.lock_kinds().insert(cache_key, found.clone().map_err(|why| (Instant::now(), why)));
        found
    }

    fn lock_kinds(&self) -> std::sync::MutexGuard<'_, KindLookups> {
        self.infra_kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn discover_kind(&self, reference: &InfraRef) -> std::result::Result<ApiResource, String> {
        let versions = match &reference.version {
            Some(version) => vec![version.clone()],
            None => {
                let groups = self.client.list_api_groups().await.map_err(|e| format!("listing API groups: {e}"))?;
                let group = groups
                    .groups
                    .into_iter()
                    .find(|g| g.name == reference.group)
                    .ok_or_else(|| format!("the management cluster serves no {} API group", reference.group))?;
                // The preferred version first, then the others in the server's order.
                let mut versions: Vec<String> = group.preferred_version.iter().map(|v| v.version.clone()).collect();
                for version in group.versions.into_iter().map(|v| v.version) {
                    if !versions.contains(&version) {
                        versions.push(version);
                    }
                }
                versions
            }
        };
        for version in versions {
            let api_version =
                if reference.group.is_empty() { version.clone() } else { format!("{}/{version}", reference.group) };
            let resources = self
                .client
                .list_api_group_resources(&api_version)
                .await
                .map_err(|e| format!("listing the resources of {api_version}: {e}"))?;
            if let Some(found) = resources.resources.iter().find(|r| r.kind == reference.kind && !r.name.contains('/'))
            {
                let gvk = GroupVersionKind::gvk(&reference.group, &version, &reference.kind);
                return Ok(ApiResource::from_gvk_with_plural(&gvk, &found.name));
            }
        }
        Err(format!("no version of {} serves the kind {}", reference.group, reference.kind))
    }

    /// The infrastructure templates the groups refer to: one list per kind. A kind that cannot
    /// be resolved or listed leaves its groups with their annotations only (as upstream, where
    /// a template that cannot be read does not stop scale from zero by annotations); the
    /// returned warnings say why.
    pub async fn infra_templates(
        &self,
        references: &[InfraRef],
        namespaces: Option<&BTreeSet<String>>,
    ) -> (HashMap<InfraRef, InfraInfo>, Vec<String>) {
        let mut by_resource: BTreeMap<(String, String, String), (ApiResource, Vec<&InfraRef>)> = BTreeMap::new();
        let mut warnings = Vec::new();
        for reference in references {
            match self.infra_resource(reference).await {
                Ok(resource) => {
                    let key = (resource.group.clone(), resource.version.clone(), resource.plural.clone());
                    by_resource.entry(key).or_insert_with(|| (resource, Vec::new())).1.push(reference);
                }
                Err(why) => warnings.push(format!(
                    "infrastructure template {} {}/{}: {why}",
                    reference.kind, reference.namespace, reference.name
                )),
            }
        }
        let mut found = HashMap::new();
        for (resource, wanted) in by_resource.into_values() {
            let objects = match self.list(&resource, namespaces).await {
                Ok(objects) => objects,
                Err(e) => {
                    warnings.push(format!("infrastructure templates {}: {e}", resource.plural));
                    continue;
                }
            };
            let by_key: HashMap<(String, String), &DynamicObject> =
                objects.iter().map(|o| (crate::object::key_of(o), o)).collect();
            for reference in wanted {
                match by_key.get(&(reference.namespace.clone(), reference.name.clone())) {
                    Some(object) => {
                        found.insert(reference.clone(), InfraInfo::from_object(object));
                    }
                    None => warnings.push(format!(
                        "infrastructure template {} {}/{} not found",
                        reference.kind, reference.namespace, reference.name
                    )),
                }
            }
        }
        (found, warnings)
    }

    /// The scale subresource now: `(spec.replicas, resourceVersion)`.
    pub async fn get_scale(&self, kind: Kind, namespace: &str, name: &str) -> Result<(usize, Option<String>)> {
        let api = self.api(&self.resource(kind.as_str(), kind.plural()), Some(namespace));
        let scale = api
            .get_scale(name)
            .await
            .map_err(|e| api_error(&format!("reading the scale of {} {namespace}/{name}", kind.as_str()), e))?;
        let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
        Ok((usize::try_from(replicas).unwrap_or(0), scale.metadata.resource_version))
    }

    /// Sets `spec.replicas` through the scale subresource, as upstream (a merge patch), with the
    /// resourceVersion it was read at as a precondition, so a change by someone else in between
    /// is not overwritten: the caller reads again and decides again.
    pub async fn patch_scale(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        replicas: usize,
        resource_version: Option<&str>,
    ) -> std::result::Result<(), kube::Error> {
        let api = self.api(&self.resource(kind.as_str(), kind.plural()), Some(namespace));
        let mut patch = json!({"spec": {"replicas": replicas}});
        if let Some(version) = resource_version {
            patch["metadata"] = json!({"resourceVersion": version});
        }
        api.patch_scale(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
    }

    /// Sets (`Some`) or removes (`None`) one annotation of a Machine (a merge patch: the other
    /// annotations are untouched).
    pub async fn annotate_machine(&self, namespace: &str, name: &str, key: &str, value: Option<&str>) -> Result<()> {
        let api = self.api(&self.resource("Machine", "machines"), Some(namespace));
        let patch = json!({"metadata": {"annotations": {key: value}}});
        let what = if value.is_some() { "marking" } else { "unmarking" };
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|e| api_error(&format!("{what} Machine {namespace}/{name} ({key})"), e))
    }

    /// A Warning Event on a resource that cannot be a node group, where `kubectl describe`
    /// shows it.
    pub async fn warn(&self, rejected: &Rejected, reason: &str, message: &str) -> Result<()> {
        let now = Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", rejected.name, now.as_nanosecond())),
                namespace: Some(rejected.namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some(format!("{}/{}", self.served.group, self.served.version)),
                kind: Some(rejected.kind.as_str().to_string()),
                name: Some(rejected.name.clone()),
                namespace: Some(rejected.namespace.clone()),
                uid: rejected.uid.clone(),
                resource_version: rejected.resource_version.clone(),
                ..Default::default()
            },
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some("Warning".to_string()),
            source: Some(EventSource { component: Some(COMPONENT.to_string()), host: None }),
            reporting_component: Some(COMPONENT.to_string()),
            reporting_instance: Some(COMPONENT.to_string()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: None::<MicroTime>,
            count: Some(1),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &rejected.namespace);
        api.create(&PostParams::default(), &event).await.map(|_| ()).map_err(|e| {
            api_error(
                &format!("recording an Event on {} {}/{}", rejected.kind.as_str(), rejected.namespace, rejected.name),
                e,
            )
        })
    }
}

/// Reads the scale, computes the new size with `decide` (which may refuse), and writes it with
/// the read's resourceVersion; a 409 (someone changed the resource in between) reads and
/// decides once more. Returns the size written.
pub async fn change_scale(
    api: &ManagementApi,
    kind: Kind,
    namespace: &str,
    name: &str,
    decide: impl Fn(usize) -> Result<usize>,
) -> Result<usize> {
    let what = format!("scaling {} {namespace}/{name}", kind.as_str());
    let mut attempt = 0;
    loop {
        let (current, version) = api.get_scale(kind, namespace, name).await?;
        let target = decide(current)?;
        match api.patch_scale(kind, namespace, name, target, version.as_deref()).await {
            Ok(()) => {
                tracing::info!(resource = %format!("{}/{namespace}/{name}", kind.as_str()), from = current, to = target, "replicas set");
                return Ok(target);
            }
            Err(e) if is_conflict(&e) && attempt == 0 => attempt += 1,
            Err(e) => return Err(api_error(&what, e)),
        }
    }
}

/// A refusal of the seam (a request outside the group's bounds).
pub fn refuse(message: String) -> CloudProviderError {
    CloudProviderError::InvalidRequest(message)
}
