//! `--node-group-auto-discovery=clusterapi:namespace=<ns>,clusterName=<name>,<label>=<value>,…`,
//! upstream's syntax and meaning: within one spec every key must match (namespace, Cluster
//! name, each label), and a resource is discovered when any spec matches it. Without any spec
//! every MachineDeployment, MachineSet and MachinePool carrying the size annotations is a node
//! group, as upstream.

use std::collections::BTreeSet;

use kube::api::DynamicObject;

use crate::error::ConfigError;
use crate::object::{cluster_name, labels};

const FLAG: &str = "--node-group-auto-discovery";
const DISCOVERER: &str = "clusterapi";

/// One `clusterapi:` spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscoverySpec {
    pub namespace: Option<String>,
    pub cluster_name: Option<String>,
    /// Labels the resource must carry, each with this exact value.
    pub labels: Vec<(String, String)>,
}

impl DiscoverySpec {
    /// Parses one flag value. As upstream, a later `namespace=` or `clusterName=` replaces an
    /// earlier one and empty items (`a=b,,c=d`) are skipped.
    pub fn parse(spec: &str) -> Result<DiscoverySpec, ConfigError> {
        let bad = |reason: String| ConfigError::Flag { flag: FLAG, value: spec.to_string(), reason };
        let mut parts = spec.split(':');
        let (Some(discoverer), Some(items), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected clusterapi:<key>=<value>,<key>=<value>,…".to_string()));
        };
        if discoverer != DISCOVERER {
            return Err(bad(format!(
                "unsupported discoverer {discoverer:?}: the clusterapi provider only discovers with clusterapi:"
            )));
        }
        let mut parsed = DiscoverySpec::default();
        for item in items.split(',').filter(|i| !i.is_empty()) {
            let mut kv = item.split('=');
            let (Some(key), Some(value), None) = (kv.next(), kv.next(), kv.next()) else {
                return Err(bad(format!("{item:?} is not a key=value pair")));
            };
            match key {
                "namespace" => parsed.namespace = Some(value.to_string()),
                "clusterName" => parsed.cluster_name = Some(value.to_string()),
                _ => {
                    check_label(key, value).map_err(|reason| bad(format!("label {item:?}: {reason}")))?;
                    parsed.labels.push((key.to_string(), value.to_string()));
                }
            }
        }
        Ok(parsed)
    }

    /// Whether the scalable resource matches every key of this spec.
    pub fn matches(&self, object: &DynamicObject, cluster_name_label: &str) -> bool {
        if self.namespace.as_deref().is_some_and(|ns| object.metadata.namespace.as_deref() != Some(ns)) {
            return false;
        }
        if self.cluster_name.as_deref().is_some_and(|name| cluster_name(object, cluster_name_label) != name) {
            return false;
        }
        let present = labels(object);
        self.labels.iter().all(|(key, value)| present.get(key) == Some(value))
    }
}

/// Every `--node-group-auto-discovery` value, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    pub specs: Vec<DiscoverySpec>,
}

impl Discovery {
    pub fn parse(specs: &[String]) -> Result<Discovery, ConfigError> {
        Ok(Discovery { specs: specs.iter().map(|s| DiscoverySpec::parse(s)).collect::<Result<_, _>>()? })
    }

    /// Whether any spec matches (every resource, without specs).
    pub fn allows(&self, object: &DynamicObject, cluster_name_label: &str) -> bool {
        self.specs.is_empty() || self.specs.iter().any(|s| s.matches(object, cluster_name_label))
    }

    /// The namespaces to list in: `None` for every namespace. Only when every spec names a
    /// namespace can the lists be narrowed (upstream watches the first spec's namespace only,
    /// which loses the resources of the other specs).
    pub fn namespaces(&self) -> Option<BTreeSet<String>> {
        if self.specs.is_empty() {
            return None;
        }
        self.specs.iter().map(|s| s.namespace.clone()).collect()
    }
}

/// A label selector requirement's key and value, checked as the API server checks them
/// (`labels.NewRequirement`): a qualified name, and a value of at most 63 characters of
/// alphanumerics, `-`, `_` and `.` that starts and ends with an alphanumeric.
fn check_label(key: &str, value: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty()
            || prefix.len() > 253
            || !prefix.split('.').all(|p| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !p.starts_with('-')
                    && !p.ends_with('-')
            }))
    {
        return Err(format!("the key's prefix {prefix:?} is not a DNS subdomain"));
    }
    if name.is_empty() || !is_label_value(name) {
        return Err(format!("the key's name {name:?} is not a valid label name"));
    }
    if !value.is_empty() && !is_label_value(value) {
        return Err(format!("{value:?} is not a valid label value"));
    }
    Ok(())
}

fn is_label_value(text: &str) -> bool {
    text.len() <= 63
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && text.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && text.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LABEL: &str = "cluster.x-k8s.io/cluster-name";

    fn md(namespace: &str, cluster: &str, labels: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": {"name": "md", "namespace": namespace, "labels": labels},
            "spec": {"clusterName": cluster},
        }))
        .unwrap()
    }

    #[test]
    fn upstream_forms_parse() {
        let spec = DiscoverySpec::parse("clusterapi:namespace=staging,clusterName=purple,owner=jim").unwrap();
        assert_eq!(spec.namespace.as_deref(), Some("staging"));
        assert_eq!(spec.cluster_name.as_deref(), Some("purple"));
        assert_eq!(spec.labels, [("owner".to_string(), "jim".to_string())]);
        assert_eq!(DiscoverySpec::parse("clusterapi:").unwrap(), DiscoverySpec::default());
        let spec = DiscoverySpec::parse("clusterapi:color=green,,shape=square").unwrap();
        assert_eq!(spec.labels.len(), 2);
    }

    #[test]
    fn bad_specs_name_the_flag_and_the_problem() {
        for (spec, needle) in [
            ("clusterapi", "expected clusterapi:"),
            ("asg:tag=x", "unsupported discoverer \"asg\""),
            ("clusterapi:namespace", "not a key=value pair"),
            ("clusterapi:a=b=c", "not a key=value pair"),
            ("clusterapi:a b=c", "not a valid label name"),
            ("clusterapi:Bad_Prefix/a=c", "not a DNS subdomain"),
            ("clusterapi:a=-x", "not a valid label value"),
            ("clusterapi:x.io/a:b=c", "expected clusterapi:"),
        ] {
            let error = DiscoverySpec::parse(spec).unwrap_err().to_string();
            assert!(error.starts_with("invalid --node-group-auto-discovery value"), "{error}");
            assert!(error.contains(needle), "{spec}: {error}");
        }
    }

    #[test]
    fn keys_of_one_spec_are_anded_and_specs_are_ored() {
        let discovery = Discovery::parse(&[
            "clusterapi:namespace=blue,clusterName=c1".to_string(),
            "clusterapi:color=green".to_string(),
        ])
        .unwrap();
        assert!(discovery.allows(&md("blue", "c1", json!({})), LABEL));
        assert!(!discovery.allows(&md("blue", "c2", json!({})), LABEL), "the cluster name differs");
        assert!(!discovery.allows(&md("red", "c1", json!({})), LABEL), "the namespace differs");
        assert!(discovery.allows(&md("red", "c2", json!({"color": "green"})), LABEL), "the second spec");
        assert!(!discovery.allows(&md("red", "c2", json!({"color": "blue"})), LABEL));
        assert!(Discovery::default().allows(&md("any", "any", json!({})), LABEL), "no spec: everything");
    }

    #[test]
    fn lists_are_narrowed_to_namespaces_only_when_every_spec_names_one() {
        let both = Discovery::parse(&["clusterapi:namespace=a".into(), "clusterapi:namespace=b".into()]).unwrap();
        assert_eq!(both.namespaces(), Some(["a".to_string(), "b".to_string()].into()));
        let mixed = Discovery::parse(&["clusterapi:namespace=a".into(), "clusterapi:clusterName=c".into()]).unwrap();
        assert_eq!(mixed.namespaces(), None);
        assert_eq!(Discovery::default().namespaces(), None);
    }
}
