//! One iteration of the control loop (`Autoscaler::run_once`: cloud refresh, cluster read,
//! registry, decision, actuation, status) at 5,000 nodes / 150,000 pods / 10,000 pending,
//! through the real ports with a fixed view and a no-op action side.

/// The allocator the `cluster-autoscaler` binary runs with (`autoscaler/src/main.rs`): the
/// engine's times are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Duration;

mod common;

use async_trait::async_trait;
use autoscaler::config::AutoscalingOptions;
use autoscaler::control::{Autoscaler, Parts};
use autoscaler::core::fixtures;
use autoscaler::ports::Clock;
use cloudprovider_static::{StaticCloudProvider, StaticConfig};
use common::{FixedView, NoActions};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use k8s_openapi::jiff::Timestamp;

struct FixedClock(Timestamp);

#[async_trait]
impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
    async fn sleep(&self, _: Duration) {}
}

fn autoscaler(view: &Arc<FixedView>, config: &StaticConfig) -> Autoscaler {
    let options = AutoscalingOptions::default();
    let nodes: Vec<_> = view.0.nodes.iter().map(|n| (**n).clone()).collect();
    let provider = Arc::new(StaticCloudProvider::new(config.clone(), &nodes, options.resource_limiter()).unwrap());
    Autoscaler::new(Parts {
        expander: expander::Expander::with_seed(&options.expander, 1).unwrap(),
        options,
        provider,
        reader: view.clone(),
        actions: Arc::new(NoActions),
        clock: Arc::new(FixedClock("2026-01-02T00:00:00Z".parse().unwrap())),
        metrics: None,
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (view, config_yaml) = fixtures::run_once_large();
    let config = StaticConfig::from_yaml_str(&config_yaml, "bench").unwrap();
    let view = Arc::new(FixedView(view));
    let report = runtime.block_on(autoscaler(&view, &config).run_once()).unwrap();
    assert!(!report.scale_ups.is_empty(), "{:?}", report.plan.map(|p| p.scale_up.message));
    c.bench_function("run_once_5000_nodes_150000_pods_10000_pending", |b| {
        b.iter_batched(
            || autoscaler(&view, &config),
            |mut a| runtime.block_on(a.run_once()).unwrap(),
            BatchSize::PerIteration,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
