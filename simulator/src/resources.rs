//! Resource amounts held as integers (cpu in millicores, everything else in whole units) and
//! pod requests computed the way kube-scheduler computes them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::{QuantityError, format_bytes, format_milli, parse_milli, parse_value};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";

/// A set of resource amounts. The four core resources have fields; any other resource
/// (`nvidia.com/gpu`, `hugepages-2Mi`, vendor devices) lives in `extended`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    pub cpu_millis: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    pub extended: BTreeMap<String, i64>,
}

impl Resources {
    /// Reads a Kubernetes resource list (`requests`, `allocatable`, `capacity`).
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Result<Self, QuantityError> {
        let mut r = Resources::default();
        for (name, quantity) in list {
            r.set(name, &quantity.0)?;
        }
        Ok(r)
    }

    /// Reads a resource list, ignoring unparsable entries (used where the API server already
    /// validated the object, so a bad value can only come from a hand-edited dump).
    pub fn from_list_lossy(list: Option<&BTreeMap<String, Quantity>>) -> Self {
        let mut r = Resources::default();
        for (name, quantity) in list.into_iter().flatten() {
            let _ = r.set(name, &quantity.0);
        }
        r
    }

    fn set(&mut self, name: &str, quantity: &str) -> Result<(), QuantityError> {
        match name {
            CPU => self.cpu_millis = parse_milli(quantity)?,
            MEMORY => self.memory = parse_value(quantity)?,
            EPHEMERAL_STORAGE => self.ephemeral_storage = parse_value(quantity)?,
            PODS => self.pods = parse_value(quantity)?,
            other => {
                let v = parse_value(quantity)?;
                if v != 0 {
                    self.extended.insert(other.to_string(), v);
                } else {
                    self.extended.remove(other);
                }
            }
        }
        Ok(())
    }

    /// The amount of one resource (cpu in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.cpu_millis,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.pods,
            other => self.extended.get(other).copied().unwrap_or(0),
        }
    }

    /// Sums saturate: quantities are capped at `i64::MAX` when read (as Kubernetes caps
    /// them), and two such requests (a hostile dump) must not wrap to a negative sum that
    /// fits anywhere.
    pub fn add(&mut self, other: &Resources) {
        self.cpu_millis = self.cpu_millis.saturating_add(other.cpu_millis);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_insert(0);
            *e = e.saturating_add(*v);
        }
    }

    pub fn sub(&mut self, other: &Resources) {
        self.cpu_millis = self.cpu_millis.saturating_sub(other.cpu_millis);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_insert(0);
            *e = e.saturating_sub(*v);
            if *e == 0 {
                self.extended.remove(k);
            }
        }
    }

    /// Per-resource maximum (used for init containers).
    pub fn max_with(&mut self, other: &Resources) {
        self.cpu_millis = self.cpu_millis.max(other.cpu_millis);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }

    /// The resources this request would exceed on a node with `allocatable` of which `used` is
    /// taken. Requests of zero never fail, as in kube-scheduler.
    pub fn insufficient(&self, used: &Resources, allocatable: &Resources) -> Shortfall {
        let short = |want: i64, used: i64, allocatable: i64| want > 0 && used.saturating_add(want) > allocatable;
        Shortfall {
            cpu: short(self.cpu_millis, used.cpu_millis, allocatable.cpu_millis),
            memory: short(self.memory, used.memory, allocatable.memory),
            ephemeral_storage: short(self.ephemeral_storage, used.ephemeral_storage, allocatable.ephemeral_storage),
            extended: self
                .extended
                .iter()
                .filter(|(name, want)| short(**want, used.get(name), allocatable.get(name)))
                .map(|(name, _)| name.clone())
                .collect(),
        }
    }

    /// Whether this request fits, without building the list of failures.
    pub fn fits(&self, used: &Resources, allocatable: &Resources) -> bool {
        let ok = |want: i64, used: i64, alloc: i64| want <= 0 || used.saturating_add(want) <= alloc;
        ok(self.cpu_millis, used.cpu_millis, allocatable.cpu_millis)
            && ok(self.memory, used.memory, allocatable.memory)
            && ok(self.ephemeral_storage, used.ephemeral_storage, allocatable.ephemeral_storage)
            && self.extended.iter().all(|(k, v)| ok(*v, used.get(k), allocatable.get(k)))
    }

    /// Human-readable form for reports: `cpu=1500m memory=2Gi nvidia.com/gpu=1`.
    pub fn describe(&self) -> String {
        let mut parts =
            vec![format!("cpu={}", format_milli(self.cpu_millis)), format!("memory={}", format_bytes(self.memory))];
        if self.ephemeral_storage != 0 {
            parts.push(format!("ephemeral-storage={}", format_bytes(self.ephemeral_storage)));
        }
        for (k, v) in &self.extended {
            parts.push(format!("{k}={v}"));
        }
        parts.join(" ")
    }
}

/// The resources a request exceeds on a node: cpu, memory and ephemeral storage as flags,
/// extended resources by name. The scheduler builds one for every node a pending pod fails on,
/// so the common shortfalls allocate nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shortfall {
    cpu: bool,
    memory: bool,
    ephemeral_storage: bool,
    extended: Vec<String>,
}

impl Shortfall {
    /// The resources' names, as kube-scheduler lists them: cpu, memory, ephemeral storage, then
    /// extended resources by name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        [(self.cpu, CPU), (self.memory, MEMORY), (self.ephemeral_storage, EPHEMERAL_STORAGE)]
            .into_iter()
            .filter_map(|(short, name)| short.then_some(name))
            .chain(self.extended.iter().map(String::as_str))
    }
}

impl<'n> FromIterator<&'n str> for Shortfall {
    fn from_iter<I: IntoIterator<Item = &'n str>>(names: I) -> Self {
        let mut shortfall = Shortfall::default();
        for name in names {
            match name {
                CPU => shortfall.cpu = true,
                MEMORY => shortfall.memory = true,
                EPHEMERAL_STORAGE => shortfall.ephemeral_storage = true,
                other => shortfall.extended.push(other.to_string()),
            }
        }
        shortfall
    }
}

/// A container's requests. The API server copies limits into missing requests; a dump from a
/// real cluster already has that done, hand-written objects may not, so we do it here too.
/// Unparsable values count as zero (the API server rejects them, so only hand-edited input has
/// them).
fn container_requests(container: &Container) -> Resources {
    let mut out = Resources::default();
    let Some(res) = container.resources.as_ref() else { return out };
    let requests = res.requests.as_ref();
    for (name, quantity) in requests.into_iter().flatten() {
        let _ = out.set(name, &quantity.0);
    }
    for (name, quantity) in res.limits.iter().flatten() {
        if requests.is_none_or(|r| !r.contains_key(name)) {
            let _ = out.set(name, &quantity.0);
        }
    }
    out
}

fn is_restartable_init_container(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// The pod's requests as the scheduler counts them: the larger of (app containers + sidecar
/// init containers) and the peak during init (each plain init container plus the sidecars
/// started before it), plus the pod overhead. `pods` is always 1.
pub fn pod_requests(pod: &Pod) -> Resources {
    spec_requests(pod.spec.as_ref())
}

/// [`pod_requests`] of a pod with this spec.
pub fn spec_requests(spec: Option<&PodSpec>) -> Resources {
    let Some(spec) = spec else {
        return Resources { pods: 1, ..Default::default() };
    };
    let mut app = Resources::default();
    for c in &spec.containers {
        app.add(&container_requests(c));
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for c in spec.init_containers.iter().flatten() {
        let req = container_requests(c);
        if is_restartable_init_container(c) {
            sidecars.add(&req);
            init_peak.max_with(&sidecars);
        } else {
            let mut during = req;
            during.add(&sidecars);
            init_peak.max_with(&during);
        }
    }
    app.add(&sidecars);
    app.max_with(&init_peak);
    if let Some(overhead) = spec.overhead.as_ref() {
        app.add(&Resources::from_list_lossy(Some(overhead)));
    }
    app.pods = 1;
    app
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_of_capped_quantities_saturate_and_never_fit() {
        let huge = Resources { cpu_millis: i64::MAX, memory: i64::MAX, ..Default::default() };
        let mut used = huge.clone();
        used.add(&huge);
        assert_eq!((used.cpu_millis, used.memory), (i64::MAX, i64::MAX), "no wrap to a negative sum");
        let allocatable = Resources { cpu_millis: 4000, memory: 1 << 34, ..Default::default() };
        assert!(!huge.fits(&used, &allocatable));
        assert_eq!(huge.insufficient(&used, &allocatable).names().collect::<Vec<_>>(), ["cpu", "memory"]);
        used.sub(&huge);
        used.sub(&huge);
        used.sub(&huge);
        assert_eq!(used.cpu_millis, i64::MIN, "no wrap the other way either");
    }

    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
    }

    #[test]
    fn sums_app_containers() {
        let p = pod(json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "1"}}}
        ]}));
        let r = pod_requests(&p);
        assert_eq!(r.cpu_millis, 350);
        assert_eq!(r.memory, 1 << 30);
        assert_eq!(r.get(NVIDIA_GPU), 1);
        assert_eq!(r.pods, 1);
    }

    #[test]
    fn largest_plain_init_container_wins_when_larger() {
        let p = pod(json!({
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
        }));
        let r = pod_requests(&p);
        assert_eq!(r.cpu_millis, 2000);
        assert_eq!(r.memory, 1 << 30);
    }

    #[test]
    fn sidecar_init_containers_add_to_app_containers() {
        // sidecar 200m runs alongside; the plain init container after it peaks at 1 + 0.2.
        let p = pod(json!({
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
                {"name": "migrate", "resources": {"requests": {"cpu": "1"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]
        }));
        assert_eq!(pod_requests(&p).cpu_millis, 1200);
        let p = pod(json!({
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
                {"name": "small", "resources": {"requests": {"cpu": "100m"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]
        }));
        assert_eq!(pod_requests(&p).cpu_millis, 700);
    }

    #[test]
    fn plain_init_before_sidecar_does_not_count_sidecar() {
        let p = pod(json!({
            "initContainers": [
                {"name": "first", "resources": {"requests": {"cpu": "1"}}},
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}}
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]
        }));
        assert_eq!(pod_requests(&p).cpu_millis, 1000);
    }

    #[test]
    fn overhead_is_added() {
        let p = pod(json!({
            "overhead": {"cpu": "250m", "memory": "120Mi"},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        }));
        let r = pod_requests(&p);
        assert_eq!(r.cpu_millis, 1250);
        assert_eq!(r.memory, (1 << 30) + 120 * (1 << 20));
    }

    #[test]
    fn limits_default_missing_requests() {
        let p = pod(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "300m"}}}
        ]}));
        let r = pod_requests(&p);
        assert_eq!(r.cpu_millis, 300);
        assert_eq!(r.memory, 2 << 30);
    }

    #[test]
    fn insufficient_names_each_resource() {
        let alloc = Resources { cpu_millis: 1000, memory: 1000, pods: 10, ..Default::default() };
        let used = Resources { cpu_millis: 900, ..Default::default() };
        let mut want = Resources { cpu_millis: 200, memory: 10, ..Default::default() };
        want.extended.insert(NVIDIA_GPU.into(), 1);
        assert_eq!(want.insufficient(&used, &alloc).names().collect::<Vec<_>>(), ["cpu", NVIDIA_GPU]);
        assert!(!want.fits(&used, &alloc));
    }
}
