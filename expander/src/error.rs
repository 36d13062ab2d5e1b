//! Errors of the expander spec (`--expander`) and of the priority expander's ConfigMap.

use thiserror::Error;

use crate::priority::PRIORITY_CONFIG_MAP_NAME;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExpanderError {
    #[error("--expander: the list of expanders is empty")]
    EmptyExpanderList,
    #[error("--expander={spec:?}: empty expander name in the list")]
    EmptyExpanderName { spec: String },
    #[error(
        "Expander {name} not supported (known expanders: random, most-pods, least-waste, least-nodes, price, priority, grpc)"
    )]
    UnknownExpander { name: String },
    #[error("Expander {name} was specified multiple times, each expander must not be specified more than once")]
    DuplicateExpander { name: String },
    #[error(
        "Expander {name} came after an expander {previous} that will always return only one result, \
         this is not allowed since {name} will never be used"
    )]
    ExpanderAfterStrategy { name: String, previous: String },

    // The three priority-config messages below keep upstream's wording: they end up in the
    // `PriorityConfigMapInvalid` event users already search for.
    #[error(
        "priority configuration in {PRIORITY_CONFIG_MAP_NAME} configmap is empty; please provide valid configuration"
    )]
    PriorityConfigEmpty,
    /// Not YAML, or not a map from integer priority to a list of regular expressions.
    #[error("Can't parse YAML with priorities in the configmap: {0}")]
    PriorityConfigYaml(String),
    #[error("Can't compile regexp rule for priority {priority} and rule {regex}: {message}")]
    PriorityConfigRegex { priority: i64, regex: String, message: String },
    /// Every rule compiles alone, but not all of them within `priority::RULES_SIZE_LIMIT`.
    #[error("Can't compile the regexp rules together: {message}")]
    PriorityConfigRules { message: String },
}
