//! Bounds, stabilization windows, scaling policies, the legacy path and the decision's status.
//!
//! The proposals come from an External metric with a per-pod target of 1: a queue of `n`
//! proposes `n` replicas (when not within tolerance of the current count).

use serde_json::{Value, json};

use super::test_support::*;
use super::{HpaConfig, HpaDecision, HpaOutcome, HpaState, reconcile_hpa};

fn queue_hpa(
    min: i32,
    max: i32,
    behavior: Option<Value>,
) -> k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler {
    let mut spec = json!({"minReplicas": min, "maxReplicas": max, "metrics": [{"type": "External", "external": {
        "metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "1"}}}]});
    if let Some(behavior) = behavior {
        spec["behavior"] = behavior;
    }
    hpa(spec)
}

fn step(
    hpa: &k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
    state: &mut HpaState,
    current: i32,
    wanted: i64,
    now: k8s_openapi::jiff::Timestamp,
) -> HpaDecision {
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue".into(), vec![wanted * 1000]);
    run(hpa, current, &[], &metrics, state, now)
}

#[test]
fn zero_replicas_disables_autoscaling() {
    let d = step(&queue_hpa(1, 10, None), &mut HpaState::new(), 0, 50, t(0));
    assert_eq!((d.outcome, d.desired_replicas, d.rescale), (HpaOutcome::ScalingDisabled, 0, false));
    assert_eq!(
        condition(&d, "ScalingActive"),
        ("False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
    );
}

#[test]
fn current_outside_bounds_goes_back_to_the_bound() {
    let d = step(&queue_hpa(2, 10, None), &mut HpaState::new(), 12, 12, t(0));
    assert_eq!((d.outcome, d.desired_replicas), (HpaOutcome::AboveMaxReplicas, 10));
    assert_eq!(d.events[0].message, "New size: 10; reason: Current number of replicas above Spec.MaxReplicas");
    let d = step(&queue_hpa(2, 10, None), &mut HpaState::new(), 1, 1, t(0));
    assert_eq!((d.outcome, d.desired_replicas), (HpaOutcome::BelowMinReplicas, 2));
    assert_eq!(d.events[0].message, "New size: 2; reason: Current number of replicas below Spec.MinReplicas");
}

#[test]
fn desired_above_max_is_limited_too_many_replicas() {
    let d = step(&queue_hpa(1, 5, Some(json!({}))), &mut HpaState::new(), 4, 10, t(0));
    assert_eq!(d.desired_replicas, 5);
    assert_eq!(
        condition(&d, "ScalingLimited"),
        ("True", "TooManyReplicas", "the desired replica count is more than the maximum replica count")
    );
}

#[test]
fn desired_below_min_is_limited_too_few_replicas() {
    let d = step(&queue_hpa(3, 10, Some(no_stabilization())), &mut HpaState::new(), 5, 1, t(0));
    assert_eq!(d.desired_replicas, 3);
    assert_eq!(
        condition(&d, "ScalingLimited"),
        ("True", "TooFewReplicas", "the desired replica count is less than the minimum replica count")
    );
}

#[test]
fn default_scale_up_policy_is_max_of_4_pods_and_100_percent_per_15s() {
    let hpa = queue_hpa(1, 100, Some(json!({})));
    let d = step(&hpa, &mut HpaState::new(), 1, 40, t(0));
    assert_eq!(d.desired_replicas, 5, "+4 pods beats +100 % from 1");
    assert_eq!(
        condition(&d, "ScalingLimited"),
        ("True", "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
    );
    let d = step(&hpa, &mut HpaState::new(), 10, 40, t(0));
    assert_eq!(d.desired_replicas, 20, "+100 % beats +4 pods from 10");
}

#[test]
fn scale_events_inside_the_period_count_against_the_limit() {
    let hpa = queue_hpa(1, 100, Some(json!({})));
    let mut state = HpaState::new();
    assert_eq!(step(&hpa, &mut state, 1, 40, t(0)).desired_replicas, 5);
    // 10 s later the +4 is inside the 15 s period: the period started at 1, so 5 is the limit.
    let d = step(&hpa, &mut state, 5, 40, t(10));
    assert_eq!((d.desired_replicas, d.rescale), (5, false));
    assert_eq!(condition(&d, "ScalingLimited").1, "ScaleUpLimit");
}

#[test]
fn scale_event_exactly_period_seconds_ago_is_outside_the_period() {
    let hpa = queue_hpa(1, 100, Some(json!({})));
    let mut state = HpaState::new();
    assert_eq!(step(&hpa, &mut state, 1, 40, t(0)).desired_replicas, 5);
    assert_eq!(step(&hpa, &mut state, 5, 40, t(14)).desired_replicas, 5, "1 s before the edge");
    // At exactly 15 s the event no longer counts: from 5, max(+4, +100 %) = 10.
    assert_eq!(step(&hpa, &mut state, 5, 40, t(15)).desired_replicas, 10);
}

fn percent_and_pods_down(select: &str) -> Value {
    json!({"scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": select, "policies": [
        {"type": "Percent", "value": 10, "periodSeconds": 60}, {"type": "Pods", "value": 4, "periodSeconds": 60}]}})
}

#[test]
fn scale_down_percent_policy_rounds_the_change_up() {
    // The docs' example: from 80, 10 % removes 8 (more than 4 pods); a period later, from 72,
    // 10 % is 7.2 and removes 8 again (64.8 replicas stay, truncated to 64).
    let hpa = queue_hpa(1, 100, Some(percent_and_pods_down("Max")));
    let mut state = HpaState::new();
    let d = step(&hpa, &mut state, 80, 10, t(0));
    assert_eq!(d.desired_replicas, 72);
    assert_eq!(condition(&d, "ScalingLimited").1, "ScaleDownLimit");
    let d = step(&hpa, &mut state, 72, 10, t(30));
    assert_eq!((d.desired_replicas, d.rescale), (72, false), "inside the 60 s period");
    let d = step(&hpa, &mut state, 72, 10, t(60));
    assert_eq!(d.desired_replicas, 64);
}

#[test]
fn select_policy_min_picks_the_smallest_change() {
    let hpa = queue_hpa(1, 100, Some(percent_and_pods_down("Min")));
    assert_eq!(step(&hpa, &mut HpaState::new(), 80, 10, t(0)).desired_replicas, 76);
}

#[test]
fn select_policy_disabled_forbids_that_direction() {
    let hpa =
        queue_hpa(1, 100, Some(json!({"scaleDown": {"selectPolicy": "Disabled", "stabilizationWindowSeconds": 0}})));
    let d = step(&hpa, &mut HpaState::new(), 10, 2, t(0));
    assert_eq!((d.desired_replicas, d.rescale), (10, false));
    assert_eq!(condition(&d, "ScalingLimited").1, "ScaleDownLimit");
    // Scale-up is unaffected.
    assert_eq!(step(&hpa, &mut HpaState::new(), 10, 15, t(0)).desired_replicas, 15);
}

#[test]
fn scale_down_stabilization_uses_highest_recent_recommendation() {
    let hpa = queue_hpa(1, 100, Some(json!({"scaleDown": {"stabilizationWindowSeconds": 60}})));
    let mut state = HpaState::new();
    assert_eq!(step(&hpa, &mut state, 10, 10, t(0)).desired_replicas, 10);
    let d = step(&hpa, &mut state, 10, 4, t(15));
    assert_eq!((d.desired_replicas, d.rescale), (10, false));
    assert_eq!(
        condition(&d, "AbleToScale"),
        (
            "True",
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent recommendation"
        )
    );
    assert_eq!(step(&hpa, &mut state, 10, 6, t(30)).desired_replicas, 10);
    // At t=61 the recommendations of t=0 have left the window: the highest left is 6.
    assert_eq!(step(&hpa, &mut state, 10, 5, t(61)).desired_replicas, 6);
}

#[test]
fn scale_up_stabilization_uses_lowest_recent_recommendation() {
    let hpa = queue_hpa(1, 100, Some(json!({"scaleUp": {"stabilizationWindowSeconds": 60}})));
    let mut state = HpaState::new();
    let d = step(&hpa, &mut state, 4, 8, t(0));
    assert_eq!((d.desired_replicas, d.rescale), (4, false));
    assert_eq!(condition(&d, "AbleToScale").1, "ScaleUpStabilized");
    assert_eq!(step(&hpa, &mut state, 4, 8, t(30)).desired_replicas, 4);
    // Once the first-sight recommendation (4) is out of the window, the lowest is 8.
    assert_eq!(step(&hpa, &mut state, 4, 8, t(60)).desired_replicas, 8);
}

#[test]
fn first_reconcile_does_not_scale_down_inside_stabilization_window() {
    // A freshly started controller records the current 10 replicas as a recommendation, so the
    // default 300 s scale-down window holds 10 until that record is 300 s old.
    let hpa = queue_hpa(1, 100, Some(json!({})));
    let mut state = HpaState::new();
    let d = step(&hpa, &mut state, 10, 2, t(0));
    assert_eq!((d.desired_replicas, d.recommended_replicas), (10, 2));
    let (at, replicas) = state.recommendations()[0];
    assert_eq!(replicas, 10);
    assert!(at < t(0) && at > t(-1), "stamped just before the reconcile: {at}");
    for s in (15..300).step_by(15) {
        assert_eq!(step(&hpa, &mut state, 10, 2, t(s)).desired_replicas, 10, "at t={s}");
    }
    assert_eq!(step(&hpa, &mut state, 10, 2, t(300)).desired_replicas, 2);
}

#[test]
fn legacy_path_without_behavior_limits_scale_up_to_twice_current_or_four() {
    let hpa = queue_hpa(1, 100, None);
    let d = step(&hpa, &mut HpaState::new(), 1, 10, t(0));
    assert_eq!(d.desired_replicas, 4);
    assert_eq!(condition(&d, "ScalingLimited").1, "ScaleUpLimit");
    assert_eq!(step(&hpa, &mut HpaState::new(), 3, 10, t(0)).desired_replicas, 6);
    // No per-period memory: right after a scale-up the next one is allowed again.
    let mut state = HpaState::new();
    assert_eq!(step(&hpa, &mut state, 3, 20, t(0)).desired_replicas, 6);
    assert_eq!(step(&hpa, &mut state, 6, 20, t(1)).desired_replicas, 12);
    assert!(state.scale_up_events().is_empty());
    let capped = queue_hpa(1, 5, None);
    assert_eq!(condition(&step(&capped, &mut HpaState::new(), 3, 10, t(0)), "ScalingLimited").1, "TooManyReplicas");
}

#[test]
fn legacy_downscale_window_includes_its_edge() {
    // Without behavior, a recommendation exactly 300 s old is still inside the window.
    let hpa = queue_hpa(1, 100, None);
    let mut state = HpaState::new();
    assert_eq!(step(&hpa, &mut state, 10, 10, t(0)).desired_replicas, 10);
    assert_eq!(step(&hpa, &mut state, 10, 2, t(300)).desired_replicas, 10);
    assert_eq!(step(&hpa, &mut state, 10, 2, t(301)).desired_replicas, 2);
}

#[test]
fn legacy_zero_downscale_window_does_not_hold_the_current_count_on_first_reconcile() {
    // `--horizontal-pod-autoscaler-downscale-stabilization=0s` and no behavior: the first
    // reconcile of a freshly started controller scales down at once, as kube-controller-manager
    // does (its initial record is older than the zero-width window).
    let hpa = queue_hpa(1, 100, None);
    let config = HpaConfig { downscale_stabilization: std::time::Duration::ZERO, ..HpaConfig::default() };
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue".into(), vec![2000]);
    let mut state = HpaState::new();
    let d = reconcile_hpa(&hpa, &target(10), &[], &metrics, &config, &mut state, t(0));
    assert_eq!((d.recommended_replicas, d.desired_replicas), (2, 2));
}

#[test]
fn rescale_failed_reports_and_forgets_the_scale_event() {
    let hpa = queue_hpa(1, 100, Some(json!({})));
    let mut state = HpaState::new();
    let mut d = step(&hpa, &mut state, 1, 40, t(0));
    assert_eq!(state.scale_up_events().len(), 1);
    d.rescale_failed(&mut state, "conflict", t(0));
    assert!(state.scale_up_events().is_empty());
    assert_eq!((d.outcome, d.rescale, d.desired_replicas), (HpaOutcome::RescaleFailed, false, 1));
    let failed = d.events.last().unwrap();
    assert_eq!(
        (failed.reason, failed.message.as_str()),
        ("FailedRescale", "New size: 5; reason: external metric queue(nil) above target; error: conflict")
    );
    assert_eq!(condition(&d, "AbleToScale").1, "FailedUpdateScale");
    // Without the event, the next reconcile may scale from 1 again by the full +4.
    assert_eq!(step(&hpa, &mut state, 1, 40, t(5)).desired_replicas, 5);
}

#[test]
fn status_and_condition_transitions_follow_upstream() {
    let mut hpa = queue_hpa(1, 100, Some(json!({})));
    hpa.status = Some(serde_json::from_value(json!({"desiredReplicas": 3, "currentReplicas": 3, "conditions": [
        {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "lastTransitionTime": "2023-01-01T00:00:00Z"}
    ]})).unwrap());
    let d = step(&hpa, &mut HpaState::new(), 3, 6, t(0));
    // AbleToScale stayed True: its transition time is kept; the new conditions start now.
    let able = d.conditions.iter().find(|c| c.type_ == "AbleToScale").unwrap();
    assert_eq!(able.last_transition_time.as_ref().unwrap().0.to_string(), "2023-01-01T00:00:00Z");
    assert_eq!(able.reason.as_deref(), Some("SucceededRescale"));
    let active = d.conditions.iter().find(|c| c.type_ == "ScalingActive").unwrap();
    assert_eq!(active.last_transition_time.as_ref().unwrap().0, t(0));
    let status = d.status(hpa.status.as_ref(), t(0));
    assert_eq!((status.current_replicas, status.desired_replicas), (Some(3), 6));
    assert_eq!(status.last_scale_time.unwrap().0, t(0));
}
