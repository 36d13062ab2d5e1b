//! Reports of a simulation: the text summary, and a self-contained HTML page with charts
//! (inline SVG, no scripts, no external files) that opens in any browser.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::driver::Outcome;
use super::metrics::{Distribution, Sample};

fn secs(v: f64) -> String {
    if v >= 3600.0 {
        format!("{:.1}h", v / 3600.0)
    } else if v >= 60.0 {
        format!("{:.1}m", v / 60.0)
    } else {
        format!("{v:.0}s")
    }
}

fn dist(d: &Distribution) -> String {
    if d.count == 0 {
        return "none".into();
    }
    format!("p50 {}, p95 {}, max {} over {} pod(s)", secs(d.p50), secs(d.p95), secs(d.max), d.count)
}

pub fn text(o: &Outcome) -> String {
    let mut out = String::new();
    let m = &o.metrics;
    let _ = writeln!(
        out,
        "Simulated {} of {:?} in {:.2} s wall ({} autoscaler loops).",
        secs(o.simulated_seconds),
        o.scenario,
        o.wall_seconds,
        o.loops
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<14} {:>10} {:>10} {:>6} {:>6} {:>6} {:>8}",
        "node group", "node-hours", "cost", "peak", "final", "added", "removed"
    );
    for g in &m.groups {
        let _ = writeln!(
            out,
            "{:<14} {:>10.1} {:>10.2} {:>6} {:>6} {:>6} {:>8}",
            g.id, g.node_hours, g.cost, g.peak_nodes, g.final_nodes, g.nodes_added, g.nodes_removed
        );
    }
    let _ = writeln!(out, "{:<14} {:>10.1} {:>10.2}", "total", m.total_node_hours, m.total_cost);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Scale-ups: {} ({} failed); nodes removed: {} ({} removals failed); pods evicted: {}.",
        o.scale_ups, o.scale_up_failures, o.scale_downs, o.deletion_failures, o.evictions
    );
    let _ = writeln!(
        out,
        "Pending pods: {}; {} pod-hours pending in all.",
        dist(&m.pending_seconds),
        format_args!("{:.2}", m.pending_seconds.total / 3600.0)
    );
    let _ = writeln!(out, "From pending to capacity requested: {}.", dist(&m.time_to_capacity_request));
    let _ = writeln!(
        out,
        "Packing efficiency: {:.0}% (nodes the requests need at least, ⌈Σ requests / node allocatable⌉, over nodes running).",
        m.packing_efficiency * 100.0
    );
    out
}

/// A named series of a chart: its value at each sample.
type Series<'a> = (String, Box<dyn Fn(&Sample) -> f64 + 'a>);

pub fn comparison(c: &super::HpaAwareComparison) -> String {
    format!(
        "\nHPA-aware scale-up: pending pod-hours {:.2} with, {:.2} without; pending p95 {} with, {} without; cost {:.2} with, {:.2} without.\n",
        c.with_hpa_aware.total / 3600.0,
        c.without_hpa_aware.total / 3600.0,
        secs(c.with_hpa_aware.p95),
        secs(c.without_hpa_aware.p95),
        c.cost_with,
        c.cost_without
    )
}

const COLORS: &[&str] = &["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A line chart of several series over the simulated time, as SVG.
fn chart(title: &str, unit: &str, samples: &[Sample], series: &[Series<'_>]) -> String {
    let (w, h, left, right, top, bottom) = (860.0, 260.0, 60.0, 20.0, 30.0, 40.0);
    let max_t = samples.last().map_or(1.0, |s| s.at).max(1.0);
    let max_v = samples.iter().flat_map(|s| series.iter().map(move |(_, f)| f(s))).fold(0.0_f64, f64::max).max(1.0);
    let x = |t: f64| left + (w - left - right) * t / max_t;
    let y = |v: f64| top + (h - top - bottom) * (1.0 - v / max_v);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{t}">"#,
        t = escape(title)
    );
    let _ = write!(svg, r#"<text x="{left}" y="18" font-size="14" font-weight="bold">{}</text>"#, escape(title));
    for i in 0..=4 {
        let v = max_v * i as f64 / 4.0;
        let label = if max_v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") };
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#ddd"/><text x="{tx}" y="{ty}" font-size="11" text-anchor="end">{label}</text>"##,
            x2 = w - right,
            yy = y(v),
            tx = left - 6.0,
            ty = y(v) + 4.0
        );
    }
    let hours = (max_t / 3600.0).ceil() as usize;
    let every = (hours / 12).max(1);
    for hr in (0..=hours).step_by(every) {
        let t = hr as f64 * 3600.0;
        if t > max_t {
            break;
        }
        let _ = write!(
            svg,
            r#"<text x="{xx}" y="{yy}" font-size="11" text-anchor="middle">{hr}h</text>"#,
            xx = x(t),
            yy = h - bottom + 16.0
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{xx}" y="{yy}" font-size="11" text-anchor="middle">simulated time</text>"#,
        xx = (w + left) / 2.0,
        yy = h - 6.0
    );
    let _ = write!(
        svg,
        r#"<text x="12" y="{yy}" font-size="11" transform="rotate(-90 12 {yy})" text-anchor="middle">{}</text>"#,
        escape(unit),
        yy = (h) / 2.0
    );
    for (i, (name, f)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut d = String::new();
        let mut previous: Option<f64> = None;
        for s in samples {
            let v = f(s);
            match previous {
                None => {
                    let _ = write!(d, "M{:.1},{:.1}", x(s.at), y(v));
                }
                Some(p) => {
                    // Steps: values hold until the next sample.
                    let _ = write!(d, " L{:.1},{:.1} L{:.1},{:.1}", x(s.at), y(p), x(s.at), y(v));
                }
            }
            previous = Some(v);
        }
        let _ = write!(svg, r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>"#);
        let _ = write!(
            svg,
            r#"<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}" font-size="12">{}</text>"#,
            escape(name),
            lx = left + 10.0 + 130.0 * i as f64,
            ly = top + 2.0,
            tx = left + 24.0 + 130.0 * i as f64,
            ty = top + 11.0
        );
    }
    svg.push_str("</svg>");
    svg
}

pub fn html(o: &Outcome) -> String {
    let m = &o.metrics;
    let groups: BTreeSet<String> = m.samples.iter().flat_map(|s| s.nodes.keys().cloned()).collect();
    let node_series: Vec<Series<'static>> = groups
        .iter()
        .map(|g| {
            let g2 = g.clone();
            (
                g.clone(),
                Box::new(move |s: &Sample| s.nodes.get(&g2).copied().unwrap_or(0) as f64)
                    as Box<dyn Fn(&Sample) -> f64>,
            )
        })
        .collect();
    let nodes_chart = chart("Nodes per node group", "nodes", &m.samples, &node_series);
    let pending_chart = chart(
        "Pending (unschedulable) pods",
        "pods",
        &m.samples,
        &[("pending pods".into(), Box::new(|s: &Sample| s.pending_pods as f64))],
    );
    let cost_chart = chart("Cost so far", "cost", &m.samples, &[("cost".into(), Box::new(|s: &Sample| s.cost))]);
    let mut rows = String::new();
    for g in &m.groups {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{:.1}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.id),
            g.node_hours,
            g.cost,
            g.peak_nodes,
            g.final_nodes,
            g.nodes_added,
            g.nodes_removed
        );
    }
    let _ = write!(
        rows,
        "<tr class=\"total\"><td>total</td><td>{:.1}</td><td>{:.2}</td><td></td><td></td><td></td><td></td></tr>",
        m.total_node_hours, m.total_cost
    );
    let mut activity = String::new();
    for e in o.timeline.iter().filter(|e| e.kind != "event" && e.kind != "decision").take(300) {
        let _ = write!(
            activity,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            secs(e.at),
            e.kind,
            escape(&e.details.to_string())
        );
    }
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Simulation: {title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 920px; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
tr.total td {{ font-weight: bold; }}
.figures li {{ margin: 0.3em 0; }}
code {{ font-size: 11px; }}
</style></head>
<body>
<h1>{title}</h1>
<p>Simulated {simulated} in {wall:.2} s of wall time, {loops} autoscaler loops.</p>
<ul class="figures">
<li>Scale-ups: {ups} ({upf} failed); nodes removed: {downs} ({downf} failed); pods evicted: {evictions}</li>
<li>Pending pods: {pending}</li>
<li>From pending to capacity requested: {request}</li>
<li>Packing efficiency: {eff:.0}% of the lower bound ⌈Σ requests / node allocatable⌉</li>
</ul>
<table><tr><th>node group</th><th>node-hours</th><th>cost</th><th>peak</th><th>final</th><th>added</th><th>removed</th></tr>{rows}</table>
{nodes_chart}
{pending_chart}
{cost_chart}
<h2>Activity</h2>
<table><tr><th>at</th><th>what</th><th>details</th></tr>{activity}</table>
</body></html>
"#,
        title = escape(&o.scenario),
        simulated = secs(o.simulated_seconds),
        wall = o.wall_seconds,
        loops = o.loops,
        ups = o.scale_ups,
        upf = o.scale_up_failures,
        downs = o.scale_downs,
        downf = o.deletion_failures,
        evictions = o.evictions,
        pending = dist(&m.pending_seconds),
        request = dist(&m.time_to_capacity_request),
        eff = m.packing_efficiency * 100.0,
    )
}
