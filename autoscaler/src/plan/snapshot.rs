//! Reading a cluster dump: what `kubectl get … -o json|yaml` prints (a `List`, single objects,
//! or several YAML documents), from files or stdin. Objects the autoscaler does not use are
//! ignored; a malformed object is an error naming the file, the item and the field.
//!
//! PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes turn the scheduler's
//! volume filters on: a dump holding any of them is taken to hold all of them (`kubectl get
//! …,pvc,pv,storageclass,csinode`), and a pod's claim missing from it is then missing. A dump
//! without any says nothing about volumes, and the filters stay off.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use cloudprovider::objects::{self, ObjectError, refused_value};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::ClusterView;
use crate::podscaling::file_metrics::MetricLists;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: not valid JSON or YAML: {message}")]
    Syntax { file: String, message: String },
    #[error("{file}{}: {item}: field `{field}`: {message}", at_line(line))]
    Object { file: String, line: Option<u64>, item: String, field: String, message: String },
    #[error(
        "{file}{}: {item}: the same kind, namespace and name as {first}, with other contents: \
         which one is the cluster's is unknown (dump each object once)",
        at_line(line)
    )]
    Duplicate { file: String, line: Option<u64>, item: String, first: String },
}

fn at_line(line: &Option<u64>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

impl SnapshotError {
    /// Places an error about the object at `item_path` (`items[3]`, `[3]`, or empty for a whole
    /// document) of document `document` of `text` at the line its field is written on.
    fn placed(mut self, text: &str, document: usize, item_path: &str) -> SnapshotError {
        let options = dump_yaml_options(text);
        match &mut self {
            SnapshotError::Object { line, field, .. } => {
                let path = match (item_path, field.as_str()) {
                    (_, ".") => item_path.to_string(),
                    ("", f) => f.to_string(),
                    (p, f) => format!("{p}.{f}"),
                };
                *line = cloudprovider::yaml::line_of_path(text, document, &path, options);
            }
            SnapshotError::Duplicate { line, .. } => {
                *line = cloudprovider::yaml::line_of_path(text, document, item_path, options);
            }
            SnapshotError::Read { .. } | SnapshotError::Syntax { .. } => {}
        }
        self
    }
}

/// The objects read so far, by API group, kind, namespace and name, with where each was read:
/// an object read twice would count twice (a node's capacity, a pod's requests). Identical
/// copies (the same file given twice, overlapping `kubectl get` lists) are read once, with a
/// warning; copies that differ are an error, since either could be the cluster's.
#[derive(Debug, Default)]
pub struct Seen {
    objects: HashMap<(String, String, String, String), (String, Value)>,
    /// The warnings about identical copies, one per copy.
    pub warnings: Vec<String>,
    /// (file, kind, field path without indices) → how many objects have that unknown field.
    unknown_fields: BTreeMap<(String, String, String), usize>,
}

impl Seen {
    /// Every warning: the identical copies, then one line per unknown field with its count.
    pub fn all_warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        for ((file, kind, path), count) in &self.unknown_fields {
            let objects = if *count == 1 { "object" } else { "objects" };
            out.push(format!(
                "{file}: {kind} field `{path}` is not known to this version and was ignored ({count} {objects})"
            ));
        }
        out
    }
}

/// Reads one snapshot source (`-` for stdin) into the view (and metric lists into `metrics`).
pub fn load_into(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    source: &str,
) -> Result<(), SnapshotError> {
    let text = if source == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| SnapshotError::Read { file: "<stdin>".into(), source: e })?;
        s
    } else {
        std::fs::read_to_string(Path::new(source))
            .map_err(|e| SnapshotError::Read { file: source.into(), source: e })?
    };
    let name = if source == "-" { "<stdin>" } else { source };
    load_text_with_metrics(view, metrics, seen, &text, name)
}

fn parse_documents(text: &str, file: &str) -> Result<Vec<Value>, SnapshotError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        // JSON, possibly several concatenated objects (`kubectl get -o json` per resource).
        let mut docs = Vec::new();
        for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            docs.push(doc.map_err(|e| SnapshotError::Syntax { file: file.into(), message: e.to_string() })?);
        }
        return Ok(docs);
    }
    serde_saphyr::from_multiple_with_options::<Value>(text, dump_yaml_options(text))
        .map_err(|e| SnapshotError::Syntax { file: file.into(), message: e.to_string() })
}

/// serde-saphyr's default budget (250,000 nodes, 1,000,000 events, 1,024 documents, depth 64)
/// fits hand-written files, and refused the YAML dump of a cluster of a few thousand pods. A
/// dump's budget grows with its text instead: a node, an event pair or a document takes at least
/// a byte, so nothing written out is refused, and what aliases can add stays bounded by their
/// own limits. The depth is the JSON reader's (serde_json stops at 128).
fn dump_yaml_options(text: &str) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = budget.max_nodes.max(text.len());
    budget.max_events = budget.max_events.max(text.len().saturating_mul(2));
    budget.max_documents = budget.max_documents.max(text.len());
    budget.max_depth = 128;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// Parses dump text and adds every object the autoscaler uses to the view.
pub fn load_text(view: &mut ClusterView, text: &str, file: &str) -> Result<(), SnapshotError> {
    load_text_with_metrics(view, &mut MetricLists::default(), &mut Seen::default(), text, file)
}

/// `load_text`, also collecting metrics API lists (`PodMetricsList`, `MetricValueList`,
/// `ExternalMetricValueList`).
pub fn load_text_with_metrics(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    text: &str,
    file: &str,
) -> Result<(), SnapshotError> {
    for (d, doc) in parse_documents(text, file)?.into_iter().enumerate() {
        let metrics_list = metrics.add(&doc).map_err(|message| SnapshotError::Object {
            file: file.into(),
            line: None,
            item: format!("document {} ({})", d + 1, doc.get("kind").and_then(Value::as_str).unwrap_or("?")),
            field: "items".into(),
            message,
        })?;
        if metrics_list {
            continue;
        }
        match doc {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    add_object(view, seen, item, file, &format!("document {} item {i}", d + 1))
                        .map_err(|e| e.placed(text, d, &format!("[{i}]")))?;
                }
            }
            Value::Object(ref map) if map.get("items").is_some_and(Value::is_array) => {
                let Value::Object(mut map) = doc else { unreachable!() };
                let Some(Value::Array(items)) = map.remove("items") else { unreachable!() };
                for (i, item) in items.into_iter().enumerate() {
                    add_object(view, seen, item, file, &format!("items[{i}]"))
                        .map_err(|e| e.placed(text, d, &format!("items[{i}]")))?;
                }
            }
            other => add_object(view, seen, other, file, &format!("document {}", d + 1))
                .map_err(|e| e.placed(text, d, ""))?,
        }
    }
    Ok(())
}

fn describe(obj: &Value, position: &str) -> String {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("object");
    let meta = obj.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("?");
    match meta.and_then(|m| m.get("namespace")).and_then(Value::as_str) {
        Some(ns) => format!("{position} ({kind} {ns}/{name})"),
        None => format!("{position} ({kind} {name})"),
    }
}

/// A dump comes from an API server that may be newer than our types: fields they do not know are
/// counted (and reported once per field), not refused. Values the API server would have refused
/// are refused.
fn typed<T: DeserializeOwned>(obj: Value, seen: &mut Seen, file: &str, item: &str) -> Result<Arc<T>, SnapshotError> {
    let error = |e: ObjectError| SnapshotError::Object {
        file: file.into(),
        line: None,
        item: item.into(),
        field: e.path,
        message: e.message,
    };
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(e) = refused_value(&kind, &obj) {
        return Err(error(e));
    }
    let read = objects::read::<T>(obj).map_err(error)?;
    for path in read.unknown_fields {
        *seen.unknown_fields.entry((file.to_string(), kind.clone(), objects::path_pattern(&path))).or_default() += 1;
    }
    Ok(Arc::new(read.object))
}

fn add_object(
    view: &mut ClusterView,
    seen: &mut Seen,
    obj: Value,
    file: &str,
    position: &str,
) -> Result<(), SnapshotError> {
    if !obj.is_object() {
        return Err(SnapshotError::Object {
            file: file.into(),
            line: None,
            item: position.into(),
            field: ".".into(),
            message: "expected a Kubernetes object".into(),
        });
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
    let item = describe(&obj, position);
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let meta = obj.get("metadata");
    let field = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).unwrap_or("").to_string();
    let (namespace, name) = (field("namespace"), field("name"));
    if !name.is_empty() {
        let key = (group.to_string(), kind.clone(), namespace, name);
        match seen.objects.get(&key) {
            Some((first, copy)) if *copy == obj => {
                seen.warnings.push(format!("{file}: {item}: the same object as {first}; read once"));
                return Ok(());
            }
            Some((first, _)) => {
                return Err(SnapshotError::Duplicate { file: file.into(), line: None, item, first: first.clone() });
            }
            None => {
                seen.objects.insert(key, (format!("{file}: {item}"), obj.clone()));
            }
        }
    }
    match (group, kind.as_str()) {
        ("", "Node") => {
            let node: Arc<Node> = typed(obj, seen, file, &item)?;
            check_quantities(node_quantities(&node), file, &item)?;
            view.nodes.push(node);
        }
        ("", "Pod") => {
            let pod: Arc<Pod> = typed(obj, seen, file, &item)?;
            check_quantities(pod_quantities(&pod), file, &item)?;
            view.pods.push(pod);
        }
        ("", "PersistentVolumeClaim") => {
            let claim: Arc<PersistentVolumeClaim> = typed(obj, seen, file, &item)?;
            let requests = claim.spec.as_ref().and_then(|s| s.resources.as_ref()).and_then(|r| r.requests.as_ref());
            check_quantities(vec![("spec.resources.requests".into(), requests)], file, &item)?;
            view.persistent_volume_claims.push(claim);
            view.volumes_observed = true;
        }
        ("", "PersistentVolume") => {
            let volume: Arc<PersistentVolume> = typed(obj, seen, file, &item)?;
            let capacity = volume.spec.as_ref().and_then(|s| s.capacity.as_ref());
            check_quantities(vec![("spec.capacity".into(), capacity)], file, &item)?;
            view.persistent_volumes.push(volume);
            view.volumes_observed = true;
        }
        ("storage.k8s.io", "StorageClass") => {
            view.storage_classes.push(typed(obj, seen, file, &item)?);
            view.volumes_observed = true;
        }
        ("storage.k8s.io", "CSINode") => {
            view.csi_nodes.push(typed(obj, seen, file, &item)?);
            view.volumes_observed = true;
        }
        ("", "ReplicationController") => view.replication_controllers.push(typed(obj, seen, file, &item)?),
        ("", "ConfigMap") => view.config_maps.push(typed(obj, seen, file, &item)?),
        ("", "Namespace") => view.namespaces.push(typed(obj, seen, file, &item)?),
        ("policy", "PodDisruptionBudget") if api_version == "policy/v1" => {
            view.pdbs.push(typed(obj, seen, file, &item)?)
        }
        ("apps", "DaemonSet") => view.daemonsets.push(typed(obj, seen, file, &item)?),
        ("apps", "ReplicaSet") => view.replicasets.push(typed(obj, seen, file, &item)?),
        ("apps", "StatefulSet") => view.statefulsets.push(typed(obj, seen, file, &item)?),
        ("apps", "Deployment") => view.deployments.push(typed(obj, seen, file, &item)?),
        ("batch", "Job") => view.jobs.push(typed(obj, seen, file, &item)?),
        ("autoscaling", "HorizontalPodAutoscaler") if api_version == "autoscaling/v2" => {
            view.hpas.push(typed(obj, seen, file, &item)?)
        }
        ("datadoghq.com", "WatermarkPodAutoscaler") => view.wpas.push(typed(obj, seen, file, &item)?),
        ("", "") if obj.get("metadata").is_none() => {
            return Err(SnapshotError::Object {
                file: file.into(),
                line: None,
                item: position.into(),
                field: "kind".into(),
                message: "missing kind and apiVersion".into(),
            });
        }
        _ => {} // Not something the autoscaler uses.
    }
    Ok(())
}

type QuantityList<'a> = Option<&'a BTreeMap<String, Quantity>>;

/// The resource lists of a pod the autoscaler reads, with their field paths.
fn pod_quantities(pod: &Pod) -> Vec<(String, QuantityList<'_>)> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    let mut lists = Vec::new();
    let containers = [("containers", Some(&spec.containers)), ("initContainers", spec.init_containers.as_ref())];
    for (kind, list) in containers {
        for (i, c) in list.into_iter().flatten().enumerate() {
            let resources = c.resources.as_ref();
            lists.push((format!("spec.{kind}[{i}].resources.requests"), resources.and_then(|r| r.requests.as_ref())));
            lists.push((format!("spec.{kind}[{i}].resources.limits"), resources.and_then(|r| r.limits.as_ref())));
        }
    }
    lists.push(("spec.overhead".into(), spec.overhead.as_ref()));
    lists
}

fn node_quantities(node: &Node) -> Vec<(String, QuantityList<'_>)> {
    let status = node.status.as_ref();
    vec![
        ("status.capacity".into(), status.and_then(|s| s.capacity.as_ref())),
        ("status.allocatable".into(), status.and_then(|s| s.allocatable.as_ref())),
    ]
}

/// Every quantity must parse: the API server would have refused the object, and reading a bad
/// one as zero would silently change the decision.
fn check_quantities(lists: Vec<(String, QuantityList<'_>)>, file: &str, item: &str) -> Result<(), SnapshotError> {
    for (path, list) in lists {
        for (name, quantity) in list.into_iter().flatten() {
            if let Err(e) = simulator::quantity::parse_milli(&quantity.0) {
                return Err(SnapshotError::Object {
                    file: file.into(),
                    line: None,
                    item: item.into(),
                    field: format!("{path}.{name}"),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Sorts objects by name so that reports and decisions do not depend on dump order.
pub fn normalize(view: &mut ClusterView) {
    view.nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let key = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| (m.namespace.clone(), m.name.clone());
    view.pods.sort_by_key(|p| key(&p.metadata));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_list_json_is_read_and_unknown_kinds_ignored() {
        let text = r#"{"apiVersion":"v1","kind":"List","items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[]}},
            {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}
        ]}"#;
        let mut view = ClusterView::default();
        load_text(&mut view, text, "dump.json").unwrap();
        assert_eq!(view.nodes.len(), 1);
        assert_eq!(view.pods.len(), 1);
    }

    #[test]
    fn yaml_documents_are_read() {
        let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds, namespace: kube-system}\nspec: {selector: {}, template: {}}\n";
        let mut view = ClusterView::default();
        load_text(&mut view, text, "dump.yaml").unwrap();
        assert_eq!(view.nodes.len(), 1);
        assert_eq!(view.daemonsets.len(), 1);
    }

    #[test]
    fn malformed_object_names_file_item_and_field() {
        let text = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":"oops"}}]}"#;
        let err = load_text(&mut ClusterView::default(), text, "dump.json").unwrap_err().to_string();
        assert!(err.contains("dump.json"), "{err}");
        assert!(err.contains("items[0] (Pod ns/p)"), "{err}");
        assert!(err.contains("spec.containers"), "{err}");
    }

    #[test]
    fn errors_in_a_dump_name_the_line_of_the_field() {
        let json = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}}
        ]}))
        .unwrap();
        let cpu_line = json.lines().position(|l| l.contains("\"cpu\"")).unwrap() as u64 + 1;
        let err = load_text(&mut ClusterView::default(), &json, "dump.json").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "dump.json:{cpu_line}: items[1] (Pod ns/p): field `spec.containers[0].resources.requests.cpu`"
            )),
            "{err}"
        );
        let yaml = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nstatus:\n  allocatable:\n    memory: lots\n";
        let err = load_text(&mut ClusterView::default(), yaml, "dump.yaml").unwrap_err().to_string();
        assert!(err.starts_with("dump.yaml:11: document 2 (Node n2): field `status.allocatable.memory`"), "{err}");
    }

    #[test]
    fn storage_objects_turn_the_volume_filters_on() {
        let mut view = ClusterView::default();
        load_text(
            &mut view,
            r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}]}"#,
            "a.json",
        )
        .unwrap();
        assert!(!view.volumes_observed, "a dump without storage objects says nothing about volumes");
        let text = r#"{"apiVersion":"v1","kind":"List","items":[
            {"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"db"},
             "spec":{"resources":{"requests":{"storage":"10Gi"}}}},
            {"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"capacity":{"storage":"10Gi"}}},
            {"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"gp3"},"provisioner":"ebs.csi.aws.com"},
            {"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"n1"},"spec":{"drivers":[]}}
        ]}"#;
        load_text(&mut view, text, "b.json").unwrap();
        assert!(view.volumes_observed);
        assert_eq!(
            (view.persistent_volume_claims.len(), view.persistent_volumes.len()),
            (1, 1),
            "claims and volumes are read"
        );
        assert_eq!((view.storage_classes.len(), view.csi_nodes.len()), (1, 1));
        let bad = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"lots"}}}]}"#;
        let err = load_text(&mut ClusterView::default(), bad, "c.json").unwrap_err().to_string();
        assert!(err.contains("spec.capacity.storage"), "{err}");
    }

    #[test]
    fn duplicate_objects_are_read_once_when_identical_and_refused_when_not() {
        let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}}"#;
        let other =
            r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"8"}}}"#;
        let mut view = ClusterView::default();
        let mut seen = Seen::default();
        let mut metrics = MetricLists::default();
        load_text_with_metrics(&mut view, &mut metrics, &mut seen, &format!("[{node},{node}]"), "a.json").unwrap();
        load_text_with_metrics(&mut view, &mut metrics, &mut seen, node, "b.json").unwrap();
        assert_eq!(view.nodes.len(), 1, "read once");
        assert_eq!(seen.warnings.len(), 2, "{:?}", seen.warnings);
        assert!(
            seen.warnings[1].starts_with("b.json: document 1 (Node n1): the same object as a.json: document 1 item 0")
        );
        let err = load_text_with_metrics(&mut view, &mut metrics, &mut seen, other, "c.json").unwrap_err().to_string();
        assert!(
            err.starts_with("c.json:1: document 1 (Node n1): the same kind, namespace and name as a.json"),
            "{err}"
        );
        // Same name, another kind or namespace: not a duplicate.
        let pod =
            |ns: &str| format!(r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"n1","namespace":"{ns}"}}}}"#);
        load_text_with_metrics(&mut view, &mut metrics, &mut seen, &format!("[{},{}]", pod("a"), pod("b")), "d.json")
            .unwrap();
        assert_eq!(view.pods.len(), 2);
    }

    #[test]
    fn large_yaml_dumps_are_read() {
        // Found beside the readers' fuzz test: 3,000 objects in YAML passed the parser's default
        // budget of 250,000 nodes and were refused as "not valid JSON or YAML".
        let namespaces: String = (0..60_000)
            .map(|i| format!("- {{apiVersion: v1, kind: Namespace, metadata: {{name: ns-{i}}}}}\n"))
            .collect();
        let mut view = ClusterView::default();
        load_text(&mut view, &format!("kind: List\nitems:\n{namespaces}"), "dump.yaml").unwrap();
        assert_eq!(view.namespaces.len(), 60_000);
        // As separate documents, and nested as deep as JSON may be.
        let documents = vec!["apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n"; 2_000].join("---\n");
        load_text(&mut ClusterView::default(), &documents, "dump.yaml").unwrap();
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\nextra: {deep}\n");
        load_text(&mut ClusterView::default(), &yaml, "dump.yaml").unwrap();
        load_text(
            &mut ClusterView::default(),
            &yaml.replace(&deep, &format!("{}1{}", "[".repeat(200), "]".repeat(200))),
            "dump.yaml",
        )
        .unwrap_err();
    }

    #[test]
    fn syntax_errors_name_the_file() {
        let err = load_text(&mut ClusterView::default(), "{ not json", "x.json").unwrap_err().to_string();
        assert!(err.starts_with("x.json: not valid JSON or YAML"), "{err}");
    }
}
