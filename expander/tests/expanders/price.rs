use expander::price::{preferred_node_cpu_millis, suppressed_unfitness, unfitness};
use expander::{Expander, ExpanderContext, ExpansionOption, OptionScore, PriceScore, price};
use simulator::testing;

use crate::common::{TestPricing, ctx, option, pods};

/// 0.5 CPU + 500 MiB at 1 per CPU-hour and 0.125 per GiB-hour.
const STABILIZATION: f64 = 0.5 + 500.0 / 1024.0 * 0.125;

/// The `price` scores of all options, as the chain's trace reports them.
fn price_scores(options: &[ExpansionOption], ctx: &ExpanderContext) -> Vec<OptionScore> {
    let decision = Expander::with_seed("price", 7).unwrap().best_option(options, ctx);
    decision.trace[0].scores.iter().map(|(_, s)| s.clone()).collect()
}

fn score_of(score: &OptionScore) -> PriceScore {
    match score {
        OptionScore::Price(p) => *p,
        other => panic!("expected a price score, got {other:?}"),
    }
}

#[test]
fn price_score_follows_upstream_formula() {
    let pricing = TestPricing::default();
    // 4 CPU / 16 GiB template: 4 + 2 = 6 per node-hour; pods of 1 CPU / 2 GiB: 1.25 each.
    let options = vec![option("g", testing::node("g", "4", "16Gi"), 2, pods("p", 4, "1", "2Gi"))];

    // 10 nodes: the preferred node has 4 CPUs, so the template fits exactly.
    let score = score_of(&price_scores(&options, &ctx(Some(&pricing), 10))[0]);
    assert_eq!(score.nodes_price, 12.0);
    assert_eq!(score.pods_price, 5.0);
    assert_eq!(score.stabilized_ratio, (12.0 + STABILIZATION) / (5.0 + STABILIZATION));
    assert_eq!(score.unfitness, 1.0);
    assert_eq!(score.suppressed_unfitness, 1.0);
    assert_eq!(score.score, score.stabilized_ratio);

    // 100 nodes: the preferred node has 16 CPUs, 4× the template, damped by the 2 nodes added.
    let score = score_of(&price_scores(&options, &ctx(Some(&pricing), 100))[0]);
    assert_eq!(score.unfitness, 4.0);
    let suppressed = 3.0 * (1.0 - (1.0f64 / 15.0).tanh()) + 1.0;
    assert!((score.suppressed_unfitness - suppressed).abs() < 1e-12);
    assert!((score.score - suppressed * score.stabilized_ratio).abs() < 1e-12);
}

#[test]
fn price_prefers_cheaper_per_pod() {
    let pricing = TestPricing::default();
    // Same node, same price: the option whose node serves more pods spends the money better.
    let options = vec![
        option("few", testing::node("few", "4", "16Gi"), 1, pods("a", 2, "1", "2Gi")),
        option("many", testing::node("many", "4", "16Gi"), 1, pods("b", 4, "1", "2Gi")),
    ];
    assert_eq!(price(&options, &ctx(Some(&pricing), 10)), vec![1]);

    // Same pods, but one group's nodes cost less.
    let mut pricing = TestPricing::default();
    pricing.node_prices.insert("cheap".into(), 3.0);
    let options = vec![
        option("standard", testing::node("standard", "4", "16Gi"), 1, pods("a", 2, "1", "2Gi")),
        option("cheap", testing::node("cheap", "4", "16Gi"), 1, pods("b", 2, "1", "2Gi")),
    ];
    assert_eq!(price(&options, &ctx(Some(&pricing), 10)), vec![1]);
}

#[test]
fn price_keeps_exact_ties() {
    let pricing = TestPricing::default();
    let options = vec![
        option("a", testing::node("a", "4", "16Gi"), 1, pods("a", 2, "1", "2Gi")),
        option("b", testing::node("b", "4", "16Gi"), 1, pods("b", 2, "1", "2Gi")),
    ];
    assert_eq!(price(&options, &ctx(Some(&pricing), 10)), vec![0, 1]);
}

#[test]
fn price_penalises_gpu_templates() {
    let mut pricing = TestPricing::default();
    // The GPU nodes are far cheaper, yet lose: their unfitness is 1000.
    pricing.node_prices.insert("gpu-resource".into(), 0.5);
    pricing.node_prices.insert("gpu-label".into(), 0.5);
    let gpu_by_resource =
        testing::with_extended_resource(testing::node("gpu-resource", "4", "16Gi"), "nvidia.com/gpu", "1");
    let gpu_by_label = testing::with_node_labels(
        testing::node("gpu-label", "4", "16Gi"),
        &[("cloud.google.com/gke-accelerator", "nvidia-tesla-t4")],
    );
    let options = vec![
        option("gpu-resource", gpu_by_resource, 30, pods("a", 2, "1", "2Gi")),
        option("cpu", testing::node("cpu", "4", "16Gi"), 1, pods("b", 2, "1", "2Gi")),
        option("gpu-label", gpu_by_label, 1, pods("c", 2, "1", "2Gi")),
    ];
    let ctx = ctx(Some(&pricing), 10);
    assert_eq!(price(&options, &ctx), vec![1]);

    let scores = price_scores(&options, &ctx);
    for gpu in [&scores[0], &scores[2]] {
        let gpu = score_of(gpu);
        assert!(gpu.gpu);
        // The override replaces the damped unfitness: adding 30 nodes does not soften it.
        assert_eq!(gpu.suppressed_unfitness, 1000.0);
        assert_eq!(gpu.score, 1000.0 * gpu.stabilized_ratio);
    }
    assert!(!score_of(&scores[1]).gpu);

    // Among GPU groups, price decides.
    assert_eq!(price(&[options[0].clone(), options[2].clone()], &ctx), vec![1]);
}

#[test]
fn price_doubles_non_existing_groups() {
    let pricing = TestPricing::default();
    let existing = option("existing", testing::node("n", "4", "16Gi"), 1, pods("a", 2, "1", "2Gi"));
    let mut theoretical = option("theoretical", testing::node("n", "4", "16Gi"), 1, pods("a", 2, "1", "2Gi"));
    theoretical.exists = false;
    let options = vec![theoretical, existing];
    let ctx = ctx(Some(&pricing), 10);
    assert_eq!(price(&options, &ctx), vec![1]);
    let scores = price_scores(&options, &ctx);
    assert_eq!(score_of(&scores[0]).score, 2.0 * score_of(&scores[1]).score);
}

#[test]
fn price_preferred_node_grows_with_cluster() {
    for (nodes, cpus) in
        [(0, 1), (2, 1), (3, 2), (6, 2), (7, 4), (20, 4), (21, 8), (60, 8), (61, 16), (200, 16), (201, 32), (5000, 32)]
    {
        assert_eq!(preferred_node_cpu_millis(nodes), cpus * 1000, "cluster of {nodes} nodes");
    }

    // Equal prices: the template closest to the preferred size wins.
    let mut pricing = TestPricing::default();
    pricing.node_prices.insert("small".into(), 4.0);
    pricing.node_prices.insert("large".into(), 4.0);
    let options = vec![
        option("small", testing::node("small", "1", "4Gi"), 1, pods("a", 1, "500m", "1Gi")),
        option("large", testing::node("large", "32", "128Gi"), 1, pods("a", 1, "500m", "1Gi")),
    ];
    assert_eq!(price(&options, &ctx(Some(&pricing), 2)), vec![0]);
    assert_eq!(price(&options, &ctx(Some(&pricing), 1000)), vec![1]);
}

#[test]
fn price_unfitness_is_symmetric_and_damped_by_node_count() {
    assert_eq!(unfitness(4000, 1000), 4.0);
    assert_eq!(unfitness(1000, 4000), 4.0);
    assert_eq!(unfitness(2000, 2000), 1.0);
    assert_eq!(unfitness(2000, 0), f64::INFINITY);

    assert_eq!(suppressed_unfitness(4.0, 1), 4.0);
    let sixteen = suppressed_unfitness(4.0, 16);
    assert!((sixteen - (3.0 * (1.0 - 1.0f64.tanh()) + 1.0)).abs() < 1e-12);
    assert!(suppressed_unfitness(4.0, 1000) < 1.0 + 1e-9);
    assert_eq!(suppressed_unfitness(1.0, 50), 1.0);
    // A template without CPU stays unfit however many nodes are added (no NaN).
    assert_eq!(suppressed_unfitness(f64::INFINITY, 1000), f64::INFINITY);
}

#[test]
fn price_drops_options_it_cannot_price() {
    let mut pricing = TestPricing::default();
    pricing.failing_nodes.insert("unpriced-node".into());
    pricing.failing_pods.insert("unpriced-pod".into());
    let mut bad_pods = pods("b", 2, "1", "2Gi");
    bad_pods.push(testing::pod("unpriced-pod", "1", "2Gi"));
    let options = vec![
        // Both would beat "ok" (more pods for the same node), but cannot be priced.
        option("no-node-price", testing::node("unpriced-node", "4", "16Gi"), 1, pods("a", 4, "1", "2Gi")),
        option("no-pod-price", testing::node("n", "4", "16Gi"), 1, bad_pods),
        option("ok", testing::node("n", "4", "16Gi"), 1, pods("c", 1, "1", "2Gi")),
    ];
    let ctx = ctx(Some(&pricing), 10);
    assert_eq!(price(&options, &ctx), vec![2]);
    let scores = price_scores(&options, &ctx);
    assert!(matches!(&scores[0], OptionScore::PriceUnavailable(r) if r.contains("no-node-price")));
    assert!(matches!(&scores[1], OptionScore::PriceUnavailable(r) if r.contains("unpriced-pod")));
}

#[test]
fn price_keeps_all_options_when_none_can_be_priced() {
    let options = vec![
        option("a", testing::node("a", "4", "16Gi"), 1, pods("a", 1, "1", "2Gi")),
        option("b", testing::node("b", "4", "16Gi"), 1, pods("b", 4, "1", "2Gi")),
    ];
    assert_eq!(price(&options, &ctx(None, 10)), vec![0, 1]);

    let mut pricing = TestPricing::default();
    pricing.failing_nodes.extend(["a".to_string(), "b".to_string()]);
    assert_eq!(price(&options, &ctx(Some(&pricing), 10)), vec![0, 1]);
}

#[test]
fn price_goes_without_stabilization_when_it_cannot_be_priced() {
    let mut pricing = TestPricing::default();
    pricing.failing_pods.insert("stabilize".into());
    let options = vec![option("g", testing::node("g", "4", "16Gi"), 2, pods("p", 4, "1", "2Gi"))];
    let score = score_of(&price_scores(&options, &ctx(Some(&pricing), 10))[0]);
    assert_eq!(score.stabilized_ratio, 12.0 / 5.0);
}
