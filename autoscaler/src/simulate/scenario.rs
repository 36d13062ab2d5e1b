//! Scenario files for `simulate`: node groups, the objects a cluster starts with, what happens
//! over time (replica changes, ramps, new Jobs, faults), the autoscaler's flags and how long to
//! run. Every error names the field and the line.
//!
//! ```yaml
//! name: a small day
//! start: 2026-11-23T00:00:00Z   # optional
//! duration: 24h
//! seed: 1                       # random tie-breaks of the expanders
//! currency: EUR                 # of pricePerHour, in the summary and the report (default USD)
//! flags: [--scale-down-unneeded-time=10m, --expander=least-waste]
//! cluster: {nodeStartupDelay: 30s, podStartupDelay: 5s}
//! nodeGroups:
//! - id: general
//!   minSize: 1
//!   maxSize: 10
//!   initialSize: 2
//!   pricePerHour: 0.192
//!   provisioningDelay: 2m
//!   options: {scaleDownUnneededTime: 5m}      # like the cloud-config file
//!   template: {metadata: {labels: {pool: general}}, status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}}}
//! objects: [ ...Kubernetes objects: Deployments, StatefulSets, Jobs, DaemonSets, PDBs, PVCs, PVs, StorageClasses, ... ]
//! events:
//! - {at: 6h, scale: {kind: Deployment, namespace: default, name: web, replicas: 20}}
//! - {at: 7h, ramp: {kind: Deployment, namespace: default, name: web, to: 40, over: 2h}}
//! - {at: 12h, create: {apiVersion: batch/v1, kind: Job, ...}}
//! - {at: 13h, delete: {kind: Job, namespace: batch, name: report}}
//! - {at: 2h, fault: {group: compute, type: failIncreaseSize, times: 2}}
//! - {at: 0s, annotateNode: {node: general-1, annotations: {cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"}}}
//! - {at: 3h, crash: {}}
//! - {at: 9h, crash: {after: EvictPod}}
//! ```
//!
//! Fault types: `failIncreaseSize` (`times`, default always), `partialFulfilment` (`ratio` or
//! `count`), `neverRegister` (`count`), `failDeleteNodes` (`times`), `stockOut` (`for`), `clear`.
//!
//! `crash` kills the autoscaler process, as a SIGKILL or an OOM kill would: its memory (scale-up
//! requests, deletions in flight, unneeded-since times, backoffs, pod autoscaler history) is
//! gone, and a fresh process starts on the same cluster and cloud, its first loop a scan interval
//! later. What the dead process did stays done: taints, cordons, evictions, target sizes. The
//! fresh process cleans up as upstream's does (the `ToBeDeleted` taints at its first loop; the
//! nodes the dead one asked for count as upcoming). `crash: {}` kills it at `at`, between two
//! loops; `crash: {before: CALL}` or `{after: CALL}` at the first such call it makes from `at`
//! on, before the call reaches the cloud or the API server or after it took effect (if none
//! comes, it lives on; a later crash event replaces one not reached). `CALL` is one of
//! `NodeGroupIncreaseSize`, `NodeGroupAtomicIncreaseSize`, `NodeGroupDeleteNodes`,
//! `NodeGroupForceDeleteNodes`, `NodeGroupDecreaseTargetSize`, `Taint DeletionCandidate`,
//! `Untaint DeletionCandidate`, `Taint ToBeDeleted`, `Untaint ToBeDeleted`, `TaintNode`,
//! `UntaintNode`, `EvictPod`. The timeline shows `autoscalerRestarted` where it happened.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use cloudprovider::duration::parse_go_duration;
use cloudprovider::yaml::{FileError, line_of, normalize_quantities};
use cloudprovider_memory::file::{self as memory_file, GroupFileSpec, RawGroup};

use super::world::{self, WorldError};
use crate::core::counting::{ACTUATION_CALLS, Halt};

/// A problem in a scenario file: file, line, field and message.
pub type ScenarioError = FileError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawScenario {
    name: Option<String>,
    start: Option<Spanned<String>>,
    duration: Spanned<String>,
    seed: Option<u64>,
    currency: Option<Spanned<String>>,
    #[serde(default)]
    flags: Vec<Spanned<String>>,
    cluster: Option<RawCluster>,
    #[serde(default)]
    node_groups: Vec<RawGroup>,
    #[serde(default)]
    objects: Vec<Spanned<Value>>,
    #[serde(default)]
    events: Vec<RawEvent>,
    #[serde(default)]
    loads: Vec<Spanned<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCluster {
    node_startup_delay: Option<Spanned<String>>,
    pod_startup_delay: Option<Spanned<String>>,
    job_run_duration: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEvent {
    at: Spanned<String>,
    scale: Option<Spanned<RawScale>>,
    ramp: Option<Spanned<RawRamp>>,
    create: Option<Spanned<Value>>,
    delete: Option<Spanned<RawObjectRef>>,
    fault: Option<Spanned<RawFault>>,
    annotate_node: Option<Spanned<RawAnnotate>>,
    crash: Option<Spanned<RawCrash>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawScale {
    kind: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    name: String,
    replicas: i32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRamp {
    kind: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    name: String,
    to: i32,
    over: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawObjectRef {
    kind: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFault {
    group: String,
    #[serde(rename = "type")]
    fault_type: String,
    times: Option<usize>,
    ratio: Option<f64>,
    count: Option<usize>,
    #[serde(rename = "for")]
    for_duration: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAnnotate {
    node: String,
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCrash {
    before: Option<String>,
    after: Option<String>,
}

fn default_namespace() -> String {
    "default".into()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    FailIncreaseSize { times: Option<usize> },
    PartialFulfilment { ratio: Option<f64>, count: Option<usize> },
    NeverRegister { count: usize },
    FailDeleteNodes { times: Option<usize> },
    StockOut { duration: Duration },
    Clear,
}

/// When a crash event kills the autoscaler process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// At the event's time, between two loops.
    Now,
    /// At the first call of this name (one of [`ACTUATION_CALLS`]) from the event's time on,
    /// before it reaches the cloud or the API server.
    Before(&'static str),
    /// The same, after the call took effect and before its answer is read.
    After(&'static str),
}

impl Crash {
    /// Where [`Calls`](crate::core::counting::Calls) stops the process; `None` for [`Crash::Now`].
    pub fn halt(self) -> Option<Halt> {
        match self {
            Crash::Now => None,
            Crash::Before(call) => Some(Halt::BeforeNext(call)),
            Crash::After(call) => Some(Halt::AfterNext(call)),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Action {
    Scale {
        target: ObjectRef,
        replicas: i32,
    },
    /// Moves replicas linearly to `to` over `over` (one step per minute).
    Ramp {
        target: ObjectRef,
        to: i32,
        over: Duration,
    },
    Create(Value),
    Delete(ObjectRef),
    Fault {
        group: String,
        fault: Fault,
    },
    AnnotateNode {
        node: String,
        annotations: BTreeMap<String, String>,
    },
    /// The autoscaler process is killed; a fresh one takes over.
    Crash(Crash),
}

#[derive(Clone, Debug)]
pub struct ScenarioEvent {
    pub at: Duration,
    pub action: Action,
    /// Where it was written (`day.yaml:231: events[4]`), for errors found while it runs (a
    /// target that does not exist at that time).
    pub place: String,
}

#[derive(Clone, Debug)]
pub struct ClusterTiming {
    pub node_startup_delay: Option<Duration>,
    pub pod_startup_delay: Option<Duration>,
    pub job_run_duration: Option<Duration>,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub start: Timestamp,
    pub duration: Duration,
    pub seed: u64,
    /// The currency of the node groups' prices: a code or symbol, shown next to every cost.
    pub currency: String,
    pub flags: Vec<String>,
    pub timing: ClusterTiming,
    pub groups: Vec<GroupFileSpec>,
    pub objects: Vec<Value>,
    pub events: Vec<ScenarioEvent>,
    /// Load traces for workloads with pod autoscalers (read by `hpa` support).
    pub loads: Vec<super::load::LoadSpec>,
}

/// Keys whose values are `Spanned` (they show up as an extra `value` segment in error paths).
const SPANNED: &[&str] = &[
    "start",
    "duration",
    "currency",
    "flags",
    "objects",
    "loads",
    "nodeStartupDelay",
    "podStartupDelay",
    "jobRunDuration",
    "at",
    "scale",
    "ramp",
    "create",
    "delete",
    "fault",
    "annotateNode",
    "crash",
];

fn line<T>(s: &Spanned<T>) -> Option<u64> {
    line_of(s)
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, line: Option<u64>, message: impl Into<String>) -> ScenarioError {
        FileError::new(self.file, field, line, message)
    }

    fn duration(&self, field: &str, s: &Spanned<String>) -> Result<Duration, ScenarioError> {
        parse_go_duration(&s.value).map_err(|m| self.err(field, line(s), m))
    }
}

fn object_ref(kind: String, namespace: String, name: String) -> ObjectRef {
    ObjectRef { kind, namespace, name }
}

/// Reads YAML into `T`; an error names the field's path and line.
fn deserialize<T: serde::de::DeserializeOwned>(ctx: &Ctx, text: &str) -> Result<T, ScenarioError> {
    let spanned: Vec<&str> = SPANNED.iter().chain(memory_file::SPANNED_KEYS).copied().collect();
    cloudprovider::yaml::from_str(text, ctx.file, &spanned)
}

/// The longest flag a scenario may hold (the command line's own limit is the kernel's).
const MAX_FLAG_LENGTH: usize = 4096;

/// Parses and validates a scenario.
pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { file, text };
    let raw: RawScenario = deserialize(&ctx, text)?;
    let start = match &raw.start {
        Some(s) => s.value.parse::<Timestamp>().map_err(|_| ctx.err("start", line(s), "not an RFC 3339 time"))?,
        None => "2026-11-23T00:00:00Z".parse().expect("valid default start"),
    };
    let duration = ctx.duration("duration", &raw.duration)?;
    if duration.is_zero() {
        return Err(ctx.err("duration", line(&raw.duration), "must be positive"));
    }
    let currency = match &raw.currency {
        None => "USD".to_string(),
        Some(c) => {
            let v = c.value.trim();
            if v.is_empty() || v.chars().count() > 8 || v.chars().any(char::is_control) {
                return Err(ctx.err(
                    "currency",
                    line(c),
                    "a currency code or symbol (e.g. USD, EUR, €), at most 8 characters",
                ));
            }
            v.to_string()
        }
    };
    let flags: Vec<String> = raw.flags.iter().map(|f| f.value.clone()).collect();
    for (i, f) in raw.flags.iter().enumerate() {
        if !f.value.starts_with("--") {
            return Err(ctx.err(format!("flags[{i}]"), line(f), "flags are written --name=value"));
        }
        // clap's suggestions for an unknown flag cost time in proportion to its length; no real
        // flag comes near this.
        if f.value.len() > MAX_FLAG_LENGTH {
            return Err(ctx.err(format!("flags[{i}]"), line(f), format!("longer than {MAX_FLAG_LENGTH} bytes")));
        }
        // Each flag alone first, so that the error points at its line.
        if let Err(e) = world::options(std::slice::from_ref(&f.value), &[]) {
            return Err(ctx.err(format!("flags[{i}]"), line(f), e.to_string()));
        }
    }
    if let Err(e) = world::options(&flags, &[]) {
        return Err(ctx.err("flags", raw.flags.first().and_then(line), e.to_string()));
    }
    let cluster = raw.cluster.unwrap_or_default();
    let opt_duration =
        |field: &str, v: &Option<Spanned<String>>| v.as_ref().map(|s| ctx.duration(field, s)).transpose();
    let timing = ClusterTiming {
        node_startup_delay: opt_duration("cluster.nodeStartupDelay", &cluster.node_startup_delay)?,
        pod_startup_delay: opt_duration("cluster.podStartupDelay", &cluster.pod_startup_delay)?,
        job_run_duration: opt_duration("cluster.jobRunDuration", &cluster.job_run_duration)?,
    };
    let groups = memory_file::parse_groups(file, raw.node_groups)?;
    let mut objects = Vec::new();
    for (i, o) in raw.objects.into_iter().enumerate() {
        objects.push(check_object(&ctx, &format!("objects[{i}]"), o)?);
    }
    let mut events = Vec::new();
    for (i, e) in raw.events.into_iter().enumerate() {
        let field = |f: &str| format!("events[{i}].{f}");
        let at = ctx.duration(&field("at"), &e.at)?;
        if at > duration {
            return Err(ctx.err(field("at"), line(&e.at), "is after the end of the scenario"));
        }
        let mut actions = Vec::new();
        // A replica count the API server would refuse is refused, never clamped.
        let replicas = |f: &str, n: i32, l: Option<u64>| {
            if n < 0 { Err(ctx.err(field(f), l, format!("{n}: must be greater than or equal to 0"))) } else { Ok(n) }
        };
        if let Some(s) = e.scale {
            let replicas = replicas("scale.replicas", s.value.replicas, line(&s))?;
            let s = s.value;
            actions.push(Action::Scale { target: object_ref(s.kind, s.namespace, s.name), replicas });
        }
        if let Some(r) = e.ramp {
            let over = parse_go_duration(&r.value.over).map_err(|m| ctx.err(field("ramp.over"), line(&r), m))?;
            let to = replicas("ramp.to", r.value.to, line(&r))?;
            let r = r.value;
            actions.push(Action::Ramp { target: object_ref(r.kind, r.namespace, r.name), to, over });
        }
        if let Some(c) = e.create {
            actions.push(Action::Create(check_object(&ctx, &field("create"), c)?));
        }
        if let Some(d) = e.delete {
            let d = d.value;
            actions.push(Action::Delete(object_ref(d.kind, d.namespace, d.name)));
        }
        if let Some(f) = e.fault {
            let l = line(&f);
            let f = f.value;
            if !groups.iter().any(|g| g.id == f.group) {
                return Err(ctx.err(field("fault.group"), l, format!("unknown node group {:?}", f.group)));
            }
            let fault = match f.fault_type.as_str() {
                "failIncreaseSize" => Fault::FailIncreaseSize { times: f.times },
                "partialFulfilment" => {
                    if f.ratio.is_none() && f.count.is_none() {
                        return Err(ctx.err(field("fault"), l, "partialFulfilment needs ratio or count"));
                    }
                    Fault::PartialFulfilment { ratio: f.ratio, count: f.count }
                }
                "neverRegister" => Fault::NeverRegister { count: f.count.unwrap_or(1) },
                "failDeleteNodes" => Fault::FailDeleteNodes { times: f.times },
                "stockOut" => {
                    let d = f
                        .for_duration
                        .as_deref()
                        .ok_or_else(|| ctx.err(field("fault.for"), l, "stockOut needs for: <duration>"))?;
                    Fault::StockOut { duration: parse_go_duration(d).map_err(|m| ctx.err(field("fault.for"), l, m))? }
                }
                "clear" => Fault::Clear,
                other => {
                    return Err(ctx.err(
                        field("fault.type"),
                        l,
                        format!("unknown fault {other:?} (failIncreaseSize, partialFulfilment, neverRegister, failDeleteNodes, stockOut, clear)"),
                    ));
                }
            };
            actions.push(Action::Fault { group: f.group, fault });
        }
        if let Some(a) = e.annotate_node {
            let a = a.value;
            actions.push(Action::AnnotateNode { node: a.node, annotations: a.annotations });
        }
        if let Some(c) = e.crash {
            let l = line(&c);
            let call = |f: &str, name: &str| {
                ACTUATION_CALLS.iter().copied().find(|c| *c == name).ok_or_else(|| {
                    ctx.err(field(f), l, format!("unknown call {name:?} (one of: {})", ACTUATION_CALLS.join(", ")))
                })
            };
            let crash = match (c.value.before, c.value.after) {
                (None, None) => Crash::Now,
                (Some(name), None) => Crash::Before(call("crash.before", &name)?),
                (None, Some(name)) => Crash::After(call("crash.after", &name)?),
                (Some(_), Some(_)) => return Err(ctx.err(field("crash"), l, "before or after a call, not both")),
            };
            actions.push(Action::Crash(crash));
        }
        if actions.len() != 1 {
            return Err(ctx.err(
                format!("events[{i}]"),
                line(&e.at),
                "each event needs exactly one of scale, ramp, create, delete, fault, annotateNode, crash",
            ));
        }
        let place = match line(&e.at) {
            Some(l) => format!("{file}:{l}: events[{i}]"),
            None => format!("{file}: events[{i}]"),
        };
        events.push(ScenarioEvent { at, action: actions.remove(0), place });
    }
    events.sort_by_key(|e| e.at);
    let mut loads = Vec::new();
    for (i, l) in raw.loads.iter().enumerate() {
        let load = super::load::parse_load(&l.value).map_err(|(path, message)| {
            let field = if path.is_empty() { format!("loads[{i}]") } else { format!("loads[{i}].{path}") };
            ctx.err(field, line(l), message)
        })?;
        loads.push(load);
    }
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| file.to_string()),
        start,
        duration,
        seed: raw.seed.unwrap_or(1),
        currency,
        flags,
        timing,
        groups,
        objects,
        events,
        loads,
    })
}

/// Checks an object of the scenario as the API server would (and strictly: a field its type
/// does not know is an error) and returns it with its quantities normalized. Errors point at
/// the line the field is written on (the deepest part of its path that is written).
fn check_object(ctx: &Ctx, field: &str, o: Spanned<Value>) -> Result<Value, ScenarioError> {
    let kind = o.value.get("kind").and_then(Value::as_str);
    let name = o.value.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str);
    if kind.is_none() {
        return Err(ctx.err(format!("{field}.kind"), line(&o), "missing"));
    }
    if name.is_none() {
        return Err(ctx.err(format!("{field}.metadata.name"), line(&o), "missing"));
    }
    let value = normalize_quantities(o.value.clone());
    match world::scenario_object(value.clone(), field) {
        Ok(_) => Ok(value),
        Err(WorldError::Invalid { field: path, message }) => {
            let at =
                cloudprovider::yaml::line_of_path(ctx.text, 0, &path, serde_saphyr::Options::default()).or(line(&o));
            Err(ctx.err(path, at, message))
        }
        Err(other) => Err(ctx.err(field, line(&o), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "duration: 1h\nnodeGroups:\n- id: g\n  minSize: 0\n  maxSize: 3\n  template: {status: {capacity: {cpu: 4, memory: 16Gi, pods: 110}}}\n";

    #[test]
    fn minimal_scenario_parses_with_defaults() {
        let s = parse(MINIMAL, "s.yaml").unwrap();
        assert_eq!(s.duration, Duration::from_secs(3600));
        assert_eq!(s.groups[0].initial_size, 0);
        assert_eq!(s.groups[0].provisioning_delay, Duration::from_secs(120));
    }

    #[test]
    fn currency_defaults_to_usd_and_is_checked() {
        assert_eq!(parse(MINIMAL, "s.yaml").unwrap().currency, "USD");
        assert_eq!(parse(&format!("currency: EUR\n{MINIMAL}"), "s.yaml").unwrap().currency, "EUR");
        let err = parse(&format!("currency: \"\"\n{MINIMAL}"), "s.yaml").unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("currency", Some(1)));
    }

    #[test]
    fn unknown_key_names_field_and_line() {
        let text = format!("{MINIMAL}events:\n- at: 10m\n  scael: {{}}\n");
        let err = parse(&text, "s.yaml").unwrap_err();
        assert_eq!(err.line, Some(9), "{err}");
        assert!(err.to_string().contains("events[0]"), "{err}");
    }

    #[test]
    fn a_typo_in_a_created_object_names_the_line_of_the_field() {
        let text = format!(
            "{MINIMAL}events:\n- at: 10m\n  create:\n    apiVersion: v1\n    kind: Pod\n    metadata: {{name: p}}\n    spec:\n      contianers: []\n- at: 20m\n  create: {{apiVersion: v1, kind: Pod, metadata: {{name: q}}, spec: {{containers: []}}}}\n"
        );
        let err = parse(&text, "s.yaml").unwrap_err();
        assert_eq!(err.field, "events[0].create.spec.contianers", "{err}");
        assert_eq!(err.line, Some(14), "{err}");
    }

    #[test]
    fn bad_duration_names_field_and_line() {
        let err = parse("duration: 1 hour\n", "s.yaml").unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("duration", Some(1)));
    }

    #[test]
    fn min_above_max_is_an_error() {
        let err = parse(&MINIMAL.replace("minSize: 0", "minSize: 5"), "s.yaml").unwrap_err();
        assert_eq!(err.field, "nodeGroups[0].minSize");
        assert_eq!(err.line, Some(4));
    }

    #[test]
    fn fault_on_unknown_group_is_an_error() {
        let text = format!("{MINIMAL}events:\n- at: 10m\n  fault: {{group: nope, type: stockOut, for: 1h}}\n");
        let err = parse(&text, "s.yaml").unwrap_err();
        assert_eq!(err.field, "events[0].fault.group");
    }

    #[test]
    fn events_after_the_end_are_an_error() {
        let text = format!("{MINIMAL}events:\n- at: 2h\n  scale: {{kind: Deployment, name: web, replicas: 3}}\n");
        assert_eq!(parse(&text, "s.yaml").unwrap_err().field, "events[0].at");
    }

    #[test]
    fn crash_events_kill_now_or_at_a_named_call() {
        let text = format!(
            "{MINIMAL}events:\n- {{at: 10m, crash: {{}}}}\n- {{at: 20m, crash: {{before: EvictPod}}}}\n- {{at: 30m, crash: {{after: Taint ToBeDeleted}}}}\n"
        );
        let crashes: Vec<Crash> = parse(&text, "s.yaml")
            .unwrap()
            .events
            .iter()
            .map(|e| match e.action {
                Action::Crash(c) => c,
                ref other => panic!("not a crash: {other:?}"),
            })
            .collect();
        assert_eq!(crashes, [Crash::Now, Crash::Before("EvictPod"), Crash::After("Taint ToBeDeleted")]);
        assert_eq!(
            crashes.iter().map(|c| c.halt()).collect::<Vec<_>>(),
            [None, Some(Halt::BeforeNext("EvictPod")), Some(Halt::AfterNext("Taint ToBeDeleted"))]
        );
    }

    #[test]
    fn a_bad_crash_event_names_field_and_line() {
        for (crash, field) in [
            ("{before: Evict}", "events[0].crash.before"),
            ("{after: refresh}", "events[0].crash.after"),
            ("{before: EvictPod, after: EvictPod}", "events[0].crash"),
        ] {
            let err = parse(&format!("{MINIMAL}events:\n- at: 10m\n  crash: {crash}\n"), "s.yaml").unwrap_err();
            assert_eq!((err.field.as_str(), err.line), (field, Some(9)), "{crash}: {err}");
        }
        // A crash alongside another change is refused as any two changes in one event.
        let text = format!("{MINIMAL}events:\n- at: 10m\n  crash: {{}}\n  delete: {{kind: Job, name: j}}\n");
        assert_eq!(parse(&text, "s.yaml").unwrap_err().field, "events[0]");
    }

    #[test]
    fn unquoted_quantities_become_strings() {
        let v = normalize_quantities(
            serde_json::json!({"spec": {"containers": [{"resources": {"requests": {"cpu": 2}}}]}}),
        );
        assert_eq!(v["spec"]["containers"][0]["resources"]["requests"]["cpu"], "2");
    }
}
