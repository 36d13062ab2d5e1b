//! Exponential backoff of node groups after failed scale-ups (upstream §8.6): the first failure
//! backs a group off for the initial duration; a failure after the backoff expired doubles it
//! (capped); a failure during an active backoff restarts it from that failure with the same
//! duration (concurrent failures do not double it, as upstream's); everything is forgotten once
//! the reset timeout has passed since the last failure.

use cloudprovider::duration::later;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::core::cluster_state::Backoff as BackoffStatus;

#[derive(Clone, Debug)]
struct Entry {
    duration: Duration,
    until: Timestamp,
    last_failure: Timestamp,
    error_code: String,
    error_message: String,
}

#[derive(Clone, Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    reset_timeout: Duration,
    entries: BTreeMap<String, Entry>,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration, reset_timeout: Duration) -> Self {
        Backoff { initial, max, reset_timeout, entries: BTreeMap::new() }
    }

    /// Records a failed scale-up of `group` and returns until when it is backed off.
    pub fn fail(&mut self, group: &str, error_code: &str, error_message: &str, now: Timestamp) -> Timestamp {
        // Upstream doubles only once the backoff has ended (its `until` is strictly before now).
        let duration = match self.entries.get(group) {
            Some(e) if e.until >= now => e.duration,
            Some(e) if later(e.last_failure, self.reset_timeout) > now => (e.duration * 2).min(self.max),
            _ => self.initial,
        };
        let until = later(now, duration);
        let mut message = error_message.to_string();
        if message.len() > 500 {
            let mut cut = 500;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str("<truncated>");
        }
        self.entries.insert(
            group.to_string(),
            Entry { duration, until, last_failure: now, error_code: error_code.into(), error_message: message },
        );
        until
    }

    /// The group's backoff, if it is backed off at `now`.
    pub fn status(&self, group: &str, now: Timestamp) -> Option<BackoffStatus> {
        self.entries.get(group).filter(|e| e.until > now).map(|e| BackoffStatus {
            error_code: e.error_code.clone(),
            error_message: e.error_message.clone(),
            until: e.until,
        })
    }

    /// Forgets groups whose last failure is older than the reset timeout.
    pub fn forget_old(&mut self, now: Timestamp) {
        let reset = self.reset_timeout;
        self.entries.retain(|_, e| later(e.last_failure, reset) > now);
    }

    /// A successful scale-up of the group clears its backoff.
    pub fn clear(&mut self, group: &str) {
        self.entries.remove(group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn backoff() -> Backoff {
        Backoff::new(Duration::from_secs(300), Duration::from_secs(1800), Duration::from_secs(3 * 3600))
    }

    #[test]
    fn backoff_starts_at_five_minutes() {
        let mut b = backoff();
        assert_eq!(b.fail("g", "timeout", "", t(0)), t(300));
        assert!(b.status("g", t(299)).is_some());
        assert!(b.status("g", t(300)).is_none());
    }

    #[test]
    fn backoff_doubles_after_expiry_up_to_thirty_minutes() {
        let mut b = backoff();
        let mut now = 0;
        let mut durations = Vec::new();
        for _ in 0..5 {
            let until = b.fail("g", "x", "", t(now));
            durations.push(until.as_second() - t(now).as_second());
            now = until.as_second() - t(0).as_second() + 1;
        }
        assert_eq!(durations, vec![300, 600, 1200, 1800, 1800]);
    }

    #[test]
    fn a_failure_during_backoff_restarts_it_without_doubling() {
        let mut b = backoff();
        b.fail("g", "x", "", t(0));
        assert_eq!(b.fail("g", "x", "", t(100)), t(100 + 300));
        // At the very end it is still running: same duration.
        assert_eq!(b.fail("g", "x", "", t(400)), t(400 + 300));
        // After it expires, the next failure doubles.
        assert_eq!(b.fail("g", "x", "", t(701)), t(701 + 600));
    }

    #[test]
    fn backoff_resets_three_hours_after_the_last_failure() {
        let mut b = backoff();
        b.fail("g", "x", "", t(0));
        b.fail("g", "x", "", t(400));
        assert_eq!(b.fail("g", "x", "", t(400 + 3 * 3600 + 1)), t(400 + 3 * 3600 + 1 + 300));
    }
}
