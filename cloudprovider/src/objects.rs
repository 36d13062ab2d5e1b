//! Kubernetes objects read from files (cloud-config templates, scenarios, cluster dumps): typed
//! with the paths of the fields their type does not know, and the values the API server would
//! have refused.
//!
//! k8s-openapi's types skip unknown fields silently, so a typo (`contianers`, `reqeusts`) would
//! drop part of an object without a word and change the decision. Hand-written files make them
//! errors; dumps from `kubectl` (whose API server may be newer than our types) warn.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

use crate::quantity::quantity_value;

/// Where in an object something is wrong (`spec.template.spec.containers[0].resources`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectError {
    pub path: String,
    pub message: String,
}

/// An object as its type reads it, and the paths of the fields it left out.
#[derive(Debug, Clone)]
pub struct Read<T> {
    pub object: T,
    pub unknown_fields: Vec<String>,
}

/// Reads `value` as `T`. A field `T` does not know is listed, not an error: the caller decides.
pub fn read<T: DeserializeOwned>(value: Value) -> Result<Read<T>, ObjectError> {
    let mut unknown_fields = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown_fields.push(render(&path));
    let object = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut note))
        .map_err(|e| ObjectError { path: e.path().to_string(), message: e.inner().to_string() })?;
    Ok(Read { object, unknown_fields })
}

/// Reads `T` from `deserializer`, listing the fields `T` does not know. Unlike `read`, a refusal
/// says only why, not where: callers that can read the input again ask `refusal` for the path
/// then, so that objects read whole (a dump's thousands of pods) do not each pay for tracking it.
pub fn read_listing<'de, T: Deserialize<'de>, D: Deserializer<'de>>(deserializer: D) -> Result<Read<T>, D::Error> {
    let mut unknown_fields = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown_fields.push(render(&path));
    let object = T::deserialize(serde_ignored::Deserializer::new(deserializer, &mut note))?;
    Ok(Read { object, unknown_fields })
}

/// Where and why reading `T` from `deserializer` fails (`None` when it does not).
pub fn refusal<'de, T: Deserialize<'de>, D: Deserializer<'de>>(deserializer: D) -> Option<ObjectError> {
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        Ok(_) => None,
        Err(e) => Some(ObjectError { path: e.path().to_string(), message: e.inner().to_string() }),
    }
}

/// `spec.containers[0].name`, as `kubectl explain` and our other errors write paths (the crate's
/// own rendering shows options as `?` and indices as `.0`).
fn render(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", render(parent)),
        Path::Map { parent, key } => match render(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => render(parent),
    }
}

/// Reads `value` as `T`, refusing fields `T` does not know (hand-written files).
pub fn read_strict<T: DeserializeOwned>(value: Value) -> Result<T, ObjectError> {
    let read = read::<T>(value)?;
    match read.unknown_fields.into_iter().next() {
        Some(path) => {
            let message = "unknown field (a typo? this field is not part of the object)".to_string();
            Err(ObjectError { path, message })
        }
        None => Ok(read.object),
    }
}

/// A path with its list indices left out (`spec.containers[].resizePolicy`), to count the same
/// unknown field across objects once.
pub fn path_pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// The first value of `object` (of kind `kind`) the API server's validation would refuse: a
/// resource quantity that is malformed or negative, a negative replica count.
pub fn refused_value(kind: &str, object: &Value) -> Option<ObjectError> {
    let pod_spec = match kind {
        "Pod" => Some("spec"),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" | "ReplicationController" => {
            Some("spec.template.spec")
        }
        _ => None,
    };
    let mut quantity_lists: Vec<String> = Vec::new();
    if let Some(spec) = pod_spec {
        for containers in ["containers", "initContainers"] {
            for list in ["requests", "limits"] {
                quantity_lists.push(format!("{spec}.{containers}[].resources.{list}"));
            }
        }
        quantity_lists.push(format!("{spec}.overhead"));
    }
    match kind {
        "Node" => quantity_lists.extend(["status.capacity".into(), "status.allocatable".into()]),
        "PersistentVolumeClaim" => quantity_lists.push("spec.resources.requests".into()),
        "PersistentVolume" => quantity_lists.push("spec.capacity".into()),
        _ => {}
    }
    for pattern in &quantity_lists {
        for (path, list) in lookup(object, pattern) {
            let Some(list) = list.as_object() else { continue };
            for (name, quantity) in list {
                let at = format!("{path}.{name}");
                let text = match quantity {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Some(ObjectError { path: at, message: "expected a quantity".into() }),
                };
                if let Some(message) = refused_quantity(&text) {
                    return Some(ObjectError { path: at, message });
                }
            }
        }
    }
    if matches!(kind, "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController")
        && let Some(replicas) = object.pointer("/spec/replicas").and_then(Value::as_i64)
    {
        return refused_replicas(replicas);
    }
    None
}

/// Why the API server would refuse a resource quantity written `text` (malformed, negative).
pub fn refused_quantity(text: &str) -> Option<String> {
    match quantity_value(text) {
        Err(message) => Some(message),
        Ok(v) if v < 0.0 => Some(format!("{text:?}: must be greater than or equal to 0")),
        Ok(_) => None,
    }
}

/// The API server refuses a negative `spec.replicas` of a workload.
pub fn refused_replicas(replicas: i64) -> Option<ObjectError> {
    (replicas < 0).then(|| ObjectError {
        path: "spec.replicas".into(),
        message: format!("{replicas}: must be greater than or equal to 0"),
    })
}

/// The values at `pattern` (`a.b[].c`: `[]` goes through every item of a list), with their paths.
fn lookup<'a>(value: &'a Value, pattern: &str) -> Vec<(String, &'a Value)> {
    let mut found = vec![(String::new(), value)];
    for segment in pattern.split('.') {
        let (key, every) = match segment.strip_suffix("[]") {
            Some(key) => (key, true),
            None => (segment, false),
        };
        let mut next = Vec::new();
        for (path, v) in found {
            let Some(child) = v.get(key) else { continue };
            let child_path = if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
            if every {
                for (i, item) in child.as_array().into_iter().flatten().enumerate() {
                    next.push((format!("{child_path}[{i}]"), item));
                }
            } else {
                next.push((child_path, child));
            }
        }
        found = next;
    }
    found
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn typos_inside_objects_are_listed_with_their_paths() {
        let value =
            pod(json!({"containers": [{"name": "c", "resources": {"reqeusts": {"cpu": "1"}}}], "nodeSelectr": {}}));
        let read = read::<Pod>(value.clone()).unwrap();
        assert_eq!(read.unknown_fields, vec!["spec.containers[0].resources.reqeusts", "spec.nodeSelectr"]);
        let err = read_strict::<Pod>(value).unwrap_err();
        assert_eq!(err.path, "spec.containers[0].resources.reqeusts");
        assert_eq!(path_pattern("spec.containers[12].ports[0].x"), "spec.containers[].ports[].x");
    }

    #[test]
    fn wrong_types_name_the_path() {
        let err = read::<Pod>(pod(json!({"containers": [{"name": 3}]}))).unwrap_err();
        assert_eq!(err.path, "spec.containers[0].name");
    }

    #[test]
    fn negative_quantities_and_replicas_are_refused_as_the_api_server_would() {
        let negative = pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "-500m"}}}]}));
        let err = refused_value("Pod", &negative).unwrap();
        assert_eq!(err.path, "spec.containers[0].resources.requests.cpu");
        let deployment = json!({"spec": {"replicas": -2, "template": {"spec": {"containers": []}}}});
        assert_eq!(refused_value("Deployment", &deployment).unwrap().path, "spec.replicas");
        let init =
            json!({"spec": {"template": {"spec": {"initContainers": [{"resources": {"limits": {"memory": "1Qi"}}}]}}}});
        assert_eq!(
            refused_value("Job", &init).unwrap().path,
            "spec.template.spec.initContainers[0].resources.limits.memory"
        );
        let node = json!({"status": {"allocatable": {"pods": -1}}});
        assert_eq!(refused_value("Node", &node).unwrap().path, "status.allocatable.pods");
        assert_eq!(
            refused_value("Pod", &pod(json!({"containers": [{"resources": {"requests": {"cpu": "8Ei"}}}]}))),
            None
        );
    }
}
