use expander::{least_nodes, least_waste, most_pods};
use simulator::testing;

use crate::common::{node_with_capacity, option, pods, simple_option};

#[test]
fn most_pods_keeps_all_with_max() {
    let options =
        vec![simple_option("a", 1, 3), simple_option("b", 2, 5), simple_option("c", 1, 5), simple_option("d", 1, 4)];
    assert_eq!(most_pods(&options), vec![1, 2]);
}

#[test]
fn most_pods_counts_options_helping_no_pods() {
    let options = vec![simple_option("a", 1, 0), simple_option("b", 1, 0)];
    assert_eq!(most_pods(&options), vec![0, 1]);
}

#[test]
fn least_nodes_keeps_all_with_fewest_nodes() {
    let options = vec![simple_option("a", 3, 1), simple_option("b", 2, 1), simple_option("c", 2, 1)];
    assert_eq!(least_nodes(&options), vec![1, 2]);
}

#[test]
fn least_nodes_ignores_zero_node_options() {
    let options = vec![simple_option("zero", 0, 1), simple_option("one", 1, 1), simple_option("two", 2, 1)];
    assert_eq!(least_nodes(&options), vec![1]);
}

#[test]
fn least_nodes_keeps_nothing_when_all_add_zero_nodes() {
    let options = vec![simple_option("a", 0, 1), simple_option("b", 0, 1)];
    assert!(least_nodes(&options).is_empty());
}

#[test]
fn least_waste_prefers_less_idle_cpu_and_memory() {
    // 4 pods of 1 CPU / 1 GiB: a 4 CPU / 4 GiB node is fully used, an 8 CPU / 8 GiB node is half idle,
    // and an 8 CPU / 4 GiB node idles only CPU.
    let work = || pods("p", 4, "1", "1Gi");
    let options = vec![
        option("big", testing::node("big", "8", "8Gi"), 1, work()),
        option("exact", testing::node("exact", "4", "4Gi"), 1, work()),
        option("cpu-heavy", testing::node("cpu-heavy", "8", "4Gi"), 1, work()),
    ];
    assert_eq!(least_waste(&options), vec![1]);
    // Without the perfect fit, idling only CPU beats idling both.
    assert_eq!(least_waste(&[options[0].clone(), options[2].clone()]), vec![1]);
}

#[test]
fn least_waste_multiplies_capacity_by_node_count() {
    // 6 pods of 1 CPU / 1 GiB on 4 CPU / 4 GiB nodes: two nodes idle 2 of 8, three idle 6 of 12.
    let work = || pods("p", 6, "1", "1Gi");
    let options = vec![
        option("three-small", testing::node("s", "4", "4Gi"), 3, work()),
        option("two-small", testing::node("s", "4", "4Gi"), 2, work()),
    ];
    assert_eq!(least_waste(&options), vec![1]);
}

#[test]
fn least_waste_uses_capacity_not_allocatable() {
    // Pods of 3 CPU / 3 GiB. By allocatable, "reserved" fits exactly (waste 0); by capacity it
    // idles 5/8 of each resource, more than "plain" (1/4 of each).
    let work = || pods("p", 1, "3", "3Gi");
    let options = vec![
        option("reserved", node_with_capacity("reserved", ("8", "8Gi"), ("3", "3Gi")), 1, work()),
        option("plain", node_with_capacity("plain", ("4", "4Gi"), ("4", "4Gi")), 1, work()),
    ];
    assert_eq!(least_waste(&options), vec![1]);
}

#[test]
fn least_waste_falls_back_to_allocatable_without_capacity() {
    let mut bare = testing::node("bare", "4", "4Gi");
    bare.status.as_mut().unwrap().capacity = None;
    let work = || pods("p", 4, "1", "1Gi");
    let options = vec![option("big", testing::node("big", "8", "8Gi"), 1, work()), option("bare", bare, 1, work())];
    assert_eq!(least_waste(&options), vec![1]);
}

#[test]
fn least_waste_keeps_exact_ties() {
    // Same idle fractions from different shapes: 2 of 4 CPU and 4 of 8 GiB, or 4 of 8 CPU and 8 of 16 GiB.
    let options = vec![
        option("small", testing::node("small", "4", "8Gi"), 1, pods("p", 2, "1", "2Gi")),
        option("large", testing::node("large", "8", "16Gi"), 1, pods("q", 4, "1", "2Gi")),
        option("worse", testing::node("worse", "8", "16Gi"), 1, pods("r", 1, "1", "2Gi")),
    ];
    assert_eq!(least_waste(&options), vec![0, 1]);
}

#[test]
fn least_waste_never_picks_a_template_without_capacity() {
    // Upstream would divide by zero (NaN or −∞, which could win); here the part is +∞.
    let mut empty = testing::node("empty", "0", "0");
    empty.status.as_mut().unwrap().capacity = None;
    let options = vec![
        option("empty", empty.clone(), 1, pods("p", 1, "1", "1Gi")),
        option("real", testing::node("real", "64", "256Gi"), 1, pods("q", 1, "1", "1Gi")),
    ];
    assert_eq!(least_waste(&options), vec![1]);
    // When nothing is measurable, all tie and the chain's later steps decide.
    let only_empty = vec![option("e1", empty.clone(), 1, Vec::new()), option("e2", empty, 1, Vec::new())];
    assert_eq!(least_waste(&only_empty), vec![0, 1]);
}

#[test]
fn least_waste_zero_nodes_never_wins() {
    let options = vec![
        option("none", testing::node("n", "4", "4Gi"), 0, Vec::new()),
        option("one", testing::node("o", "64", "256Gi"), 1, pods("p", 1, "100m", "100Mi")),
    ];
    assert_eq!(least_waste(&options), vec![1]);
}
