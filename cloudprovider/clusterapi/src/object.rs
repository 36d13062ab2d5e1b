//! Reading Cluster API objects. They arrive as `DynamicObject`s (typed metadata, the rest as
//! JSON) because their versions (`v1beta1`, `v1beta2`) differ in places this provider does not
//! read, and an infrastructure template's kind is whatever the infrastructure provider named
//! it. Every reader here returns `None` for a missing or mistyped field: what a field's absence
//! means is decided by the caller.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde_json::Value;

/// `namespace/name`, the key of a namespaced object.
pub type ObjectKey = (String, String);

/// The object's `namespace/name`.
pub fn key_of(object: &DynamicObject) -> ObjectKey {
    (object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone().unwrap_or_default())
}

/// The string at `path` below the object's top level (`["spec", "providerID"]`).
pub fn str_at<'a>(object: &'a DynamicObject, path: &[&str]) -> Option<&'a str> {
    value_at(object, path)?.as_str()
}

/// The JSON value at `path` below the object's top level.
pub fn value_at<'a>(object: &'a DynamicObject, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = object.data.get(*first)?;
    for segment in rest {
        value = value.get(*segment)?;
    }
    (!value.is_null()).then_some(value)
}

pub fn labels(object: &DynamicObject) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    object.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

pub fn annotations(object: &DynamicObject) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    object.metadata.annotations.as_ref().unwrap_or(&EMPTY)
}

/// The name of the object's owner of `kind`, if it has one (as upstream: the first reference of
/// that kind with a name).
pub fn owner_of_kind<'a>(object: &'a DynamicObject, kind: &str) -> Option<&'a str> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.kind == kind && !r.name.is_empty())
        .map(|r| r.name.as_str())
}

/// The Cluster an object belongs to: `spec.clusterName`, else the cluster-name label (upstream's
/// `clusterNameFromResource`). `""` when neither is set.
pub fn cluster_name<'a>(object: &'a DynamicObject, cluster_name_label: &str) -> &'a str {
    str_at(object, &["spec", "clusterName"])
        .or_else(|| labels(object).get(cluster_name_label).map(String::as_str))
        .unwrap_or_default()
}

pub fn is_deleting(object: &DynamicObject) -> bool {
    object.metadata.deletion_timestamp.is_some()
}

/// Whether a `metav1.LabelSelector` (as JSON) selects `labels`. An empty selector selects
/// everything, as in Kubernetes; an absent one is an error (MachineDeployments and MachineSets
/// require one, and upstream refuses to list their Machines without it).
pub fn selector_matches(selector: Option<&Value>, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let Some(selector) = selector.and_then(Value::as_object) else {
        return Err("spec.selector is missing".to_string());
    };
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    for (key, value) in match_labels.into_iter().flatten() {
        if labels.get(key).map(String::as_str) != value.as_str() {
            return Ok(false);
        }
    }
    for (index, expression) in expressions.into_iter().flatten().enumerate() {
        let key = expression.get("key").and_then(Value::as_str).unwrap_or_default();
        let operator = expression.get("operator").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let present = labels.get(key);
        let matched = match operator {
            "In" => present.is_some_and(|v| values.contains(&v.as_str())),
            "NotIn" => present.is_none_or(|v| !values.contains(&v.as_str())),
            "Exists" => present.is_some(),
            "DoesNotExist" => present.is_none(),
            other => {
                return Err(format!("spec.selector.matchExpressions[{index}]: unknown operator {other:?}"));
            }
        };
        if !matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The part of a providerID that identifies the instance: everything after the last `/`
/// (`aws:///us-east-1a/i-0abc` → `i-0abc`), except Azure scale-set IDs, which are kept whole
/// because their last segment is only an index within the scale set (upstream's
/// `normalizedProviderString`).
pub fn normalized_provider_id(provider_id: &str) -> &str {
    if provider_id.starts_with("azure://") && provider_id.contains("virtualMachineScaleSets") {
        return provider_id;
    }
    provider_id.rsplit('/').next().unwrap_or(provider_id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn labels_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn provider_ids_are_normalized_as_upstream() {
        assert_eq!(normalized_provider_id("aws:///us-east-1a/i-0abc"), "i-0abc");
        assert_eq!(normalized_provider_id("openstack:///9a8b"), "9a8b");
        assert_eq!(normalized_provider_id("pending-machine-ns_m1"), "pending-machine-ns_m1");
        let vmss = "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/0";
        assert_eq!(normalized_provider_id(vmss), vmss);
        assert_eq!(normalized_provider_id("azure:///subscriptions/s/virtualMachines/vm1"), "vm1");
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let selector = json!({"matchLabels": {"pool": "a"}, "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
            {"key": "old", "operator": "DoesNotExist"},
        ]});
        assert_eq!(selector_matches(Some(&selector), &labels_of(&[("pool", "a"), ("zone", "z1")])), Ok(true));
        assert_eq!(selector_matches(Some(&selector), &labels_of(&[("pool", "a"), ("zone", "z3")])), Ok(false));
        assert_eq!(
            selector_matches(Some(&selector), &labels_of(&[("pool", "a"), ("zone", "z1"), ("old", "")])),
            Ok(false)
        );
        assert!(selector_matches(None, &labels_of(&[])).is_err());
        assert_eq!(selector_matches(Some(&json!({})), &labels_of(&[("any", "thing")])), Ok(true));
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "Near"}]});
        assert!(selector_matches(Some(&bad), &labels_of(&[])).unwrap_err().contains("Near"));
    }

    #[test]
    fn cluster_name_prefers_the_spec_over_the_label() {
        let label = "cluster.x-k8s.io/cluster-name";
        let both = object(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": "ms", "labels": {label: "from-label"}},
            "spec": {"clusterName": "from-spec"},
        }));
        assert_eq!(cluster_name(&both, label), "from-spec");
        let only_label = object(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": "ms", "labels": {label: "from-label"}},
        }));
        assert_eq!(cluster_name(&only_label, label), "from-label");
        assert_eq!(str_at(&only_label, &["spec", "clusterName"]), None);
    }
}
