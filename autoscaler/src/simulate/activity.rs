//! The report's activity timeline: the run's timeline as sentences a person reads, with their
//! times. Runs of the same thing are told once (a pod autoscaler stepping a workload up, nodes
//! of one group failing to launch together, repeated warnings), and the loop's bookkeeping
//! (decisions, ramp steps, Normal events) is left to the `--events` file.

use std::collections::HashMap;

use serde_json::Value;

use super::driver::TimelineEntry;

/// One row: when, what kind of thing, and the sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub at: f64,
    pub category: Category,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Scenario,
    PodAutoscaler,
    ScaleUp,
    ScaleDown,
    Failure,
    Warning,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::Scenario,
        Category::PodAutoscaler,
        Category::ScaleUp,
        Category::ScaleDown,
        Category::Failure,
        Category::Warning,
    ];

    /// The CSS class and filter name.
    pub fn id(self) -> &'static str {
        match self {
            Category::Scenario => "scenario",
            Category::PodAutoscaler => "pod-autoscaler",
            Category::ScaleUp => "scale-up",
            Category::ScaleDown => "scale-down",
            Category::Failure => "failure",
            Category::Warning => "warning",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Category::Scenario => "scenario",
            Category::PodAutoscaler => "pod autoscaler",
            Category::ScaleUp => "scale-up",
            Category::ScaleDown => "scale-down",
            Category::Failure => "failure",
            Category::Warning => "warning",
        }
    }
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn n(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 { format!("1 {one}") } else { format!("{count} {many}") }
}

/// `Deployment/shop/web` → `Deployment shop/web`.
fn object(path: &str) -> String {
    match path.split_once('/') {
        Some((kind, rest)) => format!("{kind} {rest}"),
        None => path.to_string(),
    }
}

fn scenario_sentence(d: &Value) -> String {
    if let Some(target) = d.get("scale").and_then(Value::as_str) {
        return format!("Scenario: {} set to {} replicas.", object(target), n(d, "replicas"));
    }
    if let Some(target) = d.get("ramp").and_then(Value::as_str) {
        return format!(
            "Scenario: {} ramps from {} to {} replicas over {}.",
            object(target),
            n(d, "from"),
            n(d, "to"),
            super::report::secs(n(d, "over") as f64)
        );
    }
    if let Some(kind) = d.get("create").and_then(Value::as_str) {
        return format!("Scenario: {kind} {} created.", s(d, "name"));
    }
    if let Some(target) = d.get("delete").and_then(Value::as_str) {
        return format!("Scenario: {} deleted.", object(target));
    }
    if let Some(fault) = d.get("fault") {
        let group = s(d, "group");
        return match s(fault, "type") {
            "stockOut" => format!(
                "Scenario: node group {group} is out of stock for {}: every launch asked for then fails.",
                super::report::secs(n(fault, "forSeconds") as f64)
            ),
            "failIncreaseSize" => format!("Scenario: the cloud refuses to grow node group {group}."),
            "partialFulfilment" => format!("Scenario: node group {group} delivers only part of each scale-up."),
            "neverRegister" => {
                format!(
                    "Scenario: {} of {group} will start but never join the cluster.",
                    plural(n(fault, "count") as usize, "node", "nodes")
                )
            }
            "failDeleteNodes" => format!("Scenario: the cloud fails to delete nodes of {group}."),
            "clear" => format!("Scenario: the faults of node group {group} end."),
            other => format!("Scenario: fault {other} on node group {group}."),
        };
    }
    if let Some(node) = d.get("annotate").and_then(Value::as_str) {
        let annotations: Vec<String> = d
            .get("annotations")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect())
            .unwrap_or_default();
        return format!("Scenario: node {node} annotated {}.", annotations.join(", "));
    }
    format!("Scenario: {d}")
}

/// The rows of a timeline, in time order.
pub fn rows(timeline: &[TimelineEntry], clock: impl Fn(f64) -> String) -> Vec<Row> {
    // Pods whose scale-up a loop triggered, by loop time.
    let mut triggered: HashMap<u64, usize> = HashMap::new();
    for e in timeline {
        if e.kind == "event" && s(&e.details, "reason") == "TriggeredScaleUp" {
            *triggered.entry(e.at.to_bits()).or_default() += 1;
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    // A pod autoscaler's run of steps in one direction: (row, from, last to, steps, last time).
    let mut runs: HashMap<String, (usize, i64, i64, usize, f64)> = HashMap::new();
    // Launch failures and removals of one group close together: (row, count, code, last time).
    let mut failed: HashMap<(String, &'static str), (usize, usize, String, f64)> = HashMap::new();
    // Removals of one group at one time: (row, nodes, reason).
    let mut removed: HashMap<(u64, String, String), (usize, Vec<String>)> = HashMap::new();
    // Warnings told per object kind and reason, at most three times.
    let mut warnings: HashMap<(String, String), usize> = HashMap::new();
    for line in super::events::lines(timeline) {
        let at = line["at"].as_f64().unwrap_or(0.0);
        let d = &line["details"];
        let push = |rows: &mut Vec<Row>, category, text| {
            rows.push(Row { at, category, text });
            rows.len() - 1
        };
        match line["kind"].as_str().unwrap_or("") {
            "scenario" => {
                push(&mut rows, Category::Scenario, scenario_sentence(d));
            }
            "podAutoscaler" => {
                let name = s(d, "autoscaler").to_string();
                let (from, to) = (n(d, "from"), n(d, "to"));
                let kind = match s(d, "kind") {
                    "WatermarkPodAutoscaler" => "WPA",
                    "HorizontalPodAutoscaler" => "HPA",
                    _ => "pod autoscaler",
                };
                let target = object(s(d, "target"));
                if let Some(run) = runs.get_mut(&name)
                    && at - run.4 <= 600.0
                    && (to > from) == (run.2 > run.1)
                    && run.2 == from
                {
                    run.2 = to;
                    run.3 += 1;
                    run.4 = at;
                    rows[run.0].text = format!(
                        "{kind} {name} scaled {target} from {} to {} replicas in {} steps, until {}.",
                        run.1,
                        to,
                        run.3,
                        clock(at)
                    );
                    continue;
                }
                let row = push(
                    &mut rows,
                    Category::PodAutoscaler,
                    format!("{kind} {name} scaled {target} from {from} to {to} replicas."),
                );
                runs.insert(name, (row, from, to, 1, at));
            }
            "scaleUp" => {
                let pods = triggered.get(&at.to_bits()).copied().unwrap_or(0);
                let why = if pods > 0 {
                    format!(" for {}", plural(pods, "pending pod", "pending pods"))
                } else {
                    String::new()
                };
                push(
                    &mut rows,
                    Category::ScaleUp,
                    format!(
                        "Scale-up: node group {} from {} to {} nodes (+{}){why}.",
                        s(d, "nodeGroup"),
                        n(d, "currentSize"),
                        n(d, "newSize"),
                        n(d, "delta")
                    ),
                );
            }
            "scaleUpFailed" => {
                push(
                    &mut rows,
                    Category::Failure,
                    format!("Scale-up of node group {} failed: {}.", s(d, "nodeGroup"), s(d, "error")),
                );
            }
            "scaleUpTimedOut" => {
                push(
                    &mut rows,
                    Category::Failure,
                    format!(
                        "{} of node group {} did not join within --max-node-provision-time; the group backs off.",
                        plural(n(d, "increase") as usize, "new node", "new nodes"),
                        s(d, "nodeGroup")
                    ),
                );
            }
            kind @ ("instanceFailed" | "instanceRemoved") => {
                let kind: &'static str = if kind == "instanceFailed" { "instanceFailed" } else { "instanceRemoved" };
                let group = s(d, "nodeGroup").to_string();
                let code = if kind == "instanceFailed" { s(d, "errorCode") } else { s(d, "reason") }.to_string();
                let key = (group.clone(), kind);
                let sentence = |count: usize, code: &str| {
                    if kind == "instanceFailed" {
                        format!(
                            "{} of node group {group} could not launch ({code}); the autoscaler backs the group off and tries another.",
                            plural(count, "new node", "new nodes")
                        )
                    } else {
                        format!(
                            "{} of node group {group} removed ({code}).",
                            plural(count, "failed instance", "failed instances")
                        )
                    }
                };
                if let Some(f) = failed.get_mut(&key)
                    && at - f.3 <= 120.0
                    && f.2 == code
                {
                    f.1 += 1;
                    f.3 = at;
                    rows[f.0].text = sentence(f.1, &code);
                    continue;
                }
                let row = push(&mut rows, Category::Failure, sentence(1, &code));
                failed.insert(key, (row, 1, code, at));
            }
            "nodeDeleted" => {
                let key = (at.to_bits(), s(d, "nodeGroup").to_string(), s(d, "reason").to_string());
                let node = s(d, "node").to_string();
                let sentence = |nodes: &[String]| {
                    format!(
                        "Scale-down: removed {} of node group {} ({}): {}.",
                        plural(nodes.len(), "node", "nodes"),
                        key.1,
                        if key.2.is_empty() { "unneeded" } else { key.2.as_str() },
                        nodes.join(", ")
                    )
                };
                if let Some((row, nodes)) = removed.get_mut(&key) {
                    nodes.push(node);
                    rows[*row].text = sentence(nodes);
                    continue;
                }
                let nodes = vec![node];
                let row = push(&mut rows, Category::ScaleDown, sentence(&nodes));
                removed.insert(key, (row, nodes));
            }
            "scaleDownFailed" => {
                push(
                    &mut rows,
                    Category::Failure,
                    format!("Scale-down of node {} failed: {}.", s(d, "node"), s(d, "error")),
                );
            }
            "scaleDownBlocked" => {
                let why = s(d, "why");
                push(
                    &mut rows,
                    Category::ScaleDown,
                    format!("Node {} ({}) is underused but stays: {why}.", s(d, "node"), s(d, "nodeGroup")),
                );
            }
            "event" if s(d, "type") == "Warning" => {
                let kind = s(&d["involvedObject"], "kind").to_string();
                let reason = s(d, "reason").to_string();
                let told = warnings.entry((kind.clone(), reason.clone())).or_default();
                *told += 1;
                if *told > 3 {
                    continue;
                }
                let o = &d["involvedObject"];
                let name = match o.get("namespace").and_then(Value::as_str) {
                    Some(ns) => format!("{ns}/{}", s(o, "name")),
                    None => s(o, "name").to_string(),
                };
                let count = n(d, "count");
                let repeated = if count > 1 {
                    format!(
                        " (×{count}, last at {})",
                        clock(timeline.iter().rev().find(|e| e.time == s(d, "lastTimestamp")).map_or(at, |e| e.at))
                    )
                } else {
                    String::new()
                };
                push(
                    &mut rows,
                    Category::Warning,
                    format!("Warning on {kind} {name}: {reason}: {}{repeated}.", s(d, "message").trim_end_matches('.')),
                );
            }
            _ => {}
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(at: f64, kind: &'static str, details: Value) -> TimelineEntry {
        TimelineEntry { time: format!("t{at}"), at, kind, details }
    }

    #[test]
    fn steps_of_a_pod_autoscaler_are_told_once_and_scale_ups_count_their_pods() {
        let timeline = vec![
            entry(0.0, "scenario", json!({"scale": "Deployment/shop/web", "replicas": 5})),
            entry(
                15.0,
                "podAutoscaler",
                json!({"autoscaler": "shop/web", "target": "Deployment/web", "from": 5, "to": 10}),
            ),
            entry(
                30.0,
                "podAutoscaler",
                json!({"autoscaler": "shop/web", "target": "Deployment/web", "from": 10, "to": 20}),
            ),
            entry(31.0, "scaleUp", json!({"nodeGroup": "general", "currentSize": 3, "newSize": 5, "delta": 2})),
            entry(
                31.0,
                "event",
                json!({"involvedObject": {"kind": "Pod", "namespace": "shop", "name": "a"}, "type": "Normal", "reason": "TriggeredScaleUp", "message": "m"}),
            ),
            entry(
                31.0,
                "event",
                json!({"involvedObject": {"kind": "Pod", "namespace": "shop", "name": "b"}, "type": "Normal", "reason": "TriggeredScaleUp", "message": "m"}),
            ),
            entry(
                40.0,
                "instanceFailed",
                json!({"nodeGroup": "spot", "instance": "i-1", "errorCode": "OutOfResources"}),
            ),
            entry(
                40.0,
                "instanceFailed",
                json!({"nodeGroup": "spot", "instance": "i-2", "errorCode": "OutOfResources"}),
            ),
            entry(50.0, "decision", json!({})),
        ];
        let rows = rows(&timeline, |at| format!("{at}"));
        let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Scenario: Deployment shop/web set to 5 replicas.",
                "pod autoscaler shop/web scaled Deployment web from 5 to 20 replicas in 2 steps, until 30.",
                "Scale-up: node group general from 3 to 5 nodes (+2) for 2 pending pods.",
                "2 new nodes of node group spot could not launch (OutOfResources); the autoscaler backs the group off and tries another.",
            ]
        );
    }
}
