//! `?watch=true`: newline-delimited JSON watch events, resumable from a resource version.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::handlers::{status_body, streaming_response};
use super::resources::RESOURCES;
use super::selectors::ObjectFilter;
use super::store::{Change, ChangeKind, Notice, Shared, Stored};

pub(crate) struct WatchRequest {
    resource: usize,
    filter: ObjectFilter,
    /// `None`: start from the current state, sending every matching object as `ADDED` first
    /// (`resourceVersion` unset or `"0"`).
    since: Option<u64>,
    timeout: Option<Duration>,
    /// `sendInitialEvents=true` (streaming lists): end the initial objects with a bookmark.
    initial_events_end: bool,
}

impl WatchRequest {
    pub fn from_params(
        resource: usize,
        namespace: Option<String>,
        params: &HashMap<String, String>,
    ) -> Result<Self, String> {
        let filter = ObjectFilter::from_params(namespace, params)?;
        let since = match params.get("resourceVersion").map(String::as_str) {
            None | Some("") | Some("0") => None,
            Some(v) => Some(v.parse::<u64>().map_err(|_| format!("invalid resourceVersion {v:?}"))?),
        };
        let timeout = match params.get("timeoutSeconds") {
            None => None,
            Some(t) => {
                Some(Duration::from_secs(t.parse::<u64>().map_err(|_| format!("invalid timeoutSeconds {t:?}"))?))
            }
        };
        let initial_events_end = params.get("sendInitialEvents").is_some_and(|v| v == "true")
            && params.get("allowWatchBookmarks").is_some_and(|v| v == "true");
        Ok(WatchRequest { resource, filter, since, timeout, initial_events_end })
    }

    /// The event this watch sees for a change, if any: an object leaving the selection is a
    /// `DELETED`, one entering it an `ADDED`.
    fn event_for(&self, change: &Change) -> Option<Bytes> {
        if change.resource != self.resource {
            return None;
        }
        let was = change.old.as_deref().is_some_and(|o| self.filter.matches(o));
        let is = self.filter.matches(&change.new);
        let kind = match change.kind {
            ChangeKind::Added if is => "ADDED",
            ChangeKind::Modified if was && is => "MODIFIED",
            ChangeKind::Modified if is => "ADDED",
            ChangeKind::Modified if was => "DELETED",
            ChangeKind::Deleted if was => "DELETED",
            _ => return None,
        };
        Some(stored_line(kind, &change.new))
    }
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&json!({"type": kind, "object": object})).expect("JSON values serialize");
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// [`line`] for a stored object: its JSON text is copied in as it is.
fn stored_line(kind: &str, object: &Stored) -> Bytes {
    let mut bytes = Vec::with_capacity(object.json.len() + kind.len() + 22);
    bytes.extend_from_slice(b"{\"type\":\"");
    bytes.extend_from_slice(kind.as_bytes());
    bytes.extend_from_slice(b"\",\"object\":");
    bytes.extend_from_slice(&object.json);
    bytes.extend_from_slice(b"}\n");
    Bytes::from(bytes)
}

fn gone_line(since: Option<u64>, current: u64) -> Bytes {
    let message = format!("too old resource version: {} ({current})", since.unwrap_or_default());
    line("ERROR", &status_body(410, "Expired", &message, None))
}

/// Decrements the open-watch count when the stream ends, however it ends.
struct OpenWatch(Arc<Shared>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.active_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) fn watch_response(shared: Arc<Shared>, request: WatchRequest) -> Response {
    // Subscribe and read the backlog under one lock: every later change arrives as a notice.
    let (mut notices, backlog, gone) = {
        let state = shared.lock();
        let notices = shared.notices.subscribe();
        match request.since {
            Some(since) if since < state.compacted => {
                (notices, vec![gone_line(Some(since), state.resource_version)], true)
            }
            Some(since) => {
                // The history is in version order: skip what the client has seen without
                // walking it (it holds every write since the last compaction).
                let first = state.history.partition_point(|c| c.resource_version <= since);
                let backlog = state.history.range(first..).filter_map(|c| request.event_for(c)).collect();
                (notices, backlog, false)
            }
            None => {
                let mut backlog: Vec<Bytes> = state
                    .after(request.resource, None)
                    .filter(|(_, o)| request.filter.matches(o))
                    .map(|(_, o)| stored_line("ADDED", o))
                    .collect();
                if request.initial_events_end {
                    let def = &RESOURCES[request.resource];
                    let bookmark = json!({
                        "apiVersion": def.api_version(),
                        "kind": def.kind,
                        "metadata": {
                            "resourceVersion": state.resource_version.to_string(),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    });
                    backlog.push(line("BOOKMARK", &bookmark));
                }
                (notices, backlog, false)
            }
        }
    };
    shared.active_watches.fetch_add(1, Ordering::SeqCst);
    let open = OpenWatch(shared);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        let _open = open;
        for event in backlog {
            if tx.send(event).await.is_err() {
                return;
            }
        }
        if gone {
            return;
        }
        let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
        loop {
            let expired = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let notice = tokio::select! {
                _ = expired => return,
                _ = tx.closed() => return,
                notice = notices.recv() => notice,
            };
            let event = match notice {
                Ok(Notice::Change(change)) => match request.event_for(&change) {
                    Some(event) => event,
                    None => continue,
                },
                Ok(Notice::Drop(resource)) if resource.is_none_or(|r| r == request.resource) => return,
                Ok(Notice::Gone(resource)) if resource.is_none_or(|r| r == request.resource) => {
                    let current = request.since.unwrap_or_default();
                    let _ = tx.send(gone_line(request.since, current)).await;
                    return;
                }
                Ok(Notice::Drop(_) | Notice::Gone(_)) => continue,
                // Fell too far behind: the client must list again, as with a real server.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = tx.send(gone_line(request.since, 0)).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx)) });
    streaming_response(Body::from_stream(stream))
}
