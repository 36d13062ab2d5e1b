//! One decision (`core::decide`: snapshot, scale-up and scale-down planning) on upstream's
//! benchmark scenarios. Times include compiling every pod and building the snapshot.

/// The allocator the `cluster-autoscaler` binary runs with (`autoscaler/src/main.rs`): the
/// engine's times are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};

use autoscaler::config::AutoscalingOptions;
use autoscaler::core::fixtures;
use autoscaler::core::{CloudState, ClusterState, ClusterView, DecisionInput, LoopMemory, Plan, decide};
use k8s_openapi::jiff::Timestamp;

fn run(view: &ClusterView, cloud: &CloudState, options: &AutoscalingOptions) -> Plan {
    let now: Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
    let state = ClusterState::observe(view, cloud, options, now);
    let memory = LoopMemory::for_plan();
    let mut expander = expander::Expander::with_seed(&options.expander, 1).unwrap();
    let input = DecisionInput { view, cloud, state: &state, options, memory: &memory, now, anticipated: &[] };
    decide(&input, &mut expander).plan
}

fn bench(c: &mut Criterion) {
    let options = AutoscalingOptions::default();

    let (view, cloud) = fixtures::scale_up_50k();
    let plan = run(&view, &cloud, &options);
    assert_eq!(plan.scale_up.increases[0].delta, 1000, "{:?}", plan.scale_up.message);
    c.bench_function("decide_scale_up_50000_pods_to_1000_nodes", |b| b.iter(|| run(&view, &cloud, &options)));

    let (view, cloud) = fixtures::scale_down_2000();
    let plan = run(&view, &cloud, &options);
    assert_eq!(plan.scale_down.unneeded.len(), 1200);
    c.bench_function("decide_scale_down_2000_nodes_1200_unneeded", |b| b.iter(|| run(&view, &cloud, &options)));

    let (view, cloud) = fixtures::anti_affinity_surge();
    let plan = run(&view, &cloud, &options);
    assert_eq!(plan.scale_up.pods_fit_existing_nodes.len(), 5000);
    assert!(!plan.scale_up.increases.is_empty(), "{:?}", plan.scale_up.message);
    c.bench_function("decide_anti_affinity_surge_5000_nodes_50000_pods", |b| b.iter(|| run(&view, &cloud, &options)));

    // The profile: a scale-down simulation over many distinct anti-affinity terms.
    let (view, cloud) = fixtures::scale_down_anti_affinity_150k();
    let plan = run(&view, &cloud, &options);
    assert!(!plan.scale_down.unneeded.is_empty());
    c.bench_function("decide_scale_down_1000_anti_affinity_deployments_150000_pods", |b| {
        b.iter(|| run(&view, &cloud, &options))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
