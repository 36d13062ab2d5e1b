//! The Watermark Pod Autoscaler's documented behaviour.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::hpa::test_support::{FakeMetrics, arcs, pod, pods, t, target, with_phase, with_readiness};

/// A WPA scaling Deployment `app` in `default` on the External metric `queue`.
fn wpa(extra: Value) -> WatermarkPodAutoscaler {
    let mut spec = json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
        "minReplicas": 1, "maxReplicas": 50,
        "metrics": [queue_metric("400m", "150m")],
    });
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    serde_json::from_value(json!({"apiVersion": "datadoghq.com/v1alpha1", "kind": "WatermarkPodAutoscaler",
        "metadata": {"name": "app", "namespace": "default"}, "spec": spec}))
    .unwrap()
}

fn queue_metric(high: &str, low: &str) -> Value {
    json!({"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"service": "billing"}},
        "highWatermark": high, "lowWatermark": low}})
}

/// Last scaled an hour ago: no forbidden window applies.
fn settled() -> WpaState {
    WpaState { status: WatermarkPodAutoscalerStatus { last_scale_time: Some(Time(t(-3600))), ..Default::default() } }
}

fn queue(values: &[i64]) -> FakeMetrics {
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue".into(), values.to_vec());
    metrics
}

fn run(
    wpa: &WatermarkPodAutoscaler,
    pods: &[Arc<simulator::PodInfo>],
    value: i64,
    state: &mut WpaState,
    now: Timestamp,
) -> WpaDecision {
    let replicas = i32::try_from(pods.len()).unwrap();
    reconcile_wpa(wpa, &target(replicas), pods, &queue(&[value]), state, now)
}

fn condition<'a>(d: &'a WpaDecision, type_: &str) -> (&'a str, &'a str) {
    let c = d.status.conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_}"));
    (c.status.as_str(), c.reason.as_deref().unwrap_or(""))
}

#[test]
fn within_watermarks_no_action() {
    // 300m between 150m and 400m (tolerance 10 %): keep 10.
    let d = run(&wpa(json!({})), &pods(10, "1"), 300, &mut settled(), t(0));
    assert_eq!((d.outcome, d.proposed_replicas, d.desired_replicas, d.rescale), (WpaOutcome::Computed, 10, 10, false));
    assert_eq!(condition(&d, "AboveHighWatermark"), ("False", "Value above High Watermark"));
    assert_eq!(condition(&d, "BelowLowWatermark").0, "False");
    assert_eq!(d.events[0].reason, "NotScaling");
    assert_eq!(
        d.events[0].message,
        "Decided not to scale Deployment/default/app to 10 (last scale time was 2023-11-14 21:13:20 +0000 UTC )"
    );
}

#[test]
fn tolerance_widens_the_watermarks() {
    // 420m is above 400m but within 400m + 10 %: no action; at 1 % tolerance it scales up.
    let d = run(&wpa(json!({})), &pods(10, "1"), 420, &mut settled(), t(0));
    assert_eq!(d.proposed_replicas, 10);
    let d = run(&wpa(json!({"tolerance": "0.01"})), &pods(10, "1"), 420, &mut settled(), t(0));
    assert_eq!(d.proposed_replicas, 11, "ceil(10 × 420 / 400)");
}

#[test]
fn above_high_watermark_scales_up_with_ceil() {
    let d = run(&wpa(json!({})), &pods(10, "1"), 600, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas, d.rescale), (15, 15, true));
    assert!(d.applies());
    assert_eq!(condition(&d, "AboveHighWatermark").0, "True");
    assert_eq!(d.events[0].message, "New size: 15; reason: queue{map[service:billing]} above target");
    assert_eq!(d.status.last_scale_time.as_ref().unwrap().0, t(0));
    assert_eq!(d.status.scaling_events_count, 1);
    assert_eq!(d.status.current_metrics[0].external.as_ref().unwrap().current_value.0, "600m");
}

#[test]
fn below_low_watermark_scales_down_with_floor() {
    // floor(10 × 100 / 150) = 6, capped by the default 20 % scale-down limit at 8.
    let d = run(&wpa(json!({})), &pods(10, "1"), 100, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (6, 8));
    assert_eq!(condition(&d, "ScalingLimited"), ("True", "ScaleDownLimit"));
    assert_eq!(condition(&d, "BelowLowWatermark").0, "True");
    let d = run(&wpa(json!({"scaleDownLimitFactor": 50})), &pods(10, "1"), 100, &mut settled(), t(0));
    assert_eq!(d.desired_replicas, 6);
    assert_eq!(d.events[0].message, "New size: 6; reason: All metrics below target");
}

#[test]
fn velocity_limits_round_conservatively() {
    // The README: with 29 %, from 10 a recommendation of 13 gives 12 and one of 7 gives 8.
    let spec = json!({"scaleUpLimitFactor": 29, "scaleDownLimitFactor": 29, "tolerance": "0.01"});
    let d = run(&wpa(spec.clone()), &pods(10, "1"), 520, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (13, 12));
    assert_eq!(condition(&d, "ScalingLimited"), ("True", "ScaleUpLimit"));
    let d = run(&wpa(spec), &pods(10, "1"), 110, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (7, 8));
}

#[test]
fn velocity_limits_allow_at_least_one_replica() {
    // 50 % of 1 replica and 20 % of 3 round down to zero: one replica is allowed anyway.
    let d = run(&wpa(json!({})), &pods(1, "1"), 4000, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (10, 2));
    let d = run(&wpa(json!({})), &pods(3, "1"), 10, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (1, 2));
    // A factor of 0 forbids the direction.
    let d = run(&wpa(json!({"scaleUpLimitFactor": 0})), &pods(3, "1"), 4000, &mut settled(), t(0));
    assert_eq!((d.desired_replicas, d.rescale), (3, false));
}

#[test]
fn min_and_max_take_precedence() {
    let d = run(&wpa(json!({"maxReplicas": 12})), &pods(10, "1"), 600, &mut settled(), t(0));
    assert_eq!(d.desired_replicas, 12);
    assert_eq!(condition(&d, "ScalingLimited"), ("True", "TooManyReplicas"));
    let d = run(&wpa(json!({"minReplicas": 9, "scaleDownLimitFactor": 90})), &pods(10, "1"), 10, &mut settled(), t(0));
    assert_eq!(d.desired_replicas, 9);
    // A target outside the bounds goes back to them, whatever the metric says.
    let d = run(&wpa(json!({"maxReplicas": 8})), &pods(10, "1"), 300, &mut settled(), t(0));
    assert_eq!((d.outcome, d.desired_replicas), (WpaOutcome::AboveMaxReplicas, 8));
    assert_eq!(d.events[0].message, "New size: 8; reason: Current number of replicas above Spec.MaxReplicas");
}

#[test]
fn forbidden_windows_follow_any_scaling_event() {
    let spec = wpa(json!({}));
    let mut state = settled();
    // A downscale at t=0 …
    assert_eq!(run(&spec, &pods(10, "1"), 100, &mut state, t(0)).desired_replicas, 8);
    // … forbids an upscale for 60 s and another downscale for 300 s.
    let d = run(&spec, &pods(8, "1"), 600, &mut state, t(59));
    assert_eq!((d.desired_replicas, d.rescale), (8, false));
    assert_eq!(condition(&d, "AbleToScale"), ("False", "BackoffBoth"));
    assert!(run(&spec, &pods(8, "1"), 600, &mut state.clone(), t(60)).rescale, "the upscale window ends at 60 s");
    let d = run(&spec, &pods(8, "1"), 100, &mut state, t(299));
    assert_eq!((d.rescale, condition(&d, "AbleToScale").1), (false, "BackoffDownscale"));
    assert!(run(&spec, &pods(8, "1"), 100, &mut state, t(300)).rescale, "the downscale window ends at 300 s");
}

#[test]
fn first_reconcile_without_last_scale_time_scales_at_once() {
    // No lastScaleTime: neither windows nor delays apply, and upstream even "rescales" to the
    // same count, which records lastScaleTime.
    let d =
        run(&wpa(json!({"upscaleDelayAboveWatermarkSeconds": 60})), &pods(10, "1"), 600, &mut WpaState::new(), t(0));
    assert_eq!((d.desired_replicas, d.rescale), (15, true));
    let d = run(&wpa(json!({})), &pods(10, "1"), 300, &mut WpaState::new(), t(0));
    assert_eq!((d.desired_replicas, d.rescale), (10, true));
    assert_eq!(d.events[0].message, "New size: 10; reason: ");
}

#[test]
fn upscale_waits_for_the_delay_above_watermark() {
    let spec = wpa(json!({"upscaleDelayAboveWatermarkSeconds": 30}));
    let mut state = settled();
    assert!(!run(&spec, &pods(10, "1"), 600, &mut state, t(0)).rescale);
    assert!(!run(&spec, &pods(10, "1"), 600, &mut state, t(15)).rescale);
    // Back within bounds at t=20: the clock restarts at t=25.
    run(&spec, &pods(10, "1"), 300, &mut state, t(20));
    assert!(!run(&spec, &pods(10, "1"), 600, &mut state, t(25)).rescale);
    assert!(!run(&spec, &pods(10, "1"), 600, &mut state, t(54)).rescale);
    let d = run(&spec, &pods(10, "1"), 600, &mut state, t(55));
    assert_eq!((d.rescale, d.desired_replicas), (true, 15));
}

#[test]
fn downscale_waits_for_the_delay_below_watermark() {
    let spec = wpa(json!({"downscaleDelayBelowWatermarkSeconds": 120}));
    let mut state = settled();
    assert!(!run(&spec, &pods(10, "1"), 100, &mut state, t(0)).rescale);
    assert!(!run(&spec, &pods(10, "1"), 100, &mut state, t(119)).rescale);
    assert_eq!(run(&spec, &pods(10, "1"), 100, &mut state, t(120)).desired_replicas, 8);
}

#[test]
fn delays_or_across_metrics() {
    // The README's case: M1 above [t0, t40], M2 above [t30, t60], 60 s delay: the OR has been
    // above for 60 s at t60.
    let two = wpa(json!({"upscaleDelayAboveWatermarkSeconds": 60, "metrics": [queue_metric("400m", "150m"),
        {"type": "External", "external": {"metricName": "latency", "metricSelector": {"matchLabels": {}},
            "highWatermark": "400m", "lowWatermark": "150m"}}]}));
    let mut state = settled();
    let values = |m1: i64, m2: i64| {
        let mut metrics = queue(&[m1]);
        metrics.external.insert("latency".into(), vec![m2]);
        metrics
    };
    let step = |state: &mut WpaState, m1, m2, s| {
        reconcile_wpa(&two, &target(10), &pods(10, "1"), &values(m1, m2), state, t(s))
    };
    assert!(!step(&mut state, 600, 300, 0).rescale);
    assert!(!step(&mut state, 600, 600, 30).rescale);
    assert!(!step(&mut state, 300, 600, 45).rescale);
    let d = step(&mut state, 300, 600, 60);
    assert_eq!((d.rescale, d.desired_replicas), (true, 15));
}

#[test]
fn dry_run_decides_but_does_not_apply() {
    let mut state = settled();
    let d = run(&wpa(json!({"dryRun": true})), &pods(10, "1"), 600, &mut state, t(0));
    assert_eq!((d.rescale, d.dry_run, d.applies(), d.desired_replicas), (true, true, false, 15));
    assert_eq!(condition(&d, "DryRun"), ("True", "DryRun mode enabled"));
    assert!(!d.events.iter().any(|e| e.reason == "Scaling"));
    // Upstream records the inhibited scale: the forbidden windows apply in dry run too.
    assert_eq!((d.status.desired_replicas, d.status.last_scale_time.as_ref().unwrap().0), (15, t(0)));
    assert!(!run(&wpa(json!({"dryRun": true})), &pods(10, "1"), 600, &mut state, t(30)).rescale);
}

#[test]
fn average_algorithm_divides_by_ready_replicas() {
    // 1000 requests/s over 5 ready pods is 200 per pod against 100: ceil(1000 / 100) = 10.
    let spec = wpa(json!({"algorithm": "average", "scaleUpLimitFactor": 100,
        "metrics": [queue_metric("100", "50")]}));
    let d = run(&spec, &pods(5, "1"), 1_000_000, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (10, 10));
    assert_eq!(d.status.current_metrics[0].external.as_ref().unwrap().current_value.0, "200");
    // The absolute algorithm would multiply the total by the replicas.
    let absolute = wpa(json!({"metrics": [queue_metric("100", "50")], "maxReplicas": 1000}));
    assert_eq!(run(&absolute, &pods(5, "1"), 1_000_000, &mut settled(), t(0)).proposed_replicas, 50);
}

#[test]
fn readiness_delay_tolerates_recently_pending_pods() {
    let mut list: Vec<Pod> = (0..4).map(|i| pod(&format!("p{i}"), "1")).collect();
    list.push(with_readiness(with_phase(pod("p4", "1"), "Pending"), t(-10), "False", t(-10)));
    let list = arcs(list);
    // Without a delay the pending pod is not counted: ceil(4 × 600 / 400) = 6.
    assert_eq!(run(&wpa(json!({})), &list, 600, &mut settled(), t(0)).proposed_replicas, 6);
    // With 30 s it is (pending for 10 s): ceil(5 × 600 / 400) = 8.
    assert_eq!(run(&wpa(json!({"readinessDelaySeconds": 30})), &list, 600, &mut settled(), t(0)).proposed_replicas, 8);
}

#[test]
fn min_available_replica_percentage_blocks_scaling() {
    let mut list: Vec<Pod> = (0..6).map(|i| pod(&format!("p{i}"), "1")).collect();
    list.extend((6..10).map(|i| with_readiness(pod(&format!("p{i}"), "1"), t(-60), "False", t(-60))));
    let spec = wpa(json!({"minAvailableReplicaPercentage": 70}));
    let d = run(&spec, &arcs(list), 600, &mut settled(), t(0));
    assert_eq!((d.outcome, d.rescale), (WpaOutcome::MetricsFailed, false));
    assert_eq!(d.events[0].message, "60 % of the pods are unready, will not autoscale default/app");
    assert_eq!(
        d.events[1].message,
        "failed to compute replicas based on external metric queue: 60 % of the pods are unready, will not autoscale default/app"
    );
    assert_eq!(condition(&d, "ScalingActive"), ("False", "FailedGetExternalMetric"));
}

#[test]
fn pods_of_other_workloads_are_not_counted() {
    let mut list: Vec<Pod> = (0..4).map(|i| pod(&format!("p{i}"), "1")).collect();
    list.push(simulator::testing::with_owner(pod("other", "1"), "ReplicaSet", "other-app-77f9"));
    assert_eq!(run(&wpa(json!({})), &arcs(list), 600, &mut settled(), t(0)).proposed_replicas, 6);
}

#[test]
fn zero_value_is_not_trusted_unless_tolerated() {
    let d = run(&wpa(json!({})), &pods(10, "1"), 0, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.rescale), (10, false));
    let d = run(&wpa(json!({"tolerateZero": true})), &pods(10, "1"), 0, &mut settled(), t(0));
    assert_eq!((d.proposed_replicas, d.desired_replicas), (1, 8));
}

#[test]
fn converge_towards_high_watermark_steps_down_between_watermarks() {
    // 300m with 10 replicas: 9 replicas would still stay under 400m (lower bound ceil(7.5) = 8).
    let d = run(&wpa(json!({"convergeTowardsWatermark": "highwatermark"})), &pods(10, "1"), 300, &mut settled(), t(0));
    assert_eq!((d.desired_replicas, d.rescale), (9, true));
    assert_eq!(d.rescale_reason, "Metric within watermarks, attempting to scale to converge towards watermark");
    assert_eq!(condition(&d, "ConvergeToWatermark"), ("True", "Allow downscaling to converge to the High Watermark"));
    // 390m: 9 replicas would go above (lower bound 10): stay.
    let d = run(&wpa(json!({"convergeTowardsWatermark": "highwatermark"})), &pods(10, "1"), 390, &mut settled(), t(0));
    assert_eq!(d.desired_replicas, 10);
}

#[test]
fn replica_scaling_absolute_modulo_rounds_up_changes() {
    let d = run(
        &wpa(json!({"replicaScalingAbsoluteModulo": 4, "scaleUpLimitFactor": 100})),
        &pods(8, "1"),
        600,
        &mut settled(),
        t(0),
    );
    assert_eq!(d.proposed_replicas, 12, "ceil(8 × 1.5) = 12 is already a multiple of 4");
    let d = run(
        &wpa(json!({"replicaScalingAbsoluteModulo": 5, "scaleUpLimitFactor": 100})),
        &pods(8, "1"),
        600,
        &mut settled(),
        t(0),
    );
    assert_eq!(d.proposed_replicas, 15);
}

#[test]
fn invalid_spec_fails_the_spec_check() {
    let bad =
        wpa(json!({"metrics": [{"type": "External", "external": {"metricName": "queue", "highWatermark": "1"}}]}));
    let d = run(&bad, &pods(3, "1"), 600, &mut settled(), t(0));
    assert_eq!(d.outcome, WpaOutcome::InvalidSpec);
    assert_eq!(condition(&d, "AbleToScale"), ("False", "FailedSpecCheck"));
    assert_eq!(d.events[0].message, "missing Labels for the External metric queue");
    let inverted = wpa(json!({"metrics": [queue_metric("100m", "200m")]}));
    assert_eq!(
        run(&inverted, &pods(3, "1"), 600, &mut settled(), t(0)).events[0].message,
        "low WaterMark of External metric queue{map[service:billing]} has to be strictly inferior to the High Watermark"
    );
}

#[test]
fn resource_metric_ignores_pods_ready_within_the_readiness_delay_of_their_start() {
    let metric = json!({"type": "Resource", "resource": {"name": "cpu", "metricSelector": {"matchLabels": {"app": "app"}},
        "highWatermark": "400m", "lowWatermark": "150m"}});
    let spec = wpa(json!({"metrics": [metric], "readinessDelaySeconds": 60}));
    // p0 and p1 became ready 100 s after their start; p2 started 30 s ago and became ready
    // 10 s later: it is ignored (and so is its metric).
    let settled_pod = |name| with_readiness(pod(name, "1"), t(-3600), "True", t(-3500));
    let list = arcs(vec![settled_pod("p0"), settled_pod("p1"), with_readiness(pod("p2", "1"), t(-30), "True", t(-20))]);
    let metrics = FakeMetrics::cpu(&[("p0", 300), ("p1", 300), ("p2", 3000)], t(0));
    let d = reconcile_wpa(&spec, &target(3), &list, &metrics, &mut settled(), t(0));
    // Absolute: the sum of the ready pods (600m) against the watermarks: 2 × 600 / 400 → 3.
    assert_eq!((d.proposed_replicas, d.desired_replicas, d.rescale), (3, 3, false));
    assert_eq!(d.status.current_metrics[0].resource.as_ref().unwrap().current_average_value.0, "600m");
}

#[test]
fn wpa_objects_round_trip_through_json() {
    let original = wpa(json!({"tolerance": "0.01", "dryRun": true, "downscaleForbiddenWindowSeconds": 60}));
    let text = serde_json::to_value(&original).unwrap();
    assert_eq!(text["spec"]["tolerance"], "0.01");
    assert_eq!(text["spec"]["metrics"][0]["external"]["highWatermark"], "400m");
    assert!(text["spec"].get("upscaleForbiddenWindowSeconds").is_none());
    assert_eq!(serde_json::from_value::<WatermarkPodAutoscaler>(text).unwrap(), original);
}

#[test]
fn failed_rescale_keeps_the_previous_scale_time() {
    let mut state = settled();
    let mut d = run(&wpa(json!({})), &pods(10, "1"), 600, &mut state, t(0));
    assert!(d.applies());
    d.rescale_failed(&mut state, "conflict", t(0));
    assert_eq!((d.outcome, d.rescale, d.desired_replicas), (WpaOutcome::RescaleFailed, false, 10));
    let failed = d.events.last().unwrap();
    assert_eq!(
        (failed.reason, failed.message.as_str()),
        ("FailedScale", "New size: 15; reason: queue{map[service:billing]} above target; error: conflict")
    );
    assert_eq!(condition(&d, "AbleToScale"), ("False", "FailedScale"));
    assert_eq!(state.status.last_scale_time.as_ref().unwrap().0, t(-3600));
    assert_eq!((state.status.scaling_events_count, state.status.current_replicas), (0, 10));
    // No forbidden window starts: the next reconcile scales right away.
    assert!(run(&wpa(json!({})), &pods(10, "1"), 600, &mut state, t(15)).applies());
}
