//! The HTML report (`--report FILE.html`): one self-contained page (inline SVG charts, inline
//! CSS, a few lines of script for the activity filters; nothing fetched) that explains the run
//! to someone who has never seen the autoscaler: the key figures in words, node groups, nodes,
//! pending pods, cost and packing over time, each pod autoscaler's replicas against its load
//! and target, and the activity as sentences.
//!
//! Script errors and unhandled promise rejections are caught into `#script-errors` (its
//! `data-count` says how many), and the last script marks `<body data-ready="yes">` with
//! `data-series` (the charts' lines) and `data-series-drawn` (those the browser laid out with a
//! length), so a headless browser can check the page worked (`tests/tests/report_browser.rs`).

use std::fmt::Write;

use k8s_openapi::jiff::Timestamp;

use super::activity::{self, Category};
use super::chart::{COLORS, Chart, Line, clock};
use super::driver::Outcome;
use super::metrics::{PodAutoscalerSeries, Sample};
use super::report::secs;
use super::{HpaAwareComparison, report};

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Seconds after midnight (UTC) of the start.
fn start_of_day(o: &Outcome) -> f64 {
    o.start.parse::<Timestamp>().map_or(0.0, |t| t.as_second().rem_euclid(86_400) as f64)
}

fn series_of(samples: &[Sample], f: impl Fn(&Sample) -> Option<f64>) -> Vec<(f64, f64)> {
    samples.iter().filter_map(|s| f(s).map(|v| (s.at, v))).collect()
}

fn pod_autoscaler_chart(s: &PodAutoscalerSeries, span: f64, start: f64) -> String {
    let kind = if s.kind == "HorizontalPodAutoscaler" { "HorizontalPodAutoscaler" } else { "WatermarkPodAutoscaler" };
    let title = format!("{kind} {}: replicas of {} against its load", s.name, s.target);
    let mut lines = vec![
        Line::new("replicas", COLORS[0], s.points.iter().map(|p| (p.at, p.replicas as f64)).collect()),
        Line::new("replicas wanted", COLORS[2], s.points.iter().map(|p| (p.at, p.desired as f64)).collect()).dashed(),
        Line::new(
            format!("load: {}", s.metric),
            COLORS[1],
            s.points.iter().filter_map(|p| p.value.map(|v| (p.at, v))).collect(),
        )
        .straight()
        .on_right(),
    ];
    for (i, (name, v)) in s.targets.iter().enumerate() {
        let label = if s.metric.contains("% of requests") { format!("{name} {v}%") } else { format!("{name} {v}") };
        lines.push(
            Line::new(label, [COLORS[3], COLORS[4]][i % 2], vec![(0.0, *v), (span, *v)]).straight().dashed().on_right(),
        );
    }
    let unit = if s.metric.contains("% of requests") { "% of requested cpu".to_string() } else { s.metric.clone() };
    Chart {
        title: &title,
        left_unit: "replicas",
        right_unit: Some(&unit),
        span,
        start_of_day: start,
        lines,
        integer: true,
    }
    .svg()
}

fn figure(out: &mut String, value: &str, name: &str, explanation: &str) {
    let _ = write!(
        out,
        r#"<div class="figure"><div class="value">{}</div><div class="name">{}</div><p>{}</p></div>"#,
        escape(value),
        escape(name),
        escape(explanation)
    );
}

pub fn page(o: &Outcome, baseline: Option<&Outcome>, hpa: Option<&HpaAwareComparison>) -> String {
    let m = &o.metrics;
    let c = escape(&o.currency);
    let start = start_of_day(o);
    let span = o.simulated_seconds;
    let at = |t: f64| clock(start, t, true);

    let mut figures = String::new();
    figure(
        &mut figures,
        &format!("{:.2} {}", m.total_cost, o.currency),
        "cost",
        &format!("What the nodes cost: each group's node-hours times its price per hour, in {}.", o.currency),
    );
    figure(
        &mut figures,
        &format!("{:.1}", m.total_node_hours),
        "node-hours",
        "One node running for one hour is one node-hour: 3 nodes for 2 hours are 6 node-hours.",
    );
    let d = &m.pending_seconds;
    figure(
        &mut figures,
        &format!("{:.2}", d.total / 3600.0),
        "pending pod-hours",
        &if d.count == 0 {
            "No pod had to wait for a node.".to_string()
        } else {
            format!(
                "{} pods waited for a node. Half waited {} or less (p50), 95% waited {} or less (p95), the longest {}.",
                d.count,
                secs(d.p50),
                secs(d.p95),
                secs(d.max)
            )
        },
    );
    figure(
        &mut figures,
        &format!("{:.0}%", m.packing_efficiency * 100.0),
        "packing efficiency",
        "The fewest nodes the running pods' requests need (⌈Σ requests / node allocatable⌉ per group), as a share of the nodes running, averaged over the run. 100% means no node more than needed.",
    );
    figure(
        &mut figures,
        &format!("{} / {}", o.scale_ups, o.scale_downs),
        "scale-ups / nodes removed",
        &format!(
            "{} scale-ups failed, {} new nodes could not launch, {} pods were evicted to empty nodes, and the pod autoscalers changed replicas {} times.",
            o.scale_up_failures,
            o.failed_launches.values().sum::<usize>(),
            o.evictions,
            o.pod_rescales
        ),
    );

    let mut comparisons = String::new();
    if let Some(b) = baseline {
        let bm = &b.metrics;
        let _ = write!(
            comparisons,
            r#"<h2>What the what-if changed</h2><p>With <code>{}</code>, against the scenario as written (expander <code>{}</code>):</p><table class="compare"><tr><th></th><th>as written</th><th>what-if</th></tr>"#,
            escape(&o.extra_flags.join(" ")),
            escape(&b.expander)
        );
        let rows: Vec<(String, String, String)> = vec![
            (format!("cost ({c})"), format!("{:.2}", bm.total_cost), format!("{:.2}", m.total_cost)),
            ("node-hours".into(), format!("{:.1}", bm.total_node_hours), format!("{:.1}", m.total_node_hours)),
            (
                "pending pod-hours".into(),
                format!("{:.2}", bm.pending_seconds.total / 3600.0),
                format!("{:.2}", m.pending_seconds.total / 3600.0),
            ),
            ("pending p95".into(), secs(bm.pending_seconds.p95), secs(m.pending_seconds.p95)),
            (
                "packing efficiency".into(),
                format!("{:.0}%", bm.packing_efficiency * 100.0),
                format!("{:.0}%", m.packing_efficiency * 100.0),
            ),
        ];
        let group_rows = m.groups.iter().zip(&bm.groups).map(|(g, bg)| {
            (format!("{} node-hours", escape(&g.id)), format!("{:.1}", bg.node_hours), format!("{:.1}", g.node_hours))
        });
        for (name, before, after) in rows.into_iter().chain(group_rows) {
            let _ = write!(comparisons, "<tr><td>{name}</td><td>{before}</td><td>{after}</td></tr>");
        }
        comparisons.push_str("</table>");
    }
    if let Some(h) = hpa {
        let _ = write!(
            comparisons,
            r#"<h2>HPA-aware scale-up</h2><p>With HPA-aware scale-up the node autoscaler adds nodes for the pods a pod autoscaler is about to create, instead of waiting until they exist and cannot be scheduled.</p><table class="compare"><tr><th></th><th>with</th><th>without</th></tr><tr><td>pending pod-hours, autoscaled workloads</td><td>{:.2}</td><td>{:.2}</td></tr><tr><td>pending pod-hours, all pods</td><td>{:.2}</td><td>{:.2}</td></tr><tr><td>pending p95</td><td>{}</td><td>{}</td></tr><tr><td>cost ({c})</td><td>{:.2}</td><td>{:.2}</td></tr></table>"#,
            h.autoscaled_with / 3600.0,
            h.autoscaled_without / 3600.0,
            h.with_hpa_aware.total / 3600.0,
            h.without_hpa_aware.total / 3600.0,
            secs(h.with_hpa_aware.p95),
            secs(h.without_hpa_aware.p95),
            h.cost_with,
            h.cost_without
        );
    }

    let mut groups = String::new();
    for g in &m.groups {
        let _ = write!(
            groups,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.id),
            escape(&g.shape),
            g.price_per_hour,
            g.node_hours,
            g.cost,
            g.peak_nodes,
            g.final_nodes,
            g.nodes_added,
            g.nodes_removed
        );
    }
    let _ = write!(
        groups,
        r#"<tr class="total"><td>total</td><td></td><td></td><td>{:.1}</td><td>{:.2}</td><td></td><td></td><td></td><td></td></tr>"#,
        m.total_node_hours, m.total_cost
    );

    let ids: Vec<&str> = m.groups.iter().map(|g| g.id.as_str()).collect();
    let color = |i: usize| COLORS[i % COLORS.len()];
    let nodes_chart = Chart {
        title: "Nodes per node group",
        left_unit: "nodes",
        right_unit: None,
        span,
        start_of_day: start,
        lines: ids
            .iter()
            .enumerate()
            .map(|(i, g)| {
                Line::new(*g, color(i), series_of(&m.samples, |s| Some(s.nodes.get(*g).copied().unwrap_or(0) as f64)))
            })
            .collect(),
        integer: true,
    }
    .svg();
    let pending_chart = Chart {
        title: "Pending pods (waiting for a node; the most at once in each sample)",
        left_unit: "pods",
        right_unit: None,
        span,
        start_of_day: start,
        lines: vec![Line::new("pending pods", COLORS[3], series_of(&m.samples, |s| Some(s.pending_pods as f64)))],
        integer: true,
    }
    .svg();
    let cost_unit = format!("{} so far", o.currency);
    let cost_title = format!("Cost so far ({})", o.currency);
    let mut cost_lines: Vec<Line> = ids
        .iter()
        .enumerate()
        .map(|(i, g)| Line::new(*g, color(i), series_of(&m.samples, |s| s.cost_by_group.get(*g).copied())).straight())
        .collect();
    cost_lines.push(Line::new("total", "#222", series_of(&m.samples, |s| Some(s.cost))).straight().dashed());
    let cost_chart = Chart {
        title: &cost_title,
        left_unit: &cost_unit,
        right_unit: None,
        span,
        start_of_day: start,
        lines: cost_lines,
        integer: false,
    }
    .svg();
    let packing_chart = Chart {
        title: "Packing efficiency (fewest nodes needed / nodes running)",
        left_unit: "%",
        right_unit: None,
        span,
        start_of_day: start,
        lines: vec![
            Line::new(
                "packing efficiency",
                COLORS[2],
                series_of(&m.samples, |s| s.packing_efficiency.map(|e| e * 100.0)),
            )
            .straight(),
        ],
        integer: true,
    }
    .svg();
    let mut autoscaler_charts = String::new();
    for s in &m.pod_autoscalers {
        autoscaler_charts.push_str(&pod_autoscaler_chart(s, span, start));
    }
    if autoscaler_charts.is_empty() {
        autoscaler_charts.push_str("<p>This scenario has no pod autoscaler.</p>");
    }

    let mut kept = String::new();
    for k in &m.kept_nodes {
        let why = escape(&k.kept_by.explain());
        let _ = write!(
            kept,
            "<li>Node <b>{}</b> ({}) stayed {} while underused, costing {:.2} {c}: {why}.</li>",
            escape(&k.node),
            escape(&k.node_group),
            secs(k.hours * 3600.0),
            k.cost
        );
    }
    if kept.is_empty() {
        kept.push_str("<li>No underused node was kept.</li>");
    }

    let rows = activity::rows(&o.timeline, at);
    let mut activity_rows = String::new();
    const MAX_ROWS: usize = 600;
    for r in rows.iter().take(MAX_ROWS) {
        let _ = write!(
            activity_rows,
            r#"<tr class="{id}"><td class="time">{}</td><td><span class="tag {id}">{}</span></td><td>{}</td></tr>"#,
            at(r.at),
            r.category.label(),
            escape(&r.text),
            id = r.category.id()
        );
    }
    if rows.len() > MAX_ROWS {
        let _ = write!(
            activity_rows,
            r#"<tr><td></td><td></td><td>… and {} more: see the <code>--events</code> file.</td></tr>"#,
            rows.len() - MAX_ROWS
        );
    }
    let mut filters = String::new();
    for cat in Category::ALL {
        let count = rows.iter().filter(|r| r.category == cat).count();
        let _ = write!(
            filters,
            r#"<label><input type="checkbox" data-category="{id}" checked> <span class="tag {id}">{}</span> {count}</label> "#,
            cat.label(),
            id = cat.id()
        );
    }
    let what_if = if o.extra_flags.is_empty() {
        String::new()
    } else {
        format!(" What-if: <code>{}</code> over the scenario's flags.", escape(&o.extra_flags.join(" ")))
    };
    let summary_text = escape(&report::text(o));

    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Simulation: {title}</title>
<script>
window.__errors = [];
function __showErrors() {{
  var box = document.getElementById('script-errors');
  if (box && window.__errors.length) {{ box.textContent = window.__errors.join('\n'); box.dataset.count = String(window.__errors.length); box.hidden = false; }}
}}
function __recordError(message) {{ window.__errors.push(message); __showErrors(); }}
window.addEventListener('error', function (e) {{ __recordError(String(e.message || e)); }});
window.addEventListener('unhandledrejection', function (e) {{ __recordError('Unhandled rejection: ' + String(e.reason)); }});
// An error before the box is parsed shows once it is.
document.addEventListener('DOMContentLoaded', __showErrors);
</script>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; color: #222; max-width: 960px; padding: 0 1em; }}
h1 {{ margin-bottom: 0.2em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; vertical-align: top; }}
td:first-child, th:first-child {{ text-align: left; }}
tr.total td {{ font-weight: bold; }}
.figures {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(175px, 1fr)); gap: 12px; margin: 1em 0; }}
.figure {{ border: 1px solid #ddd; border-radius: 6px; padding: 10px; background: #fafafa; }}
.figure .value {{ font-size: 24px; font-weight: bold; }}
.figure .name {{ color: #555; font-weight: bold; }}
.figure p {{ font-size: 12px; margin: 0.4em 0 0; color: #444; }}
svg.chart {{ display: block; margin: 1.2em 0; max-width: 100%; height: auto; }}
#activity td {{ text-align: left; }}
#activity td.time {{ white-space: nowrap; font-variant-numeric: tabular-nums; }}
.tag {{ display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; white-space: nowrap; }}
.tag.scenario {{ background: #e8eefc; }} .tag.pod-autoscaler {{ background: #eaf6ea; }}
.tag.scale-up {{ background: #fff0dd; }} .tag.scale-down {{ background: #eee; }}
.tag.failure {{ background: #fde2e2; }} .tag.warning {{ background: #fff7c2; }}
.filters label {{ margin-right: 1em; white-space: nowrap; }}
#script-errors {{ color: #b00; white-space: pre-wrap; }}
pre.summary {{ font-size: 12px; background: #f6f6f6; padding: 1em; overflow-x: auto; }}
dt {{ font-weight: bold; margin-top: 0.6em; }}
</style></head>
<body data-ready="no">
<h1>{title}</h1>
<p>Simulated {simulated} of a cluster in {wall:.2} s of wall time: {loops} loops of the real autoscaler with expander <code>{expander}</code>, on an in-memory cluster and cloud.{what_if}</p>
<div id="script-errors" data-count="0" hidden></div>
<section class="figures">{figures}</section>
{comparisons}
<h2>Node groups</h2>
<table><tr><th>node group</th><th>node shape</th><th>price ({c}/hour)</th><th>node-hours</th><th>cost ({c})</th><th>peak nodes</th><th>final</th><th>added</th><th>removed</th></tr>{groups}</table>
<h2>Over time</h2>
{nodes_chart}
{pending_chart}
{cost_chart}
{packing_chart}
<h2>Pod autoscalers</h2>
<p>Each chart shows the replicas a pod autoscaler keeps (left axis) against the load it measures and its target (right axis).</p>
{autoscaler_charts}
<h2>Scale-down kept these nodes</h2>
<ul>{kept}</ul>
<h2>Activity</h2>
<p class="filters">{filters}</p>
<table id="activity"><tr><th>time (UTC)</th><th>what</th><th>what happened</th></tr>{activity_rows}</table>
<h2>How to read this</h2>
<dl>
<dt>node-hours</dt><dd>Nodes × hours they ran; what a cloud bills.</dd>
<dt>cost</dt><dd>Node-hours × each node group's price per hour, in {c} (the scenario's <code>currency</code>).</dd>
<dt>pending pods, p50 / p95</dt><dd>A pod is pending while no node has room for it. p50 is the wait half of the waiting pods stayed under; p95 the wait 95% stayed under. Pod-hours add up every pod's wait.</dd>
<dt>packing efficiency</dt><dd>How close the node count stays to the least the requests need: 100% is perfect packing; lower means nodes more than needed.</dd>
<dt>what-ifs</dt><dd><code>simulate --flag=--expander=price</code> reruns the day with a flag changed and says what changed; <code>--compare-hpa-aware</code> reruns it without HPA-aware scale-up.</dd>
</dl>
<h2>Summary as text</h2>
<pre class="summary">{summary_text}</pre>
<script>
(function () {{
  var boxes = document.querySelectorAll('.filters input[type=checkbox]');
  function apply() {{
    var shown = {{}};
    boxes.forEach(function (b) {{ shown[b.dataset.category] = b.checked; }});
    document.querySelectorAll('#activity tr[class]').forEach(function (tr) {{
      tr.style.display = shown[tr.className] === false ? 'none' : '';
    }});
  }}
  boxes.forEach(function (b) {{ b.addEventListener('change', apply); }});
  apply();
  var series = document.querySelectorAll('svg.chart path.series');
  var drawn = 0;
  series.forEach(function (p) {{ if (p.getTotalLength() > 0) drawn++; }});
  document.body.dataset.series = String(series.length);
  // Laid out with a length: the browser drew the line, not just parsed it.
  document.body.dataset.seriesDrawn = String(drawn);
  document.body.dataset.ready = 'yes';
}})();
</script>
</body></html>
"#,
        title = escape(&o.scenario),
        simulated = secs(o.simulated_seconds),
        wall = o.wall_seconds,
        loops = o.loops,
        expander = escape(&o.expander),
    )
}
