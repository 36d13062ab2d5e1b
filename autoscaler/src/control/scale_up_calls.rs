//! The scale-up's calls: upstream's scale-up orchestrator's `IncreaseSize` calls for a plan's
//! increases (one by one, or all at once under `--parallel-scale-up`), recorded in the registry
//! (requests to watch, failures to back off from) and reported as upstream's events.

use std::collections::BTreeMap;
use std::sync::Arc;

use cloudprovider::{CloudProviderError, NodeGroup};
use k8s_openapi::jiff::Timestamp;

use super::registry::Registry;
use super::{LoopReport, status_ref};
use crate::config::AutoscalingOptions;
use crate::core::CloudState;
use crate::core::plan::{GroupIncrease, ScaleUpPlan, ScaleUpResult};
use crate::ports::{Clock, Event, EventReason, EventType, ObjectRef};

/// Makes the plan's scale-up calls; true when at least one succeeded.
pub(super) async fn call_scale_up(
    scale_up: &ScaleUpPlan,
    cloud: &CloudState,
    options: &AutoscalingOptions,
    registry: &mut Registry,
    clock: &dyn Clock,
    now: Timestamp,
    report: &mut LoopReport,
) -> bool {
    let mut succeeded = false;
    let config_map = status_ref(options);
    // Upstream records these on its status ConfigMap (its log recorder).
    if scale_up.max_nodes_total_reached {
        report.events.push(Event {
            object: config_map.clone(),
            event_type: EventType::Warning,
            reason: EventReason::MaxNodesTotalReached,
            message: format!("Max total nodes in cluster reached: {}", options.max_nodes_total),
        });
    }
    for e in &scale_up.expander_events {
        report.events.push(Event {
            object: config_map.clone(),
            event_type: if e.warning { EventType::Warning } else { EventType::Normal },
            reason: EventReason::Passed(e.reason),
            message: e.message.clone(),
        });
    }
    if scale_up.result == ScaleUpResult::Successful {
        let mut done = Vec::new();
        let calls: Vec<(&GroupIncrease, Arc<dyn NodeGroup>)> = scale_up
            .increases
            .iter()
            .filter_map(|inc| cloud.handles.get(&inc.node_group).map(|h| (inc, h.clone())))
            .collect();
        let setting = |inc: &GroupIncrease| {
            format!(
                "Scale-up: setting group {} size to {} instead of {} (max: {})",
                inc.node_group, inc.new_size, inc.current_size, inc.max_size
            )
        };
        // Every call's event first, then the outcomes (either way the calls are made).
        for (inc, _) in &calls {
            report.events.push(Event {
                object: config_map.clone(),
                event_type: EventType::Normal,
                reason: EventReason::ScaledUpGroup,
                message: setting(inc),
            });
        }
        let results: Vec<(&GroupIncrease, Result<(), CloudProviderError>)> = if options.parallel_scale_up {
            // `--parallel-scale-up`: every group's IncreaseSize at once (balancing across groups).
            futures::future::join_all(
                calls.iter().map(|(inc, handle)| async move { (*inc, handle.increase_size(inc.delta).await) }),
            )
            .await
        } else {
            let mut results = Vec::new();
            for (inc, handle) in &calls {
                results.push((*inc, handle.increase_size(inc.delta).await));
            }
            results
        };
        for (inc, result) in results {
            match result {
                Ok(()) => {
                    let provision =
                        cloud.group(&inc.node_group).map_or(options.node_group_defaults.max_node_provision_time, |g| {
                            g.options.max_node_provision_time
                        });
                    registry.register_scale_up(&inc.node_group, inc.delta, provision, now);
                    report.scale_ups.push(inc.clone());
                    report.events.push(Event {
                        object: config_map.clone(),
                        event_type: EventType::Normal,
                        reason: EventReason::ScaledUpGroup,
                        message: format!("{} (setting group size succeeded)", setting(inc)),
                    });
                    done.push(format!(
                        "{{{} {}->{} (max: {})}}",
                        inc.node_group, inc.current_size, inc.new_size, inc.max_size
                    ));
                }
                Err(e) => {
                    registry.register_failed_scale_up(&inc.node_group, e.error_type(), &e.to_string(), now);
                    report.scale_up_failures.push((inc.node_group.clone(), e.to_string()));
                    report.events.push(Event {
                        object: config_map.clone(),
                        event_type: EventType::Warning,
                        reason: EventReason::FailedToScaleUpGroup,
                        message: format!("Scale-up failed for group {}: {e}", inc.node_group),
                    });
                }
            }
        }
        succeeded = !done.is_empty();
        if succeeded {
            report.scale_ups_called_at = Some(clock.now());
            for pod in &scale_up.pods_triggered {
                let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
                report.events.push(Event {
                    object: ObjectRef::pod(ns, name),
                    event_type: EventType::Normal,
                    reason: EventReason::TriggeredScaleUp,
                    message: format!("pod triggered scale-up: [{}]", done.join(" ")),
                });
            }
        }
    }
    for p in &scale_up.pods_remain_unschedulable {
        let (ns, name) = p.pod.split_once('/').unwrap_or(("default", &p.pod));
        let reasons: Vec<String> = p
            .by_node_group
            .values()
            .flatten()
            .fold(BTreeMap::new(), |mut m: BTreeMap<&String, usize>, r| {
                *m.entry(r).or_insert(0) += 1;
                m
            })
            .into_iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        let message = if reasons.is_empty() {
            format!("pod didn't trigger scale-up: {}", p.reasons.join(", "))
        } else {
            format!("pod didn't trigger scale-up: {}", reasons.join(", "))
        };
        report.events.push(Event {
            object: ObjectRef::pod(ns, name),
            event_type: EventType::Normal,
            reason: EventReason::NotTriggerScaleUp,
            message,
        });
    }
    succeeded
}
