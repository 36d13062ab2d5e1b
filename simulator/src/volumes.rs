//! Volumes in the scheduling model: kube-scheduler's VolumeRestrictions (`ReadWriteOncePod`),
//! NodeVolumeLimits (CSI attach limits), VolumeBinding and VolumeZone plugins.
//!
//! Without them the autoscaler would add a node in a zone where a pod bound to a zonal disk can
//! never run. The `VolumeIndex` holds the cluster's PersistentVolumeClaims, PersistentVolumes,
//! StorageClasses and CSINode limits; the snapshot consults it only for pods that use claims
//! (`PodInfo::claims`), so every other pod stays on the path it had. A claim is resolved once per
//! index (its volume's node affinity compiled, its static candidates listed) and cached: a
//! StatefulSet pod checked against every node group, or 1,000 replicas sharing a claim, resolve
//! it once.
//!
//! What a pod gets, in kube-scheduler's order:
//! - PreFilter (the same answer for every node, `Unfit::PodVolumes` with the scheduler's text):
//!   a missing claim, a claim being deleted or lost, a generic ephemeral volume's claim not yet
//!   created (or not created for this pod), a claim not bound whose class binds `Immediate`, a
//!   bound claim whose PersistentVolume does not exist.
//! - Filter, per node: a `ReadWriteOncePod` claim another pod already uses; the node's CSI attach
//!   limit (only where a CSINode reports one: node group templates and upcoming nodes have none,
//!   so their limit is unknown, as upstream treats new nodes); the bound volume's
//!   `nodeAffinity`; for a `WaitForFirstConsumer` claim not bound yet, an available volume that
//!   fits the node or a class that can provision there (`allowedTopologies`); the bound volume's
//!   legacy zone / region labels.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, PodSpec, TopologySelectorTerm};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::labels::{Labels, NodeSelectorMatcher, Selector};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::predicates::Unfit;

/// The class provisioner of volumes that are only ever created by hand (local volumes).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Set by the PV controller once a claim and its volume are bound to each other.
pub const BIND_COMPLETED_ANNOTATION: &str = "pv.kubernetes.io/bind-completed";
/// Set by kube-scheduler on a `WaitForFirstConsumer` claim when it asks for provisioning on a node.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";
/// The class of a claim before `spec.storageClassName` existed; still read first, as upstream does.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
pub const READ_WRITE_ONCE_POD: &str = "ReadWriteOncePod";

/// The topology labels VolumeZone compares between a volume and a node (beta and GA).
const VOLUME_ZONE_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// In-tree volume plugins migrated to CSI drivers: their volumes count against the driver's
/// attach limit. (provisioner / plugin name, CSI driver)
const MIGRATED_PROVISIONERS: [(&str, &str); 6] = [
    ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
];

/// A volume of a pod backed by a PersistentVolumeClaim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodClaim {
    /// The claim's name in the pod's namespace.
    pub name: String,
    /// `namespace/name`: the claim's key in the index.
    pub key: Arc<str>,
    /// A generic ephemeral volume: its claim `<pod>-<volume>` is created by the ephemeral volume
    /// controller, owned by the pod.
    pub ephemeral: bool,
}

/// The claims a pod's volumes use, in volume order.
pub fn pod_claims(spec: &PodSpec, namespace: &str, pod_name: &str) -> Vec<PodClaim> {
    let Some(volumes) = spec.volumes.as_ref() else { return Vec::new() };
    let mut claims = Vec::new();
    for volume in volumes {
        let (name, ephemeral) = if let Some(source) = &volume.persistent_volume_claim {
            (source.claim_name.clone(), false)
        } else if volume.ephemeral.is_some() {
            (format!("{pod_name}-{}", volume.name), true)
        } else {
            continue;
        };
        let key: Arc<str> = Arc::from(format!("{namespace}/{name}"));
        claims.push(PodClaim { name, key, ephemeral });
    }
    claims
}

/// A PersistentVolume as the filters read it.
#[derive(Debug)]
struct CompiledVolume {
    name: String,
    affinity: Option<NodeSelectorMatcher>,
    /// VolumeZone: (label key, allowed values) from the volume's zone / region labels.
    zones: Vec<(&'static str, Vec<String>)>,
}

impl CompiledVolume {
    fn new(pv: &PersistentVolume) -> CompiledVolume {
        let affinity = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
            .map(NodeSelectorMatcher::new);
        let labels = pv.metadata.labels.as_ref();
        let zones = VOLUME_ZONE_LABELS
            .iter()
            .filter_map(|key| {
                let value = labels.and_then(|l| l.get(*key))?;
                // Several zones are written `a__b` (volumehelpers.LabelZonesToSet).
                Some((*key, value.split("__").map(|z| z.trim().to_string()).filter(|z| !z.is_empty()).collect()))
            })
            .collect();
        CompiledVolume { name: pv.metadata.name.clone().unwrap_or_default(), affinity, zones }
    }

    /// `CheckNodeAffinity`: the volume's required node affinity accepts the node.
    fn fits_node_affinity(&self, node: &NodeInfo) -> bool {
        self.affinity.as_ref().is_none_or(|m| m.matches(&node.node))
    }

    /// VolumeZone: a node without any zone / region label fits; otherwise every zone label of the
    /// volume must name the node's value (a beta key also reads the node's GA label).
    fn fits_zone(&self, node: &NodeInfo) -> bool {
        if self.zones.is_empty() || !VOLUME_ZONE_LABELS.iter().any(|k| node.label(k).is_some()) {
            return true;
        }
        self.zones.iter().all(|(key, values)| {
            let value = node.label(key).or_else(|| {
                let ga = match *key {
                    "failure-domain.beta.kubernetes.io/zone" => "topology.kubernetes.io/zone",
                    "failure-domain.beta.kubernetes.io/region" => "topology.kubernetes.io/region",
                    other => other,
                };
                node.label(ga)
            });
            value.is_some_and(|v| values.iter().any(|z| z == v))
        })
    }
}

/// `allowedTopologies` of a StorageClass: terms ORed, each `key in (values)` of a term ANDed;
/// no terms allow every node, a term without expressions allows none.
#[derive(Debug)]
struct TopologyMatcher {
    terms: Vec<Vec<(String, Vec<String>)>>,
}

impl TopologyMatcher {
    fn new(terms: Option<&Vec<TopologySelectorTerm>>) -> TopologyMatcher {
        let terms = terms
            .into_iter()
            .flatten()
            .map(|t| t.match_label_expressions.iter().flatten().map(|e| (e.key.clone(), e.values.clone())).collect())
            .collect();
        TopologyMatcher { terms }
    }

    fn matches(&self, labels: Option<&Labels>) -> bool {
        self.terms.is_empty()
            || self.terms.iter().any(|term: &Vec<(String, Vec<String>)>| {
                !term.is_empty()
                    && term.iter().all(|(key, values)| {
                        labels.and_then(|l| l.get(key)).is_some_and(|v| values.iter().any(|x| x == v))
                    })
            })
    }
}

/// A `WaitForFirstConsumer` claim not bound yet: VolumeBinding binds it to an available volume
/// that fits the chosen node, or asks its class to provision one there.
#[derive(Debug)]
struct DelayedClaim {
    /// Provisioning already started for this node (`volume.kubernetes.io/selected-node`).
    selected_node: Option<String>,
    /// A volume pre-bound to this claim (`claimRef`): the only candidate when present.
    prebound: Option<Arc<CompiledVolume>>,
    /// Available volumes that match the claim (class, size, modes, selector), smallest first.
    candidates: Vec<Arc<CompiledVolume>>,
    /// Where the class can provision; `None` when it cannot (`kubernetes.io/no-provisioner`).
    provisioning: Option<TopologyMatcher>,
}

#[derive(Debug)]
enum ClaimState {
    NotFound,
    Lost {
        volume: String,
    },
    Deleting,
    /// Not bound, and its class binds `Immediate` (or is missing): the PV controller's job.
    UnboundImmediate,
    /// Bound; `None` when the volume does not exist.
    Bound {
        volume_name: String,
        volume: Option<Arc<CompiledVolume>>,
    },
    Delayed(DelayedClaim),
}

/// One claim resolved against the index.
#[derive(Debug)]
pub(crate) struct ResolvedClaim {
    claim: Option<Arc<PersistentVolumeClaim>>,
    state: ClaimState,
    /// NodeVolumeLimits: the CSI driver and a name unique per volume.
    attachable: Option<(String, String)>,
    read_write_once_pod: bool,
}

/// The volume facts of one prepared pod.
#[derive(Debug)]
pub(crate) struct PreparedVolumes {
    /// A PreFilter failure: the pod fits no node.
    failure: Option<Unfit>,
    /// Another pod in the snapshot uses one of the pod's `ReadWriteOncePod` claims.
    read_write_once_pod_conflict: bool,
    claims: Vec<Arc<ResolvedClaim>>,
    /// Distinct (driver, volume) pairs the pod attaches.
    attachable: Vec<(String, String)>,
}

/// The cluster's claims, volumes, classes and CSI attach limits, for the volume filters.
#[derive(Debug, Default)]
pub struct VolumeIndex {
    claims: HashMap<String, Arc<PersistentVolumeClaim>>,
    volumes: HashMap<String, Arc<PersistentVolume>>,
    /// Class name → volumes of that class, for static binding of delayed claims.
    volumes_by_class: HashMap<String, Vec<Arc<PersistentVolume>>>,
    classes: HashMap<String, Arc<StorageClass>>,
    /// Node name → (CSI driver, attach limit).
    limits: HashMap<String, Vec<(String, i64)>>,
    compiled: HashMap<String, Arc<CompiledVolume>>,
    resolved: HashMap<Arc<str>, Arc<ResolvedClaim>>,
}

fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
        .or(claim.spec.as_ref().and_then(|s| s.storage_class_name.as_ref()))
        .map_or("", String::as_str)
}

fn volume_class(pv: &PersistentVolume) -> &str {
    pv.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
        .or(pv.spec.as_ref().and_then(|s| s.storage_class_name.as_ref()))
        .map_or("", String::as_str)
}

fn storage_of(
    list: Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> i64 {
    list.and_then(|l| l.get("storage")).and_then(|q| crate::quantity::parse_value(&q.0).ok()).unwrap_or(0)
}

fn csi_driver_of_provisioner(provisioner: &str) -> &str {
    MIGRATED_PROVISIONERS.iter().find(|(p, _)| *p == provisioner).map_or(provisioner, |(_, driver)| driver)
}

/// The CSI driver and volume handle of a volume, for attach limits: its CSI source, or the CSI
/// driver its in-tree plugin migrated to.
fn attachable_volume(pv: &PersistentVolume) -> Option<(String, String)> {
    let spec = pv.spec.as_ref()?;
    if let Some(csi) = &spec.csi {
        return Some((csi.driver.clone(), csi.volume_handle.clone()));
    }
    let (driver, handle) = if let Some(ebs) = &spec.aws_elastic_block_store {
        ("ebs.csi.aws.com", ebs.volume_id.clone())
    } else if let Some(pd) = &spec.gce_persistent_disk {
        ("pd.csi.storage.gke.io", pd.pd_name.clone())
    } else if let Some(disk) = &spec.azure_disk {
        ("disk.csi.azure.com", disk.disk_uri.clone())
    } else if let Some(cinder) = &spec.cinder {
        ("cinder.csi.openstack.org", cinder.volume_id.clone())
    } else {
        return None;
    };
    Some((driver.to_string(), handle))
}

fn volume_mode(mode: Option<&String>) -> &str {
    mode.map_or("Filesystem", String::as_str)
}

/// Whether the volume is bound (or pre-bound) to this very claim through its `claimRef`.
fn volume_bound_to(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(claim_ref) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else { return false };
    claim_ref.name == claim.metadata.name
        && claim_ref.namespace == claim.metadata.namespace
        && claim_ref.uid.as_ref().is_none_or(|uid| uid.is_empty() || Some(uid) == claim.metadata.uid.as_ref())
}

impl VolumeIndex {
    /// An index over the given objects. Cheap: objects are compiled only when a pod's claim
    /// needs them.
    pub fn new(
        claims: impl IntoIterator<Item = Arc<PersistentVolumeClaim>>,
        volumes: impl IntoIterator<Item = Arc<PersistentVolume>>,
        classes: impl IntoIterator<Item = Arc<StorageClass>>,
        csi_nodes: impl IntoIterator<Item = Arc<CSINode>>,
    ) -> VolumeIndex {
        let mut index = VolumeIndex::default();
        for claim in claims {
            let namespace = claim.metadata.namespace.as_deref().unwrap_or("default");
            let key = format!("{namespace}/{}", claim.metadata.name.as_deref().unwrap_or(""));
            index.claims.insert(key, claim);
        }
        for pv in volumes {
            let name = pv.metadata.name.clone().unwrap_or_default();
            index.volumes_by_class.entry(volume_class(&pv).to_string()).or_default().push(pv.clone());
            index.volumes.insert(name, pv);
        }
        for class in classes {
            index.classes.insert(class.metadata.name.clone().unwrap_or_default(), class);
        }
        for csi_node in csi_nodes {
            let limits: Vec<(String, i64)> = csi_node
                .spec
                .drivers
                .iter()
                .filter_map(|d| {
                    let count = d.allocatable.as_ref().and_then(|a| a.count)?;
                    Some((d.name.clone(), i64::from(count)))
                })
                .collect();
            if !limits.is_empty() {
                index.limits.insert(csi_node.metadata.name.clone().unwrap_or_default(), limits);
            }
        }
        index
    }

    fn compile(&mut self, pv: &PersistentVolume) -> Arc<CompiledVolume> {
        let name = pv.metadata.name.as_deref().unwrap_or("");
        if let Some(c) = self.compiled.get(name) {
            return c.clone();
        }
        let compiled = Arc::new(CompiledVolume::new(pv));
        self.compiled.insert(name.to_string(), compiled.clone());
        compiled
    }

    /// The claim's class and whether it delays binding (`WaitForFirstConsumer`); a missing class
    /// binds immediately, as upstream's `IsDelayBindingMode` reads it.
    fn delayed_class(&self, claim: &PersistentVolumeClaim) -> Option<Arc<StorageClass>> {
        let class = self.classes.get(claim_class(claim))?;
        (class.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER)).then(|| class.clone())
    }

    /// The CSI driver and unique name a claim attaches: its volume's, or, before it is bound, its
    /// class's driver and the claim's own name.
    fn attachable_of_claim(&self, claim: &PersistentVolumeClaim) -> Option<(String, String)> {
        let volume_name = claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).filter(|v| !v.is_empty());
        if let Some(pv) = volume_name.and_then(|v| self.volumes.get(v)) {
            return attachable_volume(pv);
        }
        let class = self.classes.get(claim_class(claim))?;
        let namespace = claim.metadata.namespace.as_deref().unwrap_or("default");
        let handle = format!("{namespace}-{}", claim.metadata.name.as_deref().unwrap_or(""));
        Some((csi_driver_of_provisioner(&class.provisioner).to_string(), handle))
    }

    fn resolve(&mut self, claim_key: &Arc<str>) -> Arc<ResolvedClaim> {
        if let Some(r) = self.resolved.get(claim_key) {
            return r.clone();
        }
        let resolved = Arc::new(self.resolve_uncached(claim_key));
        self.resolved.insert(claim_key.clone(), resolved.clone());
        resolved
    }

    fn resolve_uncached(&mut self, claim_key: &str) -> ResolvedClaim {
        let Some(claim) = self.claims.get(claim_key).cloned() else {
            return ResolvedClaim {
                claim: None,
                state: ClaimState::NotFound,
                attachable: None,
                read_write_once_pod: false,
            };
        };
        let spec = claim.spec.as_ref();
        let read_write_once_pod =
            spec.and_then(|s| s.access_modes.as_ref()).is_some_and(|m| m.iter().any(|m| m == READ_WRITE_ONCE_POD));
        let attachable = self.attachable_of_claim(&claim);
        let volume_name = spec.and_then(|s| s.volume_name.clone()).filter(|v| !v.is_empty());
        let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
        let bind_completed =
            claim.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(BIND_COMPLETED_ANNOTATION));
        let state = if phase == Some("Lost") {
            ClaimState::Lost { volume: volume_name.unwrap_or_default() }
        } else if claim.metadata.deletion_timestamp.is_some() {
            ClaimState::Deleting
        } else if let Some(volume_name) = volume_name.as_ref().filter(|_| bind_completed || phase == Some("Bound")) {
            let volume = self.volumes.get(volume_name).cloned().map(|pv| self.compile(&pv));
            ClaimState::Bound { volume_name: volume_name.clone(), volume }
        } else if let Some(class) = self.delayed_class(&claim).filter(|_| volume_name.is_none()) {
            ClaimState::Delayed(self.delayed(&claim, &class))
        } else {
            // Pre-bound claims (a volume name, binding not completed) count as unbound
            // Immediate ones, as upstream's `GetPodVolumeClaims` does.
            ClaimState::UnboundImmediate
        };
        ResolvedClaim { claim: Some(claim), state, attachable, read_write_once_pod }
    }

    /// `FindMatchingVolume`'s node-independent part: the volumes a delayed claim could bind.
    fn delayed(&mut self, claim: &PersistentVolumeClaim, class: &StorageClass) -> DelayedClaim {
        let spec = claim.spec.clone().unwrap_or_default();
        let requested = storage_of(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
        let selector = spec.selector.as_ref().map(|s| Selector::from_label_selector(Some(s)));
        let modes = spec.access_modes.clone().unwrap_or_default();
        let mut prebound = None;
        let mut candidates: Vec<(i64, Arc<PersistentVolume>)> = Vec::new();
        for pv in self.volumes_by_class.get(claim_class(claim)).into_iter().flatten() {
            let Some(pv_spec) = pv.spec.as_ref() else { continue };
            let bound_here = volume_bound_to(pv, claim);
            if pv_spec.claim_ref.is_some() && !bound_here {
                continue;
            }
            let capacity = storage_of(pv_spec.capacity.as_ref());
            if capacity < requested
                || volume_mode(pv_spec.volume_mode.as_ref()) != volume_mode(spec.volume_mode.as_ref())
                || pv.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            if bound_here {
                prebound = Some(pv.clone());
                break;
            }
            let available = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
            let selected = selector.as_ref().is_none_or(|s| s.matches(pv.metadata.labels.as_ref()));
            let pv_modes = pv_spec.access_modes.as_deref().unwrap_or(&[]);
            let modes_ok = modes.iter().all(|m| pv_modes.contains(m));
            if available && selected && modes_ok {
                candidates.push((capacity, pv.clone()));
            }
        }
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.metadata.name.cmp(&b.1.metadata.name)));
        let provisioning = (!class.provisioner.is_empty() && class.provisioner != NO_PROVISIONER)
            .then(|| TopologyMatcher::new(class.allowed_topologies.as_ref()));
        let selected_node = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SELECTED_NODE_ANNOTATION))
            .filter(|n| !n.is_empty())
            .cloned();
        DelayedClaim {
            selected_node,
            prebound: prebound.map(|pv| self.compile(&pv)),
            candidates: candidates.into_iter().map(|(_, pv)| self.compile(&pv)).collect(),
            provisioning,
        }
    }

    /// PreFilter for a pod with claims: resolves them and finds failures that hold on every
    /// node. `users` counts the snapshot's pods per claim key; `placed` says the pod itself is
    /// one of them.
    pub(crate) fn prepare(&mut self, pod: &PodInfo, users: &HashMap<Arc<str>, u32>, placed: bool) -> PreparedVolumes {
        let claims: Vec<Arc<ResolvedClaim>> = pod.claims.iter().map(|c| self.resolve(&c.key)).collect();
        let failure = Self::pod_failure(pod, &claims);
        let read_write_once_pod_conflict = pod
            .claims
            .iter()
            .zip(&claims)
            .any(|(c, r)| r.read_write_once_pod && users.get(&c.key).copied().unwrap_or(0) > u32::from(placed));
        let mut attachable: Vec<(String, String)> = claims.iter().filter_map(|r| r.attachable.clone()).collect();
        attachable.sort();
        attachable.dedup();
        PreparedVolumes { failure, read_write_once_pod_conflict, claims, attachable }
    }

    /// The PreFilter failures, in the order kube-scheduler's plugins find them.
    fn pod_failure(pod: &PodInfo, claims: &[Arc<ResolvedClaim>]) -> Option<Unfit> {
        let fail = |text: String| Some(Unfit::PodVolumes(text));
        // VolumeRestrictions looks every plain claim up first.
        for (c, r) in pod.claims.iter().zip(claims) {
            if !c.ephemeral && matches!(r.state, ClaimState::NotFound) {
                return fail(format!("persistentvolumeclaim \"{}\" not found", c.name));
            }
        }
        // VolumeBinding: `podHasPVCs`, then unbound Immediate claims.
        for (c, r) in pod.claims.iter().zip(claims) {
            match &r.state {
                ClaimState::NotFound => {
                    return fail(format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{}\"",
                        c.name
                    ));
                }
                ClaimState::Lost { volume } => {
                    return fail(format!(
                        "persistentvolumeclaim \"{}\" bound to non-existent persistentvolume \"{volume}\"",
                        c.name
                    ));
                }
                ClaimState::Deleting => return fail(format!("persistentvolumeclaim \"{}\" is being deleted", c.name)),
                _ => {}
            }
            if c.ephemeral {
                // Once: a canonical uid is held in 16 bytes and written out on each call.
                let uid = pod.uid();
                let owned = r.claim.as_ref().is_some_and(|claim| {
                    claim
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid.as_deref())
                });
                if !owned {
                    return fail(format!(
                        "PVC {0}/{1} was not created for pod {0}/{2} (pod is not owner)",
                        pod.namespace(),
                        c.name,
                        pod.name()
                    ));
                }
            }
        }
        if claims.iter().any(|r| matches!(r.state, ClaimState::UnboundImmediate)) {
            return fail("pod has unbound immediate PersistentVolumeClaims".into());
        }
        // VolumeZone reads the volumes of plain claims.
        for (c, r) in pod.claims.iter().zip(claims) {
            if let ClaimState::Bound { volume_name, volume: None } = &r.state
                && !c.ephemeral
            {
                return fail(format!("persistentvolume \"{volume_name}\" not found"));
            }
        }
        None
    }

    /// The volume filters on one node, after the PreFilter found nothing: VolumeRestrictions,
    /// NodeVolumeLimits, VolumeBinding, VolumeZone.
    pub(crate) fn check(&self, prepared: &PreparedVolumes, node: &NodeInfo) -> Result<(), Unfit> {
        if prepared.read_write_once_pod_conflict {
            return Err(Unfit::ReadWriteOncePodConflict);
        }
        if !prepared.attachable.is_empty()
            && let Some(limits) = self.limits.get(&*node.name)
            && self.exceeds_limits(prepared, node, limits)
        {
            return Err(Unfit::MaxVolumeCount);
        }
        self.check_binding(prepared, node)?;
        for r in &prepared.claims {
            if let ClaimState::Bound { volume: Some(volume), .. } = &r.state
                && !volume.fits_zone(node)
            {
                return Err(Unfit::VolumeZone);
            }
        }
        Ok(())
    }

    /// NodeVolumeLimits: the node's distinct attached volumes per driver plus the pod's new ones
    /// must stay within the CSINode's `allocatable.count`.
    fn exceeds_limits(&self, prepared: &PreparedVolumes, node: &NodeInfo, limits: &[(String, i64)]) -> bool {
        let mut attached: Vec<(String, String)> = Vec::new();
        for pod in node.pods.iter().filter(|p| !p.claims.is_empty()) {
            for c in &pod.claims {
                let attachable = match self.resolved.get(&c.key) {
                    Some(r) => r.attachable.clone(),
                    None => self.claims.get(&*c.key).and_then(|claim| self.attachable_of_claim(claim)),
                };
                attachable.into_iter().for_each(|a| attached.push(a));
            }
        }
        attached.sort();
        attached.dedup();
        limits.iter().any(|(driver, limit)| {
            let new =
                prepared.attachable.iter().filter(|a| &a.0 == driver && attached.binary_search(a).is_err()).count()
                    as i64;
            new > 0 && attached.iter().filter(|a| &a.0 == driver).count() as i64 + new > *limit
        })
    }

    /// VolumeBinding's `FindPodVolumes`: bound volumes must accept the node; delayed claims need
    /// an available volume that fits it (each used once) or a class that provisions there.
    fn check_binding(&self, prepared: &PreparedVolumes, node: &NodeInfo) -> Result<(), Unfit> {
        let mut node_conflict = false;
        let mut bind_conflict = false;
        let mut missing_volume = false;
        let mut chosen: Vec<&str> = Vec::new();
        for r in &prepared.claims {
            match &r.state {
                ClaimState::Bound { volume: Some(volume), .. } => {
                    node_conflict |= !volume.fits_node_affinity(node);
                }
                ClaimState::Bound { volume: None, .. } => missing_volume = true,
                ClaimState::Delayed(delayed) => {
                    if let Some(selected) = &delayed.selected_node {
                        bind_conflict |= **selected != *node.name;
                        continue;
                    }
                    match delayed.matching_volume(node, &chosen) {
                        Some(pv) => chosen.push(&pv.name),
                        None => {
                            let provisionable = delayed.provisioning.as_ref().is_some_and(|t| t.matches(node.labels()));
                            bind_conflict |= !provisionable;
                        }
                    }
                }
                _ => {}
            }
        }
        if node_conflict || bind_conflict || missing_volume {
            return Err(Unfit::VolumeBinding { node_conflict, bind_conflict, missing_volume });
        }
        Ok(())
    }
}

impl DelayedClaim {
    /// `FindMatchingVolume` on one node: the pre-bound volume if it fits, else the smallest
    /// available one that fits and is not `chosen` for another claim of the pod.
    fn matching_volume(&self, node: &NodeInfo, chosen: &[&str]) -> Option<&Arc<CompiledVolume>> {
        match &self.prebound {
            Some(pv) => Some(pv).filter(|pv| pv.fits_node_affinity(node)),
            None => {
                self.candidates.iter().find(|pv| !chosen.contains(&pv.name.as_str()) && pv.fits_node_affinity(node))
            }
        }
    }
}

impl VolumeIndex {
    /// For a `WaitForFirstConsumer` claim not bound yet: the available volume VolumeBinding
    /// would bind it to on this node, skipping `chosen` ones. `None` when the claim would be
    /// provisioned there instead, or is not such a claim. What a simulated scheduler binds, so
    /// that it binds what the filters allowed.
    pub fn matching_volume(&mut self, claim_key: &Arc<str>, node: &NodeInfo, chosen: &[&str]) -> Option<String> {
        let resolved = self.resolve(claim_key);
        match &resolved.state {
            ClaimState::Delayed(delayed) if delayed.selected_node.is_none() => {
                delayed.matching_volume(node, chosen).map(|pv| pv.name.clone())
            }
            _ => None,
        }
    }
}

impl PreparedVolumes {
    pub(crate) fn failure(&self) -> Option<&Unfit> {
        self.failure.as_ref()
    }
}
