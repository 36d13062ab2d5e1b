//! A simulated day at the scale `simulate` runs: 50 nodes, about 500 pods, churn from scaling,
//! Jobs and evictions, and a view read every 10 s. The short run is a regular test; the full
//! day (8,640 steps) is `#[ignore]`d and meant to be run in release mode to measure speed:
//! `cargo test --release -p autoscaler --lib memory::tests::day -- --ignored --nocapture`.

use cloudprovider_memory::MemoryGroupSpec;
use k8s_openapi::api::batch::v1::Job;

use super::*;
use crate::ports::ScaleTarget;

const STEP_SECONDS: i64 = 10;

fn scenario() -> MemoryCluster {
    let mut general = MemoryGroupSpec::new("general", 0, 60, template("8", "32Gi"));
    general.initial_size = 50;
    let (mut c, _) = cloud_cluster(MemoryClusterConfig::default(), vec![general]);
    c.advance(t(0));
    c.apply(daemon_set("logs", None)).unwrap();
    c.apply(daemon_set("agent", None)).unwrap();
    for d in 0..20 {
        let name = format!("svc-{d}");
        c.apply(deployment(&name, 20, "250m", "512Mi")).unwrap();
        c.apply(pdb(&name, &name, json!({"maxUnavailable": 1}))).unwrap();
    }
    c.apply(stateful_set("db", 3, "OrderedReady")).unwrap();
    c
}

fn batch(n: i64) -> Job {
    let mut j = job(&format!("batch-{n}"), 5, 10, "5m");
    j.spec.as_mut().unwrap().ttl_seconds_after_finished = Some(600);
    j
}

/// Runs `steps` steps of 10 s with periodic churn; returns where every pod ended up.
fn run(steps: i64) -> (MemoryCluster, Vec<(String, Option<String>, String)>) {
    let mut c = scenario();
    for step in 1..=steps {
        let now = step * STEP_SECONDS;
        c.advance(t(now));
        let view = c.view();
        assert!(view.nodes.len() >= 50);
        if now % 300 == 0 {
            // An HPA-like scale change every 5 minutes.
            let d = (now / 300) % 20;
            let replicas = 15 + ((now / 300) % 11) as i32;
            let target = ScaleTarget {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: "default".into(),
                name: format!("svc-{d}"),
            };
            c.set_scale(&target, replicas).unwrap();
        }
        if now % 600 == 0 {
            c.apply(batch(now / 600)).unwrap();
        }
        if now % 3_600 == 0 {
            // A drain-like burst: evict every pod of one node, as far as the PDBs allow.
            let node = format!("general-{}", (now / 3_600) % 50 + 1);
            for pod in c.pods_on_node(&node) {
                let name = pod.metadata.name.clone().unwrap();
                let namespace = pod.metadata.namespace.clone().unwrap();
                let _ = c.evict(&namespace, &name, 30);
            }
        }
    }
    // A minute without changes lets the last evictions and scale changes settle.
    for extra in 1..=6 {
        c.advance(t((steps + extra) * STEP_SECONDS));
    }
    let placement = c
        .pods()
        .map(|p| {
            (
                format!("{}/{}", p.metadata.namespace.as_deref().unwrap(), p.metadata.name.as_deref().unwrap()),
                p.spec.as_ref().unwrap().node_name.clone(),
                p.status.as_ref().unwrap().phase.clone().unwrap_or_default(),
            )
        })
        .collect();
    (c, placement)
}

#[test]
fn an_hour_of_churn_keeps_every_workload_running_and_is_deterministic() {
    let (c, placement) = run(360);
    let (_, again) = run(360);
    assert_eq!(placement, again, "same inputs, same cluster");
    let pending: Vec<&(String, Option<String>, String)> =
        placement.iter().filter(|(_, _, phase)| phase == "Pending").collect();
    assert!(pending.is_empty(), "everything fits on 50 nodes: {pending:?}");
    let deployments: i32 =
        c.deployments.iter().map(|(_, d)| d.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0)).sum();
    let wanted: i32 = c.deployments.iter().map(|(_, d)| d.spec.as_ref().unwrap().replicas.unwrap()).sum();
    assert_eq!(deployments, wanted);
    let ds = c.daemon_set("kube-system", "logs").unwrap().status.clone().unwrap();
    assert_eq!((ds.desired_number_scheduled, ds.number_ready), (50, 50));
}

#[test]
#[ignore = "a full simulated day; run in release mode to measure speed"]
fn a_simulated_day_of_8640_steps() {
    let started = std::time::Instant::now();
    let (mut c, placement) = run(8_640);
    let elapsed = started.elapsed();
    println!(
        "8,640 steps over {} nodes and {} pods ({} objects at the end) in {elapsed:?}",
        c.nodes().count(),
        placement.len(),
        c.view().pods.len()
    );
    assert!(placement.iter().all(|(_, _, phase)| phase != "Pending"));
}
