//! The built-in day (`deploy/examples/scenarios/day.yaml`) shows what the README's what-ifs
//! change: each of them must make a visible difference, or the demo shows nothing.

use autoscaler::simulate::driver::{self, Outcome};
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
