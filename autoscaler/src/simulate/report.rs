//! The text summary of a simulation, and the comparisons of what-ifs (`--flag`,
//! `--compare-hpa-aware`). Every figure says in words what it means, so a first reader needs
//! nothing else; the HTML page (`html.rs`) shows the same over time.

use std::fmt::Write;

use super::driver::Outcome;
use super::metrics::{Distribution, MetricsSummary};

/// A duration for people: `42s`, `3.5 min`, `2.1 h`.
pub fn secs(v: f64) -> String {
    if v >= 3600.0 {
        format!("{:.1} h", v / 3600.0)
    } else if v >= 60.0 {
        format!("{:.1} min", v / 60.0)
    } else {
        format!("{v:.0} s")
    }
}

fn dist(d: &Distribution) -> String {
    if d.count == 0 {
        return "none".into();
    }
    format!("p50 {}, p95 {}, max {} over {} pod(s)", secs(d.p50), secs(d.p95), secs(d.max), d.count)
}

/// `+12.3%` / `−4.0%` / `±0%`, against `before`.
fn change(before: f64, after: f64) -> String {
    if before.abs() < 1e-9 {
        return if after.abs() < 1e-9 { "±0%".into() } else { "new".into() };
    }
    let p = (after - before) / before * 100.0;
    if p.abs() < 0.05 {
        "±0%".into()
    } else if p > 0.0 {
        format!("+{p:.1}%")
    } else {
        format!("−{:.1}%", -p)
    }
}

/// The pod autoscalers' workloads: their pods' pending seconds, and how many pods waited.
pub fn autoscaled_pending(m: &MetricsSummary) -> (f64, usize) {
    let workloads: Vec<&str> = m.pod_autoscalers.iter().map(|s| s.workload.as_str()).collect();
    m.pending_by_workload
        .iter()
        .filter(|w| workloads.contains(&w.workload.as_str()))
        .fold((0.0, 0), |(s, n), w| (s + w.seconds, n + w.pods))
}

pub fn text(o: &Outcome) -> String {
    let mut out = String::new();
    let m = &o.metrics;
    let c = &o.currency;
    let _ = writeln!(
        out,
        "Simulated {} of {:?} in {:.2} s of wall time ({} autoscaler loops; expander {}).",
        secs(o.simulated_seconds),
        o.scenario,
        o.wall_seconds,
        o.loops,
        o.expander
    );
    if !o.extra_flags.is_empty() {
        let _ = writeln!(out, "What-if: {} over the scenario's flags.", o.extra_flags.join(" "));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<10} {:<22} {:>9} {:>10} {:>10} {:>5} {:>5} {:>5} {:>7}",
        "node group",
        "node shape",
        format!("{c}/hour"),
        "node-hours",
        format!("cost {c}"),
        "peak",
        "final",
        "added",
        "removed"
    );
    for g in &m.groups {
        let _ = writeln!(
            out,
            "{:<10} {:<22} {:>9.3} {:>10.1} {:>10.2} {:>5} {:>5} {:>5} {:>7}",
            g.id,
            g.shape,
            g.price_per_hour,
            g.node_hours,
            g.cost,
            g.peak_nodes,
            g.final_nodes,
            g.nodes_added,
            g.nodes_removed
        );
    }
    let _ = writeln!(out, "{:<10} {:<22} {:>9} {:>10.1} {:>10.2}", "total", "", "", m.total_node_hours, m.total_cost);
    let _ = writeln!(
        out,
        "  A node-hour is one node running for one hour (3 nodes for 2 hours = 6 node-hours); cost is each\n  group's node-hours times its price per hour, in {c}."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Scale-ups: {} ({} failed); nodes removed: {} ({} removals failed); pods evicted: {}; pod autoscaler rescales: {}.",
        o.scale_ups, o.scale_up_failures, o.scale_downs, o.deletion_failures, o.evictions, o.pod_rescales
    );
    for (group, n) in &o.failed_launches {
        let _ = writeln!(
            out,
            "Failed launches: {n} node(s) of {group} could not start (e.g. a stock-out); the autoscaler backed the group off and \n  scaled up another group for the waiting pods."
        );
    }
    let d = &m.pending_seconds;
    if d.count == 0 {
        let _ = writeln!(out, "Pending pods: none; every pod found a node at once.");
    } else {
        let _ = writeln!(
            out,
            "Pending pods: {} pod(s) waited for a node; half of them waited {} or less (p50), 95% {} or less (p95), the\n  longest {}; {:.2} pod-hours of waiting in all.",
            d.count,
            secs(d.p50),
            secs(d.p95),
            secs(d.max),
            d.total / 3600.0
        );
        let most: Vec<String> = m
            .pending_by_workload
            .iter()
            .take(4)
            .map(|w| format!("{} {:.2} pod-hours ({} pods)", w.workload, w.seconds / 3600.0, w.pods))
            .collect();
        let _ = writeln!(out, "  Most waiting: {}.", most.join(", "));
    }
    let r = &m.time_to_capacity_request;
    if r.count > 0 {
        let _ = writeln!(
            out,
            "From pending to capacity requested: {} (how fast the autoscaler asked for nodes; the rest of the wait is the\n  cloud and the node starting).",
            dist(r)
        );
    }
    let _ = writeln!(
        out,
        "Packing efficiency: {:.0}% on average: the fewest nodes the running pods' requests need (⌈Σ requests / node\n  allocatable⌉ per group) as a share of the nodes running; 100% means no node more than needed.",
        m.packing_efficiency * 100.0
    );
    for k in &m.kept_nodes {
        let why = k.kept_by.explain();
        let _ = writeln!(
            out,
            "Scale-down blocked: node {} ({}) stayed {} while underused: {} ({:.2} {c}).",
            k.node,
            k.node_group,
            secs(k.hours * 3600.0),
            why,
            k.cost
        );
    }
    for s in &m.pod_autoscalers {
        let (lo, hi) = s.points.iter().fold((i32::MAX, 0), |(lo, hi), p| (lo.min(p.replicas), hi.max(p.replicas)));
        if s.points.is_empty() {
            continue;
        }
        let kind = if s.kind == "HorizontalPodAutoscaler" { "HPA" } else { "WPA" };
        let targets: Vec<String> = s.targets.iter().map(|(n, v)| format!("{n} {v}")).collect();
        let _ = writeln!(
            out,
            "Pod autoscaler {} ({kind}) moved {} between {lo} and {hi} replicas following {}{}.",
            s.name,
            s.target,
            s.metric,
            if targets.is_empty() { String::new() } else { format!(" ({})", targets.join(", ")) }
        );
    }
    out
}

/// What a what-if (`--flag`) changed against the scenario as written.
pub fn what_if(o: &Outcome, baseline: &Outcome) -> String {
    let (m, b) = (&o.metrics, &baseline.metrics);
    let c = &o.currency;
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "What {} changed, against the scenario as written (expander {}):",
        o.extra_flags.join(" "),
        baseline.expander
    );
    let _ = writeln!(
        out,
        "  cost                {:>9.2} → {:>9.2} {c} ({})",
        b.total_cost,
        m.total_cost,
        change(b.total_cost, m.total_cost)
    );
    let _ = writeln!(
        out,
        "  node-hours          {:>9.1} → {:>9.1} ({})",
        b.total_node_hours,
        m.total_node_hours,
        change(b.total_node_hours, m.total_node_hours)
    );
    for (g, before) in m.groups.iter().zip(&b.groups) {
        let _ = writeln!(
            out,
            "    {:<17} {:>9.1} → {:>9.1} node-hours, {:>2} → {:>2} nodes added",
            g.id, before.node_hours, g.node_hours, before.nodes_added, g.nodes_added
        );
    }
    let _ = writeln!(
        out,
        "  pending pod-hours   {:>9.2} → {:>9.2} ({}); p95 wait {} → {}",
        b.pending_seconds.total / 3600.0,
        m.pending_seconds.total / 3600.0,
        change(b.pending_seconds.total, m.pending_seconds.total),
        secs(b.pending_seconds.p95),
        secs(m.pending_seconds.p95)
    );
    let _ = writeln!(
        out,
        "  packing efficiency  {:>8.0}% → {:>8.0}%",
        b.packing_efficiency * 100.0,
        m.packing_efficiency * 100.0
    );
    let _ = writeln!(
        out,
        "  scale-ups {} → {} ({} → {} failed), nodes removed {} → {}",
        baseline.scale_ups,
        o.scale_ups,
        baseline.scale_up_failures,
        o.scale_up_failures,
        baseline.scale_downs,
        o.scale_downs
    );
    out
}

pub fn comparison(c: &super::HpaAwareComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "HPA-aware scale-up (the node autoscaler adds nodes for the pods a pod autoscaler is about to create, instead\nof waiting until they exist and are unschedulable), with → without:"
    );
    let _ = writeln!(
        out,
        "  pods of autoscaled workloads waited {:.2} pod-hours with, {:.2} without ({} with); {} pods with, {} without",
        c.autoscaled_with / 3600.0,
        c.autoscaled_without / 3600.0,
        change(c.autoscaled_without, c.autoscaled_with),
        c.autoscaled_pods_with,
        c.autoscaled_pods_without
    );
    let _ = writeln!(
        out,
        "  all pods waited {:.2} pod-hours with, {:.2} without ({} with); p95 wait {} with, {} without",
        c.with_hpa_aware.total / 3600.0,
        c.without_hpa_aware.total / 3600.0,
        change(c.without_hpa_aware.total, c.with_hpa_aware.total),
        secs(c.with_hpa_aware.p95),
        secs(c.without_hpa_aware.p95)
    );
    let _ =
        writeln!(out, "  cost {:.2} {cur} with, {:.2} {cur} without", c.cost_with, c.cost_without, cur = c.currency);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_signed_percentages() {
        assert_eq!(change(100.0, 80.0), "−20.0%");
        assert_eq!(change(100.0, 125.0), "+25.0%");
        assert_eq!(change(0.0, 0.0), "±0%");
        assert_eq!(secs(90.0), "1.5 min");
    }
}
