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
    fn quantities_in_resource_lists_become_strings() {
        let v: Value = serde_json::json!({"status": {"capacity": {"cpu": 4}}, "replicas": 3});
        let v = normalize_quantities(v);
        assert_eq!(v["status"]["capacity"]["cpu"], Value::String("4".into()));
        assert_eq!(v["replicas"], Value::from(3));
    }
}
