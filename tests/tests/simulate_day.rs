//! The built-in day (`deploy/examples/scenarios/day.yaml`) shows what the README's what-ifs
//! change: each of them must make a visible difference, or the demo shows nothing.

use autoscaler::simulate::driver::{self, Outcome};
use autoscaler::simulate::metrics::{KeptBy, KeptNode};
use autoscaler::simulate::{DEFAULT_SCENARIO, report, scenario};

async fn day(flags: &[&str]) -> Outcome {
    let scenario = scenario::parse(DEFAULT_SCENARIO, "day.yaml").expect("the built-in day parses");
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    driver::run(&scenario, &flags, false, |_| {}).await.expect("the built-in day runs")
}

fn node_hours(o: &Outcome, group: &str) -> f64 {
    o.metrics.groups.iter().find(|g| g.id == group).map(|g| g.node_hours).unwrap_or_default()
}

#[tokio::test]
async fn the_readmes_what_ifs_each_change_the_day() {
    let as_written = day(&[]).await;
    let price = day(&["--expander=price"]).await;
    // The price expander picks the cheap spot nodes the scenario's least-waste does not.
    assert_eq!(node_hours(&as_written, "spot"), 0.0, "least-waste leaves spot alone");
    assert!(node_hours(&price, "spot") > 1.0, "price uses spot: {:?}", price.metrics.groups);
    assert!(
        price.metrics.total_cost < as_written.metrics.total_cost,
        "price costs less: {} vs {}",
        price.metrics.total_cost,
        as_written.metrics.total_cost
    );
    // The morning stock-out of spot is met by backing off and scaling another group.
    assert!(price.failed_launches.get("spot").copied().unwrap_or(0) > 0, "{:?}", price.failed_launches);

    let without = day(&["--hpa-aware-scale-up=false"]).await;
    let (with_seconds, _) = report::autoscaled_pending(&as_written.metrics);
    let (without_seconds, _) = report::autoscaled_pending(&without.metrics);
    assert!(
        with_seconds < without_seconds,
        "HPA-aware scale-up shortens the autoscaled workloads' waits: {with_seconds} s vs {without_seconds} s"
    );
}

/// The node the day kept longest for a reason `is` accepts, and the summary's line about it (which
/// must explain that reason in words).
fn kept<'a>(o: &'a Outcome, summary: &str, is: impl Fn(&KeptBy) -> bool) -> (&'a KeptNode, String) {
    let k = o
        .metrics
        .kept_nodes
        .iter()
        .find(|k| is(&k.kept_by))
        .unwrap_or_else(|| panic!("no such kept node: {:?}\n{summary}", o.metrics.kept_nodes));
    let head = format!("Scale-down blocked: node {} ({}) stayed ", k.node, k.node_group);
    let line = summary
        .lines()
        .find(|l| l.starts_with(&head) && l.contains(&k.kept_by.explain()))
        .unwrap_or_else(|| panic!("the summary does not explain why {} was kept:\n{summary}", k.node));
    (k, line.to_string())
}

#[tokio::test]
async fn the_day_shows_scale_downs_blocked_by_the_annotation_and_by_the_ledgers_pdb() {
    let o = day(&[]).await;
    let summary = report::text(&o);
    // The pinned GPU node idles from 17h, when inference stops, to the end of the day.
    let (gpu, line) = kept(&o, &summary, |k| *k == KeptBy::DisabledAnnotation);
    assert_eq!((gpu.node.as_str(), gpu.node_group.as_str()), ("gpu-1", "gpu"), "{line}");
    assert!(gpu.hours > 6.0 && gpu.hours <= 7.0, "kept from about 17h only, while its GPU is unused: {line}");
    assert!(gpu.cost > 4.0, "an idle GPU node is expensive: {line}");
    // The ledger's single replica holds its node in the evening decline.
    let (ledger, line) = kept(
        &o,
        &summary,
        |k| matches!(k, KeptBy::PodDisruptionBudget { blocking_pod } if blocking_pod.starts_with("shop/ledger-")),
    );
    assert_eq!(ledger.node_group, "general", "{line}");
    assert!(ledger.hours > 1.0, "kept for hours, not a loop or two: {line}");
    // The page says the same.
    let page = autoscaler::simulate::html::page(&o, None, None);
    for k in [gpu, ledger] {
        let item = format!("Node <b>{}</b> ({}) stayed ", k.node, k.node_group);
        let why = autoscaler::simulate::html::escape(&k.kept_by.explain());
        assert!(
            page.split("<li>").any(|li| li.starts_with(&item) && li.contains(&why)),
            "the report explains why {} was kept",
            k.node
        );
    }
}
