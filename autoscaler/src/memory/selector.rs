//! Label selectors as strings, the way the `scale` subresource reports them
//! (`metav1.LabelSelectorAsSelector(...).String()`): requirements sorted by key, `k=v` for
//! `matchLabels`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k` for expressions, values sorted.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
