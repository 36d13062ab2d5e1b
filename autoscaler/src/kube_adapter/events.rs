//! Event bookkeeping like client-go's recorder as upstream configures it: identical events
//! (same object, type, reason and message) are dropped within the de-duplication window
//! (5 minutes unless `--record-duplicated-events`), and a repeat after it bumps the existing
//! Event's `count` and `lastTimestamp` instead of creating a new object.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ports::{Event, EventType, ObjectRef};

/// Upstream's de-duplication window.
pub const DEFAULT_EVENT_DEDUP_WINDOW: Duration = Duration::from_secs(5 * 60);

/// Bound on remembered events; past it the memory starts over (client-go uses an LRU of 4096).
const MAX_REMEMBERED: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct EventKey {
    object: ObjectRef,
    event_type: EventType,
    reason: String,
    message: String,
}

impl EventKey {
    pub fn of(event: &Event) -> Self {
        EventKey {
            object: event.object.clone(),
            event_type: event.event_type,
            reason: event.reason.clone(),
            message: event.message.clone(),
        }
    }
}

/// An Event object written before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub namespace: String,
    pub name: String,
    pub count: i32,
    pub at: Instant,
}

/// What to do with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventAction {
    /// A duplicate within the window: drop it.
    Skip,
    /// New: create an Event object.
    Create,
    /// Seen before: raise this Event's count to `count`.
    Bump { namespace: String, name: String, count: i32 },
}

#[derive(Debug, Default)]
pub(crate) struct EventMemory {
    recorded: HashMap<EventKey, Recorded>,
}

impl EventMemory {
    pub fn decide(&self, key: &EventKey, now: Instant, dedup_window: Option<Duration>) -> EventAction {
        match self.recorded.get(key) {
            None => EventAction::Create,
            Some(r) if dedup_window.is_some_and(|w| now.saturating_duration_since(r.at) < w) => EventAction::Skip,
            Some(r) => EventAction::Bump { namespace: r.namespace.clone(), name: r.name.clone(), count: r.count + 1 },
        }
    }

    pub fn remember(&mut self, key: EventKey, recorded: Recorded) {
        if self.recorded.len() >= MAX_REMEMBERED && !self.recorded.contains_key(&key) {
            self.recorded.clear();
        }
        self.recorded.insert(key, recorded);
    }

    pub fn forget(&mut self, key: &EventKey) {
        self.recorded.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(message: &str) -> Event {
        Event {
            object: ObjectRef::node("n1"),
            event_type: EventType::Normal,
            reason: "ScaleDown".into(),
            message: message.into(),
        }
    }

    fn recorded(at: Instant, count: i32) -> Recorded {
        Recorded { namespace: "default".into(), name: "n1.1".into(), count, at }
    }

    #[test]
    fn identical_event_within_the_window_is_dropped() {
        let mut memory = EventMemory::default();
        let t0 = Instant::now();
        let key = EventKey::of(&event("m"));
        assert_eq!(memory.decide(&key, t0, Some(DEFAULT_EVENT_DEDUP_WINDOW)), EventAction::Create);
        memory.remember(key.clone(), recorded(t0, 1));
        assert_eq!(
            memory.decide(&key, t0 + Duration::from_secs(299), Some(DEFAULT_EVENT_DEDUP_WINDOW)),
            EventAction::Skip
        );
    }

    #[test]
    fn identical_event_after_the_window_bumps_the_count() {
        let mut memory = EventMemory::default();
        let t0 = Instant::now();
        let key = EventKey::of(&event("m"));
        memory.remember(key.clone(), recorded(t0, 1));
        assert_eq!(
            memory.decide(&key, t0 + Duration::from_secs(300), Some(DEFAULT_EVENT_DEDUP_WINDOW)),
            EventAction::Bump { namespace: "default".into(), name: "n1.1".into(), count: 2 }
        );
    }

    #[test]
    fn record_duplicated_events_bumps_every_repeat() {
        let mut memory = EventMemory::default();
        let t0 = Instant::now();
        let key = EventKey::of(&event("m"));
        memory.remember(key.clone(), recorded(t0, 3));
        assert_eq!(
            memory.decide(&key, t0, None),
            EventAction::Bump { namespace: "default".into(), name: "n1.1".into(), count: 4 }
        );
    }

    #[test]
    fn a_different_message_is_a_different_event() {
        let mut memory = EventMemory::default();
        let t0 = Instant::now();
        memory.remember(EventKey::of(&event("m")), recorded(t0, 1));
        assert_eq!(
            memory.decide(&EventKey::of(&event("other")), t0, Some(DEFAULT_EVENT_DEDUP_WINDOW)),
            EventAction::Create
        );
    }
}
