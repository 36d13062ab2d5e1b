//! The embedded pod autoscalers at work: every HorizontalPodAutoscaler and
//! WatermarkPodAutoscaler of the view is reconciled (`hpa::reconcile_hpa`, `hpa::wpa::reconcile_wpa`)
//! against its target's scale and pods, with what each controller remembers kept between syncs.
//!
//! HPA-aware scale-up: when a pod autoscaler raises a workload, the pods the workload will
//! create are built from its pod template ([`anticipated_pods`]) and handed to the node
//! autoscaler's decision in the same loop, instead of waiting for them to exist and be marked
//! unschedulable.

pub mod file_metrics;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::Value;
use simulator::labels::Selector;
use simulator::pod::{PodInfo, PodInterner};

use crate::core::ClusterView;
use crate::hpa::wpa::{WatermarkPodAutoscalerStatus, WpaDecision, WpaState, reconcile_wpa};
use crate::hpa::{HpaConfig, HpaEvent, HpaState, MetricsSource, ScaleTarget as HpaScale, reconcile_hpa};
use crate::ports::{EventType, ScaleTarget};

/// What the embedded loop does with one kind of pod autoscaler
/// (`--horizontal-pod-autoscaler-mode`, `--watermark-pod-autoscaler-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PodAutoscalerMode {
    /// Reconcile and act: write `/scale`, the autoscaler's status and its events (when nothing
    /// else reconciles these objects: WPAs, or HPAs on clusters whose kube-controller-manager
    /// runs without its HPA controller).
    Act,
    /// Compute the recommendations only, for HPA-aware scale-up, `/metrics` and reports; write
    /// nothing (every cluster's kube-controller-manager already acts on HPAs).
    Recommend,
    /// Ignore these objects.
    Off,
}

impl PodAutoscalerMode {
    pub fn acts(self) -> bool {
        self == PodAutoscalerMode::Act
    }
}

/// Annotation on pods the node autoscaler anticipates (they do not exist yet).
pub const ANTICIPATED_ANNOTATION: &str = "cluster-autoscaler.rs/anticipated-by";

/// A pod autoscaler's target as it stands now.
#[derive(Clone, Debug)]
pub struct TargetState {
    pub target: ScaleTarget,
    pub spec_replicas: i32,
    pub status_replicas: i32,
    pub selector: Option<Selector>,
    /// The pod template, when the target is a workload we know (for anticipated pods). Boxed:
    /// a sync's reports hold one state per rescaled target, and the template is most of its size.
    pub template: Option<Box<PodTemplateSpec>>,
}

/// A scale target's workload in a view: the kinds a pod autoscaler's target may be read from.
#[derive(Clone, Copy)]
pub(crate) enum Workload<'v> {
    Deployment(&'v Deployment),
    StatefulSet(&'v StatefulSet),
    ReplicaSet(&'v ReplicaSet),
}

impl<'v> Workload<'v> {
    /// `spec.selector` (`None` without a spec).
    pub(crate) fn label_selector(self) -> Option<&'v LabelSelector> {
        match self {
            Workload::Deployment(d) => Some(&d.spec.as_ref()?.selector),
            Workload::StatefulSet(d) => Some(&d.spec.as_ref()?.selector),
            Workload::ReplicaSet(d) => Some(&d.spec.as_ref()?.selector),
        }
    }

    fn state(self, target: &ScaleTarget) -> Option<TargetState> {
        let selector = self.label_selector()?;
        let state = |spec_replicas: Option<i32>, status_replicas: Option<i32>, template: Option<&PodTemplateSpec>| {
            TargetState {
                target: target.clone(),
                spec_replicas: spec_replicas.unwrap_or(1),
                status_replicas: status_replicas.unwrap_or(0),
                selector: Some(Selector::from_label_selector(Some(selector))),
                template: template.map(|t| Box::new(t.clone())),
            }
        };
        match self {
            Workload::Deployment(d) => {
                let spec = d.spec.as_ref()?;
                Some(state(spec.replicas, d.status.as_ref().and_then(|s| s.replicas), Some(&spec.template)))
            }
            Workload::StatefulSet(d) => {
                let spec = d.spec.as_ref()?;
                Some(state(spec.replicas, d.status.as_ref().map(|s| s.replicas), Some(&spec.template)))
            }
            // A Deployment's ReplicaSet is kept without its template (`core::compact`): the
            // Deployment sets its replicas back, so no pods are anticipated for it.
            Workload::ReplicaSet(d) => {
                let spec = d.spec.as_ref()?;
                Some(state(spec.replicas, d.status.as_ref().map(|s| s.replicas), spec.template.as_ref()))
            }
        }
    }
}

/// The namespace (`default` when unset, as targets name it) and name of a workload.
fn meta_key(m: &ObjectMeta) -> (&str, &str) {
    (m.namespace.as_deref().unwrap_or("default"), m.name.as_deref().unwrap_or_default())
}

/// Every workload of the view a target may name: (kind, namespace, name, workload).
fn workloads(view: &ClusterView) -> impl Iterator<Item = (&'static str, &str, &str, Workload<'_>)> {
    let deployments =
        view.deployments.iter().map(move |d| ("Deployment", meta_key(&d.metadata), Workload::Deployment(d)));
    let statefulsets =
        view.statefulsets.iter().map(move |d| ("StatefulSet", meta_key(&d.metadata), Workload::StatefulSet(d)));
    let replicasets =
        view.replicasets.iter().map(move |d| ("ReplicaSet", meta_key(&d.metadata), Workload::ReplicaSet(d)));
    deployments.chain(statefulsets).chain(replicasets).map(|(kind, (namespace, name), w)| (kind, namespace, name, w))
}

/// The view's workloads by kind, namespace and name, for a sync that resolves every pod
/// autoscaler's target (a scan per target was quadratic: 1,857 HPAs over 5,569 workloads).
pub struct ScaleTargets<'v>(FxHashMap<(&'v str, &'v str, &'v str), Workload<'v>>);

impl<'v> ScaleTargets<'v> {
    pub fn of(view: &'v ClusterView) -> Self {
        let count = view.deployments.len() + view.statefulsets.len() + view.replicasets.len();
        let mut by_key = FxHashMap::with_capacity_and_hasher(count, Default::default());
        for (kind, namespace, name, w) in workloads(view) {
            // The first of a name, as a scan of the view would find it.
            by_key.entry((kind, namespace, name)).or_insert(w);
        }
        ScaleTargets(by_key)
    }

    /// The target's current state (`None` if the target is not of a kind the view holds, or
    /// not in it).
    pub fn state(&self, target: &ScaleTarget) -> Option<TargetState> {
        self.0.get(&(target.kind.as_str(), target.namespace.as_str(), target.name.as_str()))?.state(target)
    }

    /// The selector of the target of this kind, namespace and name, as `state` has it (`None`
    /// when the view does not describe the target).
    fn selector(&self, kind: &str, namespace: &str, name: &str) -> Option<Selector> {
        let selector = self.0.get(&(kind, namespace, name))?.label_selector()?;
        Some(Selector::from_label_selector(Some(selector)))
    }
}

/// The pods whose usage the pod autoscalers of a view can read: those their targets select.
/// A namespace with a target the view does not describe (the sync reads it through `/scale`,
/// and only then knows its selector) keeps all its pods. The controller fetches the pod metrics
/// of whole namespaces (one call each) and keeps only these: on a cluster where a third of
/// the workloads have an autoscaler, a third of the pods.
pub struct PodsRead<'p>(HashMap<&'p str, Option<HashSet<&'p str>>>);

impl<'p> PodsRead<'p> {
    /// `pods` are the view's pods, as the metrics source will select them.
    pub fn of(view: &'p ClusterView, pods: &'p PodsByNamespace) -> PodsRead<'p> {
        let targets = ScaleTargets::of(view);
        let namespace = |m: &'p ObjectMeta| m.namespace.as_deref().unwrap_or("default");
        let hpa_targets = view.hpas.iter().filter_map(|h| {
            let target = &h.spec.as_ref()?.scale_target_ref;
            Some((namespace(&h.metadata), target.kind.as_str(), target.name.as_str()))
        });
        let wpa_targets = view.wpas.iter().map(|w| {
            let target = &w.spec.scale_target_ref;
            (namespace(&w.metadata), target.kind.as_str(), target.name.as_str())
        });
        let mut read: HashMap<&'p str, Option<HashSet<&'p str>>> = HashMap::new();
        for (namespace, kind, name) in hpa_targets.chain(wpa_targets) {
            let names = read.entry(namespace).or_insert_with(|| Some(HashSet::new()));
            let Some(selected) = names else { continue };
            match targets.selector(kind, namespace, name) {
                Some(selector) => selected.extend(pods.selected(namespace, &selector).map(|p| p.name())),
                None => *names = None,
            }
        }
        PodsRead(read)
    }

    pub fn keeps(&self, namespace: &str, name: &str) -> bool {
        match self.0.get(namespace) {
            Some(Some(selected)) => selected.contains(name),
            Some(None) => true,
            None => false,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSummary {
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub reason: &'static str,
    pub message: String,
}

fn events(list: &[HpaEvent]) -> Vec<EventSummary> {
    list.iter().map(|e| EventSummary { event_type: e.type_, reason: e.reason, message: e.message.clone() }).collect()
}

/// One pod autoscaler's answer (the `hpa` section of `plan`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerReport {
    pub name: String,
    pub kind: &'static str,
    pub target: String,
    pub current_replicas: i32,
    pub recommended_replicas: i32,
    pub desired_replicas: i32,
    pub metrics: Vec<Value>,
    pub conditions: Vec<Value>,
    pub events: Vec<EventSummary>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The scale change to apply, if any.
    #[serde(skip)]
    pub rescale: Option<Rescale>,
    /// The status to write; `None` when the object already has it (upstream's controllers skip
    /// a status write that would change nothing: hundreds of HPAs would otherwise spend the
    /// client's request budget on every sync).
    #[serde(skip)]
    pub hpa_status: Option<HorizontalPodAutoscalerStatus>,
    #[serde(skip)]
    pub wpa_status: Option<WatermarkPodAutoscalerStatus>,
}

#[derive(Clone, Debug)]
pub struct Rescale {
    pub target: TargetState,
    pub to: i32,
}

/// What the pod autoscalers remember between syncs.
#[derive(Debug, Default)]
pub struct PodScaling {
    pub config: HpaConfig,
    hpa_states: BTreeMap<String, HpaState>,
    wpa_states: BTreeMap<String, WpaState>,
    /// This sync's WPA decisions that rescale, kept until the rescale is applied or fails.
    wpa_rescales: BTreeMap<String, WpaDecision>,
}

fn key(meta: &ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or("default"), meta.name.as_deref().unwrap_or(""))
}

/// The pods of each namespace, gathered once per pass: a pod autoscaler's selector is matched
/// against its own namespace's pods only (a pass over every pod for each of hundreds of
/// autoscalers was most of `plan` on a large dump), and within it, when the selector requires
/// a `key=value` label (every workload's does), against the pods carrying that label only.
#[derive(Debug, Default)]
pub struct PodsByNamespace(HashMap<String, NamespacePods>);

/// One namespace's pods, in the order given, and their index by label.
#[derive(Debug, Default)]
struct NamespacePods {
    pods: Vec<Arc<PodInfo>>,
    /// Label key → value → positions in `pods` (ascending), built when first asked: with a
    /// thousand workloads in a namespace, each autoscaler's selector otherwise tested every pod.
    by_label: OnceLock<HashMap<String, HashMap<String, Vec<u32>>>>,
}

impl NamespacePods {
    fn by_label(&self) -> &HashMap<String, HashMap<String, Vec<u32>>> {
        self.by_label.get_or_init(|| {
            let mut index: HashMap<String, HashMap<String, Vec<u32>>> = HashMap::new();
            for (position, pod) in self.pods.iter().enumerate() {
                // Positions fit: a namespace of more than 4 billion pods is not a cluster.
                let position = u32::try_from(position).unwrap_or(u32::MAX);
                for (key, value) in pod.labels().into_iter().flatten() {
                    let values = match index.get_mut(key.as_str()) {
                        Some(values) => values,
                        None => index.entry(key.clone()).or_default(),
                    };
                    match values.get_mut(value.as_str()) {
                        Some(positions) => positions.push(position),
                        None => {
                            values.insert(value.clone(), vec![position]);
                        }
                    }
                }
            }
            index
        })
    }
}

impl PodsByNamespace {
    pub fn new<'p>(pods: impl IntoIterator<Item = &'p Arc<PodInfo>>) -> PodsByNamespace {
        PodsByNamespace::gather(pods, |_| true)
    }

    /// The pods of the given namespaces only: what the pod autoscalers of those namespaces
    /// read, without indexing every pod of the cluster.
    pub fn of_namespaces<'p>(
        pods: impl IntoIterator<Item = &'p Arc<PodInfo>>,
        namespaces: &HashSet<&str>,
    ) -> PodsByNamespace {
        PodsByNamespace::gather(pods, |namespace| namespaces.contains(namespace))
    }

    fn gather<'p>(pods: impl IntoIterator<Item = &'p Arc<PodInfo>>, wanted: impl Fn(&str) -> bool) -> PodsByNamespace {
        let mut by_namespace: HashMap<String, NamespacePods> = HashMap::new();
        // Lists come sorted by namespace from most sources: one lookup per run of a namespace.
        let mut last: Option<(&str, bool)> = None;
        for pod in pods {
            let namespace = pod.namespace();
            let keep = match last {
                Some((previous, keep)) if previous == namespace => keep,
                _ => wanted(namespace),
            };
            last = Some((namespace, keep));
            if !keep {
                continue;
            }
            match by_namespace.get_mut(namespace) {
                Some(list) => list.pods.push(pod.clone()),
                None => {
                    let list = NamespacePods { pods: vec![pod.clone()], by_label: OnceLock::new() };
                    by_namespace.insert(namespace.to_string(), list);
                }
            }
        }
        PodsByNamespace(by_namespace)
    }

    /// The pods of `namespace` that `selector` selects, in the order given: what a pod
    /// autoscaler and its metrics sources count.
    pub fn selected<'p: 's, 's>(
        &'p self,
        namespace: &str,
        selector: &'s Selector,
    ) -> impl Iterator<Item = &'p Arc<PodInfo>> + 's {
        let list = self.0.get(namespace);
        let candidates: Box<dyn Iterator<Item = &'p Arc<PodInfo>> + 'p> = match (list, selector.required_equality()) {
            (None, _) => Box::new(std::iter::empty()),
            (Some(list), Some((key, value))) => {
                let positions = list.by_label().get(key).and_then(|values| values.get(value));
                Box::new(positions.into_iter().flatten().filter_map(|&p| list.pods.get(p as usize)))
            }
            (Some(list), None) => Box::new(list.pods.iter()),
        };
        candidates.filter(move |p| selector.matches(p.labels()))
    }
}

/// Finds the pods a pod autoscaler's target selects: through the reader's index when it has
/// one (`ClusterReader::selected_pods`), else in the view's pods of the autoscalers'
/// namespaces, grouped once, when first needed.
struct PodFinder<'v> {
    view: &'v ClusterView,
    index: &'v PodIndex<'v>,
    by_namespace: Option<PodsByNamespace>,
}

/// A reader's index of pods by namespace and selector (`ClusterReader::selected_pods`).
pub type PodIndex<'a> = dyn Fn(&str, &Selector) -> Option<Vec<Arc<PodInfo>>> + 'a;

impl PodFinder<'_> {
    fn selected(&mut self, namespace: &str, selector: Option<&Selector>) -> Vec<Arc<PodInfo>> {
        let Some(selector) = selector else { return Vec::new() };
        if let Some(pods) = (self.index)(namespace, selector) {
            return pods;
        }
        let view = self.view;
        let by_namespace = self.by_namespace.get_or_insert_with(|| {
            let namespaces: HashSet<&str> = view
                .hpas
                .iter()
                .map(|h| &h.metadata)
                .chain(view.wpas.iter().map(|w| &w.metadata))
                .map(|m| m.namespace.as_deref().unwrap_or("default"))
                .collect();
            PodsByNamespace::of_namespaces(&view.pods, &namespaces)
        });
        by_namespace.selected(namespace, selector).cloned().collect()
    }
}

/// What a pod autoscaler sees of its target: the scale subresource and the pods it selects.
fn scale_and_pods(pods: &mut PodFinder, namespace: &str, target: &TargetState) -> (HpaScale, Vec<Arc<PodInfo>>) {
    let pods = pods.selected(namespace, target.selector.as_ref());
    let scale = HpaScale {
        spec_replicas: target.spec_replicas,
        status_replicas: target.status_replicas,
        selector: target.selector.clone(),
    };
    (scale, pods)
}

impl PodScaling {
    pub fn new(config: HpaConfig) -> Self {
        PodScaling { config, ..Default::default() }
    }

    /// Reconciles every pod autoscaler of the view. `target` resolves a scale target (from the
    /// view, or the `/scale` subresource for other kinds); `index` finds a target's pods
    /// without a scan of the view when the reader can (`ClusterReader::selected_pods`).
    pub fn reconcile(
        &mut self,
        view: &ClusterView,
        target: &dyn Fn(&ScaleTarget) -> Option<TargetState>,
        index: &PodIndex,
        metrics: &dyn MetricsSource,
        now: Timestamp,
    ) -> Vec<AutoscalerReport> {
        let mut out = Vec::with_capacity(view.hpas.len() + view.wpas.len());
        let mut by_namespace = PodFinder { view, index, by_namespace: None };
        for hpa in &view.hpas {
            let name = key(&hpa.metadata);
            let namespace = hpa.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            let Some(spec) = hpa.spec.as_ref() else { continue };
            let reference = &spec.scale_target_ref;
            let wanted = ScaleTarget {
                api_version: reference.api_version.clone().unwrap_or_else(|| "apps/v1".into()),
                kind: reference.kind.clone(),
                namespace: namespace.clone(),
                name: reference.name.clone(),
            };
            let Some(t) = target(&wanted) else { continue };
            let (scale, pods) = scale_and_pods(&mut by_namespace, &namespace, &t);
            let state = self.hpa_states.entry(name.clone()).or_default();
            let decision = reconcile_hpa(hpa, &scale, &pods, metrics, &self.config, state, now);
            let status = decision.status(hpa.status.as_ref(), now);
            out.push(AutoscalerReport {
                name,
                kind: "HorizontalPodAutoscaler",
                target: format!("{}/{}", reference.kind, reference.name),
                current_replicas: decision.current_replicas,
                recommended_replicas: decision.recommended_replicas,
                desired_replicas: decision.desired_replicas,
                metrics: decision.metrics.iter().map(|m| serde_json::to_value(m).unwrap_or_default()).collect(),
                conditions: decision.conditions.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect(),
                events: events(&decision.events),
                dry_run: false,
                rescale: decision.rescale.then(|| Rescale { target: t.clone(), to: decision.desired_replicas }),
                hpa_status: (hpa.status.as_ref() != Some(&status)).then_some(status),
                wpa_status: None,
            });
        }
        for wpa in &view.wpas {
            let name = key(&wpa.metadata);
            let namespace = wpa.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            let reference = &wpa.spec.scale_target_ref;
            let wanted = ScaleTarget {
                api_version: if reference.api_version.is_empty() {
                    "apps/v1".into()
                } else {
                    reference.api_version.clone()
                },
                kind: reference.kind.clone(),
                namespace: namespace.clone(),
                name: reference.name.clone(),
            };
            let Some(t) = target(&wanted) else { continue };
            let (scale, pods) = scale_and_pods(&mut by_namespace, &namespace, &t);
            let state = self.wpa_states.entry(name.clone()).or_insert_with(|| WpaState::from_object(wpa));
            let decision = reconcile_wpa(wpa, &scale, &pods, metrics, state, now);
            let report = AutoscalerReport {
                name: name.clone(),
                kind: "WatermarkPodAutoscaler",
                target: format!("{}/{}", reference.kind, reference.name),
                current_replicas: decision.current_replicas,
                recommended_replicas: decision.proposed_replicas,
                desired_replicas: decision.desired_replicas,
                metrics: decision
                    .status
                    .current_metrics
                    .iter()
                    .map(|m| serde_json::to_value(m).unwrap_or_default())
                    .collect(),
                conditions: decision
                    .status
                    .conditions
                    .iter()
                    .map(|c| serde_json::to_value(c).unwrap_or_default())
                    .collect(),
                events: events(&decision.events),
                dry_run: decision.dry_run,
                rescale: decision.applies().then(|| Rescale { target: t.clone(), to: decision.desired_replicas }),
                hpa_status: None,
                wpa_status: (wpa.status.as_ref() != Some(&decision.status)).then(|| decision.status.clone()),
            };
            if report.rescale.is_some() {
                self.wpa_rescales.insert(name, decision);
            }
            out.push(report);
        }
        out
    }

    /// The scale update of `report` failed: the controller's memory is rolled back and the
    /// report's events and status say so, as upstream's controllers do.
    pub fn rescale_failed(&mut self, report: &mut AutoscalerReport, error: &str, now: Timestamp) {
        let to = report.rescale.as_ref().map_or(report.desired_replicas, |r| r.to);
        report.rescale = None;
        if report.kind == "WatermarkPodAutoscaler" {
            let (Some(mut decision), Some(state)) =
                (self.wpa_rescales.remove(&report.name), self.wpa_states.get_mut(&report.name))
            else {
                return;
            };
            decision.rescale_failed(state, error, now);
            report.desired_replicas = decision.desired_replicas;
            report.events = events(&decision.events);
            report.conditions =
                decision.status.conditions.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
            report.wpa_status = Some(decision.status);
            return;
        }
        if let Some(state) = self.hpa_states.get_mut(&report.name) {
            state.forget_last_scale_event();
        }
        report.events.retain(|e| e.reason != "SuccessfulRescale" && e.reason != "Scaling");
        report.events.push(EventSummary {
            event_type: EventType::Warning,
            reason: "FailedRescale",
            message: format!("New size: {to}; error: {error}"),
        });
    }

    /// The rescales of this sync are done (applied or failed).
    pub fn rescales_done(&mut self) {
        self.wpa_rescales.clear();
    }

    /// Forgets autoscalers that no longer exist.
    pub fn retain(&mut self, view: &ClusterView) {
        let hpas: Vec<String> = view.hpas.iter().map(|h| key(&h.metadata)).collect();
        let wpa_keys: Vec<String> = view.wpas.iter().map(|w| key(&w.metadata)).collect();
        self.hpa_states.retain(|k, _| hpas.contains(k));
        self.wpa_states.retain(|k, _| wpa_keys.contains(k));
    }
}

/// The pods a scale-up of `rescale` will create, as pending pods built from the target's pod
/// template (empty for a scale-down or a target without a known template).
pub fn anticipated_pods(rescale: &Rescale, now: Timestamp) -> Vec<Arc<PodInfo>> {
    let t = &rescale.target;
    let Some(template) = &t.template else { return Vec::new() };
    let existing = t.spec_replicas.max(t.status_replicas);
    let count = (rescale.to - existing).max(0);
    let owner = OwnerReference {
        api_version: t.target.api_version.clone(),
        kind: t.target.kind.clone(),
        name: t.target.name.clone(),
        uid: format!("anticipated-{}-{}-{}", t.target.kind, t.target.namespace, t.target.name),
        controller: Some(true),
        ..Default::default()
    };
    let meta = template.metadata.clone().unwrap_or_default();
    // The replicas share their spec and labels (one interner for all of them).
    let mut interner = PodInterner::new();
    (0..count)
        .map(|i| {
            let mut annotations = meta.annotations.clone().unwrap_or_default();
            annotations.insert(ANTICIPATED_ANNOTATION.into(), format!("{}/{}", t.target.kind, t.target.name));
            let pod = Pod {
                metadata: ObjectMeta {
                    name: Some(format!("{}-anticipated-{i}", t.target.name)),
                    namespace: Some(t.target.namespace.clone()),
                    uid: Some(format!("anticipated-{}-{}-{i}", t.target.namespace, t.target.name)),
                    labels: meta.labels.clone(),
                    annotations: Some(annotations),
                    owner_references: Some(vec![owner.clone()]),
                    creation_timestamp: Some(Time(now)),
                    ..Default::default()
                },
                spec: template.spec.clone(),
                status: Some(PodStatus {
                    phase: Some("Pending".into()),
                    conditions: Some(vec![PodCondition {
                        type_: "PodScheduled".into(),
                        status: "False".into(),
                        reason: Some("Unschedulable".into()),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
            };
            Arc::new(PodInfo::interned(pod, &mut interner))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpa::test_support::{FakeMetrics, cpu_utilization, hpa, pods, t};
    use k8s_openapi::api::apps::v1::Deployment;

    fn reconcile(
        scaling: &mut PodScaling,
        view: &ClusterView,
        metrics: &FakeMetrics,
        now: Timestamp,
    ) -> AutoscalerReport {
        let targets = ScaleTargets::of(view);
        scaling.reconcile(view, &|target| targets.state(target), &|_, _| None, metrics, now).remove(0)
    }

    /// The label index answers what a scan of the namespace's pods answers, in the same order.
    #[test]
    fn selected_pods_are_those_a_scan_selects() {
        use simulator::testing::{pod, with_labels, with_namespace};
        let mut pods = Vec::new();
        for i in 0..40 {
            let app = ["web", "api", "db"][i % 3];
            let tier = if i % 4 == 0 { "front" } else { "back" };
            let namespace = if i % 5 == 0 { "other" } else { "team" };
            let labelled = with_labels(pod(&format!("p{i}"), "100m", "1Mi"), &[("app", app), ("tier", tier)]);
            pods.push(Arc::new(PodInfo::from(with_namespace(labelled, namespace))));
        }
        pods.push(Arc::new(PodInfo::from(with_namespace(pod("bare", "100m", "1Mi"), "team"))));
        let by_namespace = PodsByNamespace::new(&pods);
        let selectors = [
            "app=web",
            "app=web,tier=front",
            "app in (web,api)",
            "tier!=front",
            "app",
            "!app",
            "app=missing",
            "nokey=x",
            "",
        ];
        for text in selectors {
            let selector = Selector::parse(text).unwrap();
            for namespace in ["team", "other", "absent"] {
                let scan: Vec<&str> = pods
                    .iter()
                    .filter(|p| p.namespace() == namespace)
                    .filter(|p| selector.matches(p.labels()))
                    .map(|p| p.name())
                    .collect();
                let indexed: Vec<&str> = by_namespace.selected(namespace, &selector).map(|p| p.name()).collect();
                assert_eq!(indexed, scan, "selector {text:?} in {namespace}");
            }
        }
        let selector = Selector::parse("app=web").unwrap();
        assert_eq!(by_namespace.selected("team", &selector).count(), 11, "the test selects something");
    }

    /// The pods whose usage is kept are those an autoscaler's target selects; a namespace
    /// whose target the view does not describe keeps all; a namespace without autoscalers none.
    #[test]
    fn the_pods_read_are_those_the_targets_select() {
        use simulator::testing::{pod, with_labels, with_namespace};
        let labelled = |name: &str, namespace: &str, app: &str| {
            let pod = with_namespace(with_labels(pod(name, "100m", "1Mi"), &[("app", app)]), namespace);
            Arc::new(PodInfo::from(pod))
        };
        let pods = vec![
            labelled("web-1", "team", "web"),
            labelled("web-2", "team", "web"),
            labelled("db-1", "team", "db"),
            labelled("job-1", "batch", "job"),
            labelled("api-1", "quiet", "api"),
        ];
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {}},
        }))
        .unwrap();
        let autoscaler = |namespace: &str, kind: &str, name: &str| {
            let mut h = hpa(serde_json::json!({"maxReplicas": 5}));
            h.metadata.namespace = Some(namespace.into());
            let target = &mut h.spec.as_mut().unwrap().scale_target_ref;
            (target.kind, target.name) = (kind.into(), name.into());
            Arc::new(h)
        };
        let view = ClusterView {
            deployments: vec![Arc::new(deployment)],
            hpas: vec![autoscaler("team", "Deployment", "web"), autoscaler("batch", "Rollout", "job")],
            pods: pods.clone().into(),
            ..Default::default()
        };
        let by_namespace = PodsByNamespace::new(&pods);
        let read = PodsRead::of(&view, &by_namespace);
        let kept: Vec<&str> = pods.iter().filter(|p| read.keeps(p.namespace(), p.name())).map(|p| p.name()).collect();
        assert_eq!(kept, ["web-1", "web-2", "job-1"]);
    }

    /// A Deployment's ReplicaSet is kept without its template, and a pod autoscaler aimed at
    /// it anticipates no pods (the Deployment would set its replicas back); a ReplicaSet of its
    /// own keeps its template and anticipates the pods of a scale-up.
    #[test]
    fn only_replicasets_of_their_own_anticipate_pods() {
        let replicaset = |name: &str, owners: serde_json::Value| {
            let mut rs: ReplicaSet = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}}, "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
                "status": {"replicas": 2},
            }))
            .unwrap();
            crate::core::compact::compact(&mut rs);
            Arc::new(rs)
        };
        let owner = serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": "u", "controller": true}]);
        let view = ClusterView {
            replicasets: vec![replicaset("web-5d8f", owner), replicaset("batch", serde_json::json!([]))],
            ..Default::default()
        };
        let anticipated = |name: &str| {
            let target = ScaleTarget {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                namespace: "default".into(),
                name: name.into(),
            };
            let state = ScaleTargets::of(&view).state(&target).expect("the ReplicaSet is in the view");
            assert_eq!((state.spec_replicas, state.status_replicas), (2, 2));
            anticipated_pods(&Rescale { target: state, to: 5 }, t(0)).len()
        };
        assert_eq!(anticipated("web-5d8f"), 0, "the Deployment's ReplicaSet");
        assert_eq!(anticipated("batch"), 3, "a ReplicaSet of its own");
    }

    #[test]
    fn a_status_the_hpa_already_has_is_not_written_again() {
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "app", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {"replicas": 2},
        }))
        .unwrap();
        let spec = serde_json::json!({"minReplicas": 1, "maxReplicas": 5, "metrics": [cpu_utilization(50)]});
        let mut view = ClusterView {
            deployments: vec![Arc::new(deployment)],
            pods: pods(2, "1").into(),
            hpas: vec![Arc::new(hpa(spec))],
            ..Default::default()
        };
        let at_target = FakeMetrics::cpu(&[("p0", 500), ("p1", 500)], t(0));
        let mut scaling = PodScaling::new(HpaConfig::default());

        let first = reconcile(&mut scaling, &view, &at_target, t(0));
        let status = first.hpa_status.expect("a new HPA gets a status");
        assert!(first.rescale.is_none(), "at its target: no rescale");
        // The API server now holds that status: the next sync, with the same metrics, has
        // nothing to write.
        let mut written = (*view.hpas[0]).clone();
        written.status = Some(status);
        view.hpas = vec![Arc::new(written)];
        assert_eq!(reconcile(&mut scaling, &view, &at_target, t(15)).hpa_status, None);
        // A change (usage above the target) is written.
        let busier = FakeMetrics::cpu(&[("p0", 900), ("p1", 900)], t(30));
        assert!(reconcile(&mut scaling, &view, &busier, t(30)).hpa_status.is_some());
    }
}
