//! Reading hand-written YAML files (cloud-config files, scenarios) so that every error names the
//! file, the line and the field path as the user wrote it (`nodeGroups[1].template.status`).
//!
//! serde-saphyr gives lines; serde_path_to_error gives the path. Values wrapped in
//! `serde_saphyr::Spanned` (to know their line) add a `value` segment to the path, which
//! [`from_str`] removes for the keys the caller names.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;
use serde_saphyr::{DefaultMessageFormatter, MessageFormatter, Spanned};

/// A problem in a file: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{file}{}: {}{message}",
    line.map(|l| format!(":{l}")).unwrap_or_default(),
    if field.is_empty() { String::new() } else { format!("{field}: ") }
)]
pub struct FileError {
    pub file: String,
    pub field: String,
    pub line: Option<u64>,
    pub message: String,
}

impl FileError {
    pub fn new(file: &str, field: impl Into<String>, line: Option<u64>, message: impl Into<String>) -> FileError {
        FileError { file: file.to_string(), field: field.into(), line, message: message.into() }
    }
}

/// The line a spanned value was written on, when known.
pub fn line_of<T>(value: &Spanned<T>) -> Option<u64> {
    Some(value.referenced.line()).filter(|l| *l > 0)
}

/// Reads `text` (the file `file`) as `T`. `spanned_keys` are the keys (or list keys) whose values
/// are `Spanned`, so their `value` segment is left out of error paths.
pub fn from_str<T: DeserializeOwned>(text: &str, file: &str, spanned_keys: &[&str]) -> Result<T, FileError> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str(text, |d| {
        serde_path_to_error::deserialize::<_, T>(d).map_err(|e| {
            path = Some(render_path(e.path(), spanned_keys));
            e.into_inner()
        })
    })
    .map_err(|e| {
        let message = plain(DefaultMessageFormatter.format_message(e.without_snippet()).as_ref());
        let line = e.location().map(|l| l.line()).filter(|l| *l > 0);
        FileError::new(file, path.clone().unwrap_or_default(), line, message)
    })
}

/// The parser's words for a value of the wrong shape, in the user's words (`invalid u64` says
/// what Rust wanted, not what to write).
fn plain(message: &str) -> String {
    let whole = |unsigned: bool| {
        if unsigned { "expected a whole number, 0 or more" } else { "expected a whole number" }.to_string()
    };
    match message {
        "invalid u8" | "invalid u16" | "invalid u32" | "invalid u64" | "invalid usize" => whole(true),
        "invalid i8" | "invalid i16" | "invalid i32" | "invalid i64" | "invalid isize" => whole(false),
        "invalid f32" | "invalid f64" => "expected a number".into(),
        "invalid bool" => "expected true or false".into(),
        "expected mapping start" => "expected a mapping (key: value lines)".into(),
        "expected sequence start" => "expected a list".into(),
        "expected string scalar" => "expected a string".into(),
        other => other.to_string(),
    }
}

fn render_path(path: &serde_path_to_error::Path, spanned_keys: &[&str]) -> String {
    let mut out = String::new();
    // The key whose value the next segment is in (a list keeps its key for its items).
    let mut owner: Option<String> = None;
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if key == "value" && owner.as_deref().is_some_and(|o| spanned_keys.contains(&o)) {
                    owner = None;
                    continue;
                }
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
                owner = Some(key.clone());
            }
            Segment::Unknown => owner = None,
        }
    }
    out
}

/// The line where the value at `path` (`spec.containers[0].resources`, as error paths are
/// written) of document `document` of `text` is written: the line of its key, or of its list
/// item. When the path goes deeper than the text (a missing field), the deepest part that is
/// written. Only called to place an error, so reading the text again costs nothing on the
/// happy path. JSON is read too (YAML's flow style covers it), except several JSON documents
/// written back to back.
pub fn line_of_path(text: &str, document: usize, path: &str, options: serde_saphyr::Options) -> Option<u64> {
    let documents = serde_saphyr::from_multiple_with_options::<Spanned<Written>>(text, options).ok()?;
    let root = documents.get(document)?;
    let steps = path_steps(path);
    let mut line = line_of(root);
    let mut at = &root.value;
    let mut i = 0;
    while i < steps.len() {
        match (at, &steps[i]) {
            (Written::List(items), Step::Index(n)) => {
                let Some(item) = items.get(*n) else { break };
                line = line_of(item).or(line);
                at = &item.value;
                i += 1;
            }
            (Written::Map(entries), Step::Key(_)) => {
                // Keys may hold dots (`nvidia.com/gpu`): the longest run of key steps that names
                // an entry wins.
                let run = steps[i..].iter().take_while(|s| matches!(s, Step::Key(_))).count();
                let found = (1..=run).rev().find_map(|k| {
                    let key = steps[i..i + k]
                        .iter()
                        .map(|s| if let Step::Key(k) = s { k.as_str() } else { "" })
                        .collect::<Vec<_>>()
                        .join(".");
                    entries.iter().find(|(name, _)| name.value == key).map(|entry| (k, entry))
                });
                let Some((k, (name, value))) = found else { break };
                line = line_of(name).or(line);
                at = &value.value;
                i += k;
            }
            _ => break,
        }
    }
    line
}

enum Step {
    Key(String),
    Index(usize),
}

fn path_steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, indices) = part.split_once('[').map_or((part, ""), |(k, rest)| (k, rest));
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        for index in indices.split('[') {
            if let Ok(n) = index.trim_end_matches(']').parse() {
                steps.push(Step::Index(n));
            }
        }
    }
    steps
}

/// A YAML document as written, with the line of every key and list item.
enum Written {
    Map(Vec<(Spanned<String>, Spanned<Written>)>),
    List(Vec<Spanned<Written>>),
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Written {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WrittenVisitor)
    }
}

/// A key as written, whatever its scalar type (`80: http` has a number for a key).
struct WrittenKey(String);

impl<'de> serde::Deserialize<'de> for WrittenKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(WrittenKey(match Value::deserialize(deserializer)? {
            Value::String(s) => s,
            other => other.to_string(),
        }))
    }
}

struct WrittenVisitor;

impl<'de> serde::de::Visitor<'de> for WrittenVisitor {
    type Value = Written;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Written, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<WrittenKey>>()? {
            let value = map.next_value::<Spanned<Written>>()?;
            entries.push((Spanned { value: key.value.0, referenced: key.referenced, defined: key.defined }, value));
        }
        Ok(Written::Map(entries))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Written, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Written>>()? {
            items.push(item);
        }
        Ok(Written::List(items))
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Written, D::Error> {
        deserializer.deserialize_any(WrittenVisitor)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_none<E>(self) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Written, E> {
        Ok(Written::Scalar)
    }
}

/// YAML writes quantities unquoted (`cpu: 4`); Kubernetes types want strings. Numbers inside
/// resource lists (`requests`, `limits`, `capacity`, `allocatable`, `overhead`) become strings.
pub fn normalize_quantities(mut v: Value) -> Value {
    fn walk(v: &mut Value, in_resources: bool) {
        match v {
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    let resources =
                        matches!(k.as_str(), "requests" | "limits" | "capacity" | "allocatable" | "overhead");
                    if in_resources && let Value::Number(n) = child {
                        *child = Value::String(n.to_string());
                        continue;
                    }
                    walk(child, resources);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, false)),
            _ => {}
        }
    }
    walk(&mut v, false);
    v
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Doc {
        groups: Vec<Group>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Group {
        id: Spanned<String>,
        max_size: Spanned<u32>,
    }

    #[test]
    fn errors_name_the_file_line_and_field_without_spanned_segments() {
        let error =
            from_str::<Doc>("groups:\n- id: a\n  maxSize: -1\n", "groups.yaml", &["id", "maxSize"]).unwrap_err();
        assert_eq!(error.file, "groups.yaml");
        assert_eq!(error.field, "groups[0].maxSize");
        assert_eq!(error.line, Some(3));
        assert_eq!(error.to_string(), "groups.yaml:3: groups[0].maxSize: expected a whole number, 0 or more");
    }

    #[test]
    fn a_document_of_the_wrong_shape_says_so_without_an_empty_field() {
        let error = from_str::<Doc>("- a\n- b\n", "g.yaml", &[]).unwrap_err();
        assert_eq!(error.to_string(), "g.yaml:1: expected a mapping (key: value lines)");
        let error = from_str::<Doc>("groups: 3\n", "g.yaml", &[]).unwrap_err();
        assert_eq!(error.to_string(), "g.yaml:1: groups: expected a list");
    }

    #[test]
    fn unknown_keys_are_errors_with_their_place() {
        let error = from_str::<Doc>("groups:\n- id: a\n  maxSise: 1\n", "g.yaml", &["id"]).unwrap_err();
        assert!(error.message.contains("maxSise"), "{error}");
        assert_eq!(error.line, Some(3));
    }

    #[test]
    fn paths_are_found_at_the_line_they_are_written_on() {
        let yaml = "items:\n- kind: Pod\n  spec:\n    containers:\n    - name: a\n      resources:\n        requests: {nvidia.com/gpu: -1}\n- kind: Pod\n  spec: {}\n";
        let line = |path: &str| line_of_path(yaml, 0, path, serde_saphyr::Options::default());
        assert_eq!(line("items[0].spec.containers[0].resources"), Some(6));
        assert_eq!(line("items[0].spec.containers[0].resources.requests.nvidia.com/gpu"), Some(7));
        assert_eq!(line("items[1].spec"), Some(9));
        // Deeper than written: the deepest part that is.
        assert_eq!(line("items[1].spec.containers[3].image"), Some(9));
        let json = "{\n  \"items\": [\n    {\n      \"kind\": \"Node\",\n      \"status\": {\"capacity\": {\"cpu\": \"-1\"}}\n    }\n  ]\n}\n";
        assert_eq!(line_of_path(json, 0, "items[0].status.capacity.cpu", serde_saphyr::Options::default()), Some(5));
        let documents = "kind: A\n---\nkind: B\nspec:\n  x: 1\n";
        assert_eq!(line_of_path(documents, 1, "spec.x", serde_saphyr::Options::default()), Some(5));
    }

    #[test]
    fn quantities_in_resource_lists_become_strings() {
        let v: Value = serde_json::json!({"status": {"capacity": {"cpu": 4}}, "replicas": 3});
        let v = normalize_quantities(v);
        assert_eq!(v["status"]["capacity"]["cpu"], Value::String("4".into()));
        assert_eq!(v["replicas"], Value::from(3));
    }
}
