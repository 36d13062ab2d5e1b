//! One refresh's view of the management cluster: the node groups (MachineDeployments,
//! MachineSets no MachineDeployment owns, MachinePools) that discovery allows and whose
//! annotations make them autoscaled, their instances, and the indexes that map a Node to its
//! Machine and group. Built from plain lists by pure functions, so every rule is testable
//! without an API server.

use std::collections::{BTreeMap, HashMap};

use cloudprovider::{Instance, InstanceErrorClass, InstanceErrorInfo, InstanceState, InstanceStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::annotations::{GroupConfig, Problem, Verdict, read_group};
use crate::discovery::Discovery;
use crate::keys::{self, Keys};
use crate::object::{
    ObjectKey, annotations, cluster_name, is_deleting, key_of, labels, normalized_provider_id, owner_of_kind,
    selector_matches, str_at, value_at,
};

/// Instance IDs upstream gives Machines that are not running nodes, so the core can count them
/// (and name them back to [`Snapshot::machine_for`] when it deletes them).
pub const FAILED_PREFIX: &str = "failed-machine-";
pub const DELETING_PREFIX: &str = "deleting-machine-";
pub const PENDING_PREFIX: &str = "pending-machine-";

/// Upstream's instance error code for a Machine that failed before it got a node.
pub const PROVISIONING_FAILED: &str = "ProvisioningFailed";
/// Upstream's instance error code for a failed Machine being deleted.
pub const DELETING_FAILED: &str = "DeletingFailed";

/// The kinds of scalable resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    MachineDeployment,
    MachineSet,
    MachinePool,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::MachineDeployment => "MachineDeployment",
            Kind::MachineSet => "MachineSet",
            Kind::MachinePool => "MachinePool",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Kind::MachineDeployment => "machinedeployments",
            Kind::MachineSet => "machinesets",
            Kind::MachinePool => "machinepools",
        }
    }
}

/// A node group's ID, upstream's: `<Kind>/<namespace>/<name>`.
pub fn group_id(kind: Kind, namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", kind.as_str())
}

/// `<prefix><namespace>_<name>`: `_` cannot occur in a namespace, so the key can be read back.
fn fake_id(prefix: &str, key: &ObjectKey) -> String {
    format!("{prefix}{}_{}", key.0, key.1)
}

/// The Machine a fake instance ID (`pending-machine-<ns>_<name>`, …) stands for.
pub fn machine_key_of_fake_id(id: &str) -> Option<ObjectKey> {
    let rest = [FAILED_PREFIX, DELETING_PREFIX, PENDING_PREFIX].iter().find_map(|p| id.strip_prefix(p))?;
    let (namespace, name) = rest.split_once('_')?;
    Some((namespace.to_string(), name.to_string()))
}

/// Whether an instance ID is a real providerID (a running Machine's) rather than a fake one.
pub fn is_real_instance_id(id: &str) -> bool {
    machine_key_of_fake_id(normalized_provider_id(id)).is_none()
}

/// Where a group's infrastructure template lives (`spec.template.spec.infrastructureRef`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InfraRef {
    pub group: String,
    /// From a `v1beta1` reference's `apiVersion`; a `v1beta2` reference names only the group,
    /// and the version serving the kind is found by discovery.
    pub version: Option<String>,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// What an infrastructure template tells about the machines it makes (`status.capacity`,
/// `status.nodeInfo`), from the Cluster API's opt-in scale-from-zero contract.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfraInfo {
    pub capacity: BTreeMap<String, Quantity>,
    pub architecture: Option<String>,
    pub operating_system: Option<String>,
}

impl InfraInfo {
    /// Reads a template; capacity values that are not quantities are left out (as upstream).
    pub fn from_object(object: &DynamicObject) -> InfraInfo {
        let capacity = value_at(object, &["status", "capacity"])
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let text = v.as_str()?;
                cloudprovider::quantity::quantity_value(text).ok()?;
                Some((k.clone(), Quantity(text.to_string())))
            })
            .collect();
        let info =
            |field: &str| str_at(object, &["status", "nodeInfo", field]).filter(|v| !v.is_empty()).map(str::to_string);
        InfraInfo { capacity, architecture: info("architecture"), operating_system: info("operatingSystem") }
    }
}

/// One node group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub id: String,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    /// `spec.replicas`: the target size.
    pub replicas: usize,
    pub config: GroupConfig,
    pub infra_ref: Option<InfraRef>,
    pub infra: Option<InfraInfo>,
    pub instances: Vec<Instance>,
    /// A MachinePool's `spec.providerIDList`, normalized: its nodes when it has no Machines.
    pub pool_provider_ids: Vec<String>,
}

impl Group {
    /// The capacity of a new node: the template's `status.capacity`, overridden by the capacity
    /// annotations, and 110 pods when neither says.
    pub fn capacity(&self) -> BTreeMap<String, Quantity> {
        let mut capacity = self.infra.as_ref().map(|i| i.capacity.clone()).unwrap_or_default();
        capacity.extend(self.config.capacity.clone());
        capacity
            .entry("pods".to_string())
            .or_insert_with(|| Quantity(crate::annotations::DEFAULT_MAX_PODS.to_string()));
        capacity
    }

    /// Upstream's condition for a template: CPU and memory are known.
    pub fn can_scale_from_zero(&self) -> bool {
        let capacity = self.capacity();
        capacity.contains_key("cpu") && capacity.contains_key("memory")
    }
}

/// A resource meant as a node group that cannot be one: what to tell its owner.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub problems: Vec<Problem>,
}

impl Rejected {
    pub fn describe(&self) -> String {
        let problems: Vec<String> = self.problems.iter().map(ToString::to_string).collect();
        format!("{} {}/{} is not autoscaled: {}", self.kind.as_str(), self.namespace, self.name, problems.join("; "))
    }
}

/// A Machine, as far as this provider reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    pub key: ObjectKey,
    pub provider_id: Option<String>,
    /// `status.nodeRef`: the Node's name, and the kind when the reference names one.
    pub node_ref: Option<(Option<String>, String)>,
    /// `status.phase` is `Failed` (set by Cluster API when a failure reason or message is).
    pub failed: bool,
    pub deleting: bool,
    pub delete_annotated: bool,
    /// The group it belongs to by ownership (MachineSet → MachineDeployment, or MachinePool).
    pub owner_group: Option<String>,
}

/// The lists one refresh reads.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub machine_deployments: Vec<DynamicObject>,
    pub machine_sets: Vec<DynamicObject>,
    pub machine_pools: Vec<DynamicObject>,
    pub machines: Vec<DynamicObject>,
}

/// What [`Snapshot::build`] needs besides the lists.
pub struct BuildInputs<'a> {
    pub keys: &'a Keys,
    pub discovery: &'a Discovery,
    /// Node name → providerID, for Machines without a providerID of their own (their node's is
    /// their instance ID, as upstream).
    pub node_provider_ids: &'a HashMap<String, String>,
}

/// One refresh's view.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub groups: BTreeMap<String, Group>,
    pub rejected: Vec<Rejected>,
    /// Resources left out for a reason worth a log line (paused, not able to scale from zero).
    pub skipped: Vec<(String, String)>,
    pub machines: HashMap<ObjectKey, Machine>,
    /// Normalized providerID → group ID (Machines by ownership, MachinePools by their list).
    group_by_provider_id: HashMap<String, String>,
    machine_by_provider_id: HashMap<String, ObjectKey>,
    machine_by_node_name: HashMap<String, ObjectKey>,
}

fn read_machine(object: &DynamicObject, keys: &Keys, machine_sets: &HashMap<ObjectKey, &DynamicObject>) -> Machine {
    let key = key_of(object);
    let owner_group = if let Some(ms) = owner_of_kind(object, Kind::MachineSet.as_str()) {
        let ms_key = (key.0.clone(), ms.to_string());
        match machine_sets.get(&ms_key).and_then(|ms| owner_of_kind(ms, Kind::MachineDeployment.as_str())) {
            Some(md) => Some(group_id(Kind::MachineDeployment, &key.0, md)),
            None => Some(group_id(Kind::MachineSet, &key.0, ms)),
        }
    } else {
        owner_of_kind(object, Kind::MachinePool.as_str()).map(|mp| group_id(Kind::MachinePool, &key.0, mp))
    };
    let node_ref = value_at(object, &["status", "nodeRef"]).map(|r| {
        (
            r.get("kind").and_then(Value::as_str).map(str::to_string),
            r.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
        )
    });
    Machine {
        provider_id: str_at(object, &["spec", "providerID"]).filter(|p| !p.is_empty()).map(str::to_string),
        node_ref,
        failed: str_at(object, &["status", "phase"]) == Some("Failed"),
        deleting: is_deleting(object),
        delete_annotated: annotations(object).contains_key(&keys.delete_machine),
        owner_group,
        key,
    }
}

/// The instance a Machine is, upstream's rules: failed, deleting and pending Machines get fake
/// IDs (failed ones with upstream's error codes, so the core backs the group off and removes
/// them); a running Machine is its providerID, or its node's when it has none.
fn instance_of(machine: &Machine, node_provider_ids: &HashMap<String, String>) -> Option<Instance> {
    let status = |state, error: Option<(&str, &str)>| {
        Some(InstanceStatus {
            state,
            error: error.map(|(code, message)| InstanceErrorInfo {
                class: InstanceErrorClass::Other,
                code: code.to_string(),
                message: message.to_string(),
            }),
        })
    };
    if machine.failed {
        let status = match (machine.deleting, &machine.node_ref) {
            (true, _) => status(InstanceState::Deleting, Some((DELETING_FAILED, "Machine deletion failed"))),
            (false, None) => {
                status(InstanceState::Creating, Some((PROVISIONING_FAILED, "Machine provisioning failed")))
            }
            (false, Some(_)) => None,
        };
        return Some(Instance { id: fake_id(FAILED_PREFIX, &machine.key), status });
    }
    if machine.deleting {
        return Some(Instance {
            id: fake_id(DELETING_PREFIX, &machine.key),
            status: status(InstanceState::Deleting, None),
        });
    }
    let Some((node_kind, node_name)) = &machine.node_ref else {
        return Some(Instance {
            id: fake_id(PENDING_PREFIX, &machine.key),
            status: status(InstanceState::Creating, None),
        });
    };
    let id = match &machine.provider_id {
        Some(id) => id.clone(),
        None if node_kind.as_deref().is_some_and(|k| k != "Node") => return None,
        None => node_provider_ids.get(node_name).filter(|p| !p.is_empty())?.clone(),
    };
    Some(Instance { id, status: status(InstanceState::Running, None) })
}

fn read_infra_ref(object: &DynamicObject, namespace: &str) -> Option<InfraRef> {
    let reference = value_at(object, &["spec", "template", "spec", "infrastructureRef"])?;
    let text = |field: &str| reference.get(field).and_then(Value::as_str).filter(|v| !v.is_empty());
    let (group, version) = match (text("apiGroup"), text("apiVersion")) {
        (Some(group), _) => (group.to_string(), None),
        (None, Some(api_version)) => match api_version.split_once('/') {
            Some((group, version)) => (group.to_string(), Some(version.to_string())),
            None => (String::new(), Some(api_version.to_string())),
        },
        (None, None) => return None,
    };
    Some(InfraRef {
        group,
        version,
        kind: text("kind")?.to_string(),
        namespace: namespace.to_string(),
        name: text("name")?.to_string(),
    })
}

impl Snapshot {
    pub fn build(listing: &Listing, inputs: &BuildInputs<'_>) -> Snapshot {
        let keys = inputs.keys;
        let mut snapshot = Snapshot::default();
        let machine_sets: HashMap<ObjectKey, &DynamicObject> =
            listing.machine_sets.iter().map(|ms| (key_of(ms), ms)).collect();
        let mut machines_by_namespace: HashMap<&str, Vec<(&DynamicObject, Machine)>> = HashMap::new();
        for object in &listing.machines {
            let machine = read_machine(object, keys, &machine_sets);
            machines_by_namespace
                .entry(object.metadata.namespace.as_deref().unwrap_or_default())
                .or_default()
                .push((object, machine));
        }

        let candidates = listing
            .machine_deployments
            .iter()
            .map(|o| (Kind::MachineDeployment, o))
            .chain(
                listing
                    .machine_sets
                    .iter()
                    .filter(|ms| owner_of_kind(ms, Kind::MachineDeployment.as_str()).is_none())
                    .map(|o| (Kind::MachineSet, o)),
            )
            .chain(listing.machine_pools.iter().map(|o| (Kind::MachinePool, o)));
        for (kind, object) in candidates {
            if !inputs.discovery.allows(object, &keys.cluster_name) {
                continue;
            }
            let (namespace, name) = key_of(object);
            let id = group_id(kind, &namespace, &name);
            if annotations(object).contains_key(keys::PAUSED) {
                snapshot.skipped.push((id, format!("paused ({})", keys::PAUSED)));
                continue;
            }
            let reject = |problems: Vec<Problem>| Rejected {
                kind,
                namespace: namespace.clone(),
                name: name.clone(),
                uid: object.metadata.uid.clone(),
                resource_version: object.metadata.resource_version.clone(),
                problems,
            };
            let config = match read_group(object, keys) {
                Verdict::NotAutoscaled(_) => continue,
                Verdict::Malformed(problems) => {
                    snapshot.rejected.push(reject(problems));
                    continue;
                }
                Verdict::Autoscaled(config) => config,
            };
            let replicas = match value_at(object, &["spec", "replicas"]).map(|r| (r.as_u64(), r)) {
                Some((Some(n), _)) => usize::try_from(n).unwrap_or(usize::MAX),
                Some((None, value)) => {
                    let message = format!("{value} is not a non-negative integer");
                    snapshot.rejected.push(reject(vec![Problem { field: "spec.replicas".into(), message }]));
                    continue;
                }
                None => {
                    let message = "is not set (Cluster API's defaulting webhook sets it)".to_string();
                    snapshot.rejected.push(reject(vec![Problem { field: "spec.replicas".into(), message }]));
                    continue;
                }
            };
            let mut group = Group {
                id: id.clone(),
                kind,
                namespace: namespace.clone(),
                name: name.clone(),
                replicas,
                config,
                infra_ref: read_infra_ref(object, &namespace),
                infra: None,
                instances: Vec::new(),
                pool_provider_ids: Vec::new(),
            };
            if kind == Kind::MachinePool {
                let ids: Vec<String> = value_at(object, &["spec", "providerIDList"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                group.pool_provider_ids = ids.iter().map(|p| normalized_provider_id(p).to_string()).collect();
                group.instances = ids
                    .into_iter()
                    .map(|id| Instance {
                        id,
                        status: Some(InstanceStatus { state: InstanceState::Running, error: None }),
                    })
                    .collect();
            } else {
                // Upstream's Machines of a MachineDeployment or MachineSet: its selector, in its
                // namespace, of its Cluster.
                let selector = value_at(object, &["spec", "selector"]);
                let cluster = cluster_name(object, &keys.cluster_name);
                let mut instances = Vec::new();
                let mut failure = None;
                for (machine_object, machine) in machines_by_namespace.get(namespace.as_str()).into_iter().flatten() {
                    match selector_matches(selector, labels(machine_object)) {
                        Ok(false) => continue,
                        Ok(true) => {}
                        Err(message) => {
                            failure = Some(message);
                            break;
                        }
                    }
                    if !cluster.is_empty() && cluster_name(machine_object, &keys.cluster_name) != cluster {
                        continue;
                    }
                    instances.extend(instance_of(machine, inputs.node_provider_ids));
                }
                if let Some(message) = failure.or_else(|| selector.is_none().then(|| "is missing".to_string())) {
                    let message = message.trim_start_matches("spec.selector ").to_string();
                    snapshot.rejected.push(reject(vec![Problem { field: "spec.selector".into(), message }]));
                    continue;
                }
                group.instances = instances;
            }
            snapshot.groups.insert(id, group);
        }

        for (_, machine) in machines_by_namespace.into_values().flatten() {
            if let Some(provider_id) = &machine.provider_id {
                let normalized = normalized_provider_id(provider_id).to_string();
                snapshot.machine_by_provider_id.insert(normalized.clone(), machine.key.clone());
                if let Some(group) = &machine.owner_group {
                    snapshot.group_by_provider_id.insert(normalized, group.clone());
                }
            }
            if let Some((_, node)) = machine.node_ref.as_ref().filter(|(_, n)| !n.is_empty()) {
                snapshot.machine_by_node_name.insert(node.clone(), machine.key.clone());
            }
            snapshot.machines.insert(machine.key.clone(), machine);
        }
        // MachinePools without Machines: their providerIDList is all there is.
        for group in snapshot.groups.values().filter(|g| g.kind == Kind::MachinePool) {
            for id in &group.pool_provider_ids {
                snapshot.group_by_provider_id.insert(id.clone(), group.id.clone());
            }
        }
        snapshot
    }

    /// The infrastructure templates the groups refer to.
    pub fn infra_refs(&self) -> Vec<InfraRef> {
        let mut refs: Vec<InfraRef> = self.groups.values().filter_map(|g| g.infra_ref.clone()).collect();
        refs.sort();
        refs.dedup();
        refs
    }

    /// Attaches the templates found, then drops the groups at zero that cannot scale from zero
    /// (no CPU and memory from annotations or template), as upstream: such a group could never
    /// grow.
    pub fn attach_infra(&mut self, found: &HashMap<InfraRef, InfraInfo>) {
        for group in self.groups.values_mut() {
            group.infra = group.infra_ref.as_ref().and_then(|r| found.get(r)).cloned();
        }
        let stuck: Vec<String> = self
            .groups
            .values()
            .filter(|g| g.replicas == 0 && !g.can_scale_from_zero())
            .map(|g| g.id.clone())
            .collect();
        for id in stuck {
            self.groups.remove(&id);
            self.skipped.push((
                id,
                format!(
                    "0 replicas and no CPU and memory for a template: add the {} and {} annotations (or let the infrastructure template report status.capacity)",
                    keys::CPU,
                    keys::MEMORY
                ),
            ));
        }
    }

    /// The Machine behind a node: by providerID, by the fake ID of a Machine that is not a node
    /// yet, by the node's machine annotations, or by the Machine's `status.nodeRef` (for
    /// Machines without a providerID). Nodes without a providerID are nobody's, as upstream.
    pub fn machine_for(
        &self,
        provider_id: &str,
        node_name: &str,
        node_annotations: &BTreeMap<String, String>,
        keys: &Keys,
    ) -> Option<&Machine> {
        if provider_id.is_empty() {
            return None;
        }
        let normalized = normalized_provider_id(provider_id);
        let key = self
            .machine_by_provider_id
            .get(normalized)
            .cloned()
            .or_else(|| machine_key_of_fake_id(normalized))
            .or_else(|| {
                let name = node_annotations.get(&keys.machine)?;
                let namespace = node_annotations.get(&keys.cluster_namespace).cloned().unwrap_or_default();
                Some((namespace, name.clone()))
            })
            .filter(|k| self.machines.contains_key(k))
            .or_else(|| self.machine_by_node_name.get(node_name).cloned())?;
        self.machines.get(&key)
    }

    /// The group of a node: its MachinePool by providerID, else its Machine's owner.
    pub fn group_for(
        &self,
        provider_id: &str,
        node_name: &str,
        node_annotations: &BTreeMap<String, String>,
        keys: &Keys,
    ) -> Option<&Group> {
        if provider_id.is_empty() {
            return None;
        }
        let id = self.group_by_provider_id.get(normalized_provider_id(provider_id)).or_else(|| {
            self.machine_for(provider_id, node_name, node_annotations, keys).and_then(|m| m.owner_group.as_ref())
        })?;
        self.groups.get(id)
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
