//! Line charts for the HTML report, as inline SVG: round ticks (1-2-5 steps) at their real
//! values, a unit on every axis, clock times on the time axis, an optional right-hand axis for a
//! second unit, and a legend. Only points where a value changes are drawn, so a day of samples
//! stays small.

use std::fmt::Write;

/// One line of a chart.
pub struct Line {
    pub name: String,
    pub color: &'static str,
    /// (seconds since the start, value), in time order.
    pub points: Vec<(f64, f64)>,
    /// Values hold until the next point (counts); otherwise points are joined straight.
    pub step: bool,
    pub dashed: bool,
    /// Drawn against the right-hand axis.
    pub right: bool,
}

impl Line {
    pub fn new(name: impl Into<String>, color: &'static str, points: Vec<(f64, f64)>) -> Line {
        Line { name: name.into(), color, points, step: true, dashed: false, right: false }
    }

    pub fn straight(mut self) -> Line {
        self.step = false;
        self
    }

    pub fn dashed(mut self) -> Line {
        self.dashed = true;
        self
    }

    pub fn on_right(mut self) -> Line {
        self.right = true;
        self
    }
}

/// A chart: a title, the unit of each axis, the time span and the lines.
pub struct Chart<'a> {
    pub title: &'a str,
    pub left_unit: &'a str,
    pub right_unit: Option<&'a str>,
    /// Seconds the time axis spans.
    pub span: f64,
    /// Seconds since midnight (UTC) at the start, so the time axis shows clock times.
    pub start_of_day: f64,
    pub lines: Vec<Line>,
    /// Whole numbers only on the axes (nodes, pods, replicas).
    pub integer: bool,
}

pub const COLORS: &[&str] = &["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

/// Round ticks for an axis from 0 to at least `max`: a step of 1, 2 or 5 times a power of ten,
/// at most six intervals, and the axis top (a multiple of the step at or above `max`).
pub fn nice_ticks(max: f64, integer: bool) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let normalized = raw / magnitude;
    let mut step = magnitude
        * if normalized <= 1.0 {
            1.0
        } else if normalized <= 2.0 {
            2.0
        } else if normalized <= 5.0 {
            5.0
        } else {
            10.0
        };
    if integer {
        step = step.max(1.0).round();
    }
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    (step, top)
}

/// A tick label: no more decimals than the step needs.
pub fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    let s = format!("{value:.decimals$}");
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() { s[1..].to_string() } else { s }
}

/// The time step for a span: clock-friendly (minutes, then 1, 2, 3, 6, 12 hours), at most about
/// 12 ticks.
pub fn time_step(span: f64) -> f64 {
    const STEPS: &[f64] = &[
        60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0, 172800.0,
        604800.0,
    ];
    STEPS.iter().copied().find(|s| span / s <= 12.0).unwrap_or(604800.0)
}

/// A clock time `at` seconds after a start `start_of_day` seconds after midnight: `HH:MM`, with
/// the day number when the span passes midnight.
pub fn clock(start_of_day: f64, at: f64, seconds: bool) -> String {
    let total = (start_of_day + at).max(0.0).round() as u64;
    let day = total / 86_400;
    let (h, m, s) = ((total % 86_400) / 3600, (total % 3600) / 60, total % 60);
    let time = if seconds { format!("{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}") };
    if day > 0 { format!("day {} {time}", day + 1) } else { time }
}

/// A time-axis label: like [`clock`], but the midnight that ends the first day is `24:00`.
fn tick_clock(start_of_day: f64, at: f64) -> String {
    let total = (start_of_day + at).round();
    if total == 86_400.0 { "24:00".into() } else { clock(start_of_day, at, false) }
}

fn escape(s: &str) -> String {
    super::html::escape(s)
}

const W: f64 = 900.0;
const H: f64 = 280.0;
const LEFT: f64 = 64.0;
const RIGHT_PLAIN: f64 = 20.0;
const RIGHT_AXIS: f64 = 64.0;
const TOP: f64 = 52.0;
const BOTTOM: f64 = 44.0;

impl Chart<'_> {
    /// The chart as an `<svg>` element. Each line is a `<path class="series">` with a
    /// `data-points` count, which the screenshot test reads.
    pub fn svg(&self) -> String {
        let right = if self.right_unit.is_some() { RIGHT_AXIS } else { RIGHT_PLAIN };
        let plot_w = W - LEFT - right;
        let plot_h = H - TOP - BOTTOM;
        let span = self.span.max(1.0);
        let max_of = |on_right: bool| {
            self.lines
                .iter()
                .filter(|l| l.right == on_right)
                .flat_map(|l| l.points.iter().map(|p| p.1))
                .fold(0.0, f64::max)
        };
        let (left_step, left_top) = nice_ticks(max_of(false), self.integer);
        let (right_step, right_top) = nice_ticks(max_of(true), false);
        let x = |t: f64| LEFT + plot_w * (t / span).clamp(0.0, 1.0);
        let y_left = |v: f64| TOP + plot_h * (1.0 - v / left_top);
        let y_right = |v: f64| TOP + plot_h * (1.0 - v / right_top);
        let mut svg = format!(
            r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{t}">"#,
            t = escape(self.title)
        );
        let _ =
            write!(svg, r#"<text x="{LEFT}" y="18" font-size="15" font-weight="bold">{}</text>"#, escape(self.title));
        // Horizontal gridlines at the left axis's ticks; the right axis has its own labels.
        let mut v = 0.0;
        while v <= left_top + left_step * 1e-6 {
            let yy = y_left(v);
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" x2="{x2}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e3e3e3"/><text class="tick" x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{label}</text>"##,
                x2 = W - right,
                tx = LEFT - 6.0,
                ty = yy + 4.0,
                label = tick_label(v, left_step)
            );
            v += left_step;
        }
        if let Some(unit) = self.right_unit {
            let mut v = 0.0;
            while v <= right_top + right_step * 1e-6 {
                let yy = y_right(v);
                let _ = write!(
                    svg,
                    r##"<line x1="{x1}" x2="{x2}" y1="{yy:.1}" y2="{yy:.1}" stroke="#999"/><text class="tick" x="{tx}" y="{ty:.1}" font-size="11">{label}</text>"##,
                    x1 = W - right,
                    x2 = W - right + 4.0,
                    tx = W - right + 7.0,
                    ty = yy + 4.0,
                    label = tick_label(v, right_step)
                );
                v += right_step;
            }
            let _ = write!(
                svg,
                r#"<text x="{xx}" y="{yy}" font-size="12" transform="rotate(90 {xx} {yy})" text-anchor="middle">{}</text>"#,
                escape(unit),
                xx = W - 12.0,
                yy = TOP + plot_h / 2.0
            );
        }
        // The time axis: ticks at round clock times.
        let step = time_step(span);
        let first = ((self.start_of_day / step).ceil() * step - self.start_of_day).max(0.0);
        let mut t = first;
        while t <= span + 1e-6 {
            let xx = x(t);
            let _ = write!(
                svg,
                r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{TOP}" y2="{y2}" stroke="#f0f0f0"/><text class="tick" x="{xx:.1}" y="{ty}" font-size="11" text-anchor="middle">{label}</text>"##,
                y2 = H - BOTTOM,
                ty = H - BOTTOM + 16.0,
                label = tick_clock(self.start_of_day, t)
            );
            t += step;
        }
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#888"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{yy}" stroke="#888"/>"##,
            x2 = W - right,
            yy = H - BOTTOM
        );
        let _ = write!(
            svg,
            r#"<text x="{xx}" y="{yy}" font-size="12" text-anchor="middle">time of day (UTC)</text>"#,
            xx = LEFT + plot_w / 2.0,
            yy = H - 8.0
        );
        let _ = write!(
            svg,
            r#"<text x="14" y="{yy}" font-size="12" transform="rotate(-90 14 {yy})" text-anchor="middle">{}</text>"#,
            escape(self.left_unit),
            yy = TOP + plot_h / 2.0
        );
        // Legend, on up to two rows above the plot.
        let mut lx = LEFT;
        let mut ly = 30.0;
        for line in &self.lines {
            let width = 26.0 + 6.5 * line.name.chars().count() as f64;
            if lx + width > W - right && lx > LEFT {
                lx = LEFT;
                ly += 15.0;
            }
            let dash = if line.dashed { r#" stroke-dasharray="5 3""# } else { "" };
            let _ = write!(
                svg,
                r#"<line x1="{lx}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="{c}" stroke-width="3"{dash}/><text x="{tx}" y="{ty}" font-size="12">{n}</text>"#,
                x2 = lx + 16.0,
                yy = ly - 4.0,
                c = line.color,
                tx = lx + 20.0,
                ty = ly,
                n = escape(&line.name)
            );
            lx += width + 12.0;
        }
        for line in &self.lines {
            let y = |v: f64| if line.right { y_right(v) } else { y_left(v) };
            let mut d = String::new();
            let mut previous: Option<f64> = None;
            let mut drawn = 0usize;
            for (i, &(t, v)) in line.points.iter().enumerate() {
                let last = i + 1 == line.points.len();
                if previous == Some(v) && !last {
                    continue;
                }
                match previous {
                    None => {
                        let _ = write!(d, "M{:.1},{:.1}", x(t), y(v));
                    }
                    Some(p) if line.step => {
                        let _ = write!(d, " L{:.1},{:.1} L{:.1},{:.1}", x(t), y(p), x(t), y(v));
                    }
                    Some(_) => {
                        let _ = write!(d, " L{:.1},{:.1}", x(t), y(v));
                    }
                }
                previous = Some(v);
                drawn += 1;
            }
            if drawn == 0 {
                continue;
            }
            let dash = if line.dashed { r#" stroke-dasharray="5 3""# } else { "" };
            let _ = write!(
                svg,
                r#"<path class="series" data-series="{n}" data-points="{drawn}" d="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}><title>{n}</title></path>"#,
                n = escape(&line.name),
                c = line.color
            );
        }
        svg.push_str("</svg>");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_five_steps_with_a_round_top() {
        assert_eq!(nice_ticks(11.0, true), (2.0, 12.0));
        assert_eq!(nice_ticks(10.0, true), (2.0, 10.0));
        assert_eq!(nice_ticks(47.0, true), (10.0, 50.0));
        assert_eq!(nice_ticks(3.0, true), (1.0, 3.0));
        assert_eq!(nice_ticks(0.0, true), (1.0, 1.0));
        assert_eq!(nice_ticks(130.0, false), (50.0, 150.0));
        let (step, top) = nice_ticks(0.37, false);
        assert!((step - 0.1).abs() < 1e-12 && (top - 0.4).abs() < 1e-9, "{step} {top}");
        assert_eq!(nice_ticks(0.3, true), (1.0, 1.0));
    }

    #[test]
    fn tick_labels_have_the_decimals_of_the_step() {
        assert_eq!(tick_label(20.0, 5.0), "20");
        assert_eq!(tick_label(0.30000000000000004, 0.1), "0.3");
        assert_eq!(tick_label(1.5, 0.5), "1.5");
    }

    #[test]
    fn time_axis_uses_clock_steps() {
        assert_eq!(time_step(86_400.0), 7200.0);
        assert_eq!(time_step(3600.0), 300.0);
        assert_eq!(clock(0.0, 45_000.0, false), "12:30");
        assert_eq!(clock(82_800.0, 7200.0, true), "day 2 01:00:00");
    }

    #[test]
    fn the_svg_has_its_ticks_and_one_path_per_line() {
        let chart = Chart {
            title: "Pods",
            left_unit: "pods",
            right_unit: None,
            span: 86_400.0,
            start_of_day: 0.0,
            lines: vec![Line::new("pending", COLORS[0], vec![(0.0, 0.0), (3600.0, 11.0), (7200.0, 11.0)])],
            integer: true,
        };
        let svg = chart.svg();
        for label in [">0<", ">2<", ">12<", ">00:00<", ">02:00<", ">24:00<"] {
            assert!(svg.contains(label), "{label} missing from {svg}");
        }
        assert!(!svg.contains(">3<") && !svg.contains(">11<"), "{svg}");
        assert_eq!(svg.matches(r#"class="series""#).count(), 1);
    }
}
