//! The expander chain: `--expander` parsing and the choice among options.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::ExpansionOption;
use crate::context::ExpanderContext;
use crate::error::ExpanderError;
use crate::external::{ExternalExpander, external_among};
use crate::filters::{least_nodes_among, least_waste_among, most_pods_among};
use crate::price::price_among;
use crate::priority::{PriorityConfig, invalid_config_event, missing_key_event, priority_among};
use crate::score::OptionScore;

/// The expanders this project builds (upstream's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExpanderName {
    Random,
    MostPods,
    LeastWaste,
    LeastNodes,
    Price,
    Priority,
    /// Upstream's gRPC expander: a filter backed by an [`ExternalExpander`].
    Grpc,
}

impl ExpanderName {
    pub const ALL: [ExpanderName; 7] = [
        ExpanderName::Random,
        ExpanderName::MostPods,
        ExpanderName::LeastWaste,
        ExpanderName::LeastNodes,
        ExpanderName::Price,
        ExpanderName::Priority,
        ExpanderName::Grpc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExpanderName::Random => "random",
            ExpanderName::MostPods => "most-pods",
            ExpanderName::LeastWaste => "least-waste",
            ExpanderName::LeastNodes => "least-nodes",
            ExpanderName::Price => "price",
            ExpanderName::Priority => "priority",
            ExpanderName::Grpc => "grpc",
        }
    }

    /// Whether the expander always leaves exactly one option (upstream's "Strategy"), so nothing
    /// may follow it in a chain.
    pub fn always_picks_one(self) -> bool {
        matches!(self, ExpanderName::Random)
    }
}

impl fmt::Display for ExpanderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ExpanderName {
    type Err = ExpanderError;

    fn from_str(name: &str) -> Result<Self, ExpanderError> {
        ExpanderName::ALL
            .into_iter()
            .find(|n| n.as_str() == name)
            .ok_or_else(|| ExpanderError::UnknownExpander { name: name.to_string() })
    }
}

/// Something to report as a Kubernetes event (on the priority ConfigMap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpanderEvent {
    /// `PriorityConfigMapInvalid`, `PriorityConfigMapNotMatchedGroup` or `PriorityConfigMapNoGroupMatched`.
    pub reason: &'static str,
    pub message: String,
    /// A Warning event (all current ones are).
    pub warning: bool,
}

impl ExpanderEvent {
    pub(crate) fn warning(reason: &'static str, message: String) -> ExpanderEvent {
        ExpanderEvent { reason, message, warning: true }
    }
}

/// One step of the chain, for explaining a choice.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterStep {
    pub expander: ExpanderName,
    /// True for the random pick among what the last filter left (not an expander named in the spec).
    pub final_tie_break: bool,
    /// What each option entering this step scored (indices into the options given to
    /// `best_option`); empty for random picks.
    pub scores: Vec<(usize, OptionScore)>,
    /// The options this step kept.
    pub kept: Vec<usize>,
}

/// The outcome of [`Expander::best_option`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExpanderDecision {
    /// Index of the chosen option; `None` when there were no options or a filter kept none.
    pub chosen: Option<usize>,
    /// Events to record, in order.
    pub events: Vec<ExpanderEvent>,
    /// The steps that ran, in order.
    pub trace: Vec<FilterStep>,
}

/// A parsed `--expander` chain with its random source, the last parsed priority config and the
/// backend of its `grpc` step.
#[derive(Debug)]
pub struct Expander {
    chain: Vec<ExpanderName>,
    rng: StdRng,
    /// What the `grpc` step asks; without one, that step passes every option (logged).
    external: Option<Arc<dyn ExternalExpander>>,
    /// The last `priorities` text seen and what it parsed to: the loop asks every 10 s, and the
    /// text rarely changes.
    priority_cache: Option<(String, Result<PriorityConfig, ExpanderError>)>,
}

impl Expander {
    /// Parses `--expander` ("least-waste", "priority,least-waste", ...); the random tie-break is
    /// seeded from the operating system.
    ///
    /// Names are separated by commas; spaces around a name are ignored. Errors: an empty list or
    /// name, an unknown name, the same name twice, and any name after `random` (which always
    /// leaves one option, so what follows could never run). `price` is accepted; the caller
    /// checks at startup that the cloud provider has pricing. `grpc` is accepted; the caller
    /// gives it its backend with [`Expander::with_external`].
    pub fn new(spec: &str) -> Result<Expander, ExpanderError> {
        Ok(Expander { chain: parse_spec(spec)?, rng: StdRng::from_os_rng(), external: None, priority_cache: None })
    }

    /// Same, with a fixed seed for reproducible random tie-breaks (tests, `simulate`).
    pub fn with_seed(spec: &str, seed: u64) -> Result<Expander, ExpanderError> {
        Ok(Expander {
            chain: parse_spec(spec)?,
            rng: StdRng::seed_from_u64(seed),
            external: None,
            priority_cache: None,
        })
    }

    /// The backend of the chain's `grpc` step (upstream's gRPC expander service).
    pub fn with_external(mut self, backend: Arc<dyn ExternalExpander>) -> Expander {
        self.external = Some(backend);
        self
    }

    /// The chain, in order.
    pub fn names(&self) -> &[ExpanderName] {
        &self.chain
    }

    /// Picks one option: each expander of the chain narrows the survivors of the previous one;
    /// the chain stops as soon as exactly one is left; whatever remains after the last expander
    /// goes to a uniformly random pick. A filter keeping nothing ends the chain with no choice.
    pub fn best_option(&mut self, options: &[ExpansionOption], ctx: &ExpanderContext) -> ExpanderDecision {
        let mut decision = ExpanderDecision::default();
        if options.is_empty() {
            return decision;
        }
        let mut survivors: Vec<usize> = (0..options.len()).collect();
        for index in 0..self.chain.len() {
            let name = self.chain[index];
            let mut scores = Vec::new();
            let kept = match name {
                ExpanderName::Random => vec![self.pick(&survivors)],
                ExpanderName::MostPods => most_pods_among(options, &survivors, &mut scores),
                ExpanderName::LeastWaste => least_waste_among(options, &survivors, &mut scores),
                ExpanderName::LeastNodes => least_nodes_among(options, &survivors, &mut scores),
                ExpanderName::Price => price_among(options, &survivors, ctx, &mut scores),
                ExpanderName::Priority => {
                    self.priority_step(options, &survivors, ctx, &mut scores, &mut decision.events)
                }
                ExpanderName::Grpc => external_among(self.external.as_deref(), options, &survivors),
            };
            decision.trace.push(FilterStep { expander: name, final_tie_break: false, scores, kept: kept.clone() });
            survivors = kept;
            match survivors.len() {
                1 => {
                    decision.chosen = Some(survivors[0]);
                    return decision;
                }
                // Every expander keeps nothing out of nothing, without events: stop here.
                0 => return decision,
                _ => {}
            }
        }
        let chosen = self.pick(&survivors);
        decision.trace.push(FilterStep {
            expander: ExpanderName::Random,
            final_tie_break: true,
            scores: Vec::new(),
            kept: vec![chosen],
        });
        decision.chosen = Some(chosen);
        decision
    }

    fn pick(&mut self, survivors: &[usize]) -> usize {
        survivors[self.rng.random_range(0..survivors.len())]
    }

    fn priority_step(
        &mut self,
        options: &[ExpansionOption],
        survivors: &[usize],
        ctx: &ExpanderContext,
        scores: &mut Vec<(usize, OptionScore)>,
        events: &mut Vec<ExpanderEvent>,
    ) -> Vec<usize> {
        let Some(text) = ctx.priority_config else {
            // Without a configuration every option passes; only an existing ConfigMap lacking
            // the key is worth a warning.
            if ctx.priority_config_map_exists {
                events.push(missing_key_event());
            }
            return survivors.to_vec();
        };
        if self.priority_cache.as_ref().is_some_and(|(cached, _)| cached != text) {
            self.priority_cache = None;
        }
        let (_, parsed) = self.priority_cache.get_or_insert_with(|| (text.to_string(), PriorityConfig::parse(text)));
        match parsed {
            Ok(config) => priority_among(options, survivors, config, scores, events),
            Err(error) => {
                events.push(invalid_config_event(error));
                survivors.to_vec()
            }
        }
    }
}

fn parse_spec(spec: &str) -> Result<Vec<ExpanderName>, ExpanderError> {
    if spec.trim().is_empty() {
        return Err(ExpanderError::EmptyExpanderList);
    }
    let mut chain: Vec<ExpanderName> = Vec::new();
    for raw in spec.split(',') {
        let name = raw.trim();
        if name.is_empty() {
            return Err(ExpanderError::EmptyExpanderName { spec: spec.to_string() });
        }
        // Checked in upstream's order: repetition, then a name after a single-option expander,
        // then whether the name exists.
        if chain.iter().any(|n| n.as_str() == name) {
            return Err(ExpanderError::DuplicateExpander { name: name.to_string() });
        }
        if let Some(last) = chain.last()
            && last.always_picks_one()
        {
            return Err(ExpanderError::ExpanderAfterStrategy {
                name: name.to_string(),
                previous: last.as_str().to_string(),
            });
        }
        chain.push(name.parse()?);
    }
    Ok(chain)
}
