//! Label and field selectors, as the API server reads them from query strings and from objects.

use std::collections::HashMap;

use serde_json::Value;

use super::store::Stored;

/// What a list, watch or deletecollection selects: a namespace (all when `None`) and the
/// `labelSelector` and `fieldSelector` query parameters.
#[derive(Debug, Clone, Default)]
pub struct ObjectFilter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl ObjectFilter {
    pub fn from_params(namespace: Option<String>, params: &HashMap<String, String>) -> Result<Self, String> {
        let labels = LabelSelector::parse(params.get("labelSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| format!("invalid labelSelector: {e}"))?;
        let fields = FieldSelector::parse(params.get("fieldSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| format!("invalid fieldSelector: {e}"))?;
        Ok(ObjectFilter { namespace, labels, fields })
    }

    /// Whether the filter selects a stored object. The object is parsed only when a selector
    /// is set: unfiltered lists and watches of big collections send the stored bytes as they are.
    pub fn matches(&self, object: &Stored) -> bool {
        if self.namespace.as_deref().is_some_and(|ns| ns != object.namespace) {
            return false;
        }
        if self.labels.0.is_empty() && self.fields.0.is_empty() {
            return true;
        }
        let value = object.value();
        self.labels.matches(&value) && self.fields.matches(&value)
    }
}

/// One requirement of a label selector string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl LabelRequirement {
    fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        match self {
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::DoesNotExist(k) => get(k).is_none(),
        }
    }
}

/// A parsed `labelSelector` query parameter (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<LabelRequirement>);

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(s: &str) -> Result<Vec<String>, String> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised value set, found {s:?}"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                LabelRequirement::DoesNotExist(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelRequirement::NotEquals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelRequirement::Equals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelRequirement::Equals(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, set)) = part.split_once(" notin ") {
                LabelRequirement::NotIn(k.trim().to_string(), parse_set(set)?)
            } else if let Some((k, set)) = part.split_once(" in ") {
                LabelRequirement::In(k.trim().to_string(), parse_set(set)?)
            } else if part.contains(char::is_whitespace) || part.contains('(') {
                return Err(format!("unable to parse label requirement {part:?}"));
            } else {
                LabelRequirement::Exists(part.to_string())
            };
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// A parsed `fieldSelector` query parameter (`spec.nodeName=n1,status.phase!=Succeeded`).
///
/// Any dotted path into the object is accepted (the real API server only accepts a few per
/// resource); a missing field reads as the empty string, booleans and numbers as their JSON text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, equal, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "invalid field selector requirement {part:?}: expected field=value or field!=value"
                ));
            };
            reqs.push((path.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

/// Whether a `metav1.LabelSelector` (as JSON: `matchLabels`, `matchExpressions`) selects an
/// object. An empty selector selects everything; a missing one nothing.
pub fn label_selector_object_matches(selector: Option<&Value>, object: &Value) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return false;
    };
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in match_labels {
            if get(k) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let actual = get(key);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
                "In" => actual.is_some_and(|a| values.contains(&a)),
                "NotIn" => actual.is_none_or(|a| !values.contains(&a)),
                "Exists" => actual.is_some(),
                "DoesNotExist" => actual.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// The string form of a `metav1.LabelSelector`, as the `scale` subresource reports it in
/// `status.selector`.
pub fn label_selector_to_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector else { return String::new() };
    let mut parts = Vec::new();
    if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in match_labels {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let mut values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            values.sort_unstable();
            match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn label_selector_string_supports_every_operator() {
        let sel = LabelSelector::parse("app=web,tier!=db,zone in (a, b),env notin (prod),team,!legacy").unwrap();
        assert!(sel.matches(&labelled(json!({"app": "web", "tier": "fe", "zone": "b", "env": "dev", "team": "x"}))));
        assert!(!sel.matches(&labelled(json!({"app": "web", "tier": "fe", "zone": "c", "env": "dev", "team": "x"}))));
        assert!(!sel.matches(&labelled(json!({"app": "web", "zone": "a", "team": "x", "legacy": "1"}))));
        assert!(LabelSelector::parse("a b").is_err());
    }

    #[test]
    fn field_selector_reads_dotted_paths_and_missing_fields_as_empty() {
        let pod = json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        assert!(FieldSelector::parse("spec.nodeName=n1,status.phase!=Succeeded").unwrap().matches(&pod));
        assert!(!FieldSelector::parse("spec.nodeName==n2").unwrap().matches(&pod));
        assert!(FieldSelector::parse("spec.schedulerName=").unwrap().matches(&pod));
        assert!(FieldSelector::parse("nonsense").is_err());
    }

    #[test]
    fn label_selector_object_is_rendered_like_the_scale_subresource() {
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]});
        assert_eq!(label_selector_to_string(Some(&sel)), "app=web,tier in (a,b)");
        assert!(label_selector_object_matches(Some(&sel), &labelled(json!({"app": "web", "tier": "a"}))));
        assert!(!label_selector_object_matches(Some(&sel), &labelled(json!({"app": "web"}))));
        assert!(label_selector_object_matches(Some(&json!({})), &labelled(json!({}))));
        assert!(!label_selector_object_matches(None, &labelled(json!({}))));
    }
}
