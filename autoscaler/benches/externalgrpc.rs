//! What upstream's external gRPC provider protocol costs one control-loop iteration
//! (`Autoscaler::run_once`): 100 node groups of 5 nodes (500 nodes, 4,000 running pods and 40
//! pending pods no group can help, so every group's template is estimated and nothing is
//! actuated), with the static provider
//! - in process, and
//! - served by our externalgrpc server on loopback TCP and reached through our client
//!   (plaintext, one warm HTTP/2 connection), as `--cloud-provider=externalgrpc` would.
//!
//! Two iterations are measured: a freshly started autoscaler's first (`first_*`: nothing
//! remembered) and the one after it, 10 s later on the loop's clock (`next_*`: what a running
//! controller pays every scan interval, the "iteration after the first"). One provider
//! and one client serve every iteration (the connection stays warm, as in the controller).
//!
//! Before any timing, the bench prints the rpcs each of the two iterations sends, counted on the
//! server side by a wrapper around the served provider (`Counting`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use async_trait::async_trait;
use autoscaler::config::AutoscalingOptions;
use autoscaler::control::{Autoscaler, Parts};
use autoscaler::core::{ClusterView, counting, fixtures};
use autoscaler::ports::Clock;
use cloudprovider::CloudProvider;
use cloudprovider_externalgrpc::{ExternalGrpcCloudProvider, ExternalGrpcConfig};
use cloudprovider_static::{StaticCloudProvider, StaticConfig};
use common::{FixedView, NoActions};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use k8s_openapi::jiff::Timestamp;

const GROUPS: usize = 100;
const NODES_PER_GROUP: usize = 5;

/// The loop's clock: fixed while an iteration runs, moved on between iterations.
struct SteppedClock(Mutex<Timestamp>);

impl SteppedClock {
    fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += by;
    }
}

#[async_trait]
impl Clock for SteppedClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }
    async fn sleep(&self, _: Duration) {}
}

/// The cluster and the static provider's cloud-config: every node 80% busy (no scale-down
/// candidate), pending pods asking for more than any node has.
fn cluster() -> (ClusterView, String) {
    let mut view = ClusterView::default();
    let mut config = String::from("nodeGroups:\n");
    for g in 0..GROUPS {
        let id = format!("ng-{g:03}");
        config.push_str(&format!(
            "- id: {id}\n  minSize: 0\n  maxSize: 50\n  nodeSelector: {{group: {id}}}\n  pricePerHour: 0.4\n  \
             template:\n    metadata: {{labels: {{group: {id}}}}}\n    \
             status: {{capacity: {{cpu: 8, memory: 32Gi, pods: 110}}}}\n"
        ));
        for i in 0..NODES_PER_GROUP {
            let node = fixtures::node(&format!("{id}-{i}"), &id, 8000, 32, 110);
            view.nodes.push(Arc::new(node));
        }
    }
    view.replicasets.push(Arc::new(fixtures::replicaset("busy", (GROUPS * NODES_PER_GROUP * 8) as i32)));
    let mut k = 0;
    for n in view.nodes.clone() {
        for _ in 0..8 {
            view.pods.push(Arc::new(simulator::PodInfo::from(fixtures::rs_pod(
                "busy",
                k,
                800,
                3000,
                n.metadata.name.as_deref(),
                false,
            ))));
            k += 1;
        }
    }
    view.replicasets.push(Arc::new(fixtures::replicaset("huge", 40)));
    for i in 0..40 {
        view.pods.push(Arc::new(simulator::PodInfo::from(fixtures::rs_pod("huge", i, 64_000, 1024, None, false))));
    }
    (view, config)
}

const START: &str = "2026-01-02T00:00:00Z";

/// A freshly started autoscaler and its clock.
fn autoscaler(view: &Arc<FixedView>, provider: &Arc<dyn CloudProvider>) -> (Autoscaler, Arc<SteppedClock>) {
    let options = AutoscalingOptions::default();
    let clock = Arc::new(SteppedClock(Mutex::new(START.parse().unwrap())));
    let autoscaler = Autoscaler::new(Parts {
        expander: expander::Expander::with_seed(&options.expander, 1).unwrap(),
        options,
        provider: provider.clone(),
        reader: view.clone(),
        actions: Arc::new(NoActions),
        clock: clock.clone(),
        metrics: None,
    });
    (autoscaler, clock)
}

/// An autoscaler that has run its first iteration, its clock one scan interval later.
fn after_first_iteration(
    runtime: &tokio::runtime::Runtime,
    view: &Arc<FixedView>,
    provider: &Arc<dyn CloudProvider>,
) -> Autoscaler {
    let (mut autoscaler, clock) = autoscaler(view, provider);
    runtime.block_on(autoscaler.run_once()).unwrap();
    clock.advance(Duration::from_secs(10));
    autoscaler
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (view, config_yaml) = cluster();
    let view = Arc::new(FixedView(view));
    let nodes: Vec<_> = view.0.nodes.iter().map(|n| (**n).clone()).collect();
    let config = StaticConfig::from_yaml_str(&config_yaml, "bench").unwrap();
    let limiter = AutoscalingOptions::default().resource_limiter();
    let in_process: Arc<dyn CloudProvider> =
        Arc::new(StaticCloudProvider::new(config.clone(), &nodes, limiter.clone()).unwrap());

    // The same provider, served on loopback by our server on a runtime of its own (as a
    // provider service would be, in another process).
    let calls = Arc::new(counting::Calls::default());
    let served: Arc<dyn CloudProvider> = Arc::new(counting::Counting {
        inner: Arc::new(StaticCloudProvider::new(config, &nodes, limiter.clone()).unwrap()),
        calls: calls.clone(),
    });
    let server_runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = server_runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let address = listener.local_addr().unwrap();
    server_runtime.spawn(cloudprovider_externalgrpc::server::serve(served, listener, None, std::future::pending()));
    let grpc_config = ExternalGrpcConfig::from_yaml_str(&format!("address: {address}\n"), "bench").unwrap();
    let over_grpc: Arc<dyn CloudProvider> = Arc::new(ExternalGrpcCloudProvider::new(&grpc_config, limiter).unwrap());

    for provider in [&in_process, &over_grpc] {
        let report = runtime.block_on(autoscaler(&view, provider).0.run_once()).unwrap();
        assert!(report.scale_ups.is_empty(), "nothing to actuate");
    }
    // The rpcs of a first and a next iteration (the process-lifetime GPU label and types are
    // already known: the warm-up above asked for them).
    calls.take();
    // Our server looks the group of every group rpc up through `node_groups()`: the `NodeGroups`
    // rpcs are those calls less the group rpcs.
    let rpcs = || {
        let mut calls = calls.take();
        let group_rpcs: usize =
            calls.iter().filter(|(k, _)| k.starts_with("NodeGroup") && **k != "NodeGroupForNode").map(|(_, v)| v).sum();
        if let Some(lookups) = calls.remove("node_groups()") {
            calls.insert("NodeGroups", lookups.saturating_sub(group_rpcs));
        }
        calls.retain(|_, n| *n > 0);
        calls
    };
    let (mut fresh, clock) = autoscaler(&view, &over_grpc);
    runtime.block_on(fresh.run_once()).unwrap();
    let first = rpcs();
    clock.advance(Duration::from_secs(10));
    runtime.block_on(fresh.run_once()).unwrap();
    let next = rpcs();
    for (name, rpcs) in [("first", first), ("next", next)] {
        let total: usize = rpcs.values().sum();
        println!("rpcs of the {name} iteration: {total} {rpcs:?}");
    }

    let mut group = c.benchmark_group("run_once_100_groups_500_nodes");
    group.sample_size(20);
    for (name, provider) in [("in_process", &in_process), ("externalgrpc_loopback", &over_grpc)] {
        group.bench_function(format!("first_{name}"), |b| {
            b.iter_batched(
                || autoscaler(&view, provider).0,
                |mut a| runtime.block_on(a.run_once()).unwrap(),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(format!("next_{name}"), |b| {
            b.iter_batched(
                || after_first_iteration(&runtime, &view, provider),
                |mut a| runtime.block_on(a.run_once()).unwrap(),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
