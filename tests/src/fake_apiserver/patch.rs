//! The three patch formats of the API server: JSON merge patch (RFC 7386), a strategic merge
//! patch good enough for the built-in types, and JSON patch (RFC 6902).

use serde_json::{Map, Value};

/// RFC 7386: objects merge recursively, `null` deletes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (k, v) in patch {
        if v.is_null() {
            target.remove(k);
        } else {
            merge_patch(target.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The merge key of the lists that Kubernetes merges by key in a strategic merge patch
/// (`patchStrategy:"merge"`); every other list is replaced whole, as the real server does
/// (node taints, for one, have no patch strategy and are replaced).
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers" | "initContainers" | "ephemeralContainers" | "volumes" | "env" | "imagePullSecrets" => "name",
        "conditions" | "addresses" => "type",
        "ownerReferences" => "uid",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => "containerPort",
        _ => return None,
    })
}

/// A strategic merge patch: like a merge patch, but lists with a merge key merge item by item,
/// items with `"$patch": "delete"` are removed, `"$patch": "replace"` replaces a map, and the
/// `$setElementOrder/…` and `$retainKeys` directives are accepted and ignored.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if patch.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replacement = patch.clone();
        replacement.remove("$patch");
        *target = Value::Object(replacement);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (k, v) in patch {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Some(remove)) = (target.get_mut(field), v.as_array()) {
                items.retain(|i| !remove.contains(i));
            }
            continue;
        }
        if v.is_null() {
            target.remove(k);
            continue;
        }
        match (merge_key(k), v) {
            (Some(key), Value::Array(patch_items)) => {
                let existing = target.entry(k.clone()).or_insert_with(|| Value::Array(Vec::new()));
                if !existing.is_array() {
                    *existing = Value::Array(Vec::new());
                }
                let items = existing.as_array_mut().expect("made an array above");
                for p in patch_items {
                    let id = p.get(key).cloned();
                    let position = id.as_ref().and_then(|id| items.iter().position(|i| i.get(key) == Some(id)));
                    let delete = p.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (position, delete) {
                        (Some(i), true) => {
                            items.remove(i);
                        }
                        (None, true) => {}
                        (Some(i), false) => strategic_merge_patch(&mut items[i], p),
                        (None, false) => items.push(p.clone()),
                    }
                }
            }
            _ => strategic_merge_patch(target.entry(k.clone()).or_insert(Value::Null), v),
        }
    }
}

/// Why a JSON patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonPatchError {
    /// The document is not a list of operations.
    Malformed(String),
    /// An operation does not apply (missing path, failed `test`).
    Failed(String),
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(String, String), JsonPatchError> {
    let (parent, last) =
        path.rsplit_once('/').ok_or_else(|| JsonPatchError::Malformed(format!("invalid JSON pointer {path:?}")))?;
    Ok((parent.to_string(), unescape(last)))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), JsonPatchError> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
            Ok(())
        }
        Some(Value::Array(items)) => {
            let index = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>().map_err(|_| JsonPatchError::Failed(format!("invalid array index in {path:?}")))?
            };
            if index > items.len() {
                return Err(JsonPatchError::Failed(format!("array index out of range in {path:?}")));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(JsonPatchError::Failed(format!("path {parent:?} does not exist"))),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, JsonPatchError> {
    let (parent, last) = split_pointer(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(map)) => {
            map.remove(&last).ok_or_else(|| JsonPatchError::Failed(format!("path {path:?} does not exist")))
        }
        Some(Value::Array(items)) => {
            let index = last
                .parse::<usize>()
                .map_err(|_| JsonPatchError::Failed(format!("invalid array index in {path:?}")))?;
            if index >= items.len() {
                return Err(JsonPatchError::Failed(format!("array index out of range in {path:?}")));
            }
            Ok(items.remove(index))
        }
        _ => Err(JsonPatchError::Failed(format!("path {parent:?} does not exist"))),
    }
}

/// RFC 6902: `add`, `remove`, `replace`, `move`, `copy`, `test`; all or nothing.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), JsonPatchError> {
    let ops = patch.as_array().ok_or_else(|| JsonPatchError::Malformed("a JSON patch must be a list".into()))?;
    let mut doc = target.clone();
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| JsonPatchError::Malformed(format!("operation without a path: {op}")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| JsonPatchError::Malformed(format!("operation without a value: {op}")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| JsonPatchError::Malformed(format!("operation without from: {op}")))
        };
        match kind {
            "add" => add(&mut doc, path, value()?)?,
            "remove" => {
                remove(&mut doc, path)?;
            }
            "replace" => {
                let slot = doc
                    .pointer_mut(path)
                    .ok_or_else(|| JsonPatchError::Failed(format!("path {path:?} does not exist")))?;
                *slot = value()?;
            }
            "move" => {
                let moved = remove(&mut doc, &from()?)?;
                add(&mut doc, path, moved)?;
            }
            "copy" => {
                let from = from()?;
                let copied = doc
                    .pointer(&from)
                    .cloned()
                    .ok_or_else(|| JsonPatchError::Failed(format!("path {from:?} does not exist")))?;
                add(&mut doc, path, copied)?;
            }
            "test" => {
                let expected = value()?;
                if doc.pointer(path) != Some(&expected) {
                    return Err(JsonPatchError::Failed(format!("test failed: {path:?} is not {expected}")));
                }
            }
            other => return Err(JsonPatchError::Malformed(format!("unknown JSON patch operation {other:?}"))),
        }
    }
    *target = doc;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_deletes_nulls_and_replaces_lists() {
        let mut doc = json!({"spec": {"unschedulable": true, "taints": [{"key": "a"}, {"key": "b"}]}, "x": 1});
        merge_patch(&mut doc, &json!({"spec": {"unschedulable": null, "taints": [{"key": "c"}]}}));
        assert_eq!(doc, json!({"spec": {"taints": [{"key": "c"}]}, "x": 1}));
    }

    #[test]
    fn strategic_merge_patch_merges_keyed_lists_and_replaces_taints() {
        let mut doc = json!({
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "containers": [{"name": "c1", "image": "v1"}, {"name": "c2"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        strategic_merge_patch(
            &mut doc,
            &json!({
                "$setElementOrder/containers": [{"name": "c1"}],
                "spec": {"taints": [{"key": "b", "effect": "NoSchedule"}], "containers": [{"name": "c1", "image": "v2"}, {"name": "c2", "$patch": "delete"}]},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]}
            }),
        );
        assert_eq!(doc["spec"]["taints"], json!([{"key": "b", "effect": "NoSchedule"}]));
        assert_eq!(doc["spec"]["containers"], json!([{"name": "c1", "image": "v2"}]));
        assert_eq!(doc["status"]["conditions"], json!([{"type": "Ready", "status": "False"}]));
    }

    #[test]
    fn json_patch_test_failure_leaves_the_document_untouched() {
        let mut doc = json!({"metadata": {"resourceVersion": "5"}, "spec": {"taints": []}});
        let patch = json!([
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "a"}},
            {"op": "test", "path": "/metadata/resourceVersion", "value": "4"}
        ]);
        assert!(matches!(json_patch(&mut doc, &patch), Err(JsonPatchError::Failed(_))));
        assert_eq!(doc["spec"]["taints"], json!([]));
        let ok = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "a"}},
            {"op": "replace", "path": "/spec/taints/0/key", "value": "b"},
            {"op": "copy", "from": "/spec/taints/0", "path": "/spec/first"},
            {"op": "remove", "path": "/spec/taints/0"}
        ]);
        json_patch(&mut doc, &ok).unwrap();
        assert_eq!(doc["spec"], json!({"taints": [], "first": {"key": "b"}}));
    }
}
