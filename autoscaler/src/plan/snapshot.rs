//! Reading a cluster dump: what `kubectl get … -o json|yaml` prints (a `List`, single objects,
//! or several YAML documents), from files or stdin. Objects the autoscaler does not use are
//! ignored; a malformed object is an error naming the file, the item and the field.
//!
//! PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes turn the scheduler's
//! volume filters on: a dump holding any of them is taken to hold all of them (`kubectl get
//! …,pvc,pv,storageclass,csinode`), and a pod's claim missing from it is then missing. A dump
//! without any says nothing about volumes, and the filters stay off.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use cloudprovider::objects::{self, ObjectError, refused_value};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::Deserialize;
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
    /// Each object's place and fingerprint: keeping the objects themselves would hold the
    /// whole dump a second time.
    objects: HashMap<(String, String, String, String), (String, Fingerprint)>,
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

/// What tells two copies of an object apart: 128 bits of two keyed hashes over the object, its
/// mappings in key order (two copies with their fields in another order are the same object, as
/// JSON says). Two different objects share one with a chance of about 2^-128 per pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint(u64, u64);

impl Fingerprint {
    /// One pass over the value feeding both hashers. A dump holds every pod of the cluster, so
    /// this runs over each of them: the entries of a mapping are put in key order in a buffer
    /// kept per depth and reused from one mapping to the next, not allocated for each.
    fn of(value: &Value) -> Fingerprint {
        use std::hash::{Hash, Hasher};
        type Entries<'a> = Vec<(&'a String, &'a Value)>;
        fn feed<'a>(
            value: &'a Value,
            h: &mut [std::collections::hash_map::DefaultHasher; 2],
            scratch: &mut Vec<Entries<'a>>,
            depth: usize,
        ) {
            let mut both = |x: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| h.iter_mut().for_each(x);
            match value {
                Value::Null => both(&|h| 0u8.hash(h)),
                Value::Bool(b) => both(&|h| (1u8, b).hash(h)),
                Value::Number(n) => {
                    let text = n.to_string();
                    both(&|h| (2u8, &text).hash(h));
                }
                Value::String(s) => both(&|h| (3u8, s).hash(h)),
                Value::Array(items) => {
                    both(&|h| (4u8, items.len()).hash(h));
                    items.iter().for_each(|item| feed(item, h, scratch, depth + 1));
                }
                Value::Object(map) => {
                    both(&|h| (5u8, map.len()).hash(h));
                    if scratch.len() <= depth {
                        scratch.resize_with(depth + 1, Vec::new);
                    }
                    let mut entries = std::mem::take(&mut scratch[depth]);
                    entries.clear();
                    entries.extend(map.iter());
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    for (key, value) in &entries {
                        h.iter_mut().for_each(|h| key.hash(h));
                        feed(value, h, scratch, depth + 1);
                    }
                    scratch[depth] = entries;
                }
            }
        }
        let mut hashers =
            [std::collections::hash_map::DefaultHasher::new(), std::collections::hash_map::DefaultHasher::new()];
        0x5eed_u64.hash(&mut hashers[1]);
        feed(value, &mut hashers, &mut Vec::new(), 0);
        Fingerprint(hashers[0].finish(), hashers[1].finish())
    }
}

/// Reads one snapshot source (`-` for stdin) into the view (and metric lists into `metrics`).
/// JSON is read as a stream, one object at a time, so a dump of many pods never sits in memory
/// as text or as one JSON tree; YAML is read whole.
pub fn load_into(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    source: &str,
) -> Result<(), SnapshotError> {
    let name = if source == "-" { "<stdin>" } else { source };
    let read_error = |e| SnapshotError::Read { file: name.into(), source: e };
    let input: Box<dyn Read> = if source == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(Path::new(source)).map_err(read_error)?)
    };
    let mut input = std::io::BufReader::with_capacity(1 << 20, input);
    let starts_json = loop {
        let buffer = input.fill_buf().map_err(read_error)?;
        if buffer.is_empty() {
            break false;
        }
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => {
                let first = buffer[at];
                input.consume(at);
                break first == b'{' || first == b'[';
            }
            None => {
                let all = buffer.len();
                input.consume(all);
            }
        }
    };
    if starts_json {
        // The text is read again only to place an error at its line.
        let text_again = || if source == "-" { None } else { std::fs::read_to_string(source).ok() };
        return load_json(view, metrics, seen, input, name, text_again);
    }
    let mut text = String::new();
    input.read_to_string(&mut text).map_err(read_error)?;
    load_text_with_metrics(view, metrics, seen, &text, name)
}

/// JSON documents, possibly several back to back (`kubectl get -o json` per resource): each
/// `List`'s items are added as they are read.
fn load_json<R: Read>(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    input: R,
    file: &str,
    text_again: impl Fn() -> Option<String>,
) -> Result<(), SnapshotError> {
    let mut reader = serde_json::Deserializer::from_reader(input);
    let mut document = 0;
    while reader.end().is_err() {
        let mut target = Target { view, metrics, seen, file, document, failed: None };
        let read = serde::de::DeserializeSeed::deserialize(DocumentSeed(&mut target), &mut reader);
        if let Some((error, item_path)) = target.failed.take() {
            return Err(match text_again() {
                Some(text) => error.placed(&text, document, &item_path),
                None => error,
            });
        }
        read.map_err(|e| SnapshotError::Syntax { file: file.into(), message: e.to_string() })?;
        document += 1;
    }
    Ok(())
}

/// Where the objects of a JSON document go, and the first error of one (with its item's path).
struct Target<'a> {
    view: &'a mut ClusterView,
    metrics: &'a mut MetricLists,
    seen: &'a mut Seen,
    file: &'a str,
    document: usize,
    failed: Option<(SnapshotError, String)>,
}

impl Target<'_> {
    /// Adds one object; an error is kept and ends the reading (as a serde error, dropped).
    fn add<E: serde::de::Error>(&mut self, object: Value, position: &str, item_path: String) -> Result<(), E> {
        add_object(self.view, self.seen, object, self.file, position).map_err(|error| {
            self.failed = Some((error, item_path));
            E::custom("object refused")
        })
    }
}

struct DocumentSeed<'t, 'a>(&'t mut Target<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for DocumentSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DocumentSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kubernetes object, a List or an array of objects")
    }

    /// A bare array of objects.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let d = self.0.document + 1;
        let mut i = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            self.0.add(item, &format!("document {d} item {i}"), format!("[{i}]"))?;
            i += 1;
        }
        Ok(())
    }

    /// An object or a `List`. A List's items are added as they come; those without a kind are
    /// kept until the List's own kind is known (kubectl writes `items` before `kind`): a metrics
    /// API answer (`PodMetricsList`) has items without kinds.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut fields = serde_json::Map::new();
        let mut kindless: Vec<(usize, Value)> = Vec::new();
        let mut streamed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" && !streamed {
                streamed = map.next_value_seed(ItemsSeed {
                    target: &mut *self.0,
                    kindless: &mut kindless,
                    fields: &mut fields,
                })?;
                continue;
            }
            let value: Value = map.next_value()?;
            fields.insert(key, value);
        }
        let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("");
        let target = self.0;
        if streamed && MetricLists::is_metrics_kind(kind) {
            fields.insert("items".into(), Value::Array(kindless.into_iter().map(|(_, item)| item).collect()));
            return add_metrics(target, &Value::Object(fields));
        }
        if streamed {
            for (i, item) in kindless {
                target.add(item, &format!("items[{i}]"), format!("items[{i}]"))?;
            }
            return Ok(());
        }
        let metrics_kind = MetricLists::is_metrics_kind(kind);
        let document = Value::Object(fields);
        if metrics_kind {
            return add_metrics(target, &document);
        }
        let d = target.document + 1;
        target.add(document, &format!("document {d}"), String::new())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Reads a metrics API answer into the metric lists.
fn add_metrics<E: serde::de::Error>(target: &mut Target<'_>, document: &Value) -> Result<(), E> {
    let d = target.document + 1;
    target.metrics.add(document).map(|_| ()).map_err(|message| {
        let kind = document.get("kind").and_then(Value::as_str).unwrap_or("?");
        let error = SnapshotError::Object {
            file: target.file.into(),
            line: None,
            item: format!("document {d} ({kind})"),
            field: "items".into(),
            message,
        };
        target.failed = Some((error, String::new()));
        E::custom("metrics refused")
    })
}

/// A document's `items`: when a list, each item is added as it is read (true); anything else
/// is kept as the document's field (false).
struct ItemsSeed<'t, 'a> {
    target: &'t mut Target<'a>,
    kindless: &'t mut Vec<(usize, Value)>,
    fields: &'t mut serde_json::Map<String, Value>,
}

impl<'de> serde::de::DeserializeSeed<'de> for ItemsSeed<'_, '_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ItemsSeed<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut i = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            let kind = item.get("kind").and_then(Value::as_str);
            if kind.is_some_and(|k| !MetricLists::is_metrics_kind(k)) {
                self.target.add(item, &format!("items[{i}]"), format!("items[{i}]"))?;
            } else {
                self.kindless.push((i, item));
            }
            i += 1;
        }
        Ok(true)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        self.fields.insert("items".into(), value);
        Ok(false)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::String(v.into()));
        Ok(false)
    }

    fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::Bool(v));
        Ok(false)
    }

    fn visit_i64<E>(self, v: i64) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::from(v));
        Ok(false)
    }

    fn visit_u64<E>(self, v: u64) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::from(v));
        Ok(false)
    }

    fn visit_f64<E>(self, v: f64) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::from(v));
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        self.fields.insert("items".into(), Value::Null);
        Ok(false)
    }
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
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return load_json(view, metrics, seen, text.as_bytes(), file, || Some(text.to_string()));
    }
    let documents = serde_saphyr::from_multiple_with_options::<Value>(text, dump_yaml_options(text))
        .map_err(|e| SnapshotError::Syntax { file: file.into(), message: e.to_string() })?;
    for (d, doc) in documents.into_iter().enumerate() {
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
fn typed<T: DeserializeOwned + kube::Resource + 'static>(
    obj: Value,
    seen: &mut Seen,
    file: &str,
    item: &str,
) -> Result<Arc<T>, SnapshotError> {
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
    let mut read = objects::read::<T>(obj).map_err(error)?;
    for path in read.unknown_fields {
        *seen.unknown_fields.entry((file.to_string(), kind.clone(), objects::path_pattern(&path))).or_default() += 1;
    }
    crate::core::compact::compact(&mut read.object);
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
        let fingerprint = Fingerprint::of(&obj);
        match seen.objects.get(&key) {
            Some((first, copy)) if *copy == fingerprint => {
                seen.warnings.push(format!("{file}: {item}: the same object as {first}; read once"));
                return Ok(());
            }
            Some((first, _)) => {
                return Err(SnapshotError::Duplicate { file: file.into(), line: None, item, first: first.clone() });
            }
            None => {
                seen.objects.insert(key, (format!("{file}: {item}"), fingerprint));
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
    fn metrics_lists_are_read_though_their_items_come_before_their_kind() {
        // kubectl writes keys in order: `items` before `kind`.
        let text = r#"{"apiVersion":"metrics.k8s.io/v1beta1","items":[
            {"metadata":{"name":"p","namespace":"ns"},"timestamp":"2026-01-01T00:00:00Z","window":"30s",
             "containers":[{"name":"c","usage":{"cpu":"250m","memory":"1Gi"}}]}],
            "kind":"PodMetricsList","metadata":{}}"#;
        let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
        load_text_with_metrics(&mut view, &mut metrics, &mut seen, text, "m.json").unwrap();
        assert!(!metrics.is_empty(), "the pod metrics were read");
        let bad = text.replace("250m", "lots");
        let err = load_text_with_metrics(&mut view, &mut MetricLists::default(), &mut seen, &bad, "m.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("m.json:1: document 1 (PodMetricsList): field `items`: items[0].containers.usage.cpu"),
            "{err}"
        );
        // The same items in a plain List are not metrics: without a kind they are not objects.
        let list = text.replace("PodMetricsList", "List");
        let mut metrics = MetricLists::default();
        load_text_with_metrics(&mut view, &mut metrics, &mut seen, &list, "l.json").unwrap();
        assert!(metrics.is_empty());
    }

    #[test]
    fn json_files_are_read_as_a_stream_with_errors_placed() {
        let dir = std::env::temp_dir().join(format!("snapshot-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dump.json");
        let pods: Vec<Value> = (0..3)
            .map(|i| serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p{i}"), "namespace": "ns"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": if i == 2 { "-1" } else { "1" }}}}]}}))
            .collect();
        let good = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": &pods[..2]})).unwrap();
        // Two documents back to back, as `kubectl get -o json` per resource writes them.
        std::fs::write(&path, format!("\n\n{good}\n{good}")).unwrap();
        let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
        load_into(&mut view, &mut metrics, &mut seen, path.to_str().unwrap()).unwrap();
        assert_eq!(view.pods.len(), 2, "the second document repeats the first: read once");
        let bad = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": pods})).unwrap();
        std::fs::write(&path, &bad).unwrap();
        let line = bad.lines().position(|l| l.contains("\"-1\"")).unwrap() + 1;
        let err = load_into(&mut ClusterView::default(), &mut metrics, &mut Seen::default(), path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(&format!("{}:{line}: items[2] (Pod ns/p2)", path.display())), "{err}");
        std::fs::write(&path, "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"").unwrap();
        let err = load_into(&mut ClusterView::default(), &mut metrics, &mut Seen::default(), path.to_str().unwrap())
            .unwrap_err();
        assert!(matches!(err, SnapshotError::Syntax { .. }), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
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
