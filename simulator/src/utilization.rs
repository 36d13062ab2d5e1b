//! How busy a node is, as upstream's scale-down measures it: per resource, the pods' requests
//! over allocatable; the node's utilization is the higher of cpu and memory, or, on a GPU node,
//! the GPU utilization alone.

use k8s_openapi::jiff::Timestamp;

use crate::drainability::is_long_terminating;
use crate::node::NodeInfo;
use crate::resources::{CPU, MEMORY, Resources};

/// A node's utilization.
#[derive(Clone, Debug, PartialEq)]
pub struct UtilizationInfo {
    pub cpu: f64,
    pub memory: f64,
    pub gpu: f64,
    /// `max(cpu, memory)`, or `gpu` on a GPU node.
    pub utilization: f64,
    /// The resource that determined `utilization`: `cpu`, `memory` or the GPU resource name.
    pub resource: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UtilizationError {
    #[error("node {node} has no allocatable {resource} (missing or 0), so its utilization is undefined")]
    NoAllocatable { node: String, resource: String },
}

/// Utilization of each resource `amounts` picks from a pod's requests (cpu and memory, or a
/// GPU): the requests of the node's pods over its allocatable (`NodeInfo::allocatable`, which
/// falls back to capacity when a node reports no allocatable). One pass over the node's pods
/// for all of them: scale-down asks this of every node on every iteration.
///
/// Ignored DaemonSet / mirror pods are taken out of both sides (their requests reduce the
/// allocatable instead of counting as use). Pods terminating for longer than their grace period
/// plus 30s are left out. When the ignored pods take the whole allocatable, the node is reported
/// as idle if nothing else requests the resource and as full otherwise (upstream would divide by
/// zero or a negative number).
fn utilizations<const N: usize>(
    node: &NodeInfo,
    allocatable: [i64; N],
    amounts: impl Fn(&Resources) -> [i64; N],
    ignore_daemonsets: bool,
    ignore_mirror_pods: bool,
    now: Timestamp,
) -> [f64; N] {
    let (requested, ignored) = summed(node, &amounts, ignore_daemonsets, ignore_mirror_pods)
        .unwrap_or_else(|| summed_pod_by_pod(node, &amounts, ignore_daemonsets, ignore_mirror_pods, now));
    std::array::from_fn(|i| {
        let available = allocatable[i].saturating_sub(ignored[i]);
        if available <= 0 {
            return if requested[i] > 0 { 1.0 } else { 0.0 };
        }
        // i64 -> f64 loses precision only above 2^53 units, far beyond any real node.
        requested[i] as f64 / available as f64
    })
}

/// The counted and the ignored requests from the sums the node keeps with its pods
/// (`NodeInfo::sums`), when they cover every pod exactly and no pod is terminating (whether
/// one is left out depends on the time): the same figures as the pass over the pods.
fn summed<const N: usize>(
    node: &NodeInfo,
    amounts: &impl Fn(&Resources) -> [i64; N],
    ignore_daemonsets: bool,
    ignore_mirror_pods: bool,
) -> Option<([i64; N], [i64; N])> {
    let sums = &node.sums;
    if sums.inexact || sums.terminating > 0 || sums.pods != node.pods.len() || node.pods.len() >= 1 << 22 {
        return None;
    }
    let (total, daemonset, mirror, both) = (
        amounts(&node.requested),
        amounts(&sums.daemonset),
        amounts(&sums.mirror),
        amounts(&sums.daemonset_and_mirror),
    );
    let mut requested = [0i64; N];
    let mut ignored = [0i64; N];
    for i in 0..N {
        let mut ignore = 0i64;
        if ignore_daemonsets {
            ignore = ignore.checked_add(daemonset[i])?;
        }
        if ignore_mirror_pods {
            ignore = ignore.checked_add(mirror[i])?;
        }
        if ignore_daemonsets && ignore_mirror_pods {
            ignore = ignore.checked_sub(both[i])?;
        }
        requested[i] = total[i].checked_sub(ignore)?;
        ignored[i] = ignore;
    }
    Some((requested, ignored))
}

/// The counted and the ignored requests, pod by pod.
fn summed_pod_by_pod<const N: usize>(
    node: &NodeInfo,
    amounts: &impl Fn(&Resources) -> [i64; N],
    ignore_daemonsets: bool,
    ignore_mirror_pods: bool,
    now: Timestamp,
) -> ([i64; N], [i64; N]) {
    let mut requested = [0i64; N];
    let mut ignored = [0i64; N];
    for pod in &node.pods {
        // DaemonSet and mirror pods are set aside before the terminating check, as upstream does.
        // (`terminating` is asked first: most pods are not, and then the pod itself is not read.)
        let into = if (ignore_daemonsets && pod.daemonset) || (ignore_mirror_pods && pod.mirror) {
            &mut ignored
        } else if !(pod.terminating && is_long_terminating(pod, now)) {
            &mut requested
        } else {
            continue;
        };
        for (sum, amount) in into.iter_mut().zip(amounts(pod.requests())) {
            *sum = sum.saturating_add(amount);
        }
    }
    (requested, ignored)
}

/// Utilization of one resource (see `utilizations`); a node without allocatable `resource`
/// is an error.
pub fn resource_utilization(
    node: &NodeInfo,
    resource: &str,
    ignore_daemonsets: bool,
    ignore_mirror_pods: bool,
    now: Timestamp,
) -> Result<f64, UtilizationError> {
    let allocatable = node.allocatable.get(resource);
    if allocatable <= 0 {
        return Err(UtilizationError::NoAllocatable { node: node.name.to_string(), resource: resource.to_string() });
    }
    let [utilization] =
        utilizations(node, [allocatable], |r| [r.get(resource)], ignore_daemonsets, ignore_mirror_pods, now);
    Ok(utilization)
}

/// The node's utilization. `gpu_resource` names the GPU's extended resource when the node is a
/// GPU node; then only GPU utilization counts, and a GPU that is not allocatable yet (driver not
/// ready) counts as 0 so that such a node can still be scaled down. Otherwise the utilization is
/// the higher of cpu and memory (memory on a tie); a node without allocatable cpu or memory is
/// an error.
pub fn calculate_utilization(
    node: &NodeInfo,
    ignore_daemonsets: bool,
    ignore_mirror_pods: bool,
    gpu_resource: Option<&str>,
    now: Timestamp,
) -> Result<UtilizationInfo, UtilizationError> {
    if let Some(gpu) = gpu_resource {
        let gpu_utilization =
            resource_utilization(node, gpu, ignore_daemonsets, ignore_mirror_pods, now).unwrap_or(0.0);
        return Ok(UtilizationInfo {
            cpu: 0.0,
            memory: 0.0,
            gpu: gpu_utilization,
            utilization: gpu_utilization,
            resource: gpu.to_string(),
        });
    }
    for resource in [CPU, MEMORY] {
        if node.allocatable.get(resource) <= 0 {
            return Err(UtilizationError::NoAllocatable { node: node.name.to_string(), resource: resource.into() });
        }
    }
    let allocatable = [node.allocatable.cpu_millis, node.allocatable.memory];
    let [cpu, memory] =
        utilizations(node, allocatable, |r| [r.cpu_millis, r.memory], ignore_daemonsets, ignore_mirror_pods, now);
    let (utilization, resource) = if cpu > memory { (cpu, CPU) } else { (memory, MEMORY) };
    Ok(UtilizationInfo { cpu, memory, gpu: 0.0, utilization, resource: resource.to_string() })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::pod::PodInfo;
    use crate::resources::NVIDIA_GPU;
    use crate::testing::{node, pod, with_annotation, with_extended_resource, with_owner};
    use crate::well_known::MIRROR_POD;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn node_with(n: Node, pods: Vec<Pod>) -> NodeInfo {
        let mut info = NodeInfo::new(Arc::new(n));
        for p in pods {
            info.push_pod(Arc::new(PodInfo::new(&p)));
        }
        info
    }

    fn with_gpu_request(mut p: Pod, amount: &str) -> Pod {
        let c = &mut p.spec.as_mut().unwrap().containers[0];
        c.resources.as_mut().unwrap().requests.as_mut().unwrap().insert(NVIDIA_GPU.into(), Quantity(amount.into()));
        p
    }

    fn daemonset(p: Pod) -> Pod {
        with_owner(p, "DaemonSet", "agent")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    proptest::proptest! {
        /// The sums a node keeps give what the pass over its pods gives, after pods were placed
        /// and taken in any order (DaemonSet, mirror, both, neither; huge requests included).
        #[test]
        fn kept_sums_agree_with_the_pass_over_the_pods(
            pods in proptest::collection::vec((0u8..4, 0i64..5_000, 0i64..(1i64 << 34), proptest::bool::ANY), 0..40),
            take in proptest::collection::vec(0usize..40, 0..20),
        ) {
            let mut info = NodeInfo::new(Arc::new(node("n", "64", "256Gi")));
            for (i, (kind, cpu, memory, huge)) in pods.iter().enumerate() {
                let memory = if *huge && i % 7 == 0 { i64::MAX } else { *memory };
                let mut p = pod(&format!("p{i}"), &format!("{cpu}m"), &memory.to_string());
                if kind & 1 == 1 {
                    p = daemonset(p);
                }
                if kind & 2 == 2 {
                    p = with_annotation(p, MIRROR_POD, "x");
                }
                info.push_pod(Arc::new(PodInfo::new(&p)));
            }
            for t in take {
                if !info.pods.is_empty() {
                    let at = t % info.pods.len();
                    info.take_pod(at);
                }
            }
            let amounts = |r: &Resources| [r.cpu_millis, r.memory];
            for (ds, mirror) in [(false, false), (true, false), (false, true), (true, true)] {
                let by_pod = summed_pod_by_pod(&info, &amounts, ds, mirror, now());
                if let Some(kept) = summed(&info, &amounts, ds, mirror) {
                    proptest::prop_assert_eq!(kept, by_pod);
                } else {
                    proptest::prop_assert!(info.sums.inexact, "the sums are used unless a request was huge");
                }
            }
        }
    }

    #[test]
    fn utilization_is_max_of_cpu_and_memory() {
        let n = node_with(node("n", "4", "8Gi"), vec![pod("a", "1", "1Gi"), pod("b", "1", "1Gi")]);
        let u = calculate_utilization(&n, false, false, None, now()).unwrap();
        assert!(close(u.cpu, 0.5) && close(u.memory, 0.25), "{u:?}");
        assert!(close(u.utilization, 0.5));
        assert_eq!(u.resource, "cpu");
        let n = node_with(node("n", "4", "8Gi"), vec![pod("a", "500m", "6Gi")]);
        let u = calculate_utilization(&n, false, false, None, now()).unwrap();
        assert!(close(u.utilization, 0.75));
        assert_eq!(u.resource, "memory");
    }

    #[test]
    fn tie_reports_memory() {
        let n = node_with(node("n", "4", "8Gi"), vec![pod("a", "2", "4Gi")]);
        assert_eq!(calculate_utilization(&n, false, false, None, now()).unwrap().resource, "memory");
    }

    #[test]
    fn ignore_daemonsets_removes_them_from_both_sides() {
        let pods = vec![daemonset(pod("ds", "1", "2Gi")), pod("a", "1", "1Gi")];
        let n = node_with(node("n", "4", "8Gi"), pods);
        let counted = calculate_utilization(&n, false, false, None, now()).unwrap();
        assert!(close(counted.cpu, 0.5) && close(counted.memory, 3.0 / 8.0), "{counted:?}");
        let ignored = calculate_utilization(&n, true, false, None, now()).unwrap();
        assert!(close(ignored.cpu, 1.0 / 3.0) && close(ignored.memory, 1.0 / 6.0), "{ignored:?}");
    }

    #[test]
    fn ignore_mirror_pods() {
        let n = node_with(node("n", "4", "8Gi"), vec![with_annotation(pod("static", "2", "1Gi"), MIRROR_POD, "x")]);
        assert!(close(calculate_utilization(&n, false, false, None, now()).unwrap().cpu, 0.5));
        let u = calculate_utilization(&n, false, true, None, now()).unwrap();
        assert!(close(u.cpu, 0.0) && close(u.utilization, 0.0), "{u:?}");
        // Ignoring DaemonSets does not ignore mirror pods.
        assert!(close(calculate_utilization(&n, true, false, None, now()).unwrap().cpu, 0.5));
    }

    #[test]
    fn ignored_pods_taking_the_whole_node_leave_it_idle_or_full() {
        let only_ds = node_with(node("n", "2", "4Gi"), vec![daemonset(pod("ds", "2", "4Gi"))]);
        let u = calculate_utilization(&only_ds, true, false, None, now()).unwrap();
        assert_eq!(u.utilization, 0.0);
        let overcommitted =
            node_with(node("n", "2", "4Gi"), vec![daemonset(pod("ds", "3", "1Gi")), pod("a", "1", "1Gi")]);
        let u = calculate_utilization(&overcommitted, true, false, None, now()).unwrap();
        assert_eq!((u.cpu, u.resource.as_str()), (1.0, "cpu"));
    }

    #[test]
    fn gpu_node_uses_gpu_only() {
        let gpu_node = with_extended_resource(node("g", "8", "32Gi"), NVIDIA_GPU, "4");
        let n = node_with(gpu_node, vec![with_gpu_request(pod("train", "7", "30Gi"), "1")]);
        let u = calculate_utilization(&n, false, false, Some(NVIDIA_GPU), now()).unwrap();
        assert!(close(u.gpu, 0.25) && close(u.utilization, 0.25), "{u:?}");
        assert_eq!(u.resource, NVIDIA_GPU);
        assert_eq!((u.cpu, u.memory), (0.0, 0.0));
    }

    #[test]
    fn unready_gpu_counts_as_zero() {
        let n = node_with(node("g", "8", "32Gi"), vec![pod("a", "7", "30Gi")]);
        let u = calculate_utilization(&n, false, false, Some(NVIDIA_GPU), now()).unwrap();
        assert_eq!((u.utilization, u.gpu, u.resource.as_str()), (0.0, 0.0, NVIDIA_GPU));
        let zero = node_with(with_extended_resource(node("g", "8", "32Gi"), NVIDIA_GPU, "0"), vec![]);
        assert_eq!(calculate_utilization(&zero, false, false, Some(NVIDIA_GPU), now()).unwrap().utilization, 0.0);
    }

    #[test]
    fn zero_allocatable_is_an_error() {
        let n = node_with(node("broken", "0", "8Gi"), vec![pod("a", "1", "1Gi")]);
        let err = calculate_utilization(&n, false, false, None, now()).unwrap_err();
        assert_eq!(err, UtilizationError::NoAllocatable { node: "broken".into(), resource: "cpu".into() });
        assert!(err.to_string().contains("broken") && err.to_string().contains("cpu"), "{err}");
        let n = node_with(node("nomem", "4", "0"), vec![]);
        assert!(matches!(
            calculate_utilization(&n, false, false, None, now()),
            Err(UtilizationError::NoAllocatable { resource, .. }) if resource == "memory"
        ));
    }

    #[test]
    fn long_terminating_pods_not_counted() {
        let mut old = pod("old", "2", "1Gi");
        old.metadata.deletion_timestamp = Some(Time(now().checked_sub(SignedDuration::from_secs(61)).unwrap()));
        let mut recent = pod("recent", "1", "1Gi");
        recent.metadata.deletion_timestamp = Some(Time(now().checked_sub(SignedDuration::from_secs(10)).unwrap()));
        let n = node_with(node("n", "4", "8Gi"), vec![old, recent]);
        let u = calculate_utilization(&n, false, false, None, now()).unwrap();
        assert!(close(u.cpu, 0.25), "{u:?}");
    }
}
