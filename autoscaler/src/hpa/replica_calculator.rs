//! kube-controller-manager's replica calculator: from metric values and the target's pods to a
//! replica count proposal for one metric.
//!
//! Errors are the upstream error strings (they end up in events and conditions).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;
use simulator::pod::Condition;
use simulator::quantity::parse_milli;

use super::metrics::{FastHash, PodMetric, PodResourceMetrics, Usage};

/// The ratio band `[1 - scale_down, 1 + scale_up]` inside which a metric proposes no change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tolerances {
    pub scale_down: f64,
    pub scale_up: f64,
}

impl Tolerances {
    pub fn is_within(&self, usage_ratio: f64) -> bool {
        (1.0 - self.scale_down) <= usage_ratio && usage_ratio <= (1.0 + self.scale_up)
    }
}

pub(crate) fn add(time: Timestamp, duration: Duration) -> Timestamp {
    time.saturating_add(duration).unwrap_or(Timestamp::MAX)
}

pub(crate) fn sub(time: Timestamp, duration: Duration) -> Timestamp {
    time.saturating_sub(duration).unwrap_or(Timestamp::MIN)
}

pub(crate) fn phase(pod: &PodInfo) -> &str {
    pod.phase()
}

pub(crate) fn ready_condition(pod: &PodInfo) -> Option<&Condition> {
    pod.state.ready.as_ref()
}

pub(crate) fn start_time(pod: &PodInfo) -> Option<Timestamp> {
    pod.state.start_time()
}

/// A missing `lastTransitionTime` reads as Go's zero time: earlier than anything.
pub(crate) fn transition_time(condition: &Condition) -> Timestamp {
    condition.last_transition_time().unwrap_or(Timestamp::MIN)
}

pub(crate) fn pod_name(pod: &PodInfo) -> &str {
    pod.name()
}

fn ceil_to_i32(value: f64) -> i32 {
    // Rust's float-to-int conversion saturates, so absurd ratios cap at i32::MAX.
    value.ceil() as i32
}

/// The pods of a reconcile, grouped as upstream's `groupPods` does.
struct PodGroups<'a> {
    ready_count: usize,
    unready: Vec<&'a str>,
    missing: Vec<&'a str>,
    ignored: Vec<&'a str>,
}

pub(crate) struct ReplicaCalculator<'a> {
    pub pods: &'a [Arc<PodInfo>],
    pub cpu_initialization_period: Duration,
    pub initial_readiness_delay: Duration,
    pub tolerances: Tolerances,
    pub now: Timestamp,
}

/// The result of a per-pod (Resource, ContainerResource, Pods) calculation.
pub(crate) struct Proposal {
    pub replicas: i32,
    /// The average utilization in percent of requests (Utilization targets only).
    pub utilization: i32,
    /// The average raw usage per pod (milli-units).
    pub usage: i64,
}

impl<'a> ReplicaCalculator<'a> {
    /// Groups the pods and keeps only the metrics of ready, live pods; an error when there are
    /// no pods or no usable metric at all.
    fn usable_metrics<'m>(&self, metrics: &mut Usage<'m>, resource: &str) -> Result<PodGroups<'a>, String>
    where
        'a: 'm,
    {
        if self.pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".into());
        }
        let groups = self.group_pods(metrics, resource);
        for name in groups.ignored.iter().chain(&groups.unready) {
            metrics.remove(name);
        }
        if metrics.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        Ok(groups)
    }

    /// Upstream's `groupPods`: deleted and Failed pods are ignored, Pending ones unready, pods
    /// without a metric missing; for cpu, pods still initializing or whose metric was sampled
    /// before they became ready are unready too.
    fn group_pods(&self, metrics: &Usage<'_>, resource: &str) -> PodGroups<'a> {
        let mut groups = PodGroups { ready_count: 0, unready: Vec::new(), missing: Vec::new(), ignored: Vec::new() };
        for pod in self.pods {
            let name = pod_name(pod);
            if pod.terminating || phase(pod) == "Failed" {
                groups.ignored.push(name);
                continue;
            }
            if phase(pod) == "Pending" {
                groups.unready.push(name);
                continue;
            }
            let Some(metric) = metrics.get(name) else {
                groups.missing.push(name);
                continue;
            };
            if resource == "cpu" && self.cpu_sample_unready(pod, metric) {
                groups.unready.push(name);
                continue;
            }
            groups.ready_count += 1;
        }
        groups
    }

    fn cpu_sample_unready(&self, pod: &PodInfo, metric: &PodMetric) -> bool {
        let (Some(condition), Some(start)) = (ready_condition(pod), start_time(pod)) else { return true };
        let transition = transition_time(condition);
        if add(start, self.cpu_initialization_period) > self.now {
            // Still initializing: skip the sample if the pod is unready, or if one full metric
            // window has not passed since its last readiness change.
            &*condition.status == "False" || metric.timestamp < add(transition, metric.window)
        } else {
            // Past initialization: skip it only if it is unready and has never been ready.
            &*condition.status == "False" && add(start, self.initial_readiness_delay) > transition
        }
    }

    /// `GetResourceReplicas`: a Utilization target (integer percent of requests).
    pub fn resource_utilization_replicas<'m>(
        &self,
        current_replicas: i32,
        target_utilization: i32,
        resource: &str,
        mut metrics: Usage<'m>,
        container: &str,
    ) -> Result<Proposal, String>
    where
        'a: 'm,
    {
        let groups = self.usable_metrics(&mut metrics, resource)?;
        let requests = self.requests(container, resource)?;
        let (usage_ratio, utilization, raw) = utilization_ratio(&metrics, &requests, target_utilization)?;

        let scale_up_with_unready = !groups.unready.is_empty() && usage_ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if self.tolerances.is_within(usage_ratio) {
                return Ok(Proposal { replicas: current_replicas, utilization, usage: raw });
            }
            let replicas = ceil_to_i32(usage_ratio * groups.ready_count as f64);
            return Ok(Proposal { replicas, utilization, usage: raw });
        }

        if !groups.missing.is_empty() {
            if usage_ratio < 1.0 {
                // Scale-down: a pod without a metric counts as using its whole request (or the
                // target, for targets above 100 %).
                let fallback = i64::from(target_utilization.max(100));
                for name in &groups.missing {
                    let value = requests.get(name).copied().unwrap_or(0) * fallback / 100;
                    metrics.insert(name, filler(value));
                }
            } else if usage_ratio > 1.0 {
                for name in &groups.missing {
                    metrics.insert(name, filler(0));
                }
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name, filler(0));
            }
        }
        let (new_ratio, _, _) = utilization_ratio(&metrics, &requests, target_utilization)?;
        let proposal = self.rebalanced(current_replicas, usage_ratio, new_ratio, metrics.len());
        Ok(Proposal { replicas: proposal, utilization, usage: raw })
    }

    /// `calcPlainMetricReplicas`: an AverageValue target on a per-pod metric.
    pub fn plain_metric_replicas<'m>(
        &self,
        current_replicas: i32,
        target_usage: i64,
        resource: &str,
        mut metrics: Usage<'m>,
    ) -> Result<Proposal, String>
    where
        'a: 'm,
    {
        let groups = self.usable_metrics(&mut metrics, resource)?;
        let (usage_ratio, usage) = usage_ratio_of(&metrics, target_usage);

        let scale_up_with_unready = !groups.unready.is_empty() && usage_ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if self.tolerances.is_within(usage_ratio) {
                return Ok(Proposal { replicas: current_replicas, utilization: 0, usage });
            }
            let replicas = ceil_to_i32(usage_ratio * groups.ready_count as f64);
            return Ok(Proposal { replicas, utilization: 0, usage });
        }

        if !groups.missing.is_empty() {
            // Scale-down: a pod without a metric counts as exactly on target; scale-up: as zero.
            let fill = if usage_ratio < 1.0 {
                Some(target_usage)
            } else if usage_ratio > 1.0 {
                Some(0)
            } else {
                None
            };
            if let Some(value) = fill {
                for name in &groups.missing {
                    metrics.insert(name, filler(value));
                }
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name, filler(0));
            }
        }
        let (new_ratio, _) = usage_ratio_of(&metrics, target_usage);
        let proposal = self.rebalanced(current_replicas, usage_ratio, new_ratio, metrics.len());
        Ok(Proposal { replicas: proposal, utilization: 0, usage })
    }

    /// The second pass after filling in missing and unready pods: no change when the new ratio
    /// is within tolerance or flips the direction of the first one.
    fn rebalanced(&self, current_replicas: i32, usage_ratio: f64, new_ratio: f64, counted: usize) -> i32 {
        if self.tolerances.is_within(new_ratio)
            || (usage_ratio < 1.0 && new_ratio > 1.0)
            || (usage_ratio > 1.0 && new_ratio < 1.0)
        {
            return current_replicas;
        }
        let new_replicas = ceil_to_i32(new_ratio * counted as f64);
        if (new_ratio < 1.0 && new_replicas > current_replicas) || (new_ratio > 1.0 && new_replicas < current_replicas)
        {
            return current_replicas;
        }
        new_replicas
    }

    /// `getUsageRatioReplicaCount`: Object and External metrics with a Value target. From zero
    /// replicas the ratio alone decides (scale from zero).
    pub fn usage_ratio_replicas(&self, current_replicas: i32, usage_ratio: f64) -> Result<i32, String> {
        if current_replicas == 0 {
            return Ok(ceil_to_i32(usage_ratio));
        }
        if self.tolerances.is_within(usage_ratio) {
            return Ok(current_replicas);
        }
        if self.pods.is_empty() {
            return Err(
                "unable to calculate ready pods: no pods returned by selector while calculating replica count".into()
            );
        }
        let ready = self.pods.iter().filter(|p| phase(p) == "Running" && is_pod_ready(p)).count();
        Ok(ceil_to_i32(usage_ratio * ready as f64))
    }

    /// `GetObjectPerPodMetricReplicas` / `GetExternalPerPodMetricReplicas`: an AverageValue
    /// target on a total. Returns the proposal and the per-pod usage for the status.
    pub fn per_pod_replicas(&self, status_replicas: i32, usage: i64, target_per_pod: i64) -> (i32, i64) {
        let mut replicas = status_replicas;
        let usage_ratio = usage as f64 / (target_per_pod as f64 * f64::from(status_replicas));
        if !self.tolerances.is_within(usage_ratio) {
            replicas = ceil_to_i32(usage as f64 / target_per_pod as f64);
        }
        let per_pod =
            if status_replicas == 0 { usage } else { (usage as f64 / f64::from(status_replicas)).ceil() as i64 };
        (replicas, per_pod)
    }

    /// Upstream's `calculateRequests`: per pod, the request of `resource` (one container's when
    /// `container` is set, else pod-level requests when set, else the sum over containers and
    /// restartable init containers). Every listed pod must have it.
    fn requests(&self, container: &str, resource: &str) -> Result<HashMap<&'a str, i64, FastHash>, String> {
        let mut requests = HashMap::with_capacity_and_hasher(self.pods.len(), FastHash::default());
        for pod in self.pods {
            let name = pod_name(pod);
            let pod_level = pod
                .spec()
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .filter(|r| r.keys().any(|k| k == "cpu" || k == "memory" || k.starts_with("hugepages-")));
            let request = match pod_level {
                Some(pod_requests) if container.is_empty() => pod_level_request(pod, pod_requests, resource)?,
                _ => container_requests(pod, container, resource)?,
            };
            requests.insert(name, request);
        }
        Ok(requests)
    }
}

fn filler(value: i64) -> PodMetric {
    PodMetric { value, timestamp: Timestamp::UNIX_EPOCH, window: Duration::ZERO }
}

pub(crate) fn is_pod_ready(pod: &PodInfo) -> bool {
    pod.is_ready()
}

fn request_of(container: &Container, resource: &str) -> Option<i64> {
    let quantity = container.resources.as_ref()?.requests.as_ref()?.get(resource)?;
    // An unparsable request is as good as none: the API server would have rejected it.
    parse_milli(&quantity.0).ok()
}

fn scaling_containers(pod: &PodInfo) -> impl Iterator<Item = &Container> {
    let spec = pod.spec();
    let main = spec.containers.as_slice();
    let sidecars =
        spec.init_containers.as_deref().unwrap_or(&[]).iter().filter(|c| c.restart_policy.as_deref() == Some("Always"));
    main.iter().chain(sidecars)
}

fn container_requests(pod: &PodInfo, container: &str, resource: &str) -> Result<i64, String> {
    let mut total = 0i64;
    for c in scaling_containers(pod) {
        if container.is_empty() || container == c.name {
            let Some(request) = request_of(c, resource) else {
                return Err(format!("missing request for {resource} in container {} of Pod {}", c.name, pod_name(pod)));
            };
            total = total.saturating_add(request);
        }
        if container == c.name {
            return Ok(total);
        }
    }
    if !container.is_empty() {
        return Err(format!("container {container} not found in Pod {}", pod_name(pod)));
    }
    Ok(total)
}

fn pod_level_request(
    pod: &PodInfo,
    pod_requests: &std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    resource: &str,
) -> Result<i64, String> {
    if let Some(quantity) = pod_requests.get(resource)
        && let Ok(value) = parse_milli(&quantity.0)
    {
        return Ok(value);
    }
    // Resources not set at pod level fall back to the containers' aggregate.
    let mut found = false;
    let mut total = 0i64;
    for c in scaling_containers(pod) {
        if let Some(request) = request_of(c, resource) {
            found = true;
            total = total.saturating_add(request);
        }
    }
    if found { Ok(total) } else { Err(format!("missing pod-level request for {resource} in Pod {}", pod_name(pod))) }
}

/// Upstream's `GetResourceUtilizationRatio`: (usage ratio, utilization %, raw average usage).
/// Metrics of pods without a known request are extraneous and skipped.
fn utilization_ratio(
    metrics: &Usage<'_>,
    requests: &HashMap<&str, i64, FastHash>,
    target_utilization: i32,
) -> Result<(f64, i32, i64), String> {
    let mut metrics_total = 0i128;
    let mut requests_total = 0i128;
    let mut entries = 0i128;
    for (name, metric) in metrics {
        let Some(request) = requests.get(name) else { continue };
        metrics_total += i128::from(metric.value);
        requests_total += i128::from(*request);
        entries += 1;
    }
    if requests_total == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = (metrics_total * 100 / requests_total).clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i32;
    let raw = (metrics_total / entries) as i64;
    Ok((f64::from(utilization) / f64::from(target_utilization), utilization, raw))
}

/// Upstream's `GetMetricUsageRatio`: (usage ratio, average usage) over every metric returned.
fn usage_ratio_of(metrics: &Usage<'_>, target_usage: i64) -> (f64, i64) {
    let total: i128 = metrics.values().map(|m| i128::from(m.value)).sum();
    let usage = (total / metrics.len() as i128) as i64;
    (usage as f64 / target_usage as f64, usage)
}

/// The `metrics.k8s.io` client side: per pod, the usage of one container, or the sum over all
/// containers (a pod with a container lacking the resource, or without the named container,
/// counts as missing).
pub(crate) fn resource_usage<'m>(metrics: &'m PodResourceMetrics, container: &str, namespace: &str) -> Usage<'m> {
    let mut result = Usage::with_capacity_and_hasher(metrics.len(), FastHash::default());
    for (pod, metric) in metrics {
        let value = if container.is_empty() {
            if metric.containers.is_empty() {
                None
            } else {
                metric.containers.iter().try_fold(0i64, |sum, c| c.value.map(|v| sum.saturating_add(v)))
            }
        } else {
            // As current kube-controller-manager: a pod whose metrics lack the container (it
            // restarted, or the metrics server has not seen it yet) is skipped — it counts as a
            // pod without metrics — instead of failing the whole autoscaler.
            let Some(found) = metric.containers.iter().find(|c| c.name == container) else {
                tracing::debug!(%namespace, %pod, %container, "container not present in the pod's metrics; skipping the pod");
                continue;
            };
            found.value
        };
        if let Some(value) = value {
            result.insert(pod.as_str(), PodMetric { value, timestamp: metric.timestamp, window: metric.window });
        }
    }
    result
}
