//! From the metric-driven proposal to the desired replicas: stabilization windows and scaling
//! policies (`spec.behavior`), or the legacy rules when `behavior` is not set.

use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior};
use k8s_openapi::jiff::Timestamp;

use super::replica_calculator::sub;

/// A recorded change of the target's replicas (absolute value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleEvent {
    pub at: Timestamp,
    pub replica_change: i32,
    /// Older than the longest policy period when the last event was stored: its slot may be
    /// reused (upstream marks events, it never deletes them).
    pub outdated: bool,
}

/// What the controller remembers about one HPA between reconciles: upstream keeps the
/// unstabilized recommendations and the scale events in memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HpaState {
    recommendations: Vec<(Timestamp, i32)>,
    scale_up_events: Vec<ScaleEvent>,
    scale_down_events: Vec<ScaleEvent>,
    /// How to undo the last stored scale event if the rescale could not be applied.
    last_stored: Option<StoredEvent>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredEvent {
    up: bool,
    /// The direction's events before the store (marking included).
    previous: Vec<ScaleEvent>,
}

/// The scaling rules of both directions with the API server's defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Behavior {
    pub scale_up: Rules,
    pub scale_down: Rules,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rules {
    pub stabilization_window_seconds: i32,
    pub select_policy: String,
    pub policies: Vec<HPAScalingPolicy>,
}

fn policy(type_: &str, value: i32, period_seconds: i32) -> HPAScalingPolicy {
    HPAScalingPolicy { type_: type_.into(), value, period_seconds }
}

impl Behavior {
    /// The API server's defaulting of a set `behavior` (`GenerateHPAScaleUpRules` /
    /// `GenerateHPAScaleDownRules`), then the controller's: a scale-down window left unset takes
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub fn with_defaults(behavior: &HorizontalPodAutoscalerBehavior, downscale_stabilization: Duration) -> Behavior {
        let fill = |rules: Option<&HPAScalingRules>, window: i32, policies: Vec<HPAScalingPolicy>| Rules {
            stabilization_window_seconds: rules.and_then(|r| r.stabilization_window_seconds).unwrap_or(window),
            select_policy: rules.and_then(|r| r.select_policy.clone()).unwrap_or_else(|| "Max".into()),
            policies: rules.and_then(|r| r.policies.clone()).unwrap_or(policies),
        };
        let downscale_window = i32::try_from(downscale_stabilization.as_secs()).unwrap_or(i32::MAX);
        Behavior {
            scale_up: fill(behavior.scale_up.as_ref(), 0, vec![policy("Pods", 4, 15), policy("Percent", 100, 15)]),
            scale_down: fill(behavior.scale_down.as_ref(), downscale_window, vec![policy("Percent", 100, 15)]),
        }
    }
}

/// The outcome of normalization, with the conditions upstream sets on the way.
pub(crate) struct Normalized {
    pub desired: i32,
    /// `AbleToScale` reason and message (always `True`).
    pub able_reason: &'static str,
    pub able_message: &'static str,
    /// `ScalingLimited` status, reason and message.
    pub limited: bool,
    pub limited_reason: &'static str,
    pub limited_message: &'static str,
}

const READY_FOR_NEW_SCALE: (&str, &str) = ("ReadyForNewScale", "recommended size matches current size");
const WITHIN_RANGE: (&str, &str) = ("DesiredWithinRange", "the desired count is within the acceptable range");
const SCALE_UP_LIMIT: (&str, &str) =
    ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate");
const SCALE_DOWN_LIMIT: (&str, &str) =
    ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate");
const TOO_MANY: (&str, &str) = ("TooManyReplicas", "the desired replica count is more than the maximum replica count");
const TOO_FEW: (&str, &str) = ("TooFewReplicas", "the desired replica count is less than the minimum replica count");

impl HpaState {
    /// A freshly started controller: it remembers nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The unstabilized recommendations remembered, oldest slot first.
    pub fn recommendations(&self) -> &[(Timestamp, i32)] {
        &self.recommendations
    }

    pub fn scale_up_events(&self) -> &[ScaleEvent] {
        &self.scale_up_events
    }

    pub fn scale_down_events(&self) -> &[ScaleEvent] {
        &self.scale_down_events
    }

    /// On first sight of an HPA upstream records the current replicas as a recommendation, so
    /// that a restarted controller does not scale down inside the stabilization window. Upstream
    /// stamps it a moment before the same reconcile computes its window's cutoff, so with a
    /// window of `0s` it is already outside: stamped a nanosecond early here for the same effect.
    pub(crate) fn record_initial_recommendation(&mut self, current_replicas: i32, now: Timestamp) {
        if self.recommendations.is_empty() {
            self.recommendations.push((sub(now, Duration::from_nanos(1)), current_replicas));
        }
    }

    /// Legacy `normalizeDesiredReplicas` (no `behavior`): the highest recommendation of the
    /// downscale stabilization window, then at most `max(2 × current, 4)` and `[min, max]`.
    pub(crate) fn normalize_legacy(
        &mut self,
        current: i32,
        proposed: i32,
        min: i32,
        max: i32,
        window: Duration,
        now: Timestamp,
    ) -> Normalized {
        let cutoff = sub(now, window);
        let mut stabilized = proposed;
        let mut old_slot = None;
        for (i, (at, replicas)) in self.recommendations.iter().enumerate() {
            if *at < cutoff {
                old_slot = Some(i);
            } else if *replicas > stabilized {
                stabilized = *replicas;
            }
        }
        self.store_recommendation(old_slot, proposed, now);
        let (able_reason, able_message) = if stabilized != proposed {
            (
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation",
            )
        } else {
            READY_FOR_NEW_SCALE
        };

        let scale_up_limit = (2 * i64::from(current)).max(4).min(i64::from(i32::MAX)) as i32;
        let (maximum, limit) = if max > scale_up_limit { (scale_up_limit, SCALE_UP_LIMIT) } else { (max, TOO_MANY) };
        let (desired, (limited_reason, limited_message)) = if stabilized < min {
            (min, TOO_FEW)
        } else if stabilized > maximum {
            (maximum, limit)
        } else {
            (stabilized, WITHIN_RANGE)
        };
        Normalized {
            desired,
            able_reason,
            able_message,
            limited: desired != stabilized,
            limited_reason,
            limited_message,
        }
    }

    /// `normalizeDesiredReplicasWithBehaviors`: stabilize within the per-direction windows, then
    /// limit the change by the policies over the scale events of their periods.
    pub(crate) fn normalize_with_behavior(
        &mut self,
        behavior: &Behavior,
        current: i32,
        proposed: i32,
        min: i32,
        max: i32,
        now: Timestamp,
    ) -> Normalized {
        let stabilized = self.stabilize_with_behavior(behavior, current, proposed, now);
        let (able_reason, able_message) = if stabilized != proposed {
            if proposed >= current {
                (
                    "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation",
                )
            } else {
                (
                    "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation",
                )
            }
        } else {
            READY_FOR_NEW_SCALE
        };

        let mut result = (stabilized, WITHIN_RANGE);
        if stabilized > current {
            let limit = self.scale_up_limit(&behavior.scale_up, current, now).max(current);
            let (maximum, reason) = if max > limit { (limit, SCALE_UP_LIMIT) } else { (max, TOO_MANY) };
            if stabilized > maximum {
                result = (maximum, reason);
            }
        } else if stabilized < current {
            let limit = self.scale_down_limit(&behavior.scale_down, current, now).min(current);
            let (minimum, reason) = if min < limit { (limit, SCALE_DOWN_LIMIT) } else { (min, TOO_FEW) };
            if stabilized < minimum {
                result = (minimum, reason);
            }
        }
        let (desired, (limited_reason, limited_message)) = result;
        Normalized {
            desired,
            able_reason,
            able_message,
            limited: desired != stabilized,
            limited_reason,
            limited_message,
        }
    }

    /// The recommendation kept between the lowest of the scale-up window and the highest of the
    /// scale-down window (each bound including the new proposal). A recommendation exactly a
    /// window old is outside it.
    fn stabilize_with_behavior(&mut self, behavior: &Behavior, current: i32, proposed: i32, now: Timestamp) -> i32 {
        let window = |seconds: i32| Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
        let up_cutoff = sub(now, window(behavior.scale_up.stabilization_window_seconds));
        let down_cutoff = sub(now, window(behavior.scale_down.stabilization_window_seconds));
        let mut up_recommendation = proposed;
        let mut down_recommendation = proposed;
        let mut old_slot = None;
        for (i, (at, replicas)) in self.recommendations.iter().enumerate() {
            if *at > up_cutoff {
                up_recommendation = up_recommendation.min(*replicas);
            }
            if *at > down_cutoff {
                down_recommendation = down_recommendation.max(*replicas);
            }
            if *at < up_cutoff && *at < down_cutoff {
                old_slot = Some(i);
            }
        }
        let stabilized = current.max(up_recommendation).min(down_recommendation);
        self.store_recommendation(old_slot, proposed, now);
        stabilized
    }

    /// Upstream reuses the slot of the last recommendation found outside the windows.
    fn store_recommendation(&mut self, old_slot: Option<usize>, proposed: i32, now: Timestamp) {
        match old_slot {
            Some(i) => self.recommendations[i] = (now, proposed),
            None => self.recommendations.push((now, proposed)),
        }
    }

    /// `calculateScaleUpLimitWithScalingRules`: the most replicas the policies allow now.
    fn scale_up_limit(&self, rules: &Rules, current: i32, now: Timestamp) -> i32 {
        if rules.select_policy == "Disabled" {
            return current;
        }
        let min_change = rules.select_policy == "Min";
        let mut result = if min_change { i32::MAX } else { i32::MIN };
        for policy in &rules.policies {
            let start = self.period_start_replicas(policy, current, now);
            let proposed = match policy.type_.as_str() {
                "Pods" => start.saturating_add(policy.value),
                "Percent" => {
                    // Rounded up: a small percentage must still allow one more replica.
                    (f64::from(start) * (1.0 + f64::from(policy.value) / 100.0)).ceil() as i32
                }
                _ => continue,
            };
            result = if min_change { result.min(proposed) } else { result.max(proposed) };
        }
        result
    }

    /// `calculateScaleDownLimitWithBehaviors`: the fewest replicas the policies allow now.
    fn scale_down_limit(&self, rules: &Rules, current: i32, now: Timestamp) -> i32 {
        if rules.select_policy == "Disabled" {
            return current;
        }
        let min_change = rules.select_policy == "Min";
        let mut result = if min_change { i32::MIN } else { i32::MAX };
        for policy in &rules.policies {
            let start = self.period_start_replicas(policy, current, now);
            let proposed = match policy.type_.as_str() {
                "Pods" => start.saturating_sub(policy.value),
                // Truncated: the replicas that stay are rounded down, as upstream does.
                "Percent" => (f64::from(start) * (1.0 - f64::from(policy.value) / 100.0)) as i32,
                _ => continue,
            };
            result = if min_change { result.max(proposed) } else { result.min(proposed) };
        }
        result
    }

    /// The replicas at the start of the policy's period: current minus what was added plus what
    /// was removed by scale events strictly inside the period (an event exactly `periodSeconds`
    /// ago no longer counts).
    fn period_start_replicas(&self, policy: &HPAScalingPolicy, current: i32, now: Timestamp) -> i32 {
        let cutoff = sub(now, Duration::from_secs(u64::try_from(policy.period_seconds).unwrap_or(0)));
        let changed = |events: &[ScaleEvent]| -> i32 {
            events.iter().filter(|e| e.at > cutoff).fold(0i32, |sum, e| sum.saturating_add(e.replica_change))
        };
        current.saturating_sub(changed(&self.scale_up_events)).saturating_add(changed(&self.scale_down_events))
    }

    /// `storeScaleEvent`: remember a rescale for the policies (only when `behavior` is set). The
    /// slot of an event older than the direction's longest policy period is reused.
    pub(crate) fn store_scale_event(&mut self, behavior: &Behavior, previous_replicas: i32, new: i32, now: Timestamp) {
        let up = new > previous_replicas;
        let (rules, events) = if up {
            (&behavior.scale_up, &mut self.scale_up_events)
        } else {
            (&behavior.scale_down, &mut self.scale_down_events)
        };
        let previous = events.clone();
        let longest = rules.policies.iter().map(|p| p.period_seconds).max().unwrap_or(0).max(0);
        let cutoff = sub(now, Duration::from_secs(longest as u64));
        for event in events.iter_mut() {
            if event.at < cutoff {
                event.outdated = true;
            }
        }
        let new_event = ScaleEvent { at: now, replica_change: (new - previous_replicas).abs(), outdated: false };
        match events.iter().rposition(|e| e.outdated) {
            Some(index) => events[index] = new_event,
            None => events.push(new_event),
        }
        self.last_stored = Some(StoredEvent { up, previous });
    }

    /// Forgets the scale event stored by the last rescale (upstream stores it only once the
    /// scale update succeeded).
    pub fn forget_last_scale_event(&mut self) {
        let Some(stored) = self.last_stored.take() else { return };
        if stored.up {
            self.scale_up_events = stored.previous;
        } else {
            self.scale_down_events = stored.previous;
        }
    }

    pub(crate) fn clear_last_stored(&mut self) {
        self.last_stored = None;
    }
}
