//! Running a scenario: the cluster moves on a virtual clock, the scenario's events happen at
//! their times, and the real control loop (`control::Autoscaler`) runs when the controller's
//! schedule (`control::schedule`) says: at most `--scan-interval` after the last iteration, at
//! once after a productive one, and after a batch of pods the scheduler marked unschedulable.

use cloudprovider::duration::later;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cloudprovider::{CloudProvider, CloudProviderError};
use cloudprovider_memory::{FaultCount, Fulfilment};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};

use super::metrics::{GroupInfo, KeptBy, Metrics, MetricsSummary, PodAutoscalerSeries};
use super::scenario::{Action, Crash, Fault, ObjectRef, Scenario};
use super::world::{self, World, WorldError};
use crate::config::AutoscalingOptions;
use crate::control::schedule::{IterationOutcome, LoopSchedule, ScheduleConfig};
use crate::control::{Autoscaler, LoopReport, Parts};
use crate::core::counting::{ACTUATION_CALLS, Calls, Counting, CountingActions};
use crate::core::plan::UnremovableReason;
use crate::memory::{MemoryCluster, MemoryClusterHandle, ObjectKey, ObjectKind};
use crate::ports::{ClusterActions, ClusterReader, EventReason, ScaleTarget};
use simulator::drainability::BlockingReason;

/// One line of the `--events` timeline.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    pub time: String,
    /// Seconds since the start.
    pub at: f64,
    pub kind: &'static str,
    pub details: Value,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub scenario: String,
    /// The currency of the scenario's prices (`currency:`, USD by default).
    pub currency: String,
    /// When the simulated time starts (RFC 3339).
    pub start: String,
    /// The expander chain in force (`--expander`).
    pub expander: String,
    /// The flags given on the command line, over the scenario's (the what-if).
    pub extra_flags: Vec<String>,
    pub simulated_seconds: f64,
    pub wall_seconds: f64,
    pub loops: usize,
    pub scale_ups: usize,
    pub scale_up_failures: usize,
    pub scale_downs: usize,
    pub deletion_failures: usize,
    pub evictions: usize,
    /// Scale changes the pod autoscalers applied.
    pub pod_rescales: usize,
    /// Instances that failed to launch, per node group (stock-outs, quota, …).
    pub failed_launches: BTreeMap<String, usize>,
    #[serde(flatten)]
    pub metrics: MetricsSummary,
    #[serde(skip)]
    pub timeline: Vec<TimelineEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("{0}")]
    World(#[from] WorldError),
    /// `place` is the event's file, line and index.
    #[error("{place}: {message}")]
    Event { place: String, message: String },
    #[error("the autoscaler failed: {0}")]
    Loop(String),
}

fn scale_target(r: &ObjectRef) -> ScaleTarget {
    ScaleTarget {
        api_version: "apps/v1".into(),
        kind: r.kind.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
    }
}

/// A scale change expanded from a scenario event (ramps become one step per minute).
#[derive(Clone, Debug)]
struct Pending {
    at: Timestamp,
    action: Action,
    index: usize,
    /// A step of a ramp (the timeline names it `rampStep`, so readers can skip it).
    step: bool,
}

/// An Event as the timeline records it: the object as the API server's `involvedObject`.
fn event_details(e: &crate::ports::Event, source: &str) -> Value {
    json!({
        "involvedObject": {"kind": e.object.kind, "namespace": e.object.namespace, "name": e.object.name},
        "type": e.event_type.as_str(),
        "reason": e.reason.as_str(),
        "message": e.message,
        "source": source,
    })
}

/// The fraction of a node's allocatable its pods request, as scale-down's utilization: the
/// largest of cpu and memory, or on a GPU node its GPUs alone (upstream's rule), so that a GPU
/// node whose GPU is in use does not count as underused because its cpu is idle.
fn node_utilization(cluster: &MemoryCluster, node: &str) -> Option<f64> {
    let n = cluster.node(node)?;
    let allocatable = simulator::NodeInfo::new(n.clone()).allocatable;
    let mut requested = simulator::resources::Resources::default();
    for pod in cluster.pods_on_node(node) {
        if matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")) {
            continue;
        }
        requested.add(&simulator::resources::pod_requests(&pod));
    }
    let share = |name: &str| {
        let a = allocatable.get(name);
        if a > 0 { requested.get(name) as f64 / a as f64 } else { 0.0 }
    };
    if allocatable.get(simulator::resources::NVIDIA_GPU) > 0 {
        return Some(share(simulator::resources::NVIDIA_GPU));
    }
    Some(share(simulator::resources::CPU).max(share(simulator::resources::MEMORY)))
}

/// A node's shape from its capacity: `16 CPU, 32 GiB, 1 GPU`.
fn shape(node: &k8s_openapi::api::core::v1::Node) -> String {
    let status = node.status.as_ref();
    let of = |name: &str| {
        status
            .and_then(|s| s.capacity.as_ref().or(s.allocatable.as_ref()))
            .and_then(|c| c.get(name))
            .and_then(|q| simulator::quantity::parse_milli(&q.0).ok())
    };
    let mut parts = Vec::new();
    if let Some(cpu) = of(simulator::resources::CPU) {
        let cpus = cpu as f64 / 1000.0;
        parts.push(if cpus.fract() == 0.0 { format!("{cpus:.0} CPU") } else { format!("{cpus:.1} CPU") });
    }
    if let Some(memory) = of(simulator::resources::MEMORY) {
        parts.push(format!("{:.0} GiB", memory as f64 / 1000.0 / (1u64 << 30) as f64));
    }
    if let Some(gpus) = of(simulator::resources::NVIDIA_GPU).filter(|g| *g > 0) {
        parts.push(format!("{} GPU", gpus / 1000));
    }
    parts.join(", ")
}

/// A pod autoscaler's series, described from its object (the metric and its targets).
fn describe_pod_autoscaler(a: &crate::podscaling::AutoscalerReport, object: Option<Value>) -> PodAutoscalerSeries {
    let spec_metric = object.as_ref().and_then(|o| o.pointer("/spec/metrics/0")).cloned().unwrap_or(Value::Null);
    let (metric, targets) = metric_and_targets(&spec_metric);
    let namespace = a.name.split_once('/').map_or("default", |(n, _)| n);
    let workload = a.target.split_once('/').map_or(a.target.as_str(), |(_, n)| n);
    PodAutoscalerSeries {
        name: a.name.clone(),
        kind: a.kind.to_string(),
        target: a.target.clone(),
        workload: format!("{namespace}/{workload}"),
        metric,
        targets,
        points: Vec::new(),
    }
}

/// A quantity (`"600m"`, `"30"`, `60`) as a number.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => simulator::quantity::parse_milli(s).ok().map(|m| m as f64 / 1000.0),
        _ => None,
    }
}

/// What a pod autoscaler's first metric measures and its targets, from the object's spec.
fn metric_and_targets(spec_metric: &Value) -> (String, Vec<(String, f64)>) {
    const SOURCES: &[&str] = &["resource", "containerResource", "pods", "object", "external"];
    let Some((source, body)) = SOURCES.iter().find_map(|k| spec_metric.get(*k).map(|b| (*k, b))) else {
        return ("metric".into(), Vec::new());
    };
    let name = body
        .get("name")
        .or_else(|| body.pointer("/metric/name"))
        .or_else(|| body.get("metricName"))
        .and_then(Value::as_str)
        .unwrap_or("metric")
        .to_string();
    let mut targets = Vec::new();
    if let Some(target) = body.get("target") {
        if let Some(u) = target.get("averageUtilization").and_then(number) {
            return (format!("{name} use (% of requests)"), vec![("target".into(), u)]);
        }
        if let Some(v) = target.get("averageValue").or_else(|| target.get("value")).and_then(number) {
            targets.push(("target".into(), v));
        }
    }
    for (key, label) in [("highWatermark", "high watermark"), ("lowWatermark", "low watermark")] {
        if let Some(v) = body.get(key).and_then(number) {
            targets.push((label.into(), v));
        }
    }
    let metric = if matches!(source, "resource" | "containerResource") { format!("{name} use") } else { name };
    (metric, targets)
}

/// A metric status's current value (utilization in percent when there is one).
fn current_value(status: &Value) -> Option<f64> {
    const SOURCES: &[&str] = &["resource", "containerResource", "pods", "object", "external"];
    let body = SOURCES.iter().find_map(|k| status.get(*k))?;
    if let Some(v) = body.get("currentValue").and_then(number) {
        return Some(v);
    }
    let current = body.get("current")?;
    ["averageUtilization", "averageValue", "value"].iter().find_map(|k| current.get(*k).and_then(number))
}

struct Timeline {
    start: Timestamp,
    entries: Vec<TimelineEntry>,
    keep: bool,
}

impl Timeline {
    fn push(&mut self, now: Timestamp, kind: &'static str, details: Value) {
        if self.keep {
            self.entries.push(TimelineEntry {
                time: now.to_string(),
                at: now.duration_since(self.start).as_secs_f64(),
                kind,
                details,
            });
        }
    }
}

async fn apply(
    action: &Action,
    world: &World,
    handle: &MemoryClusterHandle,
    now: Timestamp,
    index: usize,
) -> Result<(Value, Vec<Pending>), String> {
    let mut follow_ups = Vec::new();
    let details = match action {
        Action::Scale { target, replicas } => {
            handle.set_scale(&scale_target(target), *replicas).await.map_err(|e| e.to_string())?;
            json!({"scale": format!("{}/{}/{}", target.kind, target.namespace, target.name), "replicas": replicas})
        }
        Action::Ramp { target, to, over } => {
            let from = handle.get_scale(&scale_target(target)).await.map_err(|e| e.to_string())?.spec_replicas;
            let steps = (over.as_secs() / 60).max(1);
            let mut previous = from;
            for s in 1..=steps {
                let replicas = from + ((*to - from) as f64 * s as f64 / steps as f64).round() as i32;
                if replicas == previous {
                    continue;
                }
                previous = replicas;
                follow_ups.push(Pending {
                    at: later(now, Duration::from_secs(60 * s)),
                    action: Action::Scale { target: target.clone(), replicas },
                    index,
                    step: true,
                });
            }
            json!({"ramp": format!("{}/{}/{}", target.kind, target.namespace, target.name), "from": from, "to": to, "over": over.as_secs()})
        }
        Action::Create(object) => {
            let o = world::cluster_object(object.clone(), "create").map_err(|e| e.to_string())?;
            handle.lock().apply(o).map_err(|e| e.to_string())?;
            json!({"create": object.get("kind"), "name": object.pointer("/metadata/name")})
        }
        Action::Delete(target) => {
            let kind = match target.kind.as_str() {
                "Deployment" => ObjectKind::Deployment,
                "ReplicaSet" => ObjectKind::ReplicaSet,
                "StatefulSet" => ObjectKind::StatefulSet,
                "Job" => ObjectKind::Job,
                "DaemonSet" => ObjectKind::DaemonSet,
                "Pod" => ObjectKind::Pod,
                "PodDisruptionBudget" => ObjectKind::PodDisruptionBudget,
                "PersistentVolumeClaim" => ObjectKind::PersistentVolumeClaim,
                other => return Err(format!("cannot delete kind {other}")),
            };
            handle.lock().delete(kind, &ObjectKey::new(&target.namespace, &target.name));
            json!({"delete": format!("{}/{}/{}", target.kind, target.namespace, target.name)})
        }
        Action::Fault { group, fault } => {
            let cloud = &world.cloud;
            let error = CloudProviderError::cloud(format!("simulated failure of node group {group}"));
            let count = |t: &Option<usize>| t.map_or(FaultCount::Always, FaultCount::Times);
            let result = match fault {
                Fault::FailIncreaseSize { times } => cloud.fail_increase_size(group, count(times), error),
                Fault::PartialFulfilment { ratio, count: n } => cloud.partial_fulfilment(
                    group,
                    match (ratio, n) {
                        (Some(r), _) => Fulfilment::Ratio(*r),
                        (None, Some(c)) => Fulfilment::Count(*c),
                        (None, None) => Fulfilment::Ratio(1.0),
                    },
                ),
                Fault::NeverRegister { count: n } => cloud.never_register(group, *n),
                Fault::FailDeleteNodes { times } => cloud.fail_delete_nodes(group, count(times), error),
                Fault::StockOut { duration } => cloud.stock_out(group, now, later(now, *duration)),
                Fault::Clear => cloud.clear_faults(group),
            };
            result.map_err(|e| e.to_string())?;
            let what = match fault {
                Fault::FailIncreaseSize { times } => json!({"type": "failIncreaseSize", "times": times}),
                Fault::PartialFulfilment { ratio, count } => {
                    json!({"type": "partialFulfilment", "ratio": ratio, "count": count})
                }
                Fault::NeverRegister { count } => json!({"type": "neverRegister", "count": count}),
                Fault::FailDeleteNodes { times } => json!({"type": "failDeleteNodes", "times": times}),
                Fault::StockOut { duration } => json!({"type": "stockOut", "forSeconds": duration.as_secs()}),
                Fault::Clear => json!({"type": "clear"}),
            };
            json!({"fault": what, "group": group})
        }
        Action::AnnotateNode { node, annotations } => {
            let mut guard = handle.lock();
            let Some(current) = guard.node(node).cloned() else { return Err(format!("node {node} does not exist")) };
            let mut n = (*current).clone();
            let a = n.metadata.annotations.get_or_insert_with(Default::default);
            a.extend(annotations.clone());
            guard.apply(n).map_err(|e| e.to_string())?;
            json!({"annotate": node, "annotations": annotations})
        }
        // The run loop kills the process (it holds it).
        Action::Crash(Crash::Now) => json!({"crash": "now"}),
        Action::Crash(Crash::Before(call)) => json!({"crash": {"before": call}}),
        Action::Crash(Crash::After(call)) => json!({"crash": {"after": call}}),
    };
    Ok((details, follow_ups))
}

/// The scenario's changes still to come, in time order; changes due at the same time in the
/// order they were queued (a ramp's steps after the events already there).
#[derive(Default)]
struct Queue {
    pending: BTreeMap<(Timestamp, u64), Pending>,
    queued: u64,
}

impl Queue {
    fn push(&mut self, p: Pending) {
        self.queued += 1;
        self.pending.insert((p.at, self.queued), p);
    }

    /// The first change due by `now`, if any.
    fn pop_due(&mut self, now: Timestamp) -> Option<Pending> {
        let entry = self.pending.first_entry().filter(|e| e.key().0 <= now)?;
        Some(entry.remove())
    }

    fn next_at(&self) -> Option<Timestamp> {
        self.pending.first_key_value().map(|((at, _), _)| *at)
    }
}

/// Watches a simulation from inside, for tests: called after every step with the world and
/// the loop report of that step (if the autoscaler ran).
pub trait Observer {
    fn after_step(&mut self, now: Timestamp, world: &World, report: Option<&LoopReport>);
}

struct NoObserver;

impl Observer for NoObserver {
    fn after_step(&mut self, _: Timestamp, _: &World, _: Option<&LoopReport>) {}
}

/// Runs a scenario. `extra_flags` override the scenario's flags; `progress` gets the share done.
pub async fn run(
    scenario: &Scenario,
    extra_flags: &[String],
    keep_timeline: bool,
    progress: impl FnMut(f64),
) -> Result<Outcome, SimulateError> {
    run_observed(scenario, extra_flags, keep_timeline, progress, &mut NoObserver).await
}

/// `run`, with an observer called after every step.
pub async fn run_observed(
    scenario: &Scenario,
    extra_flags: &[String],
    keep_timeline: bool,
    progress: impl FnMut(f64),
    observer: &mut dyn Observer,
) -> Result<Outcome, SimulateError> {
    run_inner(scenario, extra_flags, keep_timeline, progress, observer, None).await
}

/// `run_observed`, with the autoscaler's calls to the cloud and the cluster going through
/// `calls`: they are counted and logged, and where `calls` halts, the autoscaler process is
/// killed in the middle of its loop and a fresh one (no memory: no scale-up requests, no
/// deletions in flight, no unneeded times) starts a scan interval later, as after a crash.
pub async fn run_with_crash(
    scenario: &Scenario,
    extra_flags: &[String],
    calls: Arc<Calls>,
    observer: &mut dyn Observer,
) -> Result<Outcome, SimulateError> {
    run_inner(scenario, extra_flags, false, |_| {}, observer, Some(calls)).await
}

async fn run_inner(
    scenario: &Scenario,
    extra_flags: &[String],
    keep_timeline: bool,
    mut progress: impl FnMut(f64),
    observer: &mut dyn Observer,
    crash: Option<Arc<Calls>>,
) -> Result<Outcome, SimulateError> {
    let wall = Instant::now();
    // A crash event at a call needs the calls passed through `Calls` (one between loops does not).
    let crash = crash.or_else(|| {
        let at_call = scenario.events.iter().any(|e| matches!(&e.action, Action::Crash(c) if c.halt().is_some()));
        at_call.then(|| Arc::new(Calls::halting(ACTUATION_CALLS, None)))
    });
    let options: AutoscalingOptions = world::options(&scenario.flags, extra_flags)?;
    let world = world::build(scenario, &options)?;
    let loads = scenario.loads.clone();
    let has_pod_autoscalers = !loads.is_empty()
        || scenario.objects.iter().any(|o| o.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscaler"))
        || scenario.events.iter().any(|e| matches!(&e.action, Action::Create(o) if o.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscaler")));
    let metrics: Option<Arc<dyn crate::hpa::MetricsSource + Send + Sync>> = has_pod_autoscalers.then(|| {
        Arc::new(super::load::LoadModel::new(loads, scenario.start, world.handle.clone()))
            as Arc<dyn crate::hpa::MetricsSource + Send + Sync>
    });
    let mut schedule = LoopSchedule::new(ScheduleConfig::from_options(&options), scenario.start);
    let unschedulable_pods = world.handle.lock().unschedulable_pods();
    let defaults = options.node_group_defaults.clone();
    let expander_spec = options.expander.clone();
    let (provider, actions): (Arc<dyn CloudProvider>, Arc<dyn ClusterActions>) = match &crash {
        Some(calls) => (
            Arc::new(Counting { inner: world.cloud.clone(), calls: calls.clone() }),
            Arc::new(CountingActions { inner: world.handle.clone(), calls: calls.clone() }),
        ),
        None => (world.cloud.clone(), world.handle.clone()),
    };
    // A process of the autoscaler: a fresh one at the start and after each crash.
    let start_autoscaler = || -> Result<Autoscaler, SimulateError> {
        let expander = crate::compose::build_expander(&options, world.cloud.as_ref(), Some(scenario.seed))
            .map_err(|e| SimulateError::World(WorldError::Flags(format!("flags: {e}"))))?;
        Ok(Autoscaler::new(Parts {
            options: options.clone(),
            provider: provider.clone(),
            reader: world.handle.clone() as Arc<dyn ClusterReader>,
            actions: actions.clone(),
            clock: world.clock.clone(),
            expander,
            metrics: metrics.clone(),
        }))
    };
    let mut autoscaler = start_autoscaler()?;
    // A crash: the process and its memory are gone, a fresh one takes over; its first loop a
    // scan interval later, as after a loop that failed.
    let restart = |autoscaler: &mut Autoscaler,
                   schedule: &mut LoopSchedule,
                   timeline: &mut Timeline,
                   now: Timestamp|
     -> Result<(), SimulateError> {
        *autoscaler = start_autoscaler()?;
        if let Some(calls) = &crash {
            calls.restarted();
        }
        timeline.push(now, "autoscalerRestarted", json!({}));
        schedule.iteration_finished(now, IterationOutcome::Failed);
        Ok(())
    };
    let groups: Vec<GroupInfo> = scenario
        .groups
        .iter()
        .zip(&world.cloud.config().groups)
        .map(|(g, spec)| {
            // The provider's completed template (capacity, allocatable and pods defaulted).
            let template = spec.template.node.clone();
            let price = g.price_per_hour.unwrap_or_else(|| {
                world
                    .cloud
                    .pricing()
                    .ok()
                    .and_then(|p| {
                        p.node_price(&template, scenario.start, later(scenario.start, Duration::from_secs(3600))).ok()
                    })
                    .unwrap_or(0.0)
            });
            GroupInfo {
                id: g.id.clone(),
                shape: shape(&template),
                price_per_hour: price,
                allocatable: simulator::NodeInfo::new(Arc::new(template)).allocatable,
            }
        })
        .collect();
    let start = scenario.start;
    let end = later(start, scenario.duration);
    // One sample a minute for a day or two; fewer for longer runs (about 2,880 at most).
    let sample_every = Duration::from_secs((scenario.duration.as_secs() / 2880).max(60));
    let mut metrics = Metrics::new(start, groups, sample_every);
    let mut last_kept: BTreeMap<String, KeptBy> = BTreeMap::new();
    let mut timeline = Timeline { start, entries: Vec::new(), keep: keep_timeline };
    let mut queue = Queue::default();
    let mut events: Vec<Pending> = scenario
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| Pending { at: later(start, e.at), action: e.action.clone(), index: i, step: false })
        .collect();
    events.sort_by_key(|p| p.at);
    for p in events {
        queue.push(p);
    }
    let mut counts = Counts::default();
    let group_ids: Vec<String> = scenario.groups.iter().map(|g| g.id.clone()).collect();
    let mut now = start;
    let total = scenario.duration.as_secs_f64();
    let mut last_progress = -1.0;
    loop {
        // Scenario events due now (ramps schedule their steps).
        while let Some(p) = queue.pop_due(now) {
            world.handle.lock().advance(now);
            let (details, follow_ups) = apply(&p.action, &world, &world.handle, now, p.index)
                .await
                .map_err(|message| SimulateError::Event { place: scenario.events[p.index].place.clone(), message })?;
            timeline.push(now, if p.step { "rampStep" } else { "scenario" }, details);
            for f in follow_ups {
                queue.push(f);
            }
            if let Action::Crash(when) = p.action {
                match (when.halt(), &crash) {
                    (None, _) => restart(&mut autoscaler, &mut schedule, &mut timeline, now)?,
                    (Some(halt), Some(calls)) => calls.arm(halt),
                    // `crash` is set whenever a crash event names a call.
                    (Some(_), None) => {}
                }
            }
        }
        world.handle.lock().advance(now);
        if let Some(seen) = unschedulable_pods.take() {
            schedule.unschedulable_pods_seen(seen);
        }
        if autoscaler.next_pod_autoscaler_sync().is_some_and(|t| now >= t) {
            let r = autoscaler.sync_pod_autoscalers().await.map_err(|e| SimulateError::Loop(e.to_string()))?;
            for (name, target, from, to) in &r.rescaled {
                counts.pod_rescales += 1;
                let kind = r.autoscalers.iter().find(|a| &a.name == name).map_or("", |a| a.kind);
                timeline.push(
                    now,
                    "podAutoscaler",
                    json!({"autoscaler": name, "kind": kind, "target": target, "from": from, "to": to}),
                );
            }
            if keep_timeline {
                for e in &r.events {
                    let source = if e.object.kind == "HorizontalPodAutoscaler" {
                        "horizontal-pod-autoscaler"
                    } else {
                        "watermarkpodautoscaler-controller"
                    };
                    timeline.push(now, "event", event_details(e, source));
                }
            }
            if !r.autoscalers.is_empty() {
                let mut cluster = world.handle.lock();
                let hpas = cluster.hpas();
                let wpas = cluster.wpas().to_vec();
                drop(cluster);
                for a in &r.autoscalers {
                    let object = || {
                        let (namespace, name) = a.name.split_once('/').unwrap_or(("default", a.name.as_str()));
                        let is = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
                            m.namespace.as_deref().unwrap_or("default") == namespace && m.name.as_deref() == Some(name)
                        };
                        if a.kind == "HorizontalPodAutoscaler" {
                            hpas.iter().find(|h| is(&h.metadata)).and_then(|h| serde_json::to_value(&**h).ok())
                        } else {
                            wpas.iter().find(|w| is(&w.metadata)).and_then(|w| serde_json::to_value(&**w).ok())
                        }
                    };
                    let value = a.metrics.first().and_then(current_value);
                    let to = a.rescale.as_ref().map_or(a.current_replicas, |r| r.to);
                    metrics.pod_autoscaler(
                        now,
                        &a.name,
                        || describe_pod_autoscaler(a, object()),
                        (a.current_replicas, a.desired_replicas.max(to), value),
                    );
                }
            }
            if r.anticipated > 0 {
                // HPA-aware scale-up: the node autoscaler looks at once at the pods to come.
                schedule.pods_anticipated(now);
            }
        }
        let mut loop_report = None;
        let report = if schedule.due_at(now).is_none() {
            None
        } else if let Some(calls) = &crash {
            schedule.iteration_started(now);
            // Every call of the in-memory cluster and cloud completes at once, so a loop that
            // does not finish at its first poll is one the crash stopped.
            match futures::FutureExt::now_or_never(autoscaler.run_once()) {
                Some(result) => Some(result.map_err(|e| SimulateError::Loop(e.to_string()))?),
                None if calls.halted() => {
                    restart(&mut autoscaler, &mut schedule, &mut timeline, now)?;
                    None
                }
                None => return Err(SimulateError::Loop("the control loop waited on the in-memory cluster".into())),
            }
        } else {
            schedule.iteration_started(now);
            Some(autoscaler.run_once().await.map_err(|e| SimulateError::Loop(e.to_string()))?)
        };
        if let Some(report) = report {
            counts.loops += 1;
            for inc in &report.scale_ups {
                counts.scale_ups += 1;
                metrics.nodes_added(&inc.node_group, inc.delta);
                timeline.push(now, "scaleUp", serde_json::to_value(inc).unwrap_or_default());
            }
            for (g, e) in &report.scale_up_failures {
                counts.scale_up_failures += 1;
                timeline.push(now, "scaleUpFailed", json!({"nodeGroup": g, "error": e}));
            }
            for (g, n) in &report.timed_out {
                timeline.push(now, "scaleUpTimedOut", json!({"nodeGroup": g, "increase": n}));
            }
            for (g, i, code) in &report.failed_instances {
                *counts.failed_launches.entry(g.clone()).or_default() += 1;
                timeline.push(now, "instanceFailed", json!({"nodeGroup": g, "instance": i, "errorCode": code}));
            }
            for (g, i, reason) in &report.removed_instances {
                timeline.push(now, "instanceRemoved", json!({"nodeGroup": g, "instance": i, "reason": reason}));
            }
            for n in &report.deletions_started {
                timeline.push(now, "scaleDownStarted", json!({"node": n}));
            }
            for d in &report.deleted {
                counts.scale_downs += 1;
                metrics.node_removed(&d.node_group);
                timeline.push(now, "nodeDeleted", serde_json::to_value(d).unwrap_or_default());
            }
            for (n, why) in &report.deletion_failures {
                counts.deletion_failures += 1;
                timeline.push(now, "scaleDownFailed", json!({"node": n, "error": why}));
            }
            counts.evictions += report.evicted.len();
            for e in &report.events {
                if e.reason == EventReason::TriggeredScaleUp
                    && let Some(ns) = &e.object.namespace
                {
                    metrics.capacity_requested(&format!("{ns}/{}", e.object.name), now);
                }
                if keep_timeline {
                    timeline.push(now, "event", event_details(e, "cluster-autoscaler"));
                }
            }
            if let Some(plan) = &report.plan {
                let cluster = world.handle.lock();
                let mut kept = Vec::new();
                for u in &plan.scale_down.unremovable {
                    let group = u.node_group.clone().unwrap_or_default();
                    let why = match (u.reason, u.blocking_reason) {
                        (UnremovableReason::ScaleDownDisabledAnnotation, _) => {
                            let gpu = cluster.node(&u.node).is_some_and(|n| {
                                n.status
                                    .as_ref()
                                    .and_then(|s| s.allocatable.as_ref())
                                    .is_some_and(|a| a.contains_key(simulator::resources::NVIDIA_GPU))
                            });
                            let threshold = if gpu {
                                defaults.scale_down_gpu_utilization_threshold
                            } else {
                                defaults.scale_down_utilization_threshold
                            };
                            node_utilization(&cluster, &u.node)
                                .is_some_and(|used| used <= threshold)
                                .then_some(KeptBy::DisabledAnnotation)
                        }
                        (_, Some(BlockingReason::NotEnoughPdb)) => {
                            u.blocking_pod.clone().map(|blocking_pod| KeptBy::PodDisruptionBudget { blocking_pod })
                        }
                        // Rechecked later: still kept for the reason it had.
                        (UnremovableReason::RecentlyUnremovable, _) => last_kept.get(&u.node).cloned(),
                        _ => None,
                    };
                    if let Some(kept_by) = why {
                        if keep_timeline && last_kept.get(&u.node) != Some(&kept_by) {
                            timeline.push(
                                now,
                                "scaleDownBlocked",
                                json!({"node": u.node, "nodeGroup": group, "why": kept_by.explain()}),
                            );
                        }
                        kept.push((u.node.clone(), group, kept_by));
                    }
                }
                drop(cluster);
                last_kept = kept.iter().map(|(n, _, k)| (n.clone(), k.clone())).collect();
                metrics.kept_nodes(now, kept);
            }
            if let Some(plan) = &report.plan
                && keep_timeline
                && (report.productive() || !plan.scale_up.increases.is_empty())
            {
                timeline.push(
                    now,
                    "decision",
                    json!({"scaleUp": plan.scale_up.result, "message": plan.scale_up.message, "unneeded": plan.scale_down.unneeded.len(), "scaleDown": plan.scale_down.status}),
                );
            }
            // An iteration takes no virtual time.
            schedule.iteration_finished(now, IterationOutcome::of(&report));
            loop_report = Some(report);
        }
        observer.after_step(now, &world, loop_report.as_ref());
        // Each group's instances not being deleted (counted, not listed: this runs every step).
        let mut instances = BTreeMap::new();
        for id in &group_ids {
            if let Some(g) = world.cloud.group(id) {
                instances.insert(id.clone(), g.instances_not_deleting());
            }
        }
        metrics.step(now, &instances, &world.handle.lock());
        let done = now.duration_since(start).as_secs_f64() / total;
        if done - last_progress >= 0.01 {
            progress(done.min(1.0));
            last_progress = done;
        }
        if now >= end {
            break;
        }
        let next_event = queue.next_at().unwrap_or(end);
        let next_sync = autoscaler.next_pod_autoscaler_sync().unwrap_or(end);
        now = schedule.next_due().min(next_event).min(next_sync).min(end).max(later(now, Duration::from_millis(1)));
    }
    progress(1.0);
    Ok(Outcome {
        scenario: scenario.name.clone(),
        currency: scenario.currency.clone(),
        start: start.to_string(),
        expander: expander_spec,
        extra_flags: extra_flags.to_vec(),
        simulated_seconds: scenario.duration.as_secs_f64(),
        wall_seconds: wall.elapsed().as_secs_f64(),
        loops: counts.loops,
        scale_ups: counts.scale_ups,
        scale_up_failures: counts.scale_up_failures,
        scale_downs: counts.scale_downs,
        deletion_failures: counts.deletion_failures,
        evictions: counts.evictions,
        pod_rescales: counts.pod_rescales,
        failed_launches: counts.failed_launches,
        metrics: metrics.finish(end, &world.handle.lock()),
        timeline: timeline.entries,
    })
}

#[derive(Default)]
struct Counts {
    loops: usize,
    scale_ups: usize,
    scale_up_failures: usize,
    scale_downs: usize,
    deletion_failures: usize,
    evictions: usize,
    pod_rescales: usize,
    failed_launches: BTreeMap<String, usize>,
}
