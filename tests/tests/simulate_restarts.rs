//! Restarts of the autoscaler in the middle of its work (issue 13): the process is killed before
//! or after each call that changes the cloud or the cluster — the scale-up request, the soft
//! taint, the `ToBeDeleted` taint, each eviction, `DeleteNodes` — and a fresh process with no
//! memory takes over on the same cluster and cloud. As upstream, the fresh process removes the
//! taints the dead one left (its first loop), counts the nodes the dead one asked for as upcoming
//! (`GetUpcomingNodes` reads the target size, not its own requests), and starts over what was
//! half done.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use autoscaler::control::{Autoscaler, LoopReport, Parts};
use autoscaler::core::counting::{ACTUATION_CALLS, Calls, Halt};
use autoscaler::ports::ClusterActions;
use autoscaler::simulate::scenario;
use autoscaler::simulate::world::{self, World};
use k8s_openapi::api::core::v1::{Node, Taint};
use simulator::well_known::{DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT};
use support::*;

/// A group of 4-CPU nodes, two to start with. `web` (3 CPU a pod, one pod a node) grows from 2
/// to 4 replicas at 1m — a scale-up of two nodes — and drops to 1 at 12m; `lite` (four pods of
/// 250m) sits on the nodes and must be drained off the ones that go, two pods off one node.
fn scale_up_then_down() -> String {
    format!(
        "duration: 45m\nflags: [--scale-down-unneeded-time=2m, --scale-down-delay-after-add=3m]\nnodeGroups:\n{}objects:\n{}{}events:\n- {{at: 1m, scale: {{kind: Deployment, name: web, replicas: 4}}}}\n- {{at: 12m, scale: {{kind: Deployment, name: web, replicas: 1}}}}\n",
        group_yaml("pool", 1, 6, 2, "4", "16Gi", ""),
        deployment_yaml("web", 2, "3", "1Gi", ""),
        deployment_yaml("lite", 4, "250m", "256Mi", ""),
    )
}

fn is_cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
}

/// What one run did, and the invariants checked after every step.
#[derive(Default)]
struct Restarts {
    max_target: usize,
    /// Pods (not terminating, not DaemonSet) on each node at the last step.
    pods_on: BTreeMap<String, BTreeSet<String>>,
    /// Pods that were running on a node when it went away.
    lost: Vec<(String, String)>,
    /// Pods seen terminating (evicted, or deleted by their controller), by node.
    terminating_on: BTreeMap<String, BTreeSet<String>>,
    /// At the end: (nodes, target, live instances) of the group.
    end: (usize, usize, usize),
    /// Nodes left tainted `ToBeDeleted` or cordoned at the end.
    left_marked: Vec<String>,
    /// Pods of `web` and `lite` running at the end.
    running: (usize, usize),
}

impl Restarts {
    fn step(&mut self, world: &World) {
        self.max_target = self.max_target.max(target(world, "pool"));
        let guard = world.handle.lock();
        let mut pods_on: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for n in guard.nodes() {
            pods_on.entry(n.metadata.name.clone().unwrap_or_default()).or_default();
        }
        for p in guard.pods().filter(|p| is_terminating(p)) {
            if let Some(node) = pod_node(p) {
                self.terminating_on.entry(node.to_string()).or_default().insert(pod_key(p));
            }
        }
        for p in guard.pods().filter(|p| !is_terminating(p)) {
            if let Some(node) = pod_node(p)
                && let Some(set) = pods_on.get_mut(node)
            {
                set.insert(pod_key(p));
            }
        }
        for (node, pods) in &self.pods_on {
            if !pods_on.contains_key(node) {
                self.lost.extend(pods.iter().map(|p| (node.clone(), p.clone())));
            }
        }
        self.pods_on = pods_on;
        self.left_marked = guard
            .nodes()
            .filter(|n| has_taint(n, TO_BE_DELETED_TAINT) || is_cordoned(n))
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        drop(guard);
        let running = |app: &str| app_pods(world, app).iter().filter(|p| pod_phase(p) == "Running").count();
        self.running = (running("web"), running("lite"));
        self.end = (node_names(world).len(), target(world, "pool"), live_instances(world, "pool").len());
    }
}

/// Runs `yaml` with the process killed at `halt` (never with `None`); returns what happened, the
/// actuation calls made (in order) and how many times a fresh process took over.
fn run_crashing(yaml: &str, halt: Option<Halt>) -> (Restarts, Vec<(&'static str, String)>, usize) {
    let calls = Arc::new(Calls::halting(ACTUATION_CALLS, halt));
    let mut seen = Restarts::default();
    run_with_calls(yaml, calls.clone(), &mut Watch(|_, world: &World, _: Option<&LoopReport>| seen.step(world)));
    (seen, calls.log(), calls.restarts())
}

fn describe(log: &[(&'static str, String)]) -> String {
    log.iter().enumerate().map(|(i, (call, on))| format!("{i}: {call} {on}\n")).collect()
}

#[test]
fn a_crash_before_or_after_any_actuation_call_loses_no_pod_and_leaves_no_node_cordoned() {
    let yaml = scale_up_then_down();
    let (clean, log, restarts) = run_crashing(&yaml, None);
    assert_eq!(restarts, 0);
    // The run without a crash goes through every step: the scale-up, soft taints, the taint,
    // evictions and DeleteNodes.
    let calls: BTreeSet<&str> = log.iter().map(|(c, _)| *c).collect();
    for step in
        ["NodeGroupIncreaseSize", "Taint DeletionCandidate", "Taint ToBeDeleted", "EvictPod", "NodeGroupDeleteNodes"]
    {
        assert!(calls.contains(step), "no {step} in the run without a crash:\n{}", describe(&log));
    }
    assert_eq!(clean.max_target, 4, "two nodes added to two:\n{}", describe(&log));
    assert!(clean.lost.is_empty(), "{:?}", clean.lost);
    assert_eq!(clean.running, (1, 4), "web and lite pods running at the end");
    // A drain of two pods, so a crash can fall between them.
    let evictions: Vec<&str> = log.iter().filter(|(c, _)| *c == "EvictPod").map(|(_, on)| on.as_str()).collect();
    assert!(
        clean.terminating_on.values().any(|pods| evictions.iter().filter(|p| pods.contains(**p)).count() == 2),
        "two evictions from one node: {evictions:?} {:?}",
        clean.terminating_on
    );
    let (nodes, target, instances) = clean.end;
    assert!(nodes < 4 && nodes == target && target == instances, "scaled down: {:?}", clean.end);

    let mut checked = 0;
    for (index, (call, on)) in log.iter().enumerate() {
        for halt in [Halt::Before(index), Halt::After(index)] {
            let (seen, crashed_log, restarts) = run_crashing(&yaml, Some(halt));
            let at = format!("killed at {halt:?} ({call} {on})");
            let trace = describe(&crashed_log);
            assert_eq!(restarts, 1, "{at}: one fresh process took over\n{trace}");
            // No double scale-up: the nodes the dead process asked for count as upcoming.
            assert!(seen.max_target <= clean.max_target, "{at}: target went to {}\n{trace}", seen.max_target);
            // No pod lost: no node went away with a pod still running on it.
            assert!(seen.lost.is_empty(), "{at}: pods lost with their node: {:?}\n{trace}", seen.lost);
            // No node left cordoned or tainted for ever.
            assert!(seen.left_marked.is_empty(), "{at}: left cordoned or tainted: {:?}\n{trace}", seen.left_marked);
            // Target sizes consistent with the cloud and the cluster, at the size the run without
            // a crash reached.
            assert_eq!(seen.end, clean.end, "{at}: (nodes, target, instances) at the end\n{trace}");
            assert_eq!(seen.running, clean.running, "{at}: web and lite pods running at the end\n{trace}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * log.len());
}

#[test]
fn a_process_restarted_while_its_nodes_build_does_not_ask_for_them_again() {
    let yaml = scale_up_then_down();
    let (_, log, _) = run_crashing(&yaml, None);
    let increase = log.iter().position(|(c, _)| *c == "NodeGroupIncreaseSize").expect("a scale-up");
    // Killed as IncreaseSize returns: the target was raised, the dead process's request is lost.
    let (seen, crashed_log, restarts) = run_crashing(&yaml, Some(Halt::After(increase)));
    assert_eq!(restarts, 1);
    let increases: Vec<&(&str, String)> = crashed_log.iter().filter(|(c, _)| *c == "NodeGroupIncreaseSize").collect();
    assert_eq!(increases.len(), 1, "one scale-up for web's two pods:\n{}", describe(&crashed_log));
    assert_eq!(seen.max_target, 4);
}

#[test]
fn a_fresh_process_removes_the_to_be_deleted_taint_the_dead_one_left_and_uncordons() {
    let yaml = scale_up_then_down();
    let (_, log, _) = run_crashing(&yaml, None);
    let taint = log.iter().position(|(c, _)| *c == "Taint ToBeDeleted").expect("a scale-down");
    let node = log[taint].1.clone();
    let (seen, crashed_log, _) = run_crashing(&yaml, Some(Halt::After(taint)));
    // The fresh process's first call is the clean-up of the taint (upstream's first loop).
    assert_eq!(crashed_log.get(taint + 1), Some(&("Untaint ToBeDeleted", node.clone())), "{}", describe(&crashed_log));
    assert!(seen.left_marked.is_empty(), "{:?}", seen.left_marked);
}

/// The world of a scenario with a node tainted as a previous process would have left it, and a
/// fresh autoscaler's first loop on it with `flags`.
fn first_loop_after(taints: &[&str], flags: &[&str]) -> Node {
    let yaml = format!("duration: 1m\nnodeGroups:\n{}", group_yaml("pool", 1, 3, 2, "4", "16Gi", ""));
    let scenario = scenario::parse(&yaml, "clean-up scenario").expect("a scenario");
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let options = world::options(&scenario.flags, &flags).expect("flags");
    let world = world::build(&scenario, &options).expect("a world");
    world.handle.lock().advance(scenario.start);
    let node = node_names(&world).into_iter().next().expect("a node");
    for key in taints {
        let taint =
            Taint { key: key.to_string(), value: Some("1".into()), effect: "NoSchedule".into(), time_added: None };
        ready_now(world.handle.taint_node(&node, taint, *key == TO_BE_DELETED_TAINT)).expect("tainted");
    }
    let expander = autoscaler::compose::build_expander(&options, world.cloud.as_ref(), Some(1)).expect("an expander");
    let mut fresh = Autoscaler::new(Parts {
        options,
        provider: world.cloud.clone(),
        reader: world.handle.clone(),
        actions: world.handle.clone(),
        clock: world.clock.clone(),
        expander,
        metrics: None,
    });
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    runtime.block_on(fresh.run_once()).expect("a loop");
    world.handle.lock().node(&node).expect("the node").as_ref().clone()
}

#[test]
fn leftover_taints_are_removed_at_start_and_soft_taints_only_when_soft_tainting_is_off() {
    let both = [TO_BE_DELETED_TAINT, DELETION_CANDIDATE_TAINT];
    // Soft tainting on (the default): the soft taint is the new process's to keep or remove.
    let node = first_loop_after(&both, &[]);
    assert!(!has_taint(&node, TO_BE_DELETED_TAINT) && !is_cordoned(&node), "{:?}", node.spec);
    assert!(has_taint(&node, DELETION_CANDIDATE_TAINT), "{:?}", node.spec);
    // Soft tainting off: nothing would ever remove a stale soft taint, so the first loop does.
    let node = first_loop_after(&both, &["--max-bulk-soft-taint-count=0"]);
    assert!(!has_taint(&node, TO_BE_DELETED_TAINT) && !is_cordoned(&node), "{:?}", node.spec);
    assert!(!has_taint(&node, DELETION_CANDIDATE_TAINT), "{:?}", node.spec);
}

/// The scenario format's `crash` events: the day above with the process killed between two loops
/// while the nodes of its scale-up build, and again right after its first eviction of the
/// scale-down. `simulate` itself (no test hook) kills it twice; the day ends as without the
/// crashes: no second scale-up, no pod lost, no node left cordoned or tainted.
#[test]
fn crash_events_in_a_scenario_mid_scale_up_and_mid_drain_end_the_day_as_without_them() {
    let clean_yaml = scale_up_then_down();
    let mut clean = Restarts::default();
    run(&clean_yaml, &mut Watch(|_, world: &World, _: Option<&LoopReport>| clean.step(world)));

    let yaml = format!("{clean_yaml}- {{at: 2m, crash: {{}}}}\n- {{at: 12m, crash: {{after: EvictPod}}}}\n");
    let scenario = scenario::parse(&yaml, "crash scenario").expect("a scenario");
    let mut seen = Restarts::default();
    // Per step: (seconds since the start, nodes, target, a node tainted or cordoned).
    let mut steps: Vec<(i64, usize, usize, bool)> = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    let outcome = {
        let mut watch = Watch(|now, world: &World, _: Option<&LoopReport>| {
            seen.step(world);
            steps.push((secs(scenario.start, now), seen.end.0, seen.end.1, !seen.left_marked.is_empty()));
        });
        runtime
            .block_on(autoscaler::simulate::run_observed(&scenario, &[], true, |_| {}, &mut watch))
            .unwrap_or_else(|e| panic!("simulation failed: {e}\n---\n{yaml}"))
    };

    let restarts: Vec<i64> =
        outcome.timeline.iter().filter(|e| e.kind == "autoscalerRestarted").map(|e| e.at as i64).collect();
    assert_eq!(restarts.len(), 2, "{restarts:?}");
    let at = |t: i64| steps.iter().rev().find(|s| s.0 <= t).copied().expect("a step");
    // The first at 2m, while the nodes asked for at 1m build (the target above the nodes).
    let (_, nodes, target, _) = at(restarts[0]);
    assert_eq!(restarts[0], 120);
    assert!(nodes < target, "the crash at 2m came with nodes building: {nodes} nodes, target {target}");
    // The second later, in a loop that evicted: its node tainted and cordoned when it died.
    assert!(restarts[1] >= 12 * 60 && at(restarts[1]).3, "the crash after the first eviction: {:?}", at(restarts[1]));

    assert!(seen.max_target <= clean.max_target, "target went to {}", seen.max_target);
    assert!(seen.lost.is_empty(), "pods lost with their node: {:?}", seen.lost);
    assert!(seen.left_marked.is_empty(), "left cordoned or tainted: {:?}", seen.left_marked);
    assert_eq!(seen.end, clean.end, "(nodes, target, instances) at the end");
    assert_eq!(seen.running, clean.running, "web and lite pods running at the end");
}
