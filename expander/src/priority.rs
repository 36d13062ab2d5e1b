//! The `priority` expander: node groups ranked by a user-written ConfigMap.
//!
//! The ConfigMap `cluster-autoscaler-priority-expander` (in `--namespace`) holds under the key
//! `priorities` a YAML map from an integer priority to a list of regular expressions:
//!
//! ```yaml
//! 10:
//!   - .*t2\.large.*
//! 50:
//!   - .*m4\.4xlarge.*
//! ```
//!
//! A regex matches a node group when it matches anywhere in the group id (unanchored). The options
//! whose best matching priority is the highest are kept. As upstream, the search starts from −1,
//! so a priority below −1 can never win. Groups no regex matches are dropped, each with a
//! `PriorityConfigMapNotMatchedGroup` warning; if nothing matches at all, every option is kept with
//! a `PriorityConfigMapNoGroupMatched` warning.

use std::collections::BTreeMap;
use std::fmt;

use regex::{RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::ExpansionOption;
use crate::chain::ExpanderEvent;
use crate::error::ExpanderError;
use crate::filters::all;
use crate::score::OptionScore;

/// Name of the ConfigMap holding the priorities.
pub const PRIORITY_CONFIG_MAP_NAME: &str = "cluster-autoscaler-priority-expander";
/// The ConfigMap key holding the priorities.
pub const PRIORITY_CONFIG_MAP_KEY: &str = "priorities";

/// Event reasons (all Warning events, recorded on the priority ConfigMap).
pub const PRIORITY_CONFIG_MAP_INVALID: &str = "PriorityConfigMapInvalid";
pub const PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP: &str = "PriorityConfigMapNotMatchedGroup";
pub const PRIORITY_CONFIG_MAP_NO_GROUP_MATCHED: &str = "PriorityConfigMapNoGroupMatched";

/// The search for the best priority starts here, so lower priorities never win.
const LOWEST_WINNING_PRIORITY: i64 = -1;

/// How much memory the compiled rules of one ConfigMap may take together. A rule alone can take
/// megabytes (`\w{100}` is about 6 MiB: `\w` is every Unicode word character), so rules compiled
/// one by one would let a ConfigMap of a few kilobytes grow the autoscaler by gigabytes; the
/// rules are compiled into one automaton under this limit instead.
pub const RULES_SIZE_LIMIT: usize = 32 << 20;

/// The longest rule read, in bytes. Parsing a rule takes about 300 bytes of memory for each of
/// its bytes (the regex crate's syntax tree, before compiling), so one rule filling a ConfigMap
/// (1 MiB) would take 300 MiB; rules name node groups, and this leaves room for alternations of
/// hundreds of names.
pub const RULE_MAX_LEN: usize = 16 << 10;

/// A parsed `priorities` value.
#[derive(Clone, Debug)]
pub struct PriorityConfig {
    /// Priorities in ascending order, each with its rules in the order written.
    levels: Vec<(i64, Vec<String>)>,
    /// Every rule of `levels`, in that order, as one automaton.
    rules: RegexSet,
    /// The priority of each rule of `rules`.
    rule_priorities: Vec<i64>,
}

impl PriorityConfig {
    /// Parses the `priorities` text. Errors: empty text, not YAML, not a map, a key that is not a
    /// plain integer, a value that is not a list of strings, a regex longer than
    /// [`RULE_MAX_LEN`] or that does not compile, or rules that together exceed
    /// [`RULES_SIZE_LIMIT`].
    pub fn parse(text: &str) -> Result<PriorityConfig, ExpanderError> {
        if text.is_empty() {
            return Err(ExpanderError::PriorityConfigEmpty);
        }
        let mut options = serde_saphyr::Options::default();
        // A repeated key replaces the earlier one (our visitor inserts into a map), as upstream's
        // YAML decoder does, instead of failing.
        options.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::PassThrough;
        let raw: BTreeMap<i64, Vec<String>> = serde_saphyr::from_str_with_options(text, options)
            .map(|RawConfig(raw)| raw)
            .map_err(|e| ExpanderError::PriorityConfigYaml(e.to_string()))?;
        let levels: Vec<(i64, Vec<String>)> = raw.into_iter().collect();
        for (priority, rules) in &levels {
            if let Some(rule) = rules.iter().find(|r| r.len() > RULE_MAX_LEN) {
                return Err(ExpanderError::PriorityConfigRegex {
                    priority: *priority,
                    regex: format!("{}…", rule.chars().take(80).collect::<String>()),
                    message: format!("{} bytes long, longer than {RULE_MAX_LEN}", rule.len()),
                });
            }
        }
        let patterns = levels.iter().flat_map(|(_, rules)| rules);
        let rule_priorities = levels.iter().flat_map(|(p, rules)| rules.iter().map(|_| *p)).collect();
        let rules = RegexSetBuilder::new(patterns).size_limit(RULES_SIZE_LIMIT).build().map_err(|set_error| {
            // Name the first rule that does not compile alone, as upstream does; each is
            // dropped before the next, so this takes one rule's memory at a time.
            for (priority, rules) in &levels {
                for rule in rules {
                    if let Err(e) = RegexBuilder::new(rule).size_limit(RULES_SIZE_LIMIT).build() {
                        return ExpanderError::PriorityConfigRegex {
                            priority: *priority,
                            regex: rule.clone(),
                            message: e.to_string(),
                        };
                    }
                }
            }
            ExpanderError::PriorityConfigRules { message: set_error.to_string() }
        })?;
        Ok(PriorityConfig { levels, rules, rule_priorities })
    }

    /// The highest priority with a regex matching anywhere in `node_group_id`.
    pub fn priority_of(&self, node_group_id: &str) -> Option<i64> {
        self.rules.matches(node_group_id).iter().map(|i| self.rule_priorities[i]).max()
    }

    /// The priorities and their rules, in ascending priority.
    pub fn levels(&self) -> impl Iterator<Item = (i64, &[String])> {
        self.levels.iter().map(|(p, r)| (*p, r.as_slice()))
    }
}

/// `priority`: keeps the options of the highest matching priority, with the events to report
/// (see the module docs).
pub fn priority(options: &[ExpansionOption], config: &PriorityConfig) -> (Vec<usize>, Vec<ExpanderEvent>) {
    let mut events = Vec::new();
    let kept = priority_among(options, &all(options), config, &mut Vec::new(), &mut events);
    (kept, events)
}

pub(crate) fn priority_among(
    options: &[ExpansionOption],
    candidates: &[usize],
    config: &PriorityConfig,
    scores: &mut Vec<(usize, OptionScore)>,
    events: &mut Vec<ExpanderEvent>,
) -> Vec<usize> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let mut best = LOWEST_WINNING_PRIORITY;
    let mut kept = Vec::new();
    for &i in candidates {
        let id = &options[i].node_group_id;
        let matched = config.priority_of(id);
        scores.push((i, OptionScore::Priority(matched)));
        match matched {
            None => events.push(not_matched_event(id)),
            Some(p) if p < best => {}
            Some(p) if p == best => kept.push(i),
            Some(p) => {
                best = p;
                kept.clear();
                kept.push(i);
            }
        }
    }
    if kept.is_empty() {
        events.push(ExpanderEvent::warning(
            PRIORITY_CONFIG_MAP_NO_GROUP_MATCHED,
            "Priority expander: no priorities info found for any of the expansion options. \
             Falling back to random choice."
                .to_string(),
        ));
        return candidates.to_vec();
    }
    kept
}

fn not_matched_event(node_group_id: &str) -> ExpanderEvent {
    ExpanderEvent::warning(
        PRIORITY_CONFIG_MAP_NOT_MATCHED_GROUP,
        format!(
            "Priority expander: node group {node_group_id} not found in priority expander configuration. \
             The group won't be used."
        ),
    )
}

/// The event for a ConfigMap whose `priorities` text does not parse.
pub(crate) fn invalid_config_event(error: &ExpanderError) -> ExpanderEvent {
    ExpanderEvent::warning(
        PRIORITY_CONFIG_MAP_INVALID,
        format!("Wrong configuration for priority expander: {error}. Ignoring update."),
    )
}

/// The event for a ConfigMap without the `priorities` key.
pub(crate) fn missing_key_event() -> ExpanderEvent {
    ExpanderEvent::warning(
        PRIORITY_CONFIG_MAP_INVALID,
        format!(
            "Wrong configmap for priority expander, doesn't contain {PRIORITY_CONFIG_MAP_KEY} key. Ignoring update."
        ),
    )
}

// ----- YAML reading -----
//
// Hand-written visitors rather than `BTreeMap<i64, Vec<String>>`, to say precisely what is wrong
// (a quoted or fractional priority, a value that is not a list) and to accept what upstream's
// decoder accepts: an empty document, a priority with no list, and scalars of any type as rules.

struct RawConfig(BTreeMap<i64, Vec<String>>);

impl<'de> serde::Deserialize<'de> for RawConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ConfigVisitor).map(RawConfig)
    }
}

struct ConfigVisitor;

impl<'de> Visitor<'de> for ConfigVisitor {
    type Value = BTreeMap<i64, Vec<String>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from integer priority to a list of regular expressions")
    }

    // An empty document (or only comments) is an empty configuration, as upstream.
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut config = BTreeMap::new();
        while let Some(priority) = map.next_key_seed(PrioritySeed)? {
            let rules = map.next_value_seed(RulesSeed { priority })?;
            config.insert(priority, rules);
        }
        Ok(config)
    }
}

struct PrioritySeed;

impl<'de> DeserializeSeed<'de> for PrioritySeed {
    type Value = i64;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<i64, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PrioritySeed {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer priority")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("priority {v} is too large")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        Err(E::custom(format!("priority {v} is not an integer")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        Err(E::custom(format!("priority {v:?} is a string, not an integer (write the number without quotes)")))
    }
}

struct RulesSeed {
    priority: i64,
}

impl<'de> DeserializeSeed<'de> for RulesSeed {
    type Value = Vec<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<String>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RulesSeed {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of regular expressions for priority {}", self.priority)
    }

    // `10:` with nothing after it: a priority without rules.
    fn visit_unit<E: de::Error>(self) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut rules = Vec::new();
        while let Some(rule) = seq.next_element_seed(RuleSeed)? {
            rules.push(rule);
        }
        Ok(rules)
    }
}

/// One rule. Any scalar is taken as its text as written (`5`, `1e3`, `true`), and a null as the
/// empty string, as upstream's decoder does; a list or map is an error.
struct RuleSeed;

impl<'de> DeserializeSeed<'de> for RuleSeed {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        <Option<String> as serde::Deserialize>::deserialize(deserializer).map(Option::unwrap_or_default)
    }
}
