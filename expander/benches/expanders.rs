//! Choosing among 100 options of 1000 pods each with `least-waste` and with `price`.

use std::hint::black_box;
use std::sync::Arc;

use cloudprovider::PricingModel;
use criterion::{Criterion, criterion_group, criterion_main};
use expander::{Expander, ExpanderContext, ExpansionOption};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use simulator::resources::pod_requests;
use simulator::testing;
use simulator::{NodeInfo, PodInfo};

const OPTIONS: usize = 100;
const PODS_PER_OPTION: usize = 1000;

/// Linear prices of capacity (nodes) and requests (pods), per hour.
struct LinearPricing;

const GIB: f64 = (1u64 << 30) as f64;

impl PricingModel for LinearPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> cloudprovider::Result<f64> {
        let info = NodeInfo::new(Arc::new(node.clone()));
        let hours = end.duration_since(start).as_secs_f64() / 3600.0;
        Ok((info.allocatable.cpu_millis as f64 / 1000.0 * 0.03 + info.allocatable.memory as f64 / GIB * 0.004) * hours)
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> cloudprovider::Result<f64> {
        let requests = pod_requests(pod);
        let hours = end.duration_since(start).as_secs_f64() / 3600.0;
        Ok((requests.cpu_millis as f64 / 1000.0 * 0.033 + requests.memory as f64 / GIB * 0.0044) * hours)
    }
}

/// Options over templates of 2 to 64 CPUs; each helps the same 1000 pods with the node count
/// its size needs.
fn options() -> Vec<ExpansionOption> {
    let pods: Vec<Arc<PodInfo>> = (0..PODS_PER_OPTION)
        .map(|i| {
            let cpu = format!("{}m", 100 + (i % 7) * 50);
            let memory = format!("{}Mi", 128 + (i % 5) * 64);
            Arc::new(PodInfo::new(&testing::pod(&format!("pod-{i}"), &cpu, &memory)))
        })
        .collect();
    let total_cpu: i64 = pods.iter().map(|p| p.requests().cpu_millis).sum();
    (0..OPTIONS)
        .map(|i| {
            let cpus = 2 << (i % 6);
            let memory_gib = cpus * (2 + (i % 3) * 2);
            let template = testing::node(&format!("template-{i}"), &cpus.to_string(), &format!("{memory_gib}Gi"));
            ExpansionOption {
                node_group_id: format!("group-{i}"),
                node_count: (total_cpu as usize).div_ceil(cpus * 1000),
                pods: pods.clone(),
                template: Arc::new(NodeInfo::new(Arc::new(template))),
                exists: i % 10 != 0,
                similar_node_groups: Vec::new(),
                debug: String::new(),
            }
        })
        .collect()
}

fn bench_expanders(c: &mut Criterion) {
    let options = options();
    let pricing = LinearPricing;
    let ctx = ExpanderContext {
        pricing: Some(&pricing),
        cluster_node_count: 150,
        now: "2026-01-01T00:00:00Z".parse().unwrap(),
        gpu_resource: "nvidia.com/gpu",
        gpu_label: "cloud.google.com/gke-accelerator",
        ..Default::default()
    };
    for spec in ["least-waste", "price"] {
        let mut expander = Expander::with_seed(spec, 1).unwrap();
        c.bench_function(&format!("{spec}/100x1000"), |b| {
            b.iter(|| black_box(expander.best_option(black_box(&options), &ctx)))
        });
    }
}

criterion_group!(benches, bench_expanders);
criterion_main!(benches);
