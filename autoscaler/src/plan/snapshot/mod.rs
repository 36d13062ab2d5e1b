//! Reading a cluster dump: what `kubectl get … -o json|yaml` prints (a `List`, single objects,
//! or several YAML documents), from files or stdin. Objects the autoscaler does not use are
//! ignored; a malformed object is an error naming the file, the item and the field.
//!
//! PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes turn the scheduler's
//! volume filters on: a dump holding any of them is taken to hold all of them (`kubectl get
//! …,pvc,pv,storageclass,csinode`), and a pod's claim missing from it is then missing. A dump
//! without any says nothing about volumes, and the filters stay off.

use std::any::Any;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use cloudprovider::objects::{self, ObjectError};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, PodSpec, PodTemplateSpec, ReplicationController,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde_json::Value;
use simulator::pod::{PodInfo, PodInterner};

use crate::core::ClusterView;
use crate::json_scan::{Contents, Fingerprint, Position, ScanError, Scanner, Survey};
use crate::kube_adapter::lean;
use crate::podscaling::file_metrics::MetricLists;

mod pod_parser;

use pod_parser::{Added, PodParser, QueuedPod};

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
    /// An error about an object not yet placed at a line.
    fn unplaced(&self) -> bool {
        matches!(self, SnapshotError::Object { line: None, .. } | SnapshotError::Duplicate { line: None, .. })
    }

    /// `self` at `line` when it has none yet.
    fn or_at_line(mut self, at: u64) -> SnapshotError {
        if let SnapshotError::Object { line, .. } | SnapshotError::Duplicate { line, .. } = &mut self {
            line.get_or_insert(at);
        }
        self
    }

    /// Places an error about the JSON item `text`, which starts at `at` in its file, at the
    /// line its field is written on. Only the item's own text is read again: the file's may be
    /// hundreds of megabytes, or hold a syntax error after this item.
    fn placed_in_item(mut self, text: &str, at: Position) -> SnapshotError {
        if let SnapshotError::Object { line, field, .. } = &mut self {
            let path = if field == "." { "" } else { field.as_str() };
            let within = cloudprovider::yaml::line_of_path(text, 0, path, dump_yaml_options(text));
            *line = within.map(|l| at.within(Position { line: l, column: 1 }).line);
        }
        self.or_at_line(at.line)
    }

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
    /// Each object's first copy, by [`object_key`]: keeping the objects themselves would hold
    /// the whole dump a second time. One entry per object read (76,000 pods make 76,000), so
    /// it is kept small: a single key string, the file as an index into `files`.
    objects: FxHashMap<Box<str>, FirstCopy>,
    /// The files read, in order (`FirstCopy::file` indexes them).
    files: Vec<String>,
    /// The warnings about identical copies, one per copy.
    pub warnings: Vec<String>,
    /// (file, kind, field path without indices) → how many objects have that unknown field.
    unknown_fields: BTreeMap<(String, String, String), usize>,
    /// Pods are kept in their compact form, their common parts shared.
    interner: PodInterner,
}

/// Where an object was first read, and what its contents were.
#[derive(Debug)]
struct FirstCopy {
    file: u32,
    /// Its place in the file (`items[3]`, `document 2`).
    position: Box<str>,
    contents: Contents,
}

/// An object's identity: API group, kind, namespace and name, joined by a byte no name holds.
fn object_key(survey: &Survey) -> Box<str> {
    let parts = [
        survey_group(survey),
        survey_kind(survey),
        survey.namespace.as_deref().unwrap_or(""),
        survey.name.as_deref().unwrap_or(""),
    ];
    parts.join("\0").into_boxed_str()
}

impl Seen {
    /// The index of `file` in `files`, added when new (files are few; the last is the usual one).
    fn file_index(&mut self, file: &str) -> u32 {
        match self.files.iter().rposition(|f| f == file) {
            Some(i) => u32::try_from(i).unwrap_or(u32::MAX),
            None => {
                self.files.push(file.to_string());
                u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX)
            }
        }
    }

    /// Whether the object `survey` describes, read in `file`, has the contents of its first
    /// copy. A copy known by its place is fingerprinted now, its text read again.
    fn same_contents(&self, first: &FirstCopy, file: &str, survey: &Survey) -> Result<bool, SnapshotError> {
        Ok(fingerprint_of(self.file_of(first), first.contents)? == fingerprint_of(file, survey.contents)?)
    }

    /// The file the first copy was read in.
    fn file_of(&self, first: &FirstCopy) -> &str {
        self.files.get(first.file as usize).map_or("?", String::as_str)
    }

    /// How errors and warnings name the first copy of the object `survey` describes.
    fn describe_first(&self, first: &FirstCopy, survey: &Survey) -> String {
        format!("{}: {}", self.file_of(first), describe(survey, &first.position))
    }

    fn count_unknown_fields(&mut self, file: &str, kind: &str, paths: Vec<String>) {
        for path in paths {
            let key = (file.to_string(), kind.to_string(), objects::path_pattern(&path));
            *self.unknown_fields.entry(key).or_default() += 1;
        }
    }

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
/// JSON is read in chunks, one object at a time, each parsed once into its type, so a dump of
/// many pods never sits in memory as text or as JSON trees; YAML is read whole.
pub fn load_into(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    source: &str,
) -> Result<(), SnapshotError> {
    let name = if source == "-" { "<stdin>" } else { source };
    let read_error = |e| SnapshotError::Read { file: name.into(), source: e };
    // Whether the source can be read again at an offset: a regular file, not stdin or a pipe.
    let mut rereadable = false;
    let input: Box<dyn Read> = if source == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(Path::new(source)).map_err(read_error)?;
        rereadable = file.metadata().is_ok_and(|m| m.is_file());
        Box::new(file)
    };
    let mut input = std::io::BufReader::with_capacity(1 << 20, input);
    // Bytes of whitespace before the text: where the scanner's offsets start in the file.
    let mut skipped = 0u64;
    let starts_json = loop {
        let buffer = input.fill_buf().map_err(read_error)?;
        if buffer.is_empty() {
            break false;
        }
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => {
                let first = buffer[at];
                input.consume(at);
                skipped += at as u64;
                break first == b'{' || first == b'[';
            }
            None => {
                let all = buffer.len();
                input.consume(all);
                skipped += all as u64;
            }
        }
    };
    if starts_json {
        // The text is read again only to place an error at its line.
        let text_again = || if source == "-" { None } else { std::fs::read_to_string(source).ok() };
        // A regular file's objects are fingerprinted only when a second copy turns up, their
        // text read again from the file; those of stdin or a pipe as they are read.
        let scanner = if rereadable { Scanner::locating(input, skipped) } else { Scanner::new(input) };
        return load_json(view, metrics, seen, scanner, name, text_again);
    }
    let mut text = String::new();
    input.read_to_string(&mut text).map_err(read_error)?;
    load_text_with_metrics(view, metrics, seen, &text, name)
}

/// JSON documents, possibly several back to back (`kubectl get -o json` per resource). The text
/// is cut into values as it is read (`scan`): a `List`'s items are each parsed once, straight
/// into their type, and added as they come, so a dump of many pods never sits in memory as
/// text or as JSON trees.
fn load_json<R: Read>(
    view: &mut ClusterView,
    metrics: &mut MetricLists,
    seen: &mut Seen,
    mut scanner: Scanner<R>,
    file: &str,
    text_again: impl Fn() -> Option<String>,
) -> Result<(), SnapshotError> {
    std::thread::scope(|scope| {
        let pods = PodParser::start(scope, file, std::mem::take(&mut seen.interner));
        let mut target = Target { view, metrics, seen: &mut *seen, file, document: 0, pods };
        let read = read_documents(&mut scanner, &mut target, text_again);
        let pods = target.pods;
        seen.interner = pods.stop();
        read
    })
}

fn read_documents<R: Read>(
    scanner: &mut Scanner<R>,
    target: &mut Target<'_, '_>,
    text_again: impl Fn() -> Option<String>,
) -> Result<(), SnapshotError> {
    loop {
        match read_document(scanner, target) {
            Ok(true) => target.document += 1,
            Ok(false) => return Ok(()),
            Err(Failure::Unplaced(error)) => return Err(*error),
            Err(Failure::Object(failure)) => {
                let (error, item_path, start) = *failure;
                let error = match error.unplaced().then(&text_again).flatten() {
                    Some(text) => error.placed(&text, target.document, &item_path),
                    None => error,
                };
                return Err(error.or_at_line(start.line));
            }
        }
    }
}

/// Where the objects of a JSON document go.
struct Target<'a, 's> {
    view: &'a mut ClusterView,
    metrics: &'a mut MetricLists,
    seen: &'a mut Seen,
    file: &'a str,
    /// The document being read, from 0.
    document: usize,
    pods: PodParser<'s>,
}

impl<'s> Target<'_, 's> {
    fn added(&mut self) -> (&mut PodParser<'s>, Added<'_>) {
        (&mut self.pods, Added { view: self.view, seen: self.seen, file: self.file })
    }

    /// Adds the pods queued so far, then returns `result`: an error of theirs comes first,
    /// being read before anything `result` is about.
    fn after_queued_pods<T>(&mut self, result: Result<T, Failure>) -> Result<T, Failure> {
        let (pods, added) = self.added();
        pods.finish(added)?;
        result
    }
}

/// Why a JSON document was refused: bad text, or an object refused. A list item's error is
/// placed at once, from the item's text; a whole document's (its text is not kept) comes with
/// its path in the document, to be placed from the file's text, and where the document starts,
/// the line given when the file cannot be read again.
enum Failure {
    Unplaced(Box<SnapshotError>),
    Object(Box<(SnapshotError, String, Position)>),
}

impl Target<'_, '_> {
    fn scan_error(&self, error: ScanError) -> Failure {
        Failure::Unplaced(Box::new(match error {
            ScanError::Io(source) => SnapshotError::Read { file: self.file.into(), source },
            ScanError::Syntax { message, at } => syntax_error(self.file, &message, at),
        }))
    }
}

fn syntax_error(file: &str, message: &str, at: Position) -> SnapshotError {
    SnapshotError::Syntax { file: file.into(), message: format!("{message} at line {} column {}", at.line, at.column) }
}

/// serde_json's message without the position it appends (counted in a value cut from the text).
fn without_position(message: &str, error: &serde_json::Error) -> String {
    let position = format!(" at line {} column {}", error.line(), error.column());
    message.strip_suffix(&position).unwrap_or(message).to_string()
}

/// A syntax error serde_json found in a value cut from the text at `at`.
fn json_syntax_error(file: &str, error: &serde_json::Error, at: Position) -> SnapshotError {
    let at = at.within(Position { line: error.line() as u64, column: error.column() as u64 });
    syntax_error(file, &without_position(&error.to_string(), error), at)
}

/// Reads the next document: false at the end of the text.
fn read_document<R: Read>(scanner: &mut Scanner<R>, target: &mut Target<'_, '_>) -> Result<bool, Failure> {
    match scanner.peek().map_err(|e| target.scan_error(e))? {
        None => Ok(false),
        Some(b'[') => {
            scanner.consume(1);
            read_items(scanner, target, None)?;
            Ok(true)
        }
        Some(b'{') => {
            let start = scanner.position();
            scanner.consume(1);
            read_object_document(scanner, target, start)?;
            Ok(true)
        }
        Some(_) => {
            let found = scanner.value().map_err(|e| target.scan_error(e))?;
            let text = std::str::from_utf8(&scanner.unread()[..found.len]).expect("the scanner checks UTF-8");
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Null) => {}
                Ok(_) => {
                    let message = "expected a Kubernetes object, a List or an array of objects";
                    return Err(Failure::Unplaced(Box::new(syntax_error(target.file, message, found.at))));
                }
                Err(e) => return Err(Failure::Unplaced(Box::new(json_syntax_error(target.file, &e, found.at)))),
            }
            scanner.consume(found.len);
            Ok(true)
        }
    }
}

/// An item of a `List` kept until the List's kind is known, with where it was read.
struct Kept {
    index: usize,
    text: String,
    survey: Survey,
    at: Position,
}

/// The items of a list whose `[` was read, each added as it is read. A `List`'s items (`kept`
/// given) without a kind, or of a metrics kind, are kept there until the List's own kind is
/// known (kubectl writes `items` before `kind`): a metrics API answer (`PodMetricsList`) has
/// items without kinds.
fn read_items<R: Read>(
    scanner: &mut Scanner<R>,
    target: &mut Target<'_, '_>,
    kept: Option<&mut Vec<Kept>>,
) -> Result<(), Failure> {
    let read = read_items_queuing_pods(scanner, target, kept);
    target.after_queued_pods(read)
}

/// [`read_items`], its pods queued to the parser thread.
fn read_items_queuing_pods<R: Read>(
    scanner: &mut Scanner<R>,
    target: &mut Target<'_, '_>,
    mut kept: Option<&mut Vec<Kept>>,
) -> Result<(), Failure> {
    let d = target.document + 1;
    if scanner.peek().map_err(|e| target.scan_error(e))? == Some(b']') {
        scanner.consume(1);
        return Ok(());
    }
    for index in 0.. {
        let found = scanner.value().map_err(|e| target.scan_error(e))?;
        let text = std::str::from_utf8(&scanner.unread()[..found.len]).expect("the scanner checks UTF-8");
        let object_kind = found.survey.kind.as_deref().filter(|k| !MetricLists::is_metrics_kind(k));
        match kept.as_deref_mut() {
            Some(kept) if object_kind.is_none() => {
                kept.push(Kept { index, text: text.to_string(), survey: found.survey, at: found.at })
            }
            Some(_) => {
                let place = format!("items[{index}]");
                add_item(target, text, &found.survey, found.at, &place)?;
            }
            None => add_item(target, text, &found.survey, found.at, &format!("document {d} item {index}"))?,
        }
        scanner.consume(found.len);
        match scanner.peek().map_err(|e| target.scan_error(e))? {
            Some(b',') => scanner.consume(1),
            Some(b']') => {
                scanner.consume(1);
                return Ok(());
            }
            _ => return Err(target.scan_error(scanner.error(0, "expected `,` or `]`"))),
        }
    }
    unreachable!("the loop returns")
}

/// An object document whose `{` was read: a `List`, whose items are added as they are read, a
/// metrics API answer, or one object.
fn read_object_document<R: Read>(
    scanner: &mut Scanner<R>,
    target: &mut Target<'_, '_>,
    start: Position,
) -> Result<(), Failure> {
    let mut fields = serde_json::Map::new();
    let mut kept = Vec::new();
    let mut streamed = false;
    let peek = |scanner: &mut Scanner<R>, target: &Target<'_, '_>| scanner.peek().map_err(|e| target.scan_error(e));
    if peek(scanner, target)? != Some(b'}') {
        loop {
            match peek(scanner, target)? {
                Some(b'"') => {}
                Some(_) => return Err(target.scan_error(scanner.error(0, "key must be a string"))),
                None => return Err(target.scan_error(scanner.error(0, "EOF while parsing an object"))),
            }
            let found = scanner.value().map_err(|e| target.scan_error(e))?;
            let key: String = serde_json::from_slice(&scanner.unread()[..found.len])
                .map_err(|e| Failure::Unplaced(Box::new(json_syntax_error(target.file, &e, found.at))))?;
            scanner.consume(found.len);
            scanner.expect(b':', "expected `:`").map_err(|e| target.scan_error(e))?;
            if key == "items" && !streamed && peek(scanner, target)? == Some(b'[') {
                scanner.consume(1);
                read_items(scanner, target, Some(&mut kept))?;
                streamed = true;
            } else {
                let found = scanner.value().map_err(|e| target.scan_error(e))?;
                let value: Value = serde_json::from_slice(&scanner.unread()[..found.len])
                    .map_err(|e| Failure::Unplaced(Box::new(json_syntax_error(target.file, &e, found.at))))?;
                scanner.consume(found.len);
                fields.insert(key, value);
            }
            match peek(scanner, target)? {
                Some(b',') => scanner.consume(1),
                Some(b'}') => break,
                _ => return Err(target.scan_error(scanner.error(0, "expected `,` or `}`"))),
            }
        }
    }
    scanner.consume(1);
    let metrics_kind = MetricLists::is_metrics_kind(fields.get("kind").and_then(Value::as_str).unwrap_or(""));
    if streamed && metrics_kind {
        let mut items = Vec::with_capacity(kept.len());
        for item in kept {
            let value = serde_json::from_str(&item.text)
                .map_err(|e| Failure::Unplaced(Box::new(json_syntax_error(target.file, &e, item.at))))?;
            items.push(value);
        }
        fields.insert("items".into(), Value::Array(items));
        return add_metrics(target, &Value::Object(fields), start);
    }
    if streamed {
        let added = kept.into_iter().try_for_each(|Kept { index, text, survey, at }| {
            add_item(target, &text, &survey, at, &format!("items[{index}]"))
        });
        return target.after_queued_pods(added);
    }
    let document = Value::Object(fields);
    if metrics_kind {
        return add_metrics(target, &document, start);
    }
    let d = target.document + 1;
    let survey = Survey::of_value(&document);
    add_object(target.view, target.seen, Item::Value(&document), &survey, target.file, &format!("document {d}"))
        .map_err(|e| Failure::Object(Box::new((e, String::new(), start))))
}

/// Adds the JSON item `text` (of a list, at `at` in the file), its error placed in its text. A
/// pod is queued to the parser thread.
fn add_item(
    target: &mut Target<'_, '_>,
    text: &str,
    survey: &Survey,
    at: Position,
    position: &str,
) -> Result<(), Failure> {
    let placed = |e: SnapshotError| Failure::Object(Box::new((e.placed_in_item(text, at), String::new(), at)));
    if (survey_group(survey), survey_kind(survey)) != ("", "Pod") {
        return add_object(target.view, target.seen, Item::Json { text, at }, survey, target.file, position)
            .map_err(placed);
    }
    let Some(described) = admit(target.seen, survey, target.file, position).map_err(placed)? else { return Ok(()) };
    let (pods, added) = target.added();
    pods.queue(QueuedPod { text: text.to_string(), at, described }, added)
}

/// Reads a metrics API answer into the metric lists.
fn add_metrics(target: &mut Target<'_, '_>, document: &Value, start: Position) -> Result<(), Failure> {
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
        Failure::Object(Box::new((error, String::new(), start)))
    })
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
        return load_json(view, metrics, seen, Scanner::new(text.as_bytes()), file, || Some(text.to_string()));
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
        let mut add = |item: &Value, position: &str, path: &str| {
            add_object(view, seen, Item::Value(item), &Survey::of_value(item), file, position)
                .map_err(|e| e.placed(text, d, path))
        };
        match &doc {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    add(item, &format!("document {} item {i}", d + 1), &format!("[{i}]"))?;
                }
            }
            Value::Object(map) if map.get("items").is_some_and(Value::is_array) => {
                for (i, item) in map["items"].as_array().into_iter().flatten().enumerate() {
                    add(item, &format!("items[{i}]"), &format!("items[{i}]"))?;
                }
            }
            other => add(other, &format!("document {}", d + 1), "")?,
        }
    }
    Ok(())
}

/// One object of a dump: its JSON text, cut from the dump at `at`, or its parsed value (YAML
/// documents, a JSON document that is not a `List`).
#[derive(Clone, Copy)]
enum Item<'a> {
    Json { text: &'a str, at: Position },
    Value(&'a Value),
}

fn describe(survey: &Survey, position: &str) -> String {
    let kind = survey.kind.as_deref().unwrap_or("object");
    let name = survey.name.as_deref().unwrap_or("?");
    match survey.namespace.as_deref() {
        Some(ns) => format!("{position} ({kind} {ns}/{name})"),
        None => format!("{position} ({kind} {name})"),
    }
}

/// Reads `item` as a `T`: parsed once, straight from its text, stepping over the managed
/// fields and the last-applied annotation (`kube_adapter::lean`), then trimmed
/// (`core::compact`). A dump comes from an API server that may be newer than our types: fields
/// they do not know are counted (and reported once per field), not refused.
fn typed<T: DeserializeOwned + kube::Resource + Any>(
    item: Item<'_>,
    survey: &Survey,
    seen: &mut Seen,
    file: &str,
    described: &str,
) -> Result<Arc<T>, SnapshotError> {
    typed_owned(item, survey, seen, file, described).map(Arc::new)
}

/// [`typed`], the object itself.
fn typed_owned<T: DeserializeOwned + kube::Resource + Any>(
    item: Item<'_>,
    survey: &Survey,
    seen: &mut Seen,
    file: &str,
    described: &str,
) -> Result<T, SnapshotError> {
    let (object, unknown_fields) = parse_object(item, file, described)?;
    seen.count_unknown_fields(file, survey_kind(survey), unknown_fields);
    Ok(object)
}

/// Parses and trims `item` as a `T`, with the paths of the fields `T` does not know. Touches
/// nothing else: pods are parsed on a thread of their own (`PodParser`).
fn parse_object<T: DeserializeOwned + kube::Resource + Any>(
    item: Item<'_>,
    file: &str,
    described: &str,
) -> Result<(T, Vec<String>), SnapshotError> {
    let error = |e: ObjectError| object_error(file, described, e);
    let refused = |e: &serde_json::Error, refusal: Option<ObjectError>| {
        // Only a refused object is read again, to find the path of the field at fault.
        let refusal = refusal.unwrap_or_else(|| ObjectError { path: String::new(), message: e.to_string() });
        error(ObjectError { message: without_position(&refusal.message, e), ..refusal })
    };
    // A first reading notes only whether some field was left unread: nearly every object of a
    // dump has none, and tracking paths (`serde_ignored` copies every key it reads) was a tenth
    // of reading a pod. An object with one, or refused, is read again below for the paths.
    let unread = Cell::new(false);
    let quick = match item {
        Item::Json { text, .. } => {
            T::deserialize(lean::skipping_noting_unread(&mut serde_json::Deserializer::from_str(text), &unread)).ok()
        }
        Item::Value(value) => T::deserialize(lean::skipping_noting_unread(value, &unread)).ok(),
    };
    let mut read = match (quick, item) {
        (Some(object), _) if !unread.get() => objects::Read { object, unknown_fields: Vec::new() },
        (_, Item::Json { text, at }) => {
            let mut json = serde_json::Deserializer::from_str(text);
            match objects::read_listing::<T, _>(lean::skipping(&mut json)) {
                Ok(read) => read,
                Err(e) if e.is_syntax() || e.is_eof() => return Err(json_syntax_error(file, &e, at)),
                Err(e) => {
                    let mut again = serde_json::Deserializer::from_str(text);
                    return Err(refused(&e, objects::refusal::<T, _>(lean::skipping(&mut again))));
                }
            }
        }
        (_, Item::Value(value)) => match objects::read_listing::<T, _>(lean::skipping(value)) {
            Ok(read) => read,
            Err(e) => return Err(refused(&e, objects::refusal::<T, _>(lean::skipping(value)))),
        },
    };
    crate::core::compact::compact(&mut read.object);
    Ok((read.object, read.unknown_fields))
}

/// A pod, parsed and checked.
fn parse_pod(item: Item<'_>, file: &str, described: &str) -> Result<(Pod, Vec<String>), SnapshotError> {
    let (pod, unknown_fields) = parse_object::<Pod>(item, file, described)?;
    match refused_in_pod_spec("spec", pod.spec.as_ref()) {
        Some(e) => Err(object_error(file, described, e)),
        None => Ok((pod, unknown_fields)),
    }
}

fn object_error(file: &str, described: &str, e: ObjectError) -> SnapshotError {
    SnapshotError::Object { file: file.into(), line: None, item: described.into(), field: e.path, message: e.message }
}

/// Whether the object `survey` describes is read: refused when it is no object or differs
/// from an earlier copy; `None` (with a warning) for an identical copy, read once. Otherwise
/// how errors about it describe it.
fn admit(seen: &mut Seen, survey: &Survey, file: &str, position: &str) -> Result<Option<String>, SnapshotError> {
    if !survey.is_object {
        return Err(SnapshotError::Object {
            file: file.into(),
            line: None,
            item: position.into(),
            field: ".".into(),
            message: "expected a Kubernetes object".into(),
        });
    }
    let described = describe(survey, position);
    if survey.name.as_deref().is_some_and(|name| !name.is_empty()) {
        let key = object_key(survey);
        if let Some(copy) = seen.objects.get(&key) {
            let first = seen.describe_first(copy, survey);
            if seen.same_contents(copy, file, survey)? {
                seen.warnings.push(format!("{file}: {described}: the same object as {first}; read once"));
                return Ok(None);
            }
            return Err(SnapshotError::Duplicate { file: file.into(), line: None, item: described, first });
        }
        let file = seen.file_index(file);
        seen.objects.insert(key, FirstCopy { file, position: position.into(), contents: survey.contents });
    }
    Ok(Some(described))
}

/// The fingerprint of an object read from `file`: its text is read again when only its place
/// was kept (files, not stdin, are scanned so).
fn fingerprint_of(file: &str, contents: Contents) -> Result<Fingerprint, SnapshotError> {
    use std::io::{Seek, SeekFrom};
    let (offset, len) = match contents {
        Contents::Fingerprint(fingerprint) => return Ok(fingerprint),
        Contents::At { offset, len } => (offset, len),
    };
    let read_error = |source| SnapshotError::Read { file: file.into(), source };
    let mut text = vec![0; len];
    let mut input = std::fs::File::open(file).map_err(read_error)?;
    input.seek(SeekFrom::Start(offset)).map_err(read_error)?;
    input.read_exact(&mut text).map_err(read_error)?;
    crate::json_scan::fingerprint(&text).ok_or_else(|| {
        read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, "the file changed while it was read"))
    })
}

fn survey_kind(survey: &Survey) -> &str {
    survey.kind.as_deref().unwrap_or("")
}

/// The API group of the object's `apiVersion` (empty for the core group).
fn survey_group(survey: &Survey) -> &str {
    survey.api_version.as_deref().unwrap_or("").split_once('/').map_or("", |(g, _)| g)
}

fn add_object(
    view: &mut ClusterView,
    seen: &mut Seen,
    item: Item<'_>,
    survey: &Survey,
    file: &str,
    position: &str,
) -> Result<(), SnapshotError> {
    let Some(described) = admit(seen, survey, file, position)? else { return Ok(()) };
    let (group, kind) = (survey_group(survey), survey_kind(survey));
    let api_version = survey.api_version.as_deref().unwrap_or("");
    let (s, i) = (&mut *seen, described.as_str());
    let checked = |check: Option<ObjectError>| check.map_or(Ok(()), |e| Err(object_error(file, i, e)));
    match (group, kind) {
        ("", "Node") => {
            let node: Arc<Node> = typed(item, survey, s, file, i)?;
            let status = node.status.as_ref();
            checked(refused_list(status.and_then(|s| s.capacity.as_ref()), || "status.capacity".into()))?;
            checked(refused_list(status.and_then(|s| s.allocatable.as_ref()), || "status.allocatable".into()))?;
            view.nodes.push(node);
        }
        ("", "Pod") => {
            let (pod, unknown_fields) = parse_pod(item, file, i)?;
            s.count_unknown_fields(file, "Pod", unknown_fields);
            view.pods.push(Arc::new(PodInfo::interned(pod, &mut s.interner)));
        }
        ("", "PersistentVolumeClaim") => {
            let claim: Arc<PersistentVolumeClaim> = typed(item, survey, s, file, i)?;
            let requests = claim.spec.as_ref().and_then(|s| s.resources.as_ref()).and_then(|r| r.requests.as_ref());
            checked(refused_list(requests, || "spec.resources.requests".into()))?;
            view.persistent_volume_claims.push(claim);
            view.volumes_observed = true;
        }
        ("", "PersistentVolume") => {
            let volume: Arc<PersistentVolume> = typed(item, survey, s, file, i)?;
            let capacity = volume.spec.as_ref().and_then(|s| s.capacity.as_ref());
            checked(refused_list(capacity, || "spec.capacity".into()))?;
            view.persistent_volumes.push(volume);
            view.volumes_observed = true;
        }
        ("storage.k8s.io", "StorageClass") => {
            view.storage_classes.push(typed(item, survey, s, file, i)?);
            view.volumes_observed = true;
        }
        ("storage.k8s.io", "CSINode") => {
            view.csi_nodes.push(typed(item, survey, s, file, i)?);
            view.volumes_observed = true;
        }
        ("", "ReplicationController") => {
            let rc: Arc<ReplicationController> = typed(item, survey, s, file, i)?;
            let spec = rc.spec.as_ref();
            checked(refused_in_workload(spec.and_then(|s| s.template.as_ref()), spec.and_then(|s| s.replicas)))?;
            view.replication_controllers.push(rc);
        }
        ("", "ConfigMap") => view.config_maps.push(typed(item, survey, s, file, i)?),
        ("", "Namespace") => view.namespaces.push(typed(item, survey, s, file, i)?),
        ("policy", "PodDisruptionBudget") if api_version == "policy/v1" => {
            view.pdbs.push(typed(item, survey, s, file, i)?)
        }
        ("apps", "DaemonSet") => {
            let ds: Arc<DaemonSet> = typed(item, survey, s, file, i)?;
            checked(refused_in_workload(ds.spec.as_ref().map(|s| &s.template), None))?;
            view.daemonsets.push(ds);
        }
        ("apps", "ReplicaSet") => {
            let rs: Arc<ReplicaSet> = typed(item, survey, s, file, i)?;
            let spec = rs.spec.as_ref();
            checked(refused_in_workload(spec.and_then(|s| s.template.as_ref()), spec.and_then(|s| s.replicas)))?;
            view.replicasets.push(rs);
        }
        ("apps", "StatefulSet") => {
            let sts: Arc<StatefulSet> = typed(item, survey, s, file, i)?;
            let spec = sts.spec.as_ref();
            checked(refused_in_workload(spec.map(|s| &s.template), spec.and_then(|s| s.replicas)))?;
            view.statefulsets.push(sts);
        }
        ("apps", "Deployment") => {
            let deployment: Arc<Deployment> = typed(item, survey, s, file, i)?;
            let spec = deployment.spec.as_ref();
            checked(refused_in_workload(spec.map(|s| &s.template), spec.and_then(|s| s.replicas)))?;
            view.deployments.push(deployment);
        }
        ("batch", "Job") => {
            let job: Arc<Job> = typed(item, survey, s, file, i)?;
            checked(refused_in_workload(job.spec.as_ref().map(|s| &s.template), None))?;
            view.jobs.push(job);
        }
        ("autoscaling", "HorizontalPodAutoscaler") if api_version == "autoscaling/v2" => {
            view.hpas.push(typed(item, survey, s, file, i)?)
        }
        ("datadoghq.com", "WatermarkPodAutoscaler") => view.wpas.push(typed(item, survey, s, file, i)?),
        ("", "") if !survey.has_metadata => {
            return Err(SnapshotError::Object {
                file: file.into(),
                line: None,
                item: position.into(),
                field: "kind".into(),
                message: "missing kind and apiVersion".into(),
            });
        }
        // Not something the autoscaler uses: only its syntax is checked, as for the others.
        _ => {
            if let Item::Json { text, at } = item {
                serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| json_syntax_error(file, &e, at))?;
            }
        }
    }
    Ok(())
}

type QuantityList<'a> = Option<&'a BTreeMap<String, Quantity>>;

/// The first quantity of `list` (at the path `path()` names) the API server would have refused,
/// or that does not parse: reading a bad one as zero would silently change the decision.
fn refused_list(list: QuantityList<'_>, path: impl Fn() -> String) -> Option<ObjectError> {
    list.into_iter().flatten().find_map(|(name, quantity)| {
        let message = objects::refused_quantity(&quantity.0)
            .or_else(|| simulator::quantity::parse_milli(&quantity.0).err().map(|e| e.to_string()))?;
        Some(ObjectError { path: format!("{}.{name}", path()), message })
    })
}

/// The first refused quantity of a pod spec at `at` (`spec`, `spec.template.spec`), in the
/// order the API server's validation (and `objects::refused_value`) reports them: containers'
/// requests, their limits, init containers' requests, their limits, the overhead.
fn refused_in_pod_spec(at: &str, spec: Option<&PodSpec>) -> Option<ObjectError> {
    let spec = spec?;
    let containers = [("containers", Some(&spec.containers)), ("initContainers", spec.init_containers.as_ref())];
    for (field, containers) in containers {
        for list in ["requests", "limits"] {
            for (i, container) in containers.into_iter().flatten().enumerate() {
                let resources = container.resources.as_ref();
                let quantities =
                    resources.and_then(|r| if list == "requests" { r.requests.as_ref() } else { r.limits.as_ref() });
                if let Some(e) = refused_list(quantities, || format!("{at}.{field}[{i}].resources.{list}")) {
                    return Some(e);
                }
            }
        }
    }
    refused_list(spec.overhead.as_ref(), || format!("{at}.overhead"))
}

/// The first refused value of a workload: its pod template's quantities, its replica count.
fn refused_in_workload(template: Option<&PodTemplateSpec>, replicas: Option<i32>) -> Option<ObjectError> {
    refused_in_pod_spec("spec.template.spec", template.and_then(|t| t.spec.as_ref()))
        .or_else(|| replicas.and_then(|r| objects::refused_replicas(r.into())))
}

/// Sorts objects by name so that reports and decisions do not depend on dump order. One
/// `kubectl get` lists pods in order already, found in one pass.
pub fn normalize(view: &mut ClusterView) {
    view.nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    if !view.pods.iter().is_sorted_by(|a, b| pod_key(a) <= pod_key(b)) {
        view.pods.edit(sort_pods);
    }
}

fn pod_key(pod: &PodInfo) -> (&str, &str) {
    (pod.namespace(), pod.name())
}

/// Pods by namespace, then name (ties keep their order). Each pod's namespace and name are
/// found once, not at every comparison: on a 76,000-pod dump in another order, finding them again was
/// most of the sort.
fn sort_pods(pods: &mut Vec<Arc<PodInfo>>) {
    let order = {
        let keys: Vec<_> = pods.iter().map(|pod| pod_key(pod)).collect();
        let mut order: Vec<usize> = (0..pods.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        order
    };
    let mut unsorted: Vec<Option<Arc<PodInfo>>> = std::mem::take(pods).into_iter().map(Some).collect();
    *pods = order.into_iter().filter_map(|i| unsorted.get_mut(i).and_then(Option::take)).collect();
}

#[cfg(test)]
mod tests;
