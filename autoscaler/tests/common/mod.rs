//! Shared helpers for the end-to-end tests of `cluster-autoscaler plan`: small cluster dumps
//! built as `kubectl get -o json` would print them, a `static` cloud-config, and a runner that
//! calls the real binary with a fixed clock and seed and parses its JSON plan.

#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// The clock every plan runs at.
pub const NOW: &str = "2026-11-21T12:00:00Z";
/// When objects were created unless a test says otherwise: two hours before `NOW`.
pub const LONG_AGO: &str = "2026-11-21T10:00:00Z";
/// `NOW` in Unix seconds (for taint values).
pub const NOW_UNIX: i64 = 1_795_262_400;

/// Edits on a JSON object, chained: `pod(..).label("app", "web").on("n1")`.
pub trait Obj: Sized {
    /// Sets a value at a dotted path (`spec.nodeName`), creating objects on the way.
    fn set(self, path: &str, value: Value) -> Self;
    /// Appends to the array at a dotted path, creating it if needed.
    fn push(self, path: &str, value: Value) -> Self;
    fn get_path(&self, path: &str) -> Option<&Value>;

    fn label(self, key: &str, value: &str) -> Self {
        self.set_key("metadata.labels", key, json!(value))
    }
    fn annotate(self, key: &str, value: &str) -> Self {
        self.set_key("metadata.annotations", key, json!(value))
    }
    /// Sets `key` (which may contain dots) inside the object at `path`.
    fn set_key(self, path: &str, key: &str, value: Value) -> Self;
    fn created(self, time: &str) -> Self {
        self.set("metadata.creationTimestamp", json!(time))
    }
}

fn walk<'a>(mut v: &'a mut Value, path: &str) -> &'a mut Value {
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        if !v.is_object() {
            *v = json!({});
        }
        v = v.as_object_mut().expect("object").entry(seg.to_string()).or_insert(Value::Null);
    }
    v
}

impl Obj for Value {
    fn set(mut self, path: &str, value: Value) -> Self {
        *walk(&mut self, path) = value;
        self
    }
    fn push(mut self, path: &str, value: Value) -> Self {
        let slot = walk(&mut self, path);
        if !slot.is_array() {
            *slot = json!([]);
        }
        slot.as_array_mut().expect("array").push(value);
        self
    }
    fn get_path(&self, path: &str) -> Option<&Value> {
        path.split('.').filter(|s| !s.is_empty()).try_fold(self, |v, seg| v.get(seg))
    }
    fn set_key(mut self, path: &str, key: &str, value: Value) -> Self {
        let slot = walk(&mut self, path);
        if !slot.is_object() {
            *slot = json!({});
        }
        slot.as_object_mut().expect("object").insert(key.to_string(), value);
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// A ready node that belongs to no group, created long ago, allocatable = capacity.
pub fn bare_node(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": format!("{name}-uid"),
            "creationTimestamp": LONG_AGO,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": LONG_AGO, "lastHeartbeatTime": NOW}
            ]
        }
    })
}

/// A ready node of node group `group` (label `pool=<group>`, providerID `static://<group>/<name>`).
pub fn node(group: &str, name: &str, cpu: &str, memory: &str) -> Value {
    bare_node(name, cpu, memory).label("pool", group).set("spec.providerID", json!(format!("static://{group}/{name}")))
}

/// Adds an extended resource (e.g. `nvidia.com/gpu`) to a node's capacity and allocatable.
pub fn with_node_resource(node: Value, resource: &str, amount: &str) -> Value {
    node.set_key("status.capacity", resource, json!(amount)).set_key("status.allocatable", resource, json!(amount))
}

pub fn taint(node: Value, key: &str, value: &str, effect: &str) -> Value {
    node.push("spec.taints", json!({"key": key, "value": value, "effect": effect}))
}

/// The kubelet reports the node NotReady (since long ago), and the node lifecycle controller has
/// tainted it `node.kubernetes.io/not-ready:NoSchedule`.
pub fn not_ready(node: Value) -> Value {
    taint(
        node.set(
            "status.conditions",
            json!([{"type": "Ready", "status": "False", "lastTransitionTime": LONG_AGO, "lastHeartbeatTime": NOW}]),
        ),
        "node.kubernetes.io/not-ready",
        "",
        "NoSchedule",
    )
}

// ---------------------------------------------------------------------------------------------
// Pods

/// A pod with one container requesting `cpu` and `memory`, not bound, no status yet.
pub fn pod(namespace: &str, name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("{namespace}-{name}-uid"),
            "creationTimestamp": LONG_AGO
        },
        "spec": {
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
        }
    })
}

/// Bound to `node` and running.
pub fn running_on(pod: Value, node: &str) -> Value {
    pod.set("spec.nodeName", json!(node)).set(
        "status",
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                  {"type": "Ready", "status": "True"}]}),
    )
}

/// Marked unschedulable by the scheduler (what the autoscaler acts on).
pub fn unschedulable(pod: Value) -> Value {
    pod.set(
        "status",
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/1 nodes are available", "lastTransitionTime": LONG_AGO}]}),
    )
}

/// Sets the controller ownerReference (`kind` in `apps/v1` unless it is a core or batch kind).
pub fn owned_by(pod: Value, kind: &str, name: &str) -> Value {
    let api_version = match kind {
        "ReplicationController" => "v1",
        "Job" => "batch/v1",
        "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Deployment" => "apps/v1",
        _ => "example.com/v1",
    };
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
    pod.set(
        "metadata.ownerReferences",
        json!([{"apiVersion": api_version, "kind": kind, "name": name,
                "uid": format!("{namespace}-{name}-uid"), "controller": true, "blockOwnerDeletion": true}]),
    )
}

pub fn with_request(pod: Value, resource: &str, amount: &str) -> Value {
    let mut pod = pod;
    pod["spec"]["containers"][0]["resources"]["requests"][resource] = json!(amount);
    if resource.contains('/') {
        // Extended resources need limits equal to requests.
        pod["spec"]["containers"][0]["resources"]["limits"][resource] = json!(amount);
    }
    pod
}

pub fn with_node_selector(pod: Value, key: &str, value: &str) -> Value {
    pod.set_key("spec.nodeSelector", key, json!(value))
}

pub fn tolerating(pod: Value, key: &str, value: &str, effect: &str) -> Value {
    pod.push("spec.tolerations", json!({"key": key, "operator": "Equal", "value": value, "effect": effect}))
}

pub fn with_priority(pod: Value, priority: i32) -> Value {
    pod.set("spec.priority", json!(priority))
}

pub fn with_empty_dir(pod: Value, volume: &str) -> Value {
    pod.push("spec.volumes", json!({"name": volume, "emptyDir": {}}))
}

/// A static pod as the API server mirrors it.
pub fn mirror(pod: Value) -> Value {
    pod.annotate("kubernetes.io/config.mirror", "mirror-hash").annotate("kubernetes.io/config.source", "file")
}

// ---------------------------------------------------------------------------------------------
// Controllers, PDBs, ConfigMaps

pub fn replicaset(namespace: &str, name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}-uid"),
                     "creationTimestamp": LONG_AGO},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}}},
        "status": {"replicas": replicas}
    })
}

pub fn statefulset(namespace: &str, name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}-uid")},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}}}
    })
}

/// A DaemonSet whose pods request `cpu` / `memory` and run on every node.
pub fn daemonset(namespace: &str, name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}-uid")},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                          "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
            }
        }
    })
}

/// A DaemonSet's pod, running on `node`.
pub fn daemonset_pod(namespace: &str, ds: &str, node: &str, cpu: &str, memory: &str) -> Value {
    running_on(owned_by(pod(namespace, &format!("{ds}-{node}"), cpu, memory).label("app", ds), "DaemonSet", ds), node)
}

/// A policy/v1 PDB selecting `app=<app>` with the given disruptions allowed in its status.
pub fn pdb(namespace: &str, name: &str, app: &str, disruptions_allowed: i32) -> Value {
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}-uid")},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": disruptions_allowed, "currentHealthy": 2, "desiredHealthy": 1,
                   "expectedPods": 2, "observedGeneration": 1}
    })
}

pub fn config_map(namespace: &str, name: &str, data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data})
}

/// The priority expander's ConfigMap in kube-system.
pub fn priority_config_map(priorities: &str) -> Value {
    config_map("kube-system", "cluster-autoscaler-priority-expander", &[("priorities", priorities)])
}

/// `kubectl get … -o json` output: a `List` of the objects.
pub fn dump(objects: &[Value]) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects})
}

// ---------------------------------------------------------------------------------------------
// Cloud config

/// A node group of the static provider: nodes labelled `pool=<id>` (or with providerID
/// `static://<id>/…`) belong to it; fresh nodes look like the template (`pool=<id>`, the given
/// capacity, 110 pods).
pub fn group(id: &str, min: usize, max: usize, cpu: &str, memory: &str) -> Value {
    json!({
        "id": id,
        "minSize": min,
        "maxSize": max,
        "nodeSelector": {"pool": id},
        "providerIDPrefix": format!("static://{id}/"),
        "template": {
            "metadata": {"labels": {"pool": id, "kubernetes.io/os": "linux"}},
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"}}
        }
    })
}

/// Adds a label to a group's template (and not to its selector).
pub fn template_label(group: Value, key: &str, value: &str) -> Value {
    group.set_key("template.metadata.labels", key, json!(value))
}

pub fn template_taint(group: Value, key: &str, value: &str, effect: &str) -> Value {
    group.push("template.spec.taints", json!({"key": key, "value": value, "effect": effect}))
}

pub fn template_resource(group: Value, resource: &str, amount: &str) -> Value {
    group.set_key("template.status.capacity", resource, json!(amount))
}

pub fn group_option(group: Value, key: &str, value: Value) -> Value {
    group.set_key("options", key, value)
}

/// The cloud-config file (JSON is YAML).
pub fn cloud_config(groups: &[Value]) -> Value {
    json!({"nodeGroups": groups})
}

// ---------------------------------------------------------------------------------------------
// Running the binary

/// A fresh directory for one test's files, removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("plan-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("create temp dir")
}

pub fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test file");
    path.to_string_lossy().into_owned()
}

/// Runs `cluster-autoscaler` with these arguments (and optional stdin).
pub fn run_binary(args: &[String], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cluster-autoscaler"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cluster-autoscaler");
    if let Some(text) = stdin {
        child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait for cluster-autoscaler")
}

/// The arguments of a `plan` run on these files, with the fixed clock and seed.
pub fn plan_args(snapshot: &str, cloud_config: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "plan".into(),
        "--snapshot".into(),
        snapshot.into(),
        "--cloud-provider=static".into(),
        "--cloud-config".into(),
        cloud_config.into(),
        "--now".into(),
        NOW.into(),
        "--random-seed".into(),
        "42".into(),
        "-o".into(),
        "json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Writes the dump and the cloud-config, runs `plan -o json` and returns the parsed plan.
/// Panics with the binary's stderr when it fails.
pub fn plan(objects: &[Value], groups: &[Value], extra: &[&str]) -> Value {
    plan_with_config(objects, &cloud_config(groups), extra)
}

pub fn plan_with_config(objects: &[Value], config: &Value, extra: &[&str]) -> Value {
    let dir = temp_dir();
    let snapshot = write(dir.path(), "dump.json", &serde_json::to_string_pretty(&dump(objects)).expect("json"));
    let config = write(dir.path(), "cloud-config.yaml", &serde_json::to_string_pretty(config).expect("json"));
    let out = run_binary(&plan_args(&snapshot, &config, extra), None);
    assert!(
        out.status.success(),
        "plan failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("plan printed invalid JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}

// ---------------------------------------------------------------------------------------------
// Reading the plan

pub fn scale_up_result(plan: &Value) -> &str {
    plan["scaleUp"]["result"].as_str().expect("scaleUp.result")
}

/// (group, delta) of every increase, in order.
pub fn increases(plan: &Value) -> Vec<(String, u64)> {
    plan["scaleUp"]["increases"]
        .as_array()
        .expect("scaleUp.increases")
        .iter()
        .map(|i| (i["nodeGroup"].as_str().unwrap().to_string(), i["delta"].as_u64().unwrap()))
        .collect()
}

pub fn inc(group: &str, delta: u64) -> (String, u64) {
    (group.to_string(), delta)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

pub fn pods_triggered(plan: &Value) -> Vec<String> {
    strings(&plan["scaleUp"]["podsTriggered"])
}

pub fn pods_fit_existing(plan: &Value) -> Vec<String> {
    strings(&plan["scaleUp"]["podsFitExistingNodes"])
}

/// Why a pending pod was left out of scale-up, if it was.
pub fn pod_ignored(plan: &Value, pod: &str) -> Option<String> {
    plan["scaleUp"]["podsIgnored"][pod].as_str().map(str::to_string)
}

/// The reasons a pending pod stays unschedulable; `None` when it is not listed.
pub fn remain_unschedulable(plan: &Value, pod: &str) -> Option<Vec<String>> {
    plan["scaleUp"]["podsRemainUnschedulable"]
        .as_array()
        .expect("podsRemainUnschedulable")
        .iter()
        .find(|p| p["pod"] == pod)
        .map(|p| strings(&p["reasons"]))
}

pub fn skipped_reasons(plan: &Value, group: &str) -> Vec<String> {
    strings(&plan["scaleUp"]["skippedNodeGroups"][group])
}

pub fn unneeded_nodes(plan: &Value) -> Vec<String> {
    plan["scaleDown"]["unneeded"]
        .as_array()
        .expect("scaleDown.unneeded")
        .iter()
        .map(|n| n["node"].as_str().unwrap().to_string())
        .collect()
}

pub fn unneeded(plan: &Value, node: &str) -> Option<Value> {
    plan["scaleDown"]["unneeded"].as_array().expect("scaleDown.unneeded").iter().find(|n| n["node"] == node).cloned()
}

pub fn unremovable(plan: &Value, node: &str) -> Option<Value> {
    plan["scaleDown"]["unremovable"]
        .as_array()
        .expect("scaleDown.unremovable")
        .iter()
        .find(|n| n["node"] == node)
        .cloned()
}

/// The `UnremovableReason` of a node, or `None` when it is not unremovable.
pub fn unremovable_reason(plan: &Value, node: &str) -> Option<String> {
    unremovable(plan, node).map(|n| n["reason"].as_str().unwrap().to_string())
}

/// Nodes the loop would start deleting now (empty and drained).
pub fn delete_now(plan: &Value) -> Vec<String> {
    let mut out = strings(&plan["scaleDown"]["deleteNow"]["empty"]);
    out.extend(strings(&plan["scaleDown"]["deleteNow"]["drain"]));
    out
}

// ---------------------------------------------------------------------------------------------
// Small building blocks shared by the test files

/// `n` pending (unschedulable) pods of the ReplicaSet `default/<rs>`, each requesting `cpu` / `memory`.
pub fn pending_pods(rs: &str, n: usize, cpu: &str, memory: &str) -> Vec<Value> {
    (0..n)
        .map(|i| {
            unschedulable(owned_by(
                pod("default", &format!("{rs}-{i}"), cpu, memory).label("app", rs),
                "ReplicaSet",
                rs,
            ))
        })
        .collect()
}

pub fn with(mut objects: Vec<Value>, more: impl IntoIterator<Item = Value>) -> Vec<Value> {
    objects.extend(more);
    objects
}

/// A 4-cpu node of `group` filled by one pod of the ReplicaSet `default/filler` (included):
/// nothing pending fits on it.
pub fn full_node(group: &str, name: &str) -> Vec<Value> {
    vec![
        node(group, name, "4", "16Gi"),
        replicaset("default", "filler", 1),
        running_on(
            owned_by(
                pod("default", &format!("filler-{name}"), "4", "16Gi").label("app", "filler"),
                "ReplicaSet",
                "filler",
            ),
            name,
        ),
    ]
}
