//! Events recorded the way client-go's broadcaster does for upstream, off the loop: the loop
//! hands an event to a bounded queue and goes on; a background task correlates it and writes it.
//!
//! Correlation, in client-go's order, with upstream's options:
//! 1. **Spam filter**: a token bucket per spam key. Upstream (`getCorrelationOptions`): one event
//!    per 300 s, burst 1, keyed by reason and involved object — except the status ConfigMap's
//!    events, keyed by their message so each distinct one is kept. With
//!    `--record-duplicated-events` upstream uses client-go's defaults: burst 25, keyed by the
//!    involved object (and source).
//! 2. **Aggregation**: once 10 events that differ only in their message arrive within 10 minutes
//!    for one object and reason, later ones are folded into one Event whose message starts with
//!    `(combined from similar events): `.
//! 3. **Logging**: an event identical to one already written (same object, type, reason and
//!    message) raises that Event's `count` and `lastTimestamp` instead of creating a new object.
//!
//! The queue holds 1,000 events, like client-go's broadcaster; when it is full new events are
//! dropped and counted ([`EventRecorder::dropped`]), so a burst never holds the loop.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ::kube::api::{Api, Patch, PatchParams, PostParams};
use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::client::KubeClients;
use super::errors::{api_status, port_error};
use crate::ports::{Event, ObjectRef, PortError};

/// The component name Events are reported under.
pub const EVENT_SOURCE_COMPONENT: &str = "cluster-autoscaler";

/// Events waiting to be written, at most (client-go's `maxQueuedEvents`).
pub const EVENT_QUEUE_LENGTH: usize = 1000;

/// Bound on remembered keys per table; past it a table starts over (client-go: LRU caches).
const MAX_REMEMBERED: usize = 8192;

/// How the correlator filters, as upstream configures client-go.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrelatorOptions {
    /// Tokens per second of the spam filter's buckets.
    pub spam_qps: f64,
    /// Bucket size.
    pub spam_burst: u32,
    /// Upstream's key (reason + object, the status ConfigMap by message) when true; client-go's
    /// default (the object) when false.
    pub upstream_spam_key: bool,
    /// Status ConfigMap whose events are keyed by message (`<namespace>/<name>`).
    pub status_config_map: (String, String),
    /// Distinct messages before similar events are aggregated, and the window they count in.
    pub aggregate_max_events: usize,
    pub aggregate_window: Duration,
}

impl CorrelatorOptions {
    /// Upstream's options (`--record-duplicated-events=false`).
    pub fn upstream(status_namespace: &str, status_name: &str) -> CorrelatorOptions {
        CorrelatorOptions {
            spam_qps: 1.0 / 300.0,
            spam_burst: 1,
            upstream_spam_key: true,
            status_config_map: (status_namespace.to_string(), status_name.to_string()),
            aggregate_max_events: 10,
            aggregate_window: Duration::from_secs(600),
        }
    }

    /// client-go's defaults, which upstream uses with `--record-duplicated-events`.
    pub fn client_go_defaults(status_namespace: &str, status_name: &str) -> CorrelatorOptions {
        CorrelatorOptions { spam_burst: 25, upstream_spam_key: false, ..Self::upstream(status_namespace, status_name) }
    }
}

/// What to write for an event that passed the filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventWrite {
    /// A new Event object with this (possibly aggregated) message.
    Create { message: String },
    /// Raise an existing Event's count.
    Bump { namespace: String, name: String, count: i32 },
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Debug, Clone)]
struct Aggregate {
    messages: HashSet<String>,
    since: Instant,
}

/// An Event object written before: where it is and its count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub namespace: String,
    pub name: String,
    pub count: i32,
}

/// client-go's `EventCorrelator`, pure: decisions from the event and the time.
#[derive(Debug)]
pub(crate) struct Correlator {
    options: CorrelatorOptions,
    buckets: HashMap<String, Bucket>,
    aggregates: HashMap<String, Aggregate>,
    written: HashMap<String, Written>,
}

fn object_key(object: &ObjectRef) -> String {
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        object.api_version,
        object.kind,
        object.namespace.as_deref().unwrap_or(""),
        object.name
    )
}

fn bounded_insert<V>(map: &mut HashMap<String, V>, key: String, value: V) {
    if map.len() >= MAX_REMEMBERED && !map.contains_key(&key) {
        map.clear();
    }
    map.insert(key, value);
}

impl Correlator {
    pub fn new(options: CorrelatorOptions) -> Correlator {
        Correlator { options, buckets: HashMap::new(), aggregates: HashMap::new(), written: HashMap::new() }
    }

    fn is_status_config_map(&self, object: &ObjectRef) -> bool {
        let (namespace, name) = &self.options.status_config_map;
        object.kind == "ConfigMap" && object.namespace.as_deref() == Some(namespace) && &object.name == name
    }

    fn spam_key(&self, event: &Event) -> String {
        if !self.options.upstream_spam_key {
            return object_key(&event.object);
        }
        if self.is_status_config_map(&event.object) {
            return event.message.clone();
        }
        format!("{}\u{0}{}", event.reason, object_key(&event.object))
    }

    /// The spam filter: false when the event's bucket is empty.
    fn allow(&mut self, key: String, now: Instant) -> bool {
        let (qps, burst) = (self.options.spam_qps, f64::from(self.options.spam_burst));
        let mut bucket = self.buckets.get(&key).cloned().unwrap_or(Bucket { tokens: burst, at: now });
        bucket.tokens = (bucket.tokens + now.saturating_duration_since(bucket.at).as_secs_f64() * qps).min(burst);
        bucket.at = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        bounded_insert(&mut self.buckets, key, bucket);
        allowed
    }

    /// The message to write: the event's own, or the aggregated one once similar events pile up.
    fn aggregate(&mut self, event: &Event, now: Instant) -> String {
        let key = format!("{}\u{0}{}\u{0}{}", object_key(&event.object), event.event_type.as_str(), event.reason);
        let window = self.options.aggregate_window;
        let mut aggregate = match self.aggregates.get(&key) {
            Some(a) if now.saturating_duration_since(a.since) <= window => a.clone(),
            _ => Aggregate { messages: HashSet::new(), since: now },
        };
        aggregate.messages.insert(event.message.clone());
        let combined = aggregate.messages.len() >= self.options.aggregate_max_events;
        bounded_insert(&mut self.aggregates, key, aggregate);
        if combined { format!("(combined from similar events): {}", event.message) } else { event.message.clone() }
    }

    /// What to write for `event` at `now`, or `None` when the spam filter drops it.
    pub fn decide(&mut self, event: &Event, now: Instant) -> Option<(String, EventWrite)> {
        if !self.allow(self.spam_key(event), now) {
            return None;
        }
        let message = self.aggregate(event, now);
        // Aggregated events share one Event object per object and reason.
        let log_key = if message.starts_with("(combined from similar events): ") {
            format!("{}\u{0}{}\u{0}{}\u{0}combined", object_key(&event.object), event.event_type.as_str(), event.reason)
        } else {
            format!(
                "{}\u{0}{}\u{0}{}\u{0}{}",
                object_key(&event.object),
                event.event_type.as_str(),
                event.reason,
                event.message
            )
        };
        let write = match self.written.get(&log_key) {
            Some(w) => EventWrite::Bump { namespace: w.namespace.clone(), name: w.name.clone(), count: w.count + 1 },
            None => EventWrite::Create { message },
        };
        Some((log_key, write))
    }

    pub fn written(&mut self, log_key: String, written: Written) {
        bounded_insert(&mut self.written, log_key, written);
    }

    pub fn forget(&mut self, log_key: &str) {
        self.written.remove(log_key);
    }
}

/// Writes Event objects through the API.
struct EventSink {
    clients: KubeClients,
    reporting_instance: Option<String>,
    /// Makes Event names unique even for two events in one nanosecond.
    last_suffix: AtomicI64,
}

impl EventSink {
    fn next_name(&self, object_name: &str) -> String {
        // client-go names Events `<object>.<unix nanoseconds in hex>`; strictly increasing here.
        let now = i64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX);
        let next = |previous: i64| previous.max(now.saturating_sub(1)).saturating_add(1);
        let previous =
            self.last_suffix.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |p| Some(next(p))).unwrap_or_else(|p| p);
        format!("{object_name}.{:x}", next(previous))
    }

    async fn create(&self, event: &Event, message: &str) -> Result<Written, PortError> {
        // Events about cluster-scoped objects go to `default`, as client-go's recorder does.
        let namespace = event.object.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let name = self.next_name(&event.object.name);
        let now = Time(Timestamp::now());
        let body = CoreEvent {
            metadata: ObjectMeta { name: Some(name.clone()), namespace: Some(namespace.clone()), ..Default::default() },
            involved_object: ObjectReference {
                api_version: Some(event.object.api_version.clone()),
                kind: Some(event.object.kind.clone()),
                namespace: event.object.namespace.clone(),
                name: Some(event.object.name.clone()),
                ..Default::default()
            },
            reason: Some(event.reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(event.event_type.as_str().into()),
            source: Some(EventSource { component: Some(EVENT_SOURCE_COMPONENT.into()), host: None }),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            reporting_component: Some(EVENT_SOURCE_COMPONENT.into()),
            reporting_instance: self.reporting_instance.clone(),
            ..Default::default()
        };
        let api: Api<CoreEvent> = Api::namespaced(self.clients.events_client.clone(), &namespace);
        api.create(&PostParams::default(), &body).await.map_err(|e| port_error(e, "Event", &name))?;
        Ok(Written { namespace, name, count: 1 })
    }

    /// Raises an existing Event's count; `Ok(None)` when it is gone (Events expire after an hour).
    async fn bump(&self, namespace: &str, name: &str, count: i32) -> Result<Option<Written>, PortError> {
        let api: Api<CoreEvent> = Api::namespaced(self.clients.events_client.clone(), namespace);
        let patch = json!({"count": count, "lastTimestamp": Time(Timestamp::now())});
        match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(Some(Written { namespace: namespace.into(), name: name.into(), count })),
            Err(e) if api_status(&e) == Some(404) => Ok(None),
            Err(e) => Err(port_error(e, "Event", name)),
        }
    }

    async fn write(&self, correlator: &mut Correlator, event: Event) {
        let Some((log_key, write)) = correlator.decide(&event, Instant::now()) else { return };
        let written = match write {
            EventWrite::Create { message } => self.create(&event, &message).await,
            EventWrite::Bump { namespace, name, count } => match self.bump(&namespace, &name, count).await {
                Ok(Some(written)) => Ok(written),
                Ok(None) => {
                    correlator.forget(&log_key);
                    self.create(&event, &event.message).await
                }
                Err(e) => Err(e),
            },
        };
        match written {
            Ok(written) => correlator.written(log_key, written),
            Err(error) => {
                tracing::warn!(%error, reason = %event.reason, object = %event.object.name, "could not write an event")
            }
        }
    }
}

enum Queued {
    Event(Event),
    /// Answers once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// The loop's side of the event pipeline: `record` never waits.
pub struct EventRecorder {
    queue: mpsc::Sender<Queued>,
    dropped: Arc<AtomicU64>,
    /// Set when this process must write nothing more (it lost the leader Lease).
    stopped: Arc<AtomicBool>,
}

impl EventRecorder {
    /// Starts the writer task on the current tokio runtime.
    pub fn start(
        clients: KubeClients,
        reporting_instance: Option<String>,
        options: CorrelatorOptions,
    ) -> EventRecorder {
        let (queue, mut receiver) = mpsc::channel::<Queued>(EVENT_QUEUE_LENGTH);
        let sink = EventSink { clients, reporting_instance, last_suffix: AtomicI64::new(0) };
        let mut correlator = Correlator::new(options);
        let stopped = Arc::new(AtomicBool::new(false));
        let writer_stopped = stopped.clone();
        tokio::spawn(async move {
            while let Some(item) = receiver.recv().await {
                match item {
                    Queued::Event(_) if writer_stopped.load(Ordering::SeqCst) => {}
                    Queued::Event(event) => sink.write(&mut correlator, event).await,
                    Queued::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        EventRecorder { queue, dropped: Arc::new(AtomicU64::new(0)), stopped }
    }

    /// Writes nothing more, queued or not (the process lost the leader Lease).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Queues `event`; when the queue is full the event is dropped and counted.
    pub fn record(&self, event: Event) {
        if self.queue.try_send(Queued::Event(event)).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "the event queue is full; dropping events");
            }
        }
    }

    /// Events dropped because the queue was full, since start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until the events queued so far are written, or `timeout` passes (at shutdown, and
    /// for tests).
    pub async fn flush(&self, timeout: Duration) {
        let (done, written) = oneshot::channel();
        if self.queue.send_timeout(Queued::Flush(done), timeout).await.is_ok() {
            let _ = tokio::time::timeout(timeout, written).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{EventReason, EventType};

    fn event(object: ObjectRef, reason: EventReason, message: &str) -> Event {
        Event { object, event_type: EventType::Normal, reason, message: message.into() }
    }

    fn upstream() -> Correlator {
        Correlator::new(CorrelatorOptions::upstream("kube-system", "cluster-autoscaler-status"))
    }

    fn create(message: &str) -> EventWrite {
        EventWrite::Create { message: message.into() }
    }

    #[test]
    fn spam_filter_keeps_one_event_per_reason_and_object_per_five_minutes() {
        let mut c = upstream();
        let t0 = Instant::now();
        let node = ObjectRef::node("n1");
        assert_eq!(c.decide(&event(node.clone(), EventReason::ScaleDown, "a"), t0).unwrap().1, create("a"));
        assert!(c.decide(&event(node.clone(), EventReason::ScaleDown, "b"), t0 + Duration::from_secs(10)).is_none());
        // Another reason, or another object, has its own bucket.
        assert!(c.decide(&event(node.clone(), EventReason::ScaleDownFailed, "c"), t0).is_some());
        assert!(c.decide(&event(ObjectRef::node("n2"), EventReason::ScaleDown, "a"), t0).is_some());
        // The bucket refills after 300 s.
        assert!(c.decide(&event(node, EventReason::ScaleDown, "d"), t0 + Duration::from_secs(300)).is_some());
    }

    #[test]
    fn status_config_map_events_are_kept_per_message() {
        let mut c = upstream();
        let t0 = Instant::now();
        let status = ObjectRef::config_map("kube-system", "cluster-autoscaler-status");
        assert!(c.decide(&event(status.clone(), EventReason::ScaledUpGroup, "one"), t0).is_some());
        assert!(c.decide(&event(status.clone(), EventReason::ScaledUpGroup, "two"), t0).is_some());
        assert!(c.decide(&event(status, EventReason::ScaledUpGroup, "one"), t0).is_none());
    }

    #[test]
    fn an_identical_event_after_the_filter_window_bumps_the_count() {
        let mut c = upstream();
        let t0 = Instant::now();
        let node = ObjectRef::node("n1");
        let (key, _) = c.decide(&event(node.clone(), EventReason::ScaleDown, "m"), t0).unwrap();
        c.written(key, Written { namespace: "default".into(), name: "n1.1".into(), count: 1 });
        assert_eq!(
            c.decide(&event(node, EventReason::ScaleDown, "m"), t0 + Duration::from_secs(301)).unwrap().1,
            EventWrite::Bump { namespace: "default".into(), name: "n1.1".into(), count: 2 }
        );
    }

    #[test]
    fn record_duplicated_events_lets_a_burst_of_25_through_per_object() {
        let mut c = Correlator::new(CorrelatorOptions::client_go_defaults("kube-system", "cluster-autoscaler-status"));
        let t0 = Instant::now();
        let pod = ObjectRef::pod("default", "p");
        let kept = (0..30)
            .filter(|i| c.decide(&event(pod.clone(), EventReason::NotTriggerScaleUp, &format!("{i}")), t0).is_some());
        assert_eq!(kept.count(), 25);
    }

    #[test]
    fn ten_similar_events_are_combined() {
        let mut c = Correlator::new(CorrelatorOptions {
            spam_burst: 100,
            ..CorrelatorOptions::client_go_defaults("kube-system", "cluster-autoscaler-status")
        });
        let t0 = Instant::now();
        let pod = ObjectRef::pod("default", "p");
        for i in 0..9 {
            assert_eq!(
                c.decide(&event(pod.clone(), EventReason::NotTriggerScaleUp, &format!("m{i}")), t0).unwrap().1,
                create(&format!("m{i}"))
            );
        }
        assert_eq!(
            c.decide(&event(pod.clone(), EventReason::NotTriggerScaleUp, "m9"), t0).unwrap().1,
            create("(combined from similar events): m9")
        );
        // After the 10-minute window the count starts over.
        assert_eq!(
            c.decide(&event(pod, EventReason::NotTriggerScaleUp, "m10"), t0 + Duration::from_secs(601)).unwrap().1,
            create("m10")
        );
    }
}
