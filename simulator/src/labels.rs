//! Label selectors (`metav1.LabelSelector`) and node selectors (`core/v1.NodeSelector`),
//! compiled once into plain requirement lists that are cheap to evaluate and to hash.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub type Labels = BTreeMap<String, String>;

/// One requirement on a label (or, for node selectors, on a field).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    /// Node affinity only: the label parses as an integer greater than the value.
    Gt(String, i64),
    /// Node affinity only: the label parses as an integer less than the value.
    Lt(String, i64),
}

impl Requirement {
    fn from_parts(key: &str, operator: &str, values: &[String], allow_numeric: bool) -> Option<Requirement> {
        let mut values = values.to_vec();
        values.sort();
        values.dedup();
        let key = key.to_string();
        Some(match operator {
            "In" if !values.is_empty() => Requirement::In(key, values),
            "NotIn" if !values.is_empty() => Requirement::NotIn(key, values),
            "Exists" if values.is_empty() => Requirement::Exists(key),
            "DoesNotExist" if values.is_empty() => Requirement::DoesNotExist(key),
            "Gt" if allow_numeric && values.len() == 1 => Requirement::Gt(key, values[0].parse().ok()?),
            "Lt" if allow_numeric && values.len() == 1 => Requirement::Lt(key, values[0].parse().ok()?),
            _ => return None,
        })
    }

    pub fn key(&self) -> &str {
        match self {
            Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::Gt(k, _)
            | Requirement::Lt(k, _) => k,
        }
    }

    /// Evaluates the requirement against the value of its key (`None` when absent).
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match self {
            Requirement::In(_, vs) => value.is_some_and(|v| vs.iter().any(|x| x == v)),
            Requirement::NotIn(_, vs) => value.is_none_or(|v| !vs.iter().any(|x| x == v)),
            Requirement::Exists(_) => value.is_some(),
            Requirement::DoesNotExist(_) => value.is_none(),
            Requirement::Gt(_, n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
            Requirement::Lt(_, n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        }
    }

    pub fn matches(&self, labels: Option<&Labels>) -> bool {
        self.matches_value(labels.and_then(|l| l.get(self.key())).map(String::as_str))
    }
}

/// A compiled `LabelSelector`. A missing selector selects nothing; an empty one selects
/// everything, as in the Kubernetes API.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Selector {
    Nothing,
    /// All requirements must hold; an empty list selects everything.
    All(Vec<Requirement>),
}

impl Selector {
    pub fn everything() -> Self {
        Selector::All(Vec::new())
    }

    /// Compiles an optional selector. An invalid operator makes the selector select nothing,
    /// which is the safe reading for both scheduling (no false fits) and PDBs.
    pub fn from_label_selector(selector: Option<&LabelSelector>) -> Self {
        let Some(sel) = selector else { return Selector::Nothing };
        let mut reqs = Vec::new();
        for (k, v) in sel.match_labels.iter().flatten() {
            reqs.push(Requirement::In(k.clone(), vec![v.clone()]));
        }
        for e in sel.match_expressions.iter().flatten() {
            match Requirement::from_parts(&e.key, &e.operator, e.values.as_deref().unwrap_or(&[]), false) {
                Some(r) => reqs.push(r),
                None => return Selector::Nothing,
            }
        }
        reqs.sort();
        reqs.dedup();
        Selector::All(reqs)
    }

    /// Adds `key=value` requirements (used for `matchLabelKeys`).
    pub fn with_equalities(self, extra: impl IntoIterator<Item = (String, String)>) -> Self {
        match self {
            Selector::Nothing => Selector::Nothing,
            Selector::All(mut reqs) => {
                reqs.extend(extra.into_iter().map(|(k, v)| Requirement::In(k, vec![v])));
                reqs.sort();
                reqs.dedup();
                Selector::All(reqs)
            }
        }
    }

    /// Parses a selector in the string form the API uses (`/scale`'s `status.selector`,
    /// `kubectl -l`): `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by
    /// commas. An empty string selects everything.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            // Split at the next comma outside parentheses.
            let mut depth = 0;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth == 0 => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let part = rest[..end].trim();
            rest = rest.get(end + 1..).unwrap_or("").trim();
            if part.is_empty() {
                return Err(format!("empty requirement in selector {text:?}"));
            }
            let values = |list: &str| -> Result<Vec<String>, String> {
                let inner = list.trim();
                let inner = inner
                    .strip_prefix('(')
                    .and_then(|l| l.strip_suffix(')'))
                    .ok_or_else(|| format!("expected (values) in {part:?}"))?;
                Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
            };
            let words: Vec<&str> = part.split_whitespace().collect();
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::DoesNotExist(key.trim().to_string())
            } else if words.len() >= 2 && (words[1] == "in" || words[1] == "notin") {
                let list = part.split_once(words[1]).map_or("", |x| x.1);
                let key = words[0].to_string();
                let mut vs = values(list)?;
                vs.sort();
                if words[1] == "in" { Requirement::In(key, vs) } else { Requirement::NotIn(key, vs) }
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotIn(k.trim().to_string(), vec![v.trim().to_string()])
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::In(k.trim().to_string(), vec![v.trim().to_string()])
            } else if words.len() == 1 {
                Requirement::Exists(part.to_string())
            } else {
                return Err(format!("cannot parse requirement {part:?}"));
            };
            reqs.push(req);
        }
        reqs.sort();
        reqs.dedup();
        Ok(Selector::All(reqs))
    }

    pub fn matches(&self, labels: Option<&Labels>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::All(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    pub fn is_everything(&self) -> bool {
        matches!(self, Selector::All(r) if r.is_empty())
    }

    /// A `key=value` pair every matching object must carry, if the selector has one. Used to
    /// bucket selectors so that a new pod is only tested against selectors that can match it.
    pub fn required_equality(&self) -> Option<(&str, &str)> {
        match self {
            Selector::All(reqs) => reqs.iter().find_map(|r| match r {
                Requirement::In(k, vs) if vs.len() == 1 => Some((k.as_str(), vs[0].as_str())),
                _ => None,
            }),
            Selector::Nothing => None,
        }
    }
}

/// The string form of a label selector (what `/scale` reports in `status.selector` and
/// `kubectl -l` takes): requirements sorted by key, `matchLabels` before expressions.
pub fn format_label_selector(selector: &LabelSelector) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push((key.clone(), format!("{key}={value}")));
    }
    for expression in selector.match_expressions.iter().flatten() {
        let mut values = expression.values.clone().unwrap_or_default();
        values.sort();
        values.dedup();
        let key = &expression.key;
        let text = match expression.operator.as_str() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        };
        requirements.push((key.clone(), text));
    }
    // A stable sort by key keeps matchLabels before expressions on the same key.
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements.into_iter().map(|(_, text)| text).collect::<Vec<_>>().join(",")
}

/// A compiled `NodeSelector` (required node affinity): the terms are ORed, the requirements of
/// one term ANDed. A term without requirements matches no node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorMatcher {
    terms: Vec<NodeSelectorTermMatcher>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct NodeSelectorTermMatcher {
    labels: Vec<Requirement>,
    /// `matchFields`; the only supported field is `metadata.name`.
    fields: Vec<Requirement>,
    valid: bool,
}

impl NodeSelectorMatcher {
    pub fn new(selector: &NodeSelector) -> Self {
        let compile = |reqs: Option<&Vec<NodeSelectorRequirement>>, numeric: bool| -> Option<Vec<Requirement>> {
            reqs.into_iter()
                .flatten()
                .map(|r| Requirement::from_parts(&r.key, &r.operator, r.values.as_deref().unwrap_or(&[]), numeric))
                .collect()
        };
        let terms = selector
            .node_selector_terms
            .iter()
            .map(|t| {
                let labels = compile(t.match_expressions.as_ref(), true);
                let fields = compile(t.match_fields.as_ref(), false);
                let fields_ok = fields.as_ref().is_some_and(|f| f.iter().all(|r| r.key() == "metadata.name"));
                match (labels, fields) {
                    (Some(labels), Some(fields)) if fields_ok => {
                        let valid = !labels.is_empty() || !fields.is_empty();
                        NodeSelectorTermMatcher { labels, fields, valid }
                    }
                    _ => NodeSelectorTermMatcher { labels: vec![], fields: vec![], valid: false },
                }
            })
            .collect();
        NodeSelectorMatcher { terms }
    }

    pub fn matches(&self, node: &Node) -> bool {
        let labels = node.metadata.labels.as_ref();
        let name = node.metadata.name.as_deref();
        self.terms.iter().any(|t| {
            t.valid && t.labels.iter().all(|r| r.matches(labels)) && t.fields.iter().all(|r| r.matches_value(name))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn selector(v: serde_json::Value) -> Selector {
        Selector::from_label_selector(Some(&serde_json::from_value(v).unwrap()))
    }

    #[test]
    fn missing_selector_selects_nothing_and_empty_selects_everything() {
        assert!(!Selector::from_label_selector(None).matches(Some(&labels(&[("a", "b")]))));
        assert!(selector(json!({})).matches(None));
    }

    #[test]
    fn match_labels_and_expressions() {
        let s = selector(json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["z1"]}
        ]}));
        assert!(s.matches(Some(&labels(&[("app", "web"), ("tier", "a")]))));
        assert!(s.matches(Some(&labels(&[("app", "web"), ("tier", "b"), ("zone", "z2")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "c")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "a"), ("canary", "1")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "a"), ("zone", "z1")]))));
        assert_eq!(s.required_equality(), Some(("app", "web")));
    }

    #[test]
    fn selector_string_sorts_requirements_by_key_like_the_scale_subresource() {
        let selector: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "owner", "operator": "Exists"}
            ]
        }))
        .unwrap();
        assert_eq!(format_label_selector(&selector), "app=shop,!canary,env notin (dev),owner,tier=web,zone in (a,b)");
    }

    #[test]
    fn selector_strings_parse() {
        let s = Selector::parse("app=web, tier in (a, b),!canary,env!=prod,zone").unwrap();
        assert!(s.matches(Some(&labels(&[("app", "web"), ("tier", "a"), ("zone", "z")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "c"), ("zone", "z")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "a"), ("zone", "z"), ("env", "prod")]))));
        assert!(!s.matches(Some(&labels(&[("app", "web"), ("tier", "a")]))));
        assert!(Selector::parse("").unwrap().is_everything());
        assert!(Selector::parse("a in b").is_err());
    }

    #[test]
    fn invalid_operator_selects_nothing() {
        let s = selector(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}));
        assert_eq!(s, Selector::Nothing);
    }

    #[test]
    fn node_selector_terms_are_ored_and_numeric_operators_work() {
        let ns: NodeSelector = serde_json::from_value(json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]}
        ]}))
        .unwrap();
        let m = NodeSelectorMatcher::new(&ns);
        let node = |name: &str, l: &[(&str, &str)]| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels(l)}})).unwrap()
        };
        assert!(m.matches(&node("a", &[("cores", "8")])));
        assert!(!m.matches(&node("a", &[("cores", "4")])));
        assert!(!m.matches(&node("a", &[("cores", "x")])));
        assert!(m.matches(&node("special", &[])));
        let empty_term: NodeSelector = serde_json::from_value(json!({"nodeSelectorTerms": [{}]})).unwrap();
        assert!(!NodeSelectorMatcher::new(&empty_term).matches(&node("a", &[])));
    }
}
