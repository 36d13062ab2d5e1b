//! The WPA replica calculator: ready pods, watermarks, convergence and velocity limits.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;

use super::spec::ResolvedSpec;
use crate::hpa::metrics::Usage;
use crate::hpa::replica_calculator::{add, phase, pod_name, ready_condition, start_time, transition_time};

/// A replica proposal for one metric and where its value stands against the watermarks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Calculation {
    pub replicas: i32,
    /// The (adjusted) metric value, milli-units, truncated.
    pub utilization: i64,
    pub ready_replicas: i32,
    pub above: bool,
    pub below: bool,
}

/// A condition the calculation wants set (`ConvergeToWatermark`): (status, reason, message).
pub(crate) type ConvergeCondition = (bool, &'static str, &'static str);

const CONVERGE_HIGH: &str = "Allow downscaling to converge to the High Watermark";
const CONVERGE_LOW: &str = "Allow upscaling to converge to the Low Watermark";
const STABLE_REGIME_ONLY: &str = "Converging to Watermark only allowed in stable regime";
const UNSTABLE: &str = "Proposal could lead to an unstable regime";
const BETWEEN: &str = "Value between Watermarks";

/// `checkOwnerRef`: the pod belongs to the target (a ReplicaSet named `<target>-<hash>`, or
/// a StatefulSet named like the target). The label selector alone may be too broad.
pub(crate) fn owned_by_target(pod: &PodInfo, target: &str) -> bool {
    pod.owners().iter().any(|owner| {
        let main_owner = match owner.kind.as_str() {
            "ReplicaSet" => owner.name.rfind('-').map_or(owner.name.as_str(), |i| &owner.name[..i]),
            "StatefulSet" => owner.name.as_str(),
            _ => return false,
        };
        main_owner == target
    })
}

/// `getReadyPodsCount` (External metrics): pods of the target that are Running and Ready, or
/// still Pending with a readiness change less than `readinessDelaySeconds` ago (image pulls).
/// Returns (ready, pods of other owners or terminated).
pub(crate) fn ready_pods_count(
    pods: &[Arc<PodInfo>],
    target: &str,
    readiness_delay: Duration,
    now: Timestamp,
) -> Result<(i32, i32), String> {
    let mut tolerated = 0;
    let mut incorrect = 0;
    for pod in pods {
        if !owned_by_target(pod, target) || matches!(phase(pod), "Failed" | "Succeeded") {
            incorrect += 1;
            continue;
        }
        let (Some(condition), Some(_)) = (ready_condition(pod), start_time(pod)) else { continue };
        if pod.terminating {
            continue;
        }
        let running_ready = phase(pod) == "Running" && condition.is_true();
        let recently_pending = phase(pod) == "Pending" && add(transition_time(condition), readiness_delay) > now;
        if running_ready || recently_pending {
            tolerated += 1;
        }
    }
    if tolerated == 0 {
        return Err(format!("among the {} pods, none is ready. Skipping recommendation", pods.len()));
    }
    Ok((tolerated, incorrect))
}

/// The WPA's `groupPods` (Resource metrics): (ready pod names, ignored pod names). Failed and
/// Pending pods are ignored; for cpu, pods not ready, or that became ready within
/// `readinessDelaySeconds` of their start, are ignored too. Pods without a metric are neither.
pub(crate) fn group_pods<'a>(
    pods: &'a [Arc<PodInfo>],
    target: &str,
    metrics: &Usage<'_>,
    resource: &str,
    readiness_delay: Duration,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut ready = Vec::new();
    let mut ignored = Vec::new();
    for pod in pods {
        if !owned_by_target(pod, target) {
            continue;
        }
        let name = pod_name(pod);
        if matches!(phase(pod), "Failed" | "Pending") {
            ignored.push(name);
            continue;
        }
        if !metrics.contains_key(name) {
            continue;
        }
        if resource == "cpu" {
            let ignore = match (ready_condition(pod), start_time(pod)) {
                (Some(condition), Some(start)) => {
                    &*condition.status == "False" || add(start, readiness_delay) > transition_time(condition)
                }
                _ => true,
            };
            if ignore {
                ignored.push(name);
                continue;
            }
        }
        ready.push(name);
    }
    (ready, ignored)
}

pub(crate) struct Calculator<'a> {
    pub spec: &'a ResolvedSpec,
    /// `/scale` `status.replicas`.
    pub current: i32,
    /// The last `ConvergeToWatermark` condition a calculation asked for.
    pub converge_condition: Option<ConvergeCondition>,
}

impl Calculator<'_> {
    /// `getReplicaCount`: compare the value with the watermarks widened by the tolerance;
    /// above → Ceil, below → Floor (at least 1), between → keep (or converge).
    pub fn replica_count(&mut self, ready: i32, usage: f64, low_milli: i64, high_milli: i64) -> Calculation {
        let tolerance = self.spec.tolerance_milli;
        // Integer arithmetic, as upstream's `milli*tolerance/1000` on int64 values.
        let adjusted_high = (high_milli + high_milli * tolerance / 1000) as f64;
        let adjusted_low = (low_milli - low_milli * tolerance / 1000) as f64;
        let utilization = usage as i64;
        let ready_f = f64::from(ready);
        let (replicas, above, below) = if usage > adjusted_high {
            let proposal = (ready_f * usage / high_milli as f64).ceil() as i32;
            (self.adjust_for_upscale(proposal), true, false)
        } else if usage < adjusted_low {
            let proposal = ((ready_f * usage / low_milli as f64).floor() as i32).max(1);
            (self.adjust_for_downscale(proposal), false, true)
        } else {
            let lower = if high_milli == 0 {
                self.current
            } else {
                self.cap((ready_f / high_milli as f64 * usage).ceil() as i32)
            };
            let upper = if low_milli == 0 {
                self.current
            } else {
                self.cap((ready_f / low_milli as f64 * usage).floor() as i32)
            };
            (self.converge(lower, upper), false, false)
        };
        Calculation { replicas, utilization, ready_replicas: ready, above, below }
    }

    fn cap(&self, value: i32) -> i32 {
        let min = if self.spec.min_replicas > 0 { self.spec.min_replicas } else { 1 };
        value.max(min).min(self.spec.max_replicas)
    }

    /// Round up to a multiple of `replicaScalingAbsoluteModulo`.
    fn round_to_modulo(&self, replicas: i32) -> i32 {
        let modulo = self.spec.modulo;
        if modulo <= 0 {
            return replicas;
        }
        let remainder = replicas % modulo;
        if remainder > 0 { replicas + modulo - remainder } else { replicas }
    }

    fn adjust_for_upscale(&mut self, proposal: i32) -> i32 {
        let replicas = self.round_to_modulo(proposal).max(self.current);
        self.converge_condition = Some((false, CONVERGE_HIGH, STABLE_REGIME_ONLY));
        replicas
    }

    fn adjust_for_downscale(&mut self, proposal: i32) -> i32 {
        let replicas = self.round_to_modulo(proposal).min(self.current);
        self.converge_condition = Some((false, STABLE_REGIME_ONLY, STABLE_REGIME_ONLY));
        replicas
    }

    /// `tryToConvergeToWatermark`: between the watermarks, step by the modulo towards the
    /// configured watermark unless the estimate says it would leave the band.
    fn converge(&mut self, lower: i32, upper: i32) -> i32 {
        let step = self.spec.modulo;
        match self.spec.converge_towards.as_str() {
            "highwatermark" => {
                let proposal = (self.current - step).max(1);
                if proposal < lower {
                    self.converge_condition = Some((false, CONVERGE_HIGH, UNSTABLE));
                    return self.current;
                }
                self.converge_condition = Some((true, CONVERGE_HIGH, BETWEEN));
                proposal
            }
            "lowwatermark" => {
                let proposal = self.current + step;
                if proposal > upper {
                    self.converge_condition = Some((false, CONVERGE_LOW, UNSTABLE));
                    return self.current;
                }
                self.converge_condition = Some((true, CONVERGE_LOW, BETWEEN));
                proposal
            }
            _ => {
                self.converge_condition = Some((false, "Feature not enabled", BETWEEN));
                self.current
            }
        }
    }
}

/// `convertDesiredReplicasWithRules`: velocity limits (at least one replica either way,
/// conservative rounding) and `[minReplicas, maxReplicas]`. Returns (replicas, reason, message).
pub(crate) fn normalize(
    spec: &ResolvedSpec,
    current: i32,
    desired: i32,
    ready: i32,
) -> (i32, &'static str, &'static str) {
    let scale_down_limit = if spec.scale_down_limit_factor_value == 0 {
        current
    } else {
        let step = (spec.scale_down_limit_factor_milli as f64 / 1000.0 * f64::from(current) / 100.0).floor().max(1.0);
        (f64::from(current) - step) as i32
    };
    let mut reason = ("", "");
    let minimum = if spec.min_replicas == 0 {
        1
    } else if desired < scale_down_limit {
        reason = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate");
        let minimum = scale_down_limit.max(spec.min_replicas);
        // Never remove more than the ready pods allow.
        if ready < minimum && ready > 0 { current } else { minimum }
    } else {
        reason = ("TooFewReplicas", "the desired replica count is below the minimum replica count");
        spec.min_replicas
    };
    if desired < minimum {
        return (minimum, reason.0, reason.1);
    }

    let scale_up_limit = if spec.scale_up_limit_factor_value == 0 {
        current
    } else {
        let step = (spec.scale_up_limit_factor_milli as f64 / 1000.0 * f64::from(current) / 100.0).floor().max(1.0);
        (f64::from(current) + step) as i32
    };
    let (maximum, reason) = if desired > scale_up_limit {
        (
            scale_up_limit.min(spec.max_replicas),
            ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"),
        )
    } else {
        (spec.max_replicas, ("TooManyReplicas", "the desired replica count is above the maximum replica count"))
    };
    if desired > maximum {
        return (maximum, reason.0, reason.1);
    }
    (desired, "DesiredWithinRange", "the desired count is within the acceptable range")
}
