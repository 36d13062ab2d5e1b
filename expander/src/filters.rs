//! The expanders that need nothing but the options: `most-pods`, `least-waste`, `least-nodes`.
//!
//! Each public function takes all options and returns the indices of the ones it keeps, in their
//! original order. The `*_among` forms narrow a subset (the chain's survivors) and record what
//! each option scored.

use simulator::NodeInfo;
use simulator::quantity::{parse_milli, parse_value};
use simulator::resources::{CPU, MEMORY};

use crate::ExpansionOption;
use crate::score::OptionScore;

/// `most-pods`: keeps every option that helps the largest number of pods.
pub fn most_pods(options: &[ExpansionOption]) -> Vec<usize> {
    most_pods_among(options, &all(options), &mut Vec::new())
}

/// `least-waste`: keeps every option whose new nodes would sit least idle, by the score
/// `(cpuAvail − cpuReq)/cpuAvail + (memAvail − memReq)/memAvail`, where *avail* is the template's
/// capacity × node count and *req* the sum of the option's pod requests. Ties are exact.
///
/// A template with no CPU (or no memory) capacity, or an option adding no nodes, has nothing to
/// measure waste against: that part of its score is +∞ rather than upstream's NaN or −∞, so such
/// an option never beats a measurable one, and when every option is like that they all tie.
pub fn least_waste(options: &[ExpansionOption]) -> Vec<usize> {
    least_waste_among(options, &all(options), &mut Vec::new())
}

/// `least-nodes`: keeps every option that adds the fewest nodes. Options adding no nodes are
/// ignored; if all add none, nothing is kept (as upstream).
pub fn least_nodes(options: &[ExpansionOption]) -> Vec<usize> {
    least_nodes_among(options, &all(options), &mut Vec::new())
}

pub(crate) fn all(options: &[ExpansionOption]) -> Vec<usize> {
    (0..options.len()).collect()
}

pub(crate) fn most_pods_among(
    options: &[ExpansionOption],
    candidates: &[usize],
    scores: &mut Vec<(usize, OptionScore)>,
) -> Vec<usize> {
    keep_best(candidates, |i| {
        let pods = options[i].pods.len();
        scores.push((i, OptionScore::Pods(pods)));
        // More pods is better: compare negated counts.
        Some(-(pods as f64))
    })
}

pub(crate) fn least_waste_among(
    options: &[ExpansionOption],
    candidates: &[usize],
    scores: &mut Vec<(usize, OptionScore)>,
) -> Vec<usize> {
    keep_best(candidates, |i| {
        let (cpu, memory) = waste(&options[i]);
        scores.push((i, OptionScore::Waste { cpu, memory }));
        // Both parts are finite or +∞ (never NaN), so the comparisons are total.
        Some(cpu + memory)
    })
}

pub(crate) fn least_nodes_among(
    options: &[ExpansionOption],
    candidates: &[usize],
    scores: &mut Vec<(usize, OptionScore)>,
) -> Vec<usize> {
    keep_best(candidates, |i| {
        let nodes = options[i].node_count;
        scores.push((i, OptionScore::Nodes(nodes)));
        (nodes > 0).then_some(nodes as f64)
    })
}

/// The candidates with the lowest score, in their original order; ties are exact. `score`
/// is called once per candidate, in order; `None` leaves a candidate out of the running.
fn keep_best(candidates: &[usize], mut score: impl FnMut(usize) -> Option<f64>) -> Vec<usize> {
    let mut best: Option<f64> = None;
    let mut kept = Vec::new();
    for &i in candidates {
        let Some(value) = score(i) else { continue };
        match best {
            Some(b) if value > b => {}
            Some(b) if value == b => kept.push(i),
            _ => {
                best = Some(value);
                kept.clear();
                kept.push(i);
            }
        }
    }
    kept
}

/// Idle fractions (cpu, memory) of the nodes an option adds.
fn waste(option: &ExpansionOption) -> (f64, f64) {
    let (cpu_capacity, memory_capacity) = template_capacity(&option.template);
    let count = i64::try_from(option.node_count).unwrap_or(i64::MAX);
    let (mut cpu_requested, mut memory_requested) = (0i64, 0i64);
    for pod in &option.pods {
        cpu_requested = cpu_requested.saturating_add(pod.requests().cpu_millis);
        memory_requested = memory_requested.saturating_add(pod.requests().memory);
    }
    (
        idle_fraction(cpu_capacity.saturating_mul(count), cpu_requested),
        idle_fraction(memory_capacity.saturating_mul(count), memory_requested),
    )
}

fn idle_fraction(available: i64, requested: i64) -> f64 {
    if available <= 0 {
        return f64::INFINITY;
    }
    // Subtract in integers first, as upstream does, so exact ties stay exact.
    available.saturating_sub(requested) as f64 / available as f64
}

/// The template's CPU (millicores) and memory (bytes) **capacity**, which is what upstream's
/// `least-waste` and `price` measure. A resource missing from (or unparsable in) the capacity
/// falls back to the allocatable the `NodeInfo` holds.
pub(crate) fn template_capacity(template: &NodeInfo) -> (i64, i64) {
    let capacity = template.node.status.as_ref().and_then(|s| s.capacity.as_ref());
    let read = |name: &str, parse: fn(&str) -> Result<i64, _>| {
        capacity.and_then(|c| c.get(name)).and_then(|q| parse(&q.0).ok())
    };
    let cpu = read(CPU, parse_milli).unwrap_or(template.allocatable.cpu_millis);
    let memory = read(MEMORY, parse_value).unwrap_or(template.allocatable.memory);
    (cpu, memory)
}
