//! HTTP routing and the verbs: discovery, get, list, create, update, patch, delete, and the
//! `status`, `scale` and `eviction` subresources.
//!
//! Handlers return `Result<Response, Response>`: the error is the HTTP answer itself, so `?`
//! can end a request early; its size does not matter in a test server.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::patch::{JsonPatchError, json_patch, merge_patch, strategic_merge_patch};
use super::resources::{RESOURCES, ResourceDef, version_doc};
use super::selectors::{ObjectFilter, label_selector_object_matches, label_selector_to_string};
use super::store::{EvictionRecord, ObjectKey, RequestRecord, Shared, Stored, Verb, WriteError, object_key};
use super::watch::{WatchRequest, watch_response};

/// The resource a request addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub resource: usize,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    fn def(&self) -> &'static ResourceDef {
        &RESOURCES[self.resource]
    }

    fn key(&self) -> ObjectKey {
        (self.namespace.clone().unwrap_or_default(), self.name.clone().unwrap_or_default())
    }
}

enum Route {
    Discovery(Value),
    Text(&'static str),
    Resource(Target),
    NotFound,
}

fn route(shared: &Shared, path: &str, server_address: &str) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let catalog = &shared.catalog;
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Route::Discovery(version_doc()),
        ["healthz" | "readyz" | "livez"] => return Route::Text("ok"),
        ["api"] => return Route::Discovery(catalog.core_versions(server_address)),
        ["apis"] => return Route::Discovery(catalog.group_list()),
        ["api", "v1"] => return catalog.resource_list("", "v1").map_or(Route::NotFound, Route::Discovery),
        ["apis", g] => return catalog.group(g).map_or(Route::NotFound, Route::Discovery),
        ["apis", g, v] => return catalog.resource_list(g, v).map_or(Route::NotFound, Route::Discovery),
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::NotFound,
    };
    let namespaced_plural = |p: &str| catalog.find(group, version, p).filter(|&i| RESOURCES[i].namespaced);
    let (resource, namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] if namespaced_plural(plural).is_some() => {
            (namespaced_plural(plural).expect("checked by the guard"), Some(ns.to_string()), tail)
        }
        [plural, tail @ ..] => match catalog.find(group, version, plural) {
            Some(i) => (i, None, tail),
            None => return Route::NotFound,
        },
        [] => return Route::NotFound,
    };
    let def = &RESOURCES[resource];
    let (name, subresource) = match rest {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, sub] if def.has_subresource(sub) => (Some(name.to_string()), Some(sub.to_string())),
        _ => return Route::NotFound,
    };
    if !def.namespaced && namespace.is_some() {
        return Route::NotFound;
    }
    if def.namespaced && namespace.is_none() && name.is_some() {
        return Route::NotFound;
    }
    Route::Resource(Target { resource, namespace, name, subresource })
}

fn verb_of(method: &Method, target: &Target, params: &HashMap<String, String>) -> Option<Verb> {
    let watch = params.get("watch").is_some_and(|w| w == "true" || w == "1");
    Some(match (method.as_str(), target.name.is_some()) {
        ("GET", true) => Verb::Get,
        ("GET", false) if watch => Verb::Watch,
        ("GET", false) => Verb::List,
        ("POST", _) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => return None,
    })
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// An answer whose body is JSON text already (a stored object or document).
fn json_bytes_response(status: StatusCode, json: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json).into_response()
}

/// A `<Kind>List` answer: the stored objects' JSON is copied into the body as it is.
fn list_response(def: &ResourceDef, metadata: Value, items: &[Arc<Stored>]) -> Response {
    let head = json!({"apiVersion": def.api_version(), "kind": def.list_kind(), "metadata": metadata}).to_string();
    let head = head.strip_suffix('}').expect("a JSON object ends with a brace");
    let size = head.len() + items.iter().map(|o| o.json.len() + 1).sum::<usize>() + 12;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&item.json);
    }
    body.extend_from_slice(b"]}");
    json_bytes_response(StatusCode::OK, Bytes::from(body))
}

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A `metav1.Status` failure body.
pub(crate) fn status_body(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(d) = details {
        body["details"] = d;
    }
    body
}

pub(crate) fn failure(code: u16, message: &str) -> Response {
    failure_with(code, reason_for(code), message, None)
}

fn failure_with(code: u16, reason: &str, message: &str, details: Option<Value>) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &status_body(code, reason, message, details))
}

fn details(def: &ResourceDef, name: &str) -> Value {
    json!({"name": name, "group": def.group, "kind": def.plural})
}

fn not_found(def: &ResourceDef, name: &str) -> Response {
    failure_with(404, "NotFound", &format!("{} \"{name}\" not found", def.qualified_plural()), Some(details(def, name)))
}

fn conflict(def: &ResourceDef, name: &str) -> Response {
    let message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
        def.qualified_plural()
    );
    failure_with(409, "Conflict", &message, Some(details(def, name)))
}

fn already_exists(def: &ResourceDef, name: &str) -> Response {
    failure_with(
        409,
        "AlreadyExists",
        &format!("{} \"{name}\" already exists", def.qualified_plural()),
        Some(details(def, name)),
    )
}

fn write_error(def: &ResourceDef, name: &str, e: WriteError) -> Response {
    match e {
        WriteError::NotFound => not_found(def, name),
        WriteError::AlreadyExists => already_exists(def, name),
        WriteError::Conflict => conflict(def, name),
    }
}

fn parse_body(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice::<Value>(body).map_err(|e| failure(400, &format!("the request body is not valid JSON: {e}")))
}

pub(crate) async fn handle(
    State((shared, server_address)): State<(Arc<Shared>, String)>,
    method: Method,
    uri: Uri,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let routed = route(&shared, &path, &server_address);
    let verb = match &routed {
        Route::Resource(t) => verb_of(&method, t, &params),
        _ => (method == Method::GET).then_some(Verb::Get),
    };
    let mut fault = shared.lock().take_fault(verb, &path);
    if let Some(delay) = fault.as_ref().and_then(|f| f.delay) {
        tokio::time::sleep(delay).await;
    }
    let failed = fault.take().and_then(|f| f.status.map(|status| (status, f.message)));
    let document = (method == Method::GET).then(|| shared.lock().documents.get(&path).cloned()).flatten();
    let response = if let Some((status, message)) = failed {
        failure(status, &message)
    } else if let Some(doc) = document {
        json_bytes_response(StatusCode::OK, doc)
    } else {
        match routed {
            Route::Discovery(doc) if method == Method::GET => json_response(StatusCode::OK, &doc),
            Route::Text(text) if method == Method::GET => text.into_response(),
            Route::Discovery(_) | Route::Text(_) => failure(405, &format!("{method} is not allowed on {path}")),
            Route::NotFound => {
                failure(404, &format!("the server could not find the requested resource ({method} {path})"))
            }
            Route::Resource(target) => match verb {
                None => failure(405, &format!("{method} is not allowed on {path}")),
                Some(verb) => serve(&shared, verb, &target, &params, content_type.as_deref(), &body),
            },
        }
    };
    shared.lock().requests.push(RequestRecord {
        method: method.to_string(),
        verb,
        path,
        query: uri.query().unwrap_or_default().to_string(),
        content_type,
        status: response.status().as_u16(),
    });
    response
}

fn serve(
    shared: &Arc<Shared>,
    verb: Verb,
    target: &Target,
    params: &HashMap<String, String>,
    content_type: Option<&str>,
    body: &Bytes,
) -> Response {
    let result = match (verb, target.subresource.as_deref()) {
        (Verb::Get, None | Some("status")) => get(shared, target),
        (Verb::List, _) => list(shared, target, params),
        (Verb::Watch, _) => match WatchRequest::from_params(target.resource, target.namespace.clone(), params) {
            Ok(request) => Ok(watch_response(shared.clone(), request)),
            Err(message) => Err(failure(400, &message)),
        },
        (Verb::Create, None) => create(shared, target, body),
        (Verb::Create, Some("eviction")) => evict(shared, target, body),
        (Verb::Update, None | Some("status")) => update(shared, target, body),
        (Verb::Patch, None | Some("status")) => patch(shared, target, content_type, body),
        (Verb::Delete, None) => delete(shared, target),
        (Verb::DeleteCollection, None) => delete_collection(shared, target, params),
        (Verb::Get, Some("scale")) => get_scale(shared, target),
        (Verb::Update | Verb::Patch, Some("scale")) => write_scale(shared, verb, target, content_type, body),
        _ => Err(failure(405, &format!("{verb:?} is not supported on this resource"))),
    };
    result.unwrap_or_else(|e| e)
}

fn get(shared: &Shared, target: &Target) -> Result<Response, Response> {
    let object = shared.lock().get(target.resource, &target.key());
    let object = object.ok_or_else(|| not_found(target.def(), target.name.as_deref().unwrap_or_default()))?;
    Ok(json_bytes_response(StatusCode::OK, object.json.clone()))
}

fn filter(target: &Target, params: &HashMap<String, String>) -> Result<ObjectFilter, Response> {
    ObjectFilter::from_params(target.namespace.clone(), params).map_err(|message| failure(400, &message))
}

/// Lists with `limit` / `continue` paging. The continue token is `<version>:<namespace>/<name>`,
/// the key of the page's last object, as a real server's token holds the key to start after:
/// a page costs its own size, not the collection's, and objects written meanwhile still
/// appear in their place. Every page reports the first page's version so a watch from there
/// misses nothing.
fn list(shared: &Shared, target: &Target, params: &HashMap<String, String>) -> Result<Response, Response> {
    let filter = filter(target, params)?;
    let limit = params.get("limit").and_then(|l| l.parse::<usize>().ok()).filter(|&l| l > 0).unwrap_or(usize::MAX);
    let (list_version, items, last_key) = {
        let state = shared.lock();
        let (list_version, after) = match params.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let parsed = token.split_once(':').and_then(|(v, key)| {
                    let (namespace, name) = key.split_once('/')?;
                    Some((v.parse::<u64>().ok()?, (namespace.to_string(), name.to_string())))
                });
                let (version, after) =
                    parsed.ok_or_else(|| failure(400, &format!("invalid continue token {token:?}")))?;
                if version < state.compacted {
                    return Err(failure_with(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                        None,
                    ));
                }
                (version, Some(after))
            }
            None => (state.resource_version, None),
        };
        let mut items = Vec::new();
        let mut last_key = None;
        let mut more = false;
        for (key, object) in state.after(target.resource, after.as_ref()).filter(|(_, o)| filter.matches(o)) {
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(object.clone());
            last_key = Some(key);
        }
        (list_version, items, last_key.filter(|_| more).cloned())
    };
    let mut metadata = json!({"resourceVersion": list_version.to_string()});
    if let Some((namespace, name)) = last_key {
        metadata["continue"] = json!(format!("{list_version}:{namespace}/{name}"));
    }
    Ok(list_response(target.def(), metadata, &items))
}

fn check_type(def: &ResourceDef, object: &Value) -> Result<(), Response> {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    if api_version.is_some_and(|v| v != def.api_version()) || kind.is_some_and(|k| k != def.kind) {
        return Err(failure(
            400,
            &format!(
                "the body is a {}/{}, not a {}/{}",
                api_version.unwrap_or("?"),
                kind.unwrap_or("?"),
                def.api_version(),
                def.kind
            ),
        ));
    }
    Ok(())
}

fn create(shared: &Shared, target: &Target, body: &Bytes) -> Result<Response, Response> {
    let def = target.def();
    let mut object = parse_body(body)?;
    if !object.is_object() {
        return Err(failure(400, "the request body must be an object"));
    }
    check_type(def, &object)?;
    if def.namespaced {
        let ns = target.namespace.as_deref().ok_or_else(|| failure(405, "create needs a namespaced path"))?;
        let body_ns = object.pointer("/metadata/namespace").and_then(Value::as_str);
        if body_ns.is_some_and(|b| !b.is_empty() && b != ns) {
            return Err(failure(
                400,
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        object["metadata"]["namespace"] = json!(ns);
    }
    let mut state = shared.lock();
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() {
        let prefix = object.pointer("/metadata/generateName").and_then(Value::as_str).unwrap_or_default().to_string();
        if prefix.is_empty() {
            return Err(failure(422, "metadata.name: Required value: name or generateName is required"));
        }
        object["metadata"]["name"] = json!(format!("{prefix}{:05x}", state.resource_version + 1));
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let created = state.create(&shared.notices, target.resource, object).map_err(|e| write_error(def, &name, e))?;
    Ok(json_bytes_response(StatusCode::CREATED, created.json.clone()))
}

fn body_version(object: &Value) -> Option<String> {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string)
}

fn update(shared: &Shared, target: &Target, body: &Bytes) -> Result<Response, Response> {
    let def = target.def();
    let name = target.name.clone().unwrap_or_default();
    let object = parse_body(body)?;
    check_type(def, &object)?;
    if object.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| n != name) {
        return Err(failure(400, "the name of the object does not match the name on the URL"));
    }
    let mut state = shared.lock();
    let key = target.key();
    let new = if target.subresource.as_deref() == Some("status") {
        let mut merged = state.value(target.resource, &key).ok_or_else(|| not_found(def, &name))?;
        merged["status"] = object.get("status").cloned().unwrap_or(Value::Null);
        merged
    } else {
        object.clone()
    };
    let updated = state
        .replace(&shared.notices, target.resource, &key, new, body_version(&object).as_deref())
        .map_err(|e| write_error(def, &name, e))?;
    Ok(json_bytes_response(StatusCode::OK, updated.json.clone()))
}

/// Applies a patch document of the given content type to `doc`.
fn apply_patch(content_type: Option<&str>, doc: &mut Value, patch: &Value) -> Result<(), Response> {
    let media = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim();
    match media {
        "application/merge-patch+json" => merge_patch(doc, patch),
        "application/strategic-merge-patch+json" => strategic_merge_patch(doc, patch),
        "application/json-patch+json" => json_patch(doc, patch).map_err(|e| match e {
            JsonPatchError::Malformed(m) => failure(400, &m),
            JsonPatchError::Failed(m) => failure(422, &m),
        })?,
        other => {
            return Err(failure(
                415,
                &format!("the patch type {other:?} is not supported (server-side apply is not served)"),
            ));
        }
    }
    Ok(())
}

fn patch(shared: &Shared, target: &Target, content_type: Option<&str>, body: &Bytes) -> Result<Response, Response> {
    let def = target.def();
    let name = target.name.clone().unwrap_or_default();
    let patch_doc = parse_body(body)?;
    let mut state = shared.lock();
    let key = target.key();
    let current = state.value(target.resource, &key).ok_or_else(|| not_found(def, &name))?;
    let mut patched = current.clone();
    apply_patch(content_type, &mut patched, &patch_doc)?;
    // A merge patch that names a resourceVersion is a precondition, as on a real server.
    let expected = if patch_doc.is_object() { body_version(&patch_doc) } else { None };
    let new = if target.subresource.as_deref() == Some("status") {
        let mut merged = current;
        merged["status"] = patched.get("status").cloned().unwrap_or(Value::Null);
        merged
    } else {
        patched
    };
    let updated = state
        .replace(&shared.notices, target.resource, &key, new, expected.as_deref())
        .map_err(|e| write_error(def, &name, e))?;
    Ok(json_bytes_response(StatusCode::OK, updated.json.clone()))
}

fn delete(shared: &Shared, target: &Target) -> Result<Response, Response> {
    let def = target.def();
    let name = target.name.clone().unwrap_or_default();
    let deleted = shared
        .lock()
        .delete(&shared.notices, target.resource, &target.key())
        .map_err(|e| write_error(def, &name, e))?;
    Ok(json_bytes_response(StatusCode::OK, deleted.json.clone()))
}

fn delete_collection(shared: &Shared, target: &Target, params: &HashMap<String, String>) -> Result<Response, Response> {
    let filter = filter(target, params)?;
    let mut state = shared.lock();
    let doomed: Vec<ObjectKey> =
        state.after(target.resource, None).filter(|(_, o)| filter.matches(o)).map(|(key, _)| key.clone()).collect();
    let mut items = Vec::new();
    for key in doomed {
        if let Ok(last) = state.delete(&shared.notices, target.resource, &key) {
            items.push(last);
        }
    }
    let rv = state.resource_version.to_string();
    Ok(list_response(target.def(), json!({"resourceVersion": rv}), &items))
}

/// `POST pods/{name}/eviction`: 201 when allowed, 429 when the one PDB selecting the pod has no
/// disruptions left, 500 when several PDBs select it, 404 when the pod does not exist. Pods that
/// are Pending, Succeeded, Failed or already terminating skip the budget check, as on a real
/// server. Every request is recorded with the grace period it carried.
fn evict(shared: &Shared, target: &Target, body: &Bytes) -> Result<Response, Response> {
    let eviction = parse_body(body)?;
    let grace_period_seconds = eviction.pointer("/deleteOptions/gracePeriodSeconds").and_then(Value::as_i64);
    let namespace = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let pods = target.resource;
    let pdbs = shared.catalog.find("policy", "v1", "poddisruptionbudgets").expect("PDBs are always served");
    let mut state = shared.lock();
    let key = target.key();
    let response = match state.value(pods, &key) {
        None => not_found(target.def(), &name),
        Some(pod) => {
            let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
            let ignores_budget = matches!(phase, "Pending" | "Succeeded" | "Failed")
                || pod.pointer("/metadata/deletionTimestamp").is_some();
            let selecting: Vec<Value> = state
                .after(pdbs, None)
                .filter(|(_, p)| p.namespace == namespace)
                .map(|(_, p)| p.value())
                .filter(|p| label_selector_object_matches(p.pointer("/spec/selector"), &pod))
                .collect();
            if !ignores_budget && selecting.len() > 1 {
                failure(
                    500,
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
            } else if !ignores_budget
                && let Some(pdb) = selecting.first()
                && pdb.pointer("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0) < 1
            {
                let pdb_name = pdb.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let cause = format!("The disruption budget {pdb_name} does not allow any more disruptions now");
                failure_with(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    Some(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]})),
                )
            } else {
                if !ignores_budget && let Some(pdb) = selecting.first() {
                    let mut updated = pdb.clone();
                    let allowed = updated.pointer("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0);
                    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
                    let pdb_key = object_key(&RESOURCES[pdbs], pdb);
                    state
                        .replace(&shared.notices, pdbs, &pdb_key, updated, None)
                        .expect("the PDB was read under the same lock");
                }
                state.delete(&shared.notices, pods, &key).expect("the pod was read under the same lock");
                json_response(
                    StatusCode::CREATED,
                    &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
                )
            }
        }
    };
    state.evictions.push(EvictionRecord {
        namespace,
        name,
        grace_period_seconds,
        status: response.status().as_u16(),
        body: eviction,
    });
    Ok(response)
}

/// The `autoscaling/v1 Scale` view of a workload.
fn scale_of(object: &Value) -> Value {
    let selector = object.pointer("/spec/selector");
    let selector_string = match selector {
        Some(s) if s.get("matchLabels").is_some() || s.get("matchExpressions").is_some() => {
            label_selector_to_string(Some(s))
        }
        // ReplicationControllers select with a plain map.
        Some(Value::Object(map)) => {
            map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
        }
        _ => String::new(),
    };
    let meta = &object["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": object.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector_string,
        },
    })
}

fn get_scale(shared: &Shared, target: &Target) -> Result<Response, Response> {
    let object = shared.lock().value(target.resource, &target.key());
    let object = object.ok_or_else(|| not_found(target.def(), target.name.as_deref().unwrap_or_default()))?;
    Ok(json_response(StatusCode::OK, &scale_of(&object)))
}

fn write_scale(
    shared: &Shared,
    verb: Verb,
    target: &Target,
    content_type: Option<&str>,
    body: &Bytes,
) -> Result<Response, Response> {
    let def = target.def();
    let name = target.name.clone().unwrap_or_default();
    let doc = parse_body(body)?;
    let mut state = shared.lock();
    let key = target.key();
    let current = state.value(target.resource, &key).ok_or_else(|| not_found(def, &name))?;
    let (scale, expected) = if verb == Verb::Update {
        (doc.clone(), body_version(&doc))
    } else {
        let mut scale = scale_of(&current);
        apply_patch(content_type, &mut scale, &doc)?;
        (scale, if doc.is_object() { body_version(&doc) } else { None })
    };
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .filter(|r| *r >= 0)
        .ok_or_else(|| failure(422, "spec.replicas: Invalid value: must be a non-negative integer"))?;
    let mut updated = current;
    updated["spec"]["replicas"] = json!(replicas);
    let stored = state
        .replace(&shared.notices, target.resource, &key, updated, expected.as_deref())
        .map_err(|e| write_error(def, &name, e))?;
    Ok(json_response(StatusCode::OK, &scale_of(&stored.value())))
}

/// Builds the response body of a watch from a stream of lines.
pub(crate) fn streaming_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .expect("static headers are valid")
}
