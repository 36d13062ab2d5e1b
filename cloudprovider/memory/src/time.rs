//! `SharedTime`: the virtual "now" of a simulation, shared by the in-memory cloud provider, the
//! in-memory cluster and the virtual clock. Only the simulation driver moves it.

use cloudprovider::duration::later;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// A cheap, cloneable handle on one virtual time, held as nanoseconds since the Unix epoch
/// (enough for the years 1678–2262). Every clone reads and moves the same time.
///
/// Time never goes backwards: [`SharedTime::advance_to`] ignores earlier timestamps, so a
/// driver that calls it with a stale reading cannot undo progress others depend on.
#[derive(Clone, Debug)]
pub struct SharedTime {
    nanos: Arc<AtomicI64>,
}

impl SharedTime {
    /// A time starting at `start`.
    pub fn new(start: Timestamp) -> SharedTime {
        SharedTime { nanos: Arc::new(AtomicI64::new(to_nanos(start))) }
    }

    pub fn now(&self) -> Timestamp {
        from_nanos(self.nanos.load(Ordering::Acquire))
    }

    /// Moves the time forward to `now` (no-op when `now` is not later) and returns the time.
    pub fn advance_to(&self, now: Timestamp) -> Timestamp {
        let target = to_nanos(now);
        let previous = self.nanos.fetch_max(target, Ordering::AcqRel);
        from_nanos(previous.max(target))
    }

    /// Moves the time forward by `step` and returns the new time.
    pub fn advance_by(&self, step: Duration) -> Timestamp {
        self.advance_to(later(self.now(), step))
    }
}

fn to_nanos(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanosecond()).unwrap_or(if t.as_nanosecond() < 0 { i64::MIN } else { i64::MAX })
}

fn from_nanos(n: i64) -> Timestamp {
    // Every i64 of nanoseconds is inside jiff's range (years -9999..=9999).
    Timestamp::from_nanosecond(i128::from(n)).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_moves_forward_only_and_is_shared_by_clones() {
        let start = Timestamp::from_second(1_000).unwrap();
        let time = SharedTime::new(start);
        let other = time.clone();
        assert_eq!(other.advance_by(Duration::from_secs(10)), Timestamp::from_second(1_010).unwrap());
        assert_eq!(time.now(), Timestamp::from_second(1_010).unwrap());
        assert_eq!(time.advance_to(start), Timestamp::from_second(1_010).unwrap(), "earlier time is ignored");
        assert_eq!(time.now(), Timestamp::from_second(1_010).unwrap());
    }

    #[test]
    fn sub_second_precision_is_kept() {
        let time = SharedTime::new(Timestamp::from_second(5).unwrap());
        time.advance_by(Duration::from_millis(1_500));
        assert_eq!(time.now().as_millisecond(), 6_500);
    }
}
