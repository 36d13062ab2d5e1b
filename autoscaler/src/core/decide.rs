//! `decide`: one pure pass from a view of the cluster to a plan. `plan` prints the result; the
//! control loop acts on it. Nothing here does I/O or reads a clock.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use expander::Expander;
use k8s_openapi::jiff::Timestamp;
use simulator::drainability::PdbTracker;
use simulator::well_known::POD_SCALE_UP_DELAY;
use simulator::{ClusterSnapshot, NodeSet, PodInfo, Resources};

use super::base_snapshot::BaseBuild;
use super::classify::Classified;
use super::cloud::CloudState;
use super::cluster_state::ClusterState;
use super::memory::LoopMemory;
use super::plan::{
    ClusterSummary, NodeGroupSummary, Plan, ScaleDownPlan, ScaleDownStatus, ScaleUpPlan, ScaleUpResult,
    UnremovableReason,
};
use super::readiness::Readiness;
use super::scale_down::{ScaleDownContext, plan_scale_down};
use super::scale_up::filter::filter_out_schedulable;
use super::scale_up::limits::node_delta;
use super::scale_up::{ScaleUpContext, plan_min_size_scale_up, plan_scale_up};
use super::templates::{Template, TemplateSource, build_templates};
use super::view::ClusterView;
use crate::config::AutoscalingOptions;
use cloudprovider::duration::parse_go_duration;

pub struct DecisionInput<'a> {
    pub view: &'a ClusterView,
    pub cloud: &'a CloudState,
    pub state: &'a ClusterState,
    pub options: &'a AutoscalingOptions,
    pub memory: &'a LoopMemory,
    pub now: Timestamp,
    /// Pods a pod autoscaler's scale-up will create (HPA-aware scale-up); treated as pending.
    pub anticipated: &'a [Arc<PodInfo>],
}

/// The plan and what the loop should remember from this decision.
pub struct Decision {
    pub plan: Plan,
    pub unneeded_since: HashMap<String, Timestamp>,
    pub unremovable_until: HashMap<String, (Timestamp, UnremovableReason)>,
    /// How long its parts took (the process's monotonic clock; nothing decided depends on it).
    pub timings: DecideTimings,
}

/// The parts of a decision the controller reports as upstream's `function_duration_seconds`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecideTimings {
    /// Classifying the pods and building the scheduling snapshot and the templates.
    pub snapshot: std::time::Duration,
    /// `filterOutSchedulable`: pending pods placed on existing and upcoming nodes.
    pub filter_out_schedulable: std::time::Duration,
    /// `scaleUp`'s simulation: the options for the pods left, the expander.
    pub scale_up: std::time::Duration,
    /// `findUnneeded`: the scale-down simulation.
    pub find_unneeded: std::time::Duration,
    /// Whether the snapshot's base was reused from the last decision.
    pub base: BaseBuild,
}

/// Upstream's young-pod filter: a pod is considered only once its age is strictly greater than
/// `--new-pod-scale-up-delay`, or than its `pod-scale-up-delay` annotation when that is longer.
/// So a pod exactly as old as the delay (or created "now", with no delay) still waits.
fn too_young(pod: &PodInfo, options: &AutoscalingOptions, now: Timestamp) -> bool {
    if is_anticipated(pod) {
        return false;
    }
    let mut delay = options.new_pod_scale_up_delay;
    if let Some(d) = pod.annotation(POD_SCALE_UP_DELAY).and_then(|v| parse_go_duration(v).ok())
        && d > delay
    {
        delay = d;
    }
    let Some(created) = pod.created() else { return false };
    let age = now.duration_since(created);
    // A creation time in the future (clock skew) is a negative age: young.
    age.is_negative() || age.unsigned_abs() <= delay
}

/// Pods that do not exist yet: anticipated from a pod autoscaler's scale-up.
fn is_anticipated(pod: &PodInfo) -> bool {
    pod.annotation(crate::podscaling::ANTICIPATED_ANNOTATION).is_some()
}

/// Upstream's `unschedulablePodTimeBuffer`: pending pods younger than this are very new.
pub const VERY_NEW_POD_AGE: std::time::Duration = std::time::Duration::from_secs(2);
/// The same for pods that request GPUs (`unschedulablePodWithGpuTimeBuffer`).
const VERY_NEW_GPU_POD_AGE: std::time::Duration = std::time::Duration::from_secs(30);

/// Upstream waits one loop when every pending pod is very new (< 2s; GPU pods < 30s), expecting
/// more to come — unless schedulers are bypassed. Anticipated pods are exactly the ones not to
/// wait for.
fn all_pods_very_new(pods: &[Arc<PodInfo>], now: Timestamp) -> bool {
    if pods.iter().any(|p| is_anticipated(p)) {
        return false;
    }
    let age = |p: &PodInfo| p.created().map(|t| now.duration_since(t).as_secs_f64());
    let oldest = pods.iter().filter_map(|p| age(p)).fold(f64::NEG_INFINITY, f64::max);
    let gpu_oldest = pods
        .iter()
        .filter(|p| p.requests().get(simulator::resources::NVIDIA_GPU) > 0)
        .filter_map(|p| age(p))
        .fold(f64::NEG_INFINITY, f64::max);
    (oldest.is_finite() && oldest < VERY_NEW_POD_AGE.as_secs_f64())
        || (gpu_oldest.is_finite() && gpu_oldest < VERY_NEW_GPU_POD_AGE.as_secs_f64())
}

/// One decision: the scale-up, then the scale-down planned after it.
pub fn decide(input: &DecisionInput, expander: &mut Expander) -> Decision {
    decide_scale_up(input, expander).plan_scale_down()
}

/// A decision halfway: the snapshot and the scale-up plan, the scale-down not planned yet. The
/// control loop makes the scale-up's `IncreaseSize` calls here, as upstream's `RunOnce` does
/// before its scale-down planning, so a burst of pending pods does not wait for the scale-down
/// simulation. Nothing of the scale-up's calls reaches the scale-down planning but the plan
/// itself: the same plan whether the calls are made in between or not.
pub struct ScaleUpDecided<'a> {
    input: &'a DecisionInput<'a>,
    snapshot: ClusterSnapshot,
    templates: HashMap<String, Template>,
    upcoming: NodeSet,
    scale_up: ScaleUpPlan,
    /// Whether the scale-down waits for this loop's scale-up (raising groups to their minimum
    /// does not count, as upstream does that after its scale-down).
    scale_up_this_loop: bool,
    registered: usize,
    pending_count: usize,
    unprocessed_count: usize,
    timings: DecideTimings,
}

/// The first half of a decision: classify the pods, build the snapshot and the templates, and
/// plan the scale-up.
pub fn decide_scale_up<'a>(input: &'a DecisionInput<'a>, expander: &mut Expander) -> ScaleUpDecided<'a> {
    let DecisionInput { view, cloud, state, options, memory, now, anticipated } = *input;
    let mut timings = DecideTimings::default();
    let mut laps = crate::core::laps::Laps::start();
    // The pods sorted (kept from the last decision while the pod list is the same).
    let Classified {
        pods_by_node,
        scheduled_count,
        mut pending,
        nominated,
        mut ignored,
        pending_count,
        unprocessed_count,
    } = memory.classified.classify(view, options);
    for info in anticipated {
        if info.priority >= options.expendable_pods_priority_cutoff {
            pending.push(info.clone());
        }
    }

    // The snapshot: registered nodes (minus managed nodes still starting, which count as
    // upcoming) with their pods — the base, kept from the last decision and updated — then,
    // inside a fork undone at the end, template copies for upcoming nodes and what the
    // decision simulates.
    let mut unmanaged_capacity: BTreeMap<String, i64> = BTreeMap::new();
    let mut base_nodes = Vec::with_capacity(view.nodes.len());
    for (position, node) in view.nodes.iter().enumerate() {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let managed = cloud.group_at(position, node).is_some();
        if managed && state.readiness.at(position, node, cloud) == Some(Readiness::NotStarted) {
            continue;
        }
        if !managed {
            let gpu_type = cloud.node_gpus.get(name).map(|g| g.gpu_type.clone()).filter(|t| !t.is_empty());
            let info = simulator::NodeInfo::new(node.clone());
            for (r, v) in node_delta(&info, gpu_type.as_deref(), simulator::resources::NVIDIA_GPU) {
                *unmanaged_capacity.entry(r).or_insert(0) += v;
            }
        }
        base_nodes.push(node);
    }
    let pods_of = |name: &str| pods_by_node.get(name);
    let (mut snapshot, base_build) =
        memory.snapshots.base(&base_nodes, pods_of, &view.namespaces, scheduled_count + nominated.len());
    timings.base = base_build;
    match view.volume_index(options.csi_node_aware_scheduling) {
        Some(volumes) => snapshot.set_volumes(volumes),
        None => snapshot.clear_volumes(),
    }
    snapshot.fork();
    let templates = build_templates(view, cloud, state, &pods_by_node, options, now);
    let mut upcoming = NodeSet::new();
    for group in &cloud.groups {
        let n = state.group(&group.id).map_or(0, |g| g.upcoming);
        let Some(t) = templates.get(&group.id) else { continue };
        for i in 0..n {
            if let Ok(id) = snapshot.add_node_info(t.node_info.renamed_copy(&format!("upcoming-{i}"))) {
                upcoming.insert(id);
            }
        }
    }
    for (pod, node) in nominated {
        // Forced, without predicates: the preempted pods are still on the node.
        if let Some(id) = snapshot.node_id(&node) {
            let _ = snapshot.add_pod(pod, id);
        }
    }
    let registered = view.nodes.len();
    // What upstream compares with --max-nodes-total: the snapshot's nodes, i.e. registered nodes
    // with starting ones replaced by their upcoming stand-ins (so each is counted once).
    let snapshot_node_count = snapshot.node_count();

    // Upstream's "ready nodes" for the scale-up gates: ready and not cordoned.
    let ready_schedulable = view
        .nodes
        .iter()
        .filter(|n| !n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false))
        .filter(|n| state.is_ready(n.metadata.name.as_deref().unwrap_or("")))
        .count();

    // Scale-up.
    let up_ctx = ScaleUpContext {
        cloud,
        state,
        options,
        templates: &templates,
        priority_config: view.priority_expander_config(&options.namespace),
        priority_config_map_exists: view.priority_expander_config_map(&options.namespace).is_some(),
        now,
        current_node_count: snapshot_node_count,
        registered_nodes: registered,
        unmanaged_capacity,
    };
    timings.snapshot = laps.lap();
    let mut scale_up = if !state.healthy {
        ScaleUpPlan::empty(ScaleUpResult::NotTried, "cluster is unhealthy: too many unready nodes")
    } else if !options.scale_up_from_zero && ready_schedulable == 0 {
        ScaleUpPlan::empty(ScaleUpResult::NotTried, "no ready nodes and --scale-up-from-zero=false")
    } else {
        let filtered = filter_out_schedulable(&mut snapshot, pending.clone());
        timings.filter_out_schedulable = laps.lap();
        let mut to_help = Vec::new();
        for p in filtered.still_pending {
            if p.daemonset {
                ignored.insert(p.key.to_string(), "DaemonSet pod".into());
            } else if too_young(&p, options, now) {
                ignored.insert(p.key.to_string(), "younger than the scale-up delay".into());
            } else {
                to_help.push(p);
            }
        }
        let mut plan = if to_help.is_empty() {
            ScaleUpPlan::empty(ScaleUpResult::NotNeeded, "no unschedulable pods need new nodes")
        } else if options.max_nodes_total > 0 && ready_schedulable >= options.max_nodes_total {
            let mut p = ScaleUpPlan::empty(ScaleUpResult::LimitedByMaxNodesTotal, "max total nodes in cluster reached");
            p.max_nodes_total_reached = true;
            p.pods_remain_unschedulable = to_help
                .iter()
                .map(|pod| super::plan::PendingPodReasons {
                    pod: pod.key.to_string(),
                    reasons: vec!["max total nodes in cluster reached".into()],
                    by_node_group: BTreeMap::new(),
                })
                .collect();
            p
        } else if options.bypassed_scheduler_names.is_empty() && all_pods_very_new(&to_help, now) {
            ScaleUpPlan::empty(ScaleUpResult::InCooldown, "unschedulable pods are very new, waiting one loop for more")
        } else {
            plan_scale_up(&up_ctx, &mut snapshot, &to_help, expander)
        };
        plan.pods_fit_existing_nodes = filtered.fit_existing.iter().map(|p| p.key.to_string()).collect();
        plan
    };
    // Upstream raises groups to their minimum after scale-down, so that step does not put
    // scale-down in cooldown.
    let scaled_up = !scale_up.increases.is_empty();
    if options.enforce_node_group_min_size && state.healthy {
        let raised = plan_min_size_scale_up(&up_ctx, &scale_up.increases);
        if !raised.is_empty() {
            let summary: Vec<String> = raised
                .iter()
                .map(|i| {
                    format!("{} {}->{} (min: {})", i.node_group, i.current_size, i.new_size, min_size_of(cloud, i))
                })
                .collect();
            let text = format!("raising node groups to their minimum size: {}", summary.join(", "));
            scale_up.message = if scaled_up { format!("{}; {text}", scale_up.message) } else { text };
            scale_up.result = ScaleUpResult::Successful;
            scale_up.increases.extend(raised);
        }
    }
    scale_up.pods_ignored = ignored;

    timings.scale_up = laps.lap();
    let scale_up_this_loop = scaled_up || scale_up.result == ScaleUpResult::InCooldown;
    ScaleUpDecided {
        input,
        snapshot,
        templates,
        upcoming,
        scale_up,
        scale_up_this_loop,
        registered,
        pending_count,
        unprocessed_count,
        timings,
    }
}

impl ScaleUpDecided<'_> {
    /// The scale-up this decision makes (final: the scale-down planning does not change it).
    pub fn scale_up(&self) -> &ScaleUpPlan {
        &self.scale_up
    }

    /// The rest of the decision: the scale-down planning, and the plan.
    pub fn plan_scale_down(self) -> Decision {
        let ScaleUpDecided {
            input,
            mut snapshot,
            templates,
            upcoming,
            scale_up,
            scale_up_this_loop,
            registered,
            pending_count,
            unprocessed_count,
            mut timings,
        } = self;
        let DecisionInput { view, cloud, state, options, memory, now, anticipated: _ } = *input;
        let mut laps = crate::core::laps::Laps::start();
        // Scale-down.
        let (scale_down, unneeded_since, unremovable_until) = if !options.scale_down_enabled {
            (disabled_scale_down("--scale-down-enabled=false"), HashMap::new(), HashMap::new())
        } else if !state.healthy {
            (disabled_scale_down("cluster is unhealthy: too many unready nodes"), HashMap::new(), HashMap::new())
        } else {
            let controllers = view.controllers();
            let ctx = ScaleDownContext {
                view,
                cloud,
                state,
                options,
                memory,
                now,
                controllers: &controllers,
                pdbs: PdbTracker::new(&view.pdbs),
                upcoming: &upcoming,
                scale_up_this_loop,
            };
            let outcome = plan_scale_down(ctx, &mut snapshot);
            (outcome.plan, outcome.unneeded_since, outcome.unremovable_until)
        };
        // Back to the base, for the next decision.
        snapshot.revert();
        memory.snapshots.keep(snapshot, &view.namespaces);

        timings.find_unneeded = laps.lap();
        let plan = Plan {
            time: now.to_string(),
            cluster: ClusterSummary {
                nodes: registered,
                ready_nodes: state.ready,
                unready_nodes: state.unready,
                not_started_nodes: state.not_started,
                pods: view.pods.len(),
                pending_pods: pending_count,
                scheduler_unprocessed_pods: unprocessed_count,
                healthy: state.healthy,
                node_groups: cloud
                    .groups
                    .iter()
                    .map(|g| {
                        let gs = state.group(&g.id).cloned().unwrap_or_default();
                        NodeGroupSummary {
                            id: g.id.clone(),
                            min_size: g.min_size,
                            max_size: g.max_size,
                            target_size: g.target_size,
                            ready: gs.ready,
                            upcoming: gs.upcoming,
                            healthy: gs.healthy,
                            template: match templates.get(&g.id).map(|t| &t.source) {
                                Some(TemplateSource::Node(n)) => format!("node {n}"),
                                Some(TemplateSource::CloudProvider) => "cloud provider".into(),
                                Some(TemplateSource::UnreadyNode(n)) => format!("unready node {n}"),
                                None => "none".into(),
                            },
                        }
                    })
                    .collect(),
            },
            scale_up,
            scale_down,
        };
        Decision { plan, unneeded_since, unremovable_until, timings }
    }
}

fn disabled_scale_down(why: &str) -> ScaleDownPlan {
    ScaleDownPlan {
        status: ScaleDownStatus::Disabled,
        message: why.into(),
        unneeded: Vec::new(),
        unremovable: Vec::new(),
        delete_now: Default::default(),
    }
}

fn min_size_of(cloud: &CloudState, increase: &super::plan::GroupIncrease) -> usize {
    cloud.group(&increase.node_group).map_or(0, |g| g.min_size)
}

/// Requests of a set of pods (used by reports).
pub fn total_requests<'a>(pods: impl IntoIterator<Item = &'a Arc<PodInfo>>) -> Resources {
    let mut r = Resources::default();
    for p in pods {
        r.add(p.requests());
    }
    r
}
