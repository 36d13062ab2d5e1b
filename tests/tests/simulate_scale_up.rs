//! Scale-up end to end: the real control loop on the in-memory cluster and cloud, with the
//! expander choosing between node groups.

mod support;

use std::collections::BTreeMap;

use autoscaler::control::LoopReport;
use autoscaler::ports::EventReason;
use autoscaler::simulate::world::World;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use support::*;

/// Three pods of 1800m / 3Gi. `snug` (2 CPU / 4 GiB) takes one pod per node and wastes little;
/// `roomy` (8 CPU / 32 GiB) takes all three on one node but leaves most of it idle, and is the
/// cheaper choice in total ($0.20 against 3 × $0.10). A one-node `system` group at its maximum
/// hosts nothing of them.
fn three_pods_two_groups(flags: &str, extra_objects: &str) -> String {
    format!(
        "duration: 20m\nflags: [{flags}]\nnodeGroups:\n{}{}{}objects:\n{}{extra_objects}",
        group_yaml("system", 1, 1, 1, "1", "2Gi", ""),
        group_yaml("snug", 0, 10, 0, "2", "4Gi", "  pricePerHour: 0.10\n"),
        group_yaml("roomy", 0, 10, 0, "8", "32Gi", "  pricePerHour: 0.20\n"),
        deployment_yaml("web", 3, "1800m", "3Gi", ""),
    )
}

/// Every scale-up the loop made, with its time.
#[derive(Default)]
struct ScaleUps(Vec<(Timestamp, String, usize)>);

impl ScaleUps {
    fn record(&mut self, now: Timestamp, report: Option<&LoopReport>) {
        for inc in report.map(|r| r.scale_ups.as_slice()).unwrap_or_default() {
            self.0.push((now, inc.node_group.clone(), inc.delta));
        }
    }
}

/// Runs a scenario: its scale-ups, and the web pods and nodes per group at the end.
fn run_and_collect(yaml: &str) -> (ScaleUps, Vec<Pod>, BTreeMap<String, usize>) {
    let mut ups = ScaleUps::default();
    let mut last = (Vec::new(), Default::default());
    run(
        yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            ups.record(now, report);
            last = (app_pods(world, "web"), nodes_per_group(world));
        }),
    );
    (ups, last.0, last.1)
}

fn assert_all_running(pods: &[Pod], expected: usize) {
    let running: Vec<&Pod> = pods.iter().filter(|p| pod_phase(p) == "Running" && pod_node(p).is_some()).collect();
    assert_eq!(
        running.len(),
        expected,
        "pods: {:?}",
        pods.iter().map(|p| (pod_key(p), pod_phase(p))).collect::<Vec<_>>()
    );
}

#[test]
fn least_waste_expander_scales_up_the_group_that_leaves_least_idle_capacity() {
    let (ups, pods, nodes) = run_and_collect(&three_pods_two_groups("--expander=least-waste", ""));
    assert_eq!(ups.0.len(), 1, "one scale-up covers all pending pods: {:?}", ups.0);
    assert_eq!((ups.0[0].1.as_str(), ups.0[0].2), ("snug", 3));
    assert_eq!(nodes.get("roomy").copied().unwrap_or(0), 0);
    assert_eq!(nodes.get("snug").copied(), Some(3));
    assert_all_running(&pods, 3);
}

#[test]
fn priority_expander_scales_up_the_highest_priority_group_of_the_config_map() {
    let config_map = "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cluster-autoscaler-priority-expander, namespace: kube-system}\n  data:\n    priorities: |\n      10:\n        - snu.*\n      50:\n        - .*oom.*\n";
    let (ups, pods, nodes) = run_and_collect(&three_pods_two_groups("--expander=priority", config_map));
    assert_eq!(ups.0.len(), 1, "{:?}", ups.0);
    assert_eq!((ups.0[0].1.as_str(), ups.0[0].2), ("roomy", 1), "least-waste would pick snug; priority 50 wins");
    assert_eq!(nodes.get("snug").copied().unwrap_or(0), 0);
    assert_all_running(&pods, 3);

    // Swapping the priorities swaps the choice.
    let swapped = config_map.replace("10:", "TMP:").replace("50:", "10:").replace("TMP:", "50:");
    let (ups, _, _) = run_and_collect(&three_pods_two_groups("--expander=priority", &swapped));
    assert_eq!((ups.0[0].1.as_str(), ups.0[0].2), ("snug", 3));
}

#[test]
fn pending_pods_trigger_one_scale_up_and_none_while_its_nodes_come_up() {
    // Provisioning takes 1m; the loop runs every 10s meanwhile and must count the upcoming
    // nodes instead of asking again.
    let mut ups = ScaleUps::default();
    let mut start = None;
    let mut running_at = None;
    run(
        &three_pods_two_groups("--expander=least-waste", ""),
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            let start = *start.get_or_insert(now);
            ups.record(now, report);
            let pods = app_pods(world, "web");
            if running_at.is_none() && pods.iter().filter(|p| pod_phase(p) == "Running").count() == 3 {
                running_at = Some(secs(start, now));
            }
        }),
    );
    assert_eq!(ups.0.len(), 1, "{:?}", ups.0);
    // Pods younger than 2s do not trigger a scale-up (upstream's unschedulable-pod buffer), so
    // the loop after the first one asks for the nodes.
    let asked_at = secs(start.unwrap(), ups.0[0].0);
    assert!(asked_at <= 10, "scale-up at {asked_at}s");
    let running_at = running_at.expect("all pods run");
    assert!((60..=120).contains(&running_at), "pods run once the nodes are up (1m provisioning): {running_at}s");
}

#[test]
fn max_nodes_total_holds_at_every_step() {
    // Twelve pods that each need a node of their own, two groups that could host them all, and
    // --max-nodes-total=5 with two nodes already there. Nodes come up at different times, the
    // loop keeps asking as pods stay pending, and a failed group makes it fall back to the other
    // one: neither the cloud targets nor the registered nodes ever pass 5.
    let yaml = format!(
        "duration: 1h\nflags: [--max-nodes-total=5, --expander=random]\nnodeGroups:\n{}{}objects:\n{}events:\n- {{at: 0s, fault: {{group: b, type: failIncreaseSize, times: 1}}}}\n",
        group_yaml("a", 0, 10, 2, "2", "8Gi", ""),
        group_yaml("b", 0, 10, 0, "2", "8Gi", "  provisioningDelay: 3m\n"),
        deployment_yaml("web", 12, "1500m", "1Gi", ""),
    );
    let mut most_targets = 0;
    let mut most_nodes = 0;
    let mut scale_ups = 0;
    let mut limit_events = 0;
    run(
        &yaml,
        &mut Watch(|now, world: &World, report: Option<&LoopReport>| {
            let targets = target(world, "a") + target(world, "b");
            let nodes = node_names(world).len();
            assert!(targets <= 5, "targets {targets} at {now}");
            assert!(nodes <= 5, "{nodes} nodes at {now}");
            most_targets = most_targets.max(targets);
            most_nodes = most_nodes.max(nodes);
            scale_ups += report.map_or(0, |r| r.scale_ups.len());
            for e in report.iter().flat_map(|r| &r.events) {
                if e.reason == EventReason::MaxNodesTotalReached {
                    assert_eq!(e.message, "Max total nodes in cluster reached: 5");
                    limit_events += 1;
                }
            }
        }),
    );
    assert_eq!((most_targets, most_nodes), (5, 5), "the limit was reached");
    assert!(scale_ups >= 1);
    assert!(limit_events >= 1, "upstream's MaxNodesTotalReached event while pods stay pending at the limit");
}

#[test]
fn max_nodes_total_counts_a_starting_node_once() {
    // Two nodes hold two of four pods (one per node); the other two ask for two more nodes,
    // which register at ~70s and stay NotStarted for 3 minutes. At 100s a fifth pod arrives:
    // nodes (2) + upcoming (2) = 4 < 5, so upstream adds the fifth node at once instead of
    // waiting for the starting nodes to become Ready.
    let yaml = format!(
        "duration: 10m\nflags: [--max-nodes-total=5]\ncluster: {{nodeStartupDelay: 3m}}\nnodeGroups:\n{}objects:\n{}events:\n- {{at: 100s, scale: {{kind: Deployment, name: web, replicas: 5}}}}\n",
        group_yaml("a", 0, 10, 2, "2", "8Gi", ""),
        deployment_yaml("web", 4, "1500m", "1Gi", "        nodeSelector: {pool: a}\n"),
    );
    let mut ups = ScaleUps::default();
    let mut start = None;
    run(
        &yaml,
        &mut Watch(|now, _: &World, report: Option<&LoopReport>| {
            start.get_or_insert(now);
            ups.record(now, report);
        }),
    );
    let start = start.unwrap();
    let ups: Vec<(i64, String, usize)> = ups.0.into_iter().map(|(t, g, d)| (secs(start, t), g, d)).collect();
    assert_eq!(ups.len(), 2, "{ups:?}");
    assert_eq!(ups[0].2, 2);
    assert_eq!(ups[1].2, 1);
    assert!(ups[1].0 <= 120, "the fifth node was asked for only at {}s", ups[1].0);
}

/// 1,000 web pods (1 CPU each) arrive in ten steps of 100, 400 ms apart from 65 s, on a
/// cluster whose nodes are full; `pool` nodes take 8 each. The timer (`--scan-interval=10m`)
/// runs a loop at 0 s and at 10 m only, so what happens in between is the pod signal's doing.
/// Returns every scale-up: (seconds since the start, group, nodes asked for).
fn burst_of_1000_pods(flags: &[&str]) -> Vec<(f64, String, usize)> {
    let mut events = String::new();
    for step in 0..10 {
        let at_ms = 65_000 + step * 400;
        events.push_str(&format!(
            "- {{at: {at_ms}ms, scale: {{kind: Deployment, name: web, replicas: {}}}}}\n",
            (step + 1) * 100
        ));
    }
    let yaml = format!(
        "duration: 12m\nflags: [--scan-interval=10m, --max-nodes-total=300]\nnodeGroups:\n{}{}objects:\n{}events:\n{events}",
        group_yaml("system", 1, 1, 1, "1", "2Gi", ""),
        group_yaml("pool", 0, 200, 0, "8", "32Gi", ""),
        deployment_yaml("web", 0, "1", "1Gi", ""),
    );
    let mut start = None;
    let mut ups = Vec::new();
    run_with_flags(
        &yaml,
        flags,
        &mut Watch(|now: Timestamp, _: &World, report: Option<&LoopReport>| {
            let start = *start.get_or_insert(now);
            for inc in report.map(|r| r.scale_ups.as_slice()).unwrap_or_default() {
                ups.push((now.duration_since(start).as_secs_f64(), inc.node_group.clone(), inc.delta));
            }
        }),
    );
    ups
}

#[test]
fn a_burst_of_1000_pending_pods_is_one_scale_up_decision() {
    let ups = burst_of_1000_pods(&[]);
    assert_eq!(ups.len(), 1, "one IncreaseSize for the whole burst: {ups:?}");
    assert_eq!((ups[0].1.as_str(), ups[0].2), ("pool", 125), "1,000 pods of 1 CPU on 8-CPU nodes");
    // The batching window closes 1 s after the last step (68.6 s), not at the 10-minute timer.
    assert!((ups[0].0 - 69.6).abs() < 1e-6, "decided at {}s", ups[0].0);
}

#[test]
fn without_the_batching_window_a_burst_is_decided_piecemeal_as_upstream() {
    // Upstream's behaviour, a loop at each new unschedulable pod: the loops of the first 2 s
    // find every pending pod very new and wait; from then on each step's loop (and the one
    // right after it, productive) asks for a few more nodes. Same nodes, many more calls.
    let ups = burst_of_1000_pods(&["--unschedulable-pods-batch-idle=0"]);
    assert!(ups.len() > 1, "{ups:?}");
    assert_eq!(ups.iter().map(|u| u.2).sum::<usize>(), 125, "{ups:?}");
}

#[test]
fn pods_a_timer_loop_finds_very_new_get_their_scale_up_two_seconds_later_not_a_scan_interval() {
    // Loops run at 0 s, 10 s, 20 s, … (nothing else happens). 100 pods arrive at 59.5 s: the
    // timer loop at 60 s finds them all younger than 2 s and waits for more (upstream's rule);
    // the next loop comes when they are 2 s old by their creation time (the age upstream's rule
    // reads), at 61.5 s: neither 2 s after the loop that waited (62 s) nor at the timer's 70 s.
    let yaml = format!(
        "duration: 3m\nflags: [--max-nodes-total=300]\nnodeGroups:\n{}{}objects:\n{}events:\n- {{at: 59500ms, scale: {{kind: Deployment, name: web, replicas: 100}}}}\n",
        group_yaml("system", 1, 1, 1, "1", "2Gi", ""),
        group_yaml("pool", 0, 200, 0, "8", "32Gi", ""),
        deployment_yaml("web", 0, "1", "1Gi", ""),
    );
    let mut start = None;
    let mut loops = Vec::new();
    run(
        &yaml,
        &mut Watch(|now: Timestamp, _: &World, report: Option<&LoopReport>| {
            let start = *start.get_or_insert(now);
            if let Some(r) = report {
                loops.push((now.duration_since(start).as_secs_f64(), r.scale_ups.len()));
            }
        }),
    );
    let around: Vec<(f64, usize)> = loops.iter().copied().filter(|(t, _)| (55.0..75.0).contains(t)).collect();
    let first_scale_up = around.iter().find(|(_, ups)| *ups > 0).map(|(t, _)| *t);
    assert_eq!(first_scale_up, Some(61.5), "loops from 55 s to 75 s: {around:?}");
}
