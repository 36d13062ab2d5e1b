//! What each expander saw in an option, kept in the decision trace so `plan` can explain a choice.

use std::fmt;

/// One option's score under one expander.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionScore {
    /// `most-pods`: how many pending pods the option helps (higher wins).
    Pods(usize),
    /// `least-nodes`: how many nodes the option adds (lower wins; 0 never wins).
    Nodes(usize),
    /// `least-waste`: idle fractions of the added CPU and memory (lower sum wins).
    Waste { cpu: f64, memory: f64 },
    /// `price`: the option's price score and its parts (lower `score` wins).
    Price(PriceScore),
    /// `price`: the option could not be priced, and why; it takes no part in the comparison.
    PriceUnavailable(String),
    /// `priority`: the highest priority whose regex matches the group, `None` when none does.
    Priority(Option<i64>),
}

impl OptionScore {
    /// The number the expander compared, where there is one.
    pub fn value(&self) -> Option<f64> {
        match self {
            OptionScore::Pods(n) | OptionScore::Nodes(n) => Some(*n as f64),
            OptionScore::Waste { cpu, memory } => Some(cpu + memory),
            OptionScore::Price(p) => Some(p.score),
            OptionScore::PriceUnavailable(_) => None,
            OptionScore::Priority(p) => p.map(|p| p as f64),
        }
    }
}

/// The parts of a `price` score: `score = suppressed_unfitness × stabilized_ratio` (× 2 for a
/// group that does not exist yet), where `stabilized_ratio = (nodes_price + stab) / (pods_price + stab)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceScore {
    /// Price of all the option's new nodes over the hour.
    pub nodes_price: f64,
    /// Price of all the option's pods over the hour.
    pub pods_price: f64,
    pub stabilized_ratio: f64,
    /// How far the template's CPU is from the preferred node's (≥ 1).
    pub unfitness: f64,
    /// `unfitness` damped by the node count, or the fixed GPU value.
    pub suppressed_unfitness: f64,
    pub gpu: bool,
    pub exists: bool,
    pub score: f64,
}

impl fmt::Display for OptionScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionScore::Pods(n) => write!(f, "pods={n}"),
            OptionScore::Nodes(n) => write!(f, "nodes={n}"),
            OptionScore::Waste { cpu, memory } => {
                write!(f, "waste={:.4} (cpu={cpu:.4} memory={memory:.4})", cpu + memory)
            }
            OptionScore::Price(p) => write!(
                f,
                "score={:.6} (nodes_price={:.6} pods_price={:.6} stabilized_ratio={:.6} unfitness={:.4} \
                 suppressed={:.4}{}{})",
                p.score,
                p.nodes_price,
                p.pods_price,
                p.stabilized_ratio,
                p.unfitness,
                p.suppressed_unfitness,
                if p.gpu { " gpu" } else { "" },
                if p.exists { "" } else { " not-existing x2" },
            ),
            OptionScore::PriceUnavailable(reason) => write!(f, "unpriced ({reason})"),
            OptionScore::Priority(Some(p)) => write!(f, "priority={p}"),
            OptionScore::Priority(None) => f.write_str("priority=none (no regex matches)"),
        }
    }
}
