//! The `plan` report for people: what scales up and why, which pods stay pending and why, which
//! nodes are unneeded, which are kept and why — short enough to read in a minute.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::core::plan::{Plan, ScaleUpResult};
use crate::podscaling::AutoscalerReport;
use crate::ports::EventType;

const LIST_LIMIT: usize = 8;

fn list(items: &[String]) -> String {
    if items.len() <= LIST_LIMIT {
        items.join(", ")
    } else {
        format!("{}, … and {} more", items[..LIST_LIMIT].join(", "), items.len() - LIST_LIMIT)
    }
}

fn percent(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

pub fn render(plan: &Plan, autoscalers: &[AutoscalerReport], unneeded_time: &str) -> String {
    let mut out = String::new();
    let c = &plan.cluster;
    let _ = writeln!(
        out,
        "Cluster: {} nodes ({} ready, {} unready, {} starting), {} pods, {} pending; {}.",
        c.nodes,
        c.ready_nodes,
        c.unready_nodes,
        c.not_started_nodes,
        c.pods,
        c.pending_pods,
        if c.healthy { "healthy" } else { "UNHEALTHY (too many unready nodes: no scaling)" }
    );
    if c.node_groups.is_empty() {
        let _ = writeln!(out, "Node groups: none configured (use --nodes and --cloud-config); nothing can scale.");
    } else {
        let _ = writeln!(out, "Node groups:");
        let width = c.node_groups.iter().map(|g| g.id.len()).max().unwrap_or(0);
        for g in &c.node_groups {
            let _ = writeln!(
                out,
                "  {:width$}  size {} (min {}, max {}), {} ready, {} upcoming{}; template from {}",
                g.id,
                g.target_size,
                g.min_size,
                g.max_size,
                g.ready,
                g.upcoming,
                if g.healthy { "" } else { ", UNHEALTHY" },
                g.template
            );
        }
    }

    if !autoscalers.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Pod autoscalers:");
        for a in autoscalers {
            let change = if a.desired_replicas != a.current_replicas {
                format!("scale {} -> {}", a.current_replicas, a.desired_replicas)
            } else {
                format!("stay at {}", a.current_replicas)
            };
            let _ = writeln!(
                out,
                "  {} {} ({}): {change}{}; metrics propose {}",
                a.kind,
                a.name,
                a.target,
                if a.dry_run { " (dry run: not applied)" } else { "" },
                a.recommended_replicas
            );
            for e in a.events.iter().filter(|e| e.event_type == EventType::Warning) {
                let _ = writeln!(out, "    Warning {}: {}", e.reason, e.message);
            }
        }
    }

    let up = &plan.scale_up;
    let _ = writeln!(out);
    match up.result {
        ScaleUpResult::Successful => {
            let _ = writeln!(out, "Scale-up: yes.");
            for i in &up.increases {
                let _ = writeln!(
                    out,
                    "  + {}: add {} node(s), {} -> {} (max {})",
                    i.node_group, i.delta, i.current_size, i.new_size, i.max_size
                );
            }
            if let Some(chosen) = &up.chosen_option {
                let others: Vec<String> = up
                    .options
                    .iter()
                    .map(|o| format!("{} ({} node(s) for {} pod(s))", o.node_group, o.node_count, o.pods.len()))
                    .collect();
                let _ = writeln!(out, "  Options: {}; the expander chose {chosen}.", others.join(", "));
            }
            if !up.pods_triggered.is_empty() {
                let _ =
                    writeln!(out, "  Triggered by {} pod(s): {}", up.pods_triggered.len(), list(&up.pods_triggered));
            }
        }
        other => {
            let _ = writeln!(out, "Scale-up: no ({other:?}): {}.", up.message);
        }
    }
    for e in &up.expander_events {
        let _ = writeln!(out, "  {} {}: {}", if e.warning { "Warning" } else { "Note" }, e.reason, e.message);
    }
    if !up.pods_remain_unschedulable.is_empty() {
        let _ = writeln!(out, "  Pods that stay pending ({}):", up.pods_remain_unschedulable.len());
        // Pods with the same reasons are listed together.
        let mut by_reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &up.pods_remain_unschedulable {
            let why: Vec<String> = if p.by_node_group.is_empty() {
                p.reasons.clone()
            } else {
                p.by_node_group.iter().map(|(g, r)| format!("{g}: {}", r.join(", "))).collect()
            };
            by_reasons.entry(why.join("; ")).or_default().push(p.pod.clone());
        }
        for (why, pods) in by_reasons {
            let _ = writeln!(out, "    {} — {why}", list(&pods));
        }
    }
    if !up.pods_await_evaluation.is_empty() {
        let _ = writeln!(
            out,
            "  Pods another node group could take, evaluated in the next loop ({}): {}",
            up.pods_await_evaluation.len(),
            list(&up.pods_await_evaluation)
        );
    }
    if !up.pods_fit_existing_nodes.is_empty() {
        let _ = writeln!(
            out,
            "  Pending pods that fit existing or upcoming nodes ({}): {}",
            up.pods_fit_existing_nodes.len(),
            list(&up.pods_fit_existing_nodes)
        );
    }
    if !up.pods_ignored.is_empty() {
        let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (pod, why) in &up.pods_ignored {
            by_reason.entry(why).or_default().push(pod.clone());
        }
        for (why, pods) in by_reason {
            let _ = writeln!(out, "  Not considered ({why}): {}", list(&pods));
        }
    }

    let down = &plan.scale_down;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Scale-down: {}{}",
        down.status.as_str(),
        if down.message.is_empty() { String::new() } else { format!(" — {}", down.message) }
    );
    if !down.unneeded.is_empty() {
        let _ = writeln!(out, "  Unneeded ({}), removed once unneeded for {unneeded_time}:", down.unneeded.len());
        for n in &down.unneeded {
            let what = if n.empty {
                "empty".to_string()
            } else {
                format!("moves {} pod(s){}", n.pods_to_move.len(), if n.risky { ", risky under PDBs" } else { "" })
            };
            let _ = writeln!(
                out,
                "    - {} ({}): utilization {} ({}), {what}",
                n.node,
                n.node_group,
                percent(n.utilization),
                n.utilization_detail.resource
            );
        }
    }
    if !down.unremovable.is_empty() {
        let _ = writeln!(out, "  Kept ({}):", down.unremovable.len());
        let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for n in &down.unremovable {
            let mut label = n.node.clone();
            if let (Some(pod), Some(why)) = (&n.blocking_pod, &n.blocking_reason) {
                label = format!("{label} [{pod}: {why}]");
            } else if let Some(u) = n.utilization {
                label = format!("{label} ({})", percent(u));
            }
            by_reason.entry(n.reason.as_str()).or_default().push(label);
        }
        for (reason, nodes) in by_reason {
            let _ = writeln!(out, "    {reason} ({}): {}", nodes.len(), list(&nodes));
        }
    }
    out
}
