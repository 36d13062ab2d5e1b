//! Upstream flags that change what the loop does, through the whole simulated loop:
//! delay-deletion annotations with `--node-deletion-delay-timeout`, the deletion batcher,
//! `--scale-down-delay-type-local`.

mod support;

use std::collections::BTreeMap;

use autoscaler::control::LoopReport;
use autoscaler::simulate::world::World;
use k8s_openapi::jiff::Timestamp;
use support::*;

/// Per node: when (seconds from the start) its deletion started and when DeleteNodes returned.
#[derive(Default)]
struct Deletions {
    start: Option<Timestamp>,
    started: BTreeMap<String, i64>,
    deleted: BTreeMap<String, i64>,
}

impl Deletions {
    fn record(&mut self, now: Timestamp, report: Option<&LoopReport>) {
        let start = *self.start.get_or_insert(now);
        let Some(report) = report else { return };
        let t = secs(start, now);
        for n in &report.deletions_started {
            self.started.entry(n.clone()).or_insert(t);
        }
        for d in &report.deleted {
            self.deleted.entry(d.node.clone()).or_insert(t);
        }
    }
}

fn run_deletions(yaml: &str, flags: &[&str]) -> Deletions {
    let mut log = Deletions::default();
    run_with_flags(yaml, flags, &mut Watch(|now, _: &World, report: Option<&LoopReport>| log.record(now, report)));
    log
}

/// Three 4-CPU nodes `pool-1..3`, one 3-CPU pod each; at 5m the Deployment drops to one replica.
fn emptied_pool(extra_events: &str) -> String {
    format!(
        "duration: 40m\nflags: [--scale-down-unneeded-time=2m, --node-delete-delay-after-taint=0s]\nnodeGroups:\n{}objects:\n{}events:\n- {{at: 5m, scale: {{kind: Deployment, name: web, replicas: 1}}}}\n{extra_events}",
        group_yaml("pool", 1, 10, 3, "4", "16Gi", ""),
        deployment_yaml("web", 3, "3", "1Gi", ""),
    )
}

#[test]
fn delay_deletion_annotations_hold_a_nodes_deletion_until_node_deletion_delay_timeout() {
    // Every node carries a delay-deletion annotation nobody removes: each deletion waits the
    // full timeout between draining and DeleteNodes, then goes ahead (upstream logs a warning).
    let annotate = (1..=3)
        .map(|i| {
            format!(
                "- {{at: 0s, annotateNode: {{node: pool-{i}, annotations: {{delay-deletion.cluster-autoscaler.kubernetes.io/backup: \"true\"}}}}}}\n"
            )
        })
        .collect::<String>();
    let held = run_deletions(&emptied_pool(&annotate), &["--node-deletion-delay-timeout=5m"]);
    assert_eq!(held.deleted.len(), 2, "{:?}", held.deleted);
    for (node, deleted) in &held.deleted {
        let started = held.started[node];
        assert!(*deleted >= started + 300, "{node}: tainted at {started}s, deleted at {deleted}s");
    }
    let free = run_deletions(&emptied_pool(""), &["--node-deletion-delay-timeout=5m"]);
    for (node, deleted) in &free.deleted {
        let started = free.started[node];
        assert!(*deleted < started + 60, "{node}: tainted at {started}s, deleted at {deleted}s without annotations");
    }
}

#[test]
fn the_deletion_batcher_deletes_a_groups_nodes_in_one_call_after_its_interval() {
    let batched = run_deletions(&emptied_pool(""), &["--node-deletion-batcher-interval=3m"]);
    assert_eq!(batched.deleted.len(), 2, "{:?}", batched.deleted);
    let times: Vec<i64> = batched.deleted.values().copied().collect();
    assert_eq!(times[0], times[1], "both nodes of the group go in one DeleteNodes call: {:?}", batched.deleted);
    let first_started = batched.started.values().min().copied().unwrap_or_default();
    assert!(times[0] >= first_started + 180, "the batch waits its interval: {batched:?}", batched = batched.deleted);
}

#[test]
fn scale_down_delay_type_local_holds_only_the_group_that_scaled_up() {
    // `busy` scales up at 1m; `idle` has an unneeded node from the start. Globally the delay after
    // that scale-up (30m) holds every deletion; per group (`--scale-down-delay-type-local`) it
    // holds busy's only, and idle's node goes once unneeded for 4m.
    let yaml = format!(
        "duration: 40m\nflags: [--scale-down-unneeded-time=4m, --scale-down-delay-after-add=30m, --node-delete-delay-after-taint=0s]\nnodeGroups:\n{}{}objects:\n{}events:\n- {{at: 1m, scale: {{kind: Deployment, name: web, replicas: 2}}}}\n",
        group_yaml("busy", 1, 10, 1, "4", "16Gi", ""),
        group_yaml("idle", 1, 10, 2, "4", "16Gi", ""),
        deployment_yaml("web", 1, "3", "1Gi", "        nodeSelector: {pool: busy}\n"),
    );
    let idle = |log: &Deletions| -> Vec<i64> {
        log.deleted.iter().filter(|(n, _)| n.starts_with("idle-")).map(|(_, t)| *t).collect()
    };
    let global = run_deletions(&yaml, &[]);
    assert!(idle(&global).iter().all(|t| *t >= 31 * 60), "global delay: {:?}", global.deleted);
    let local = run_deletions(&yaml, &["--scale-down-delay-type-local"]);
    let idle_local = idle(&local);
    assert_eq!(idle_local.len(), 1, "{:?}", local.deleted);
    assert!(idle_local[0] < 10 * 60, "local delay: idle's node goes at {}s", idle_local[0]);
}
