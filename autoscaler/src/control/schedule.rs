//! When the next iteration starts: one schedule for the controller (real clock) and `simulate`
//! (virtual clock), so that what `simulate` shows is what the controller does.
//!
//! Upstream's rules (`loop/trigger.go`, `main.go`):
//!
//! - With `--frequent-loops-enabled` (default): the next iteration starts at once after a
//!   productive one (it scaled up or started a deletion); otherwise at the first of the
//!   `--scan-interval` timer, counted from the end of the last iteration, and a new
//!   unschedulable pod (`PodScheduled=False`, reason `Unschedulable`, changed less than 10 s
//!   ago; see [`is_recently_unschedulable`]).
//! - Flag off: the timer alone.
//!
//! Ours, not upstream's:
//!
//! - A batching window before an iteration that unschedulable pods start: it starts once no
//!   new one arrived for `--unschedulable-pods-batch-idle` (1 s) but not before the oldest of
//!   them is 2 s old by its `creationTimestamp`, and at the latest
//!   `--unschedulable-pods-batch-max` (10 s) after the first was seen, so a burst of 1,000 pods
//!   created over a few seconds is one decision instead of one per pod the watch happens to
//!   deliver between iterations. (Upstream's iteration would find pods younger than 2 s "very
//!   new" and skip the scale-up until the timer: the window avoids that wasted iteration.) The
//!   2 s count from the creation time, as `decide`'s rule does, not from when the watch
//!   delivered the pod: a pod the scheduler took a while to give up on, or that the watch
//!   delivered late, is not made to wait longer than `decide` would. Either flag at 0 starts at
//!   once, as upstream.
//! - An iteration that skipped the scale-up because every unschedulable pod was very new
//!   (upstream's "waiting one iteration for more") is followed by one as soon as they are not:
//!   when the oldest pod seen before it started is 2 s old, at the latest 2 s after it started.
//!   Upstream waits for the timer or another pod; a burst that a timer iteration happened to
//!   catch in its first 2 s would wait the whole scan interval.
//! - The first iteration starts at once (upstream waits for the timer or a pod): the caches
//!   have synced and the Lease is held, so there is nothing to wait for, and the controller's
//!   first decision is what `plan` shows.
//! - A pod autoscaler sync that anticipates new pods (HPA-aware scale-up) starts the next
//!   iteration at once, as a productive iteration does: those pods need nodes.
//!
//! [`LoopSchedule`] is a pure state machine on timestamps: the caller tells it what happened
//! and when, and asks when the next iteration is due. [`UnschedulablePodSignal`] carries the
//! adapters' observations (the kube adapter's pod watch, the memory cluster's scheduler) to it.

use std::sync::Mutex;
use std::time::Duration;

use cloudprovider::duration::later;
use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;
use tokio::sync::Notify;

use super::LoopReport;
use crate::config::AutoscalingOptions;
use crate::core::classify::is_unschedulable;
use crate::core::decide::VERY_NEW_POD_AGE;
use crate::core::plan::ScaleUpResult;

/// Upstream's `maxPodChangeAge`: a pod whose `PodScheduled` condition changed longer ago than
/// this is not new (an informer resync or an unrelated update of an old pending pod).
pub const MAX_POD_CHANGE_AGE: Duration = Duration::from_secs(10);

/// The flags the schedule follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleConfig {
    /// `--scan-interval`: the longest gap between the end of one iteration and the start of
    /// the next.
    pub scan_interval: Duration,
    /// `--frequent-loops-enabled`.
    pub frequent_loops: bool,
    /// `--unschedulable-pods-batch-idle`.
    pub batch_idle: Duration,
    /// `--unschedulable-pods-batch-max`.
    pub batch_max: Duration,
}

impl ScheduleConfig {
    pub fn from_options(options: &AutoscalingOptions) -> Self {
        ScheduleConfig {
            scan_interval: options.scan_interval,
            frequent_loops: options.frequent_loops_enabled,
            batch_idle: options.unschedulable_pods_batch_idle,
            batch_max: options.unschedulable_pods_batch_max,
        }
    }
}

/// How an iteration ended, as far as the schedule cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterationOutcome {
    /// It scaled up or started a deletion: the cluster is changing, look again at once.
    Productive,
    /// Every unschedulable pod was very new (`ScaleUpResult::InCooldown`): it skipped the
    /// scale-up, waiting for more pods.
    WaitedForNewPods,
    /// It ran and had nothing to do.
    Idle,
    /// It failed; upstream waits as after an idle iteration.
    Failed,
}

impl IterationOutcome {
    /// The outcome of an iteration that returned `report`.
    pub fn of(report: &LoopReport) -> Self {
        if report.productive() {
            IterationOutcome::Productive
        } else if report.plan.as_ref().is_some_and(|p| p.scale_up.result == ScaleUpResult::InCooldown) {
            IterationOutcome::WaitedForNewPods
        } else {
            IterationOutcome::Idle
        }
    }
}

/// Why an iteration is due (upstream logs the same reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The first iteration after start-up.
    Start,
    /// The previous iteration scaled up or started a deletion.
    Productive,
    /// The pod autoscalers anticipate new pods.
    AnticipatedPods,
    /// New unschedulable pods, after the batching window.
    UnschedulablePods,
    /// `--scan-interval` passed since the last iteration ended.
    Timer,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::Productive => "productive iteration",
            Trigger::AnticipatedPods => "pods anticipated by the pod autoscalers",
            Trigger::UnschedulablePods => "unschedulable pods appearing",
            Trigger::Timer => "scan-interval timer",
        }
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When unschedulable pods were seen: the first and the last of a burst, and the oldest
/// creation time among them (what `decide`'s "very new" rule reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodsSeen {
    pub first: Timestamp,
    pub last: Timestamp,
    pub oldest_created: Timestamp,
}

impl PodsSeen {
    /// Pods seen at `t` and created then.
    pub fn at(t: Timestamp) -> Self {
        PodsSeen { first: t, last: t, oldest_created: t }
    }

    /// A pod seen at `t` that was created at `created`. Without a creation time, or with one
    /// after `t` (clock skew between the API server and us), it counts as created when seen:
    /// never as older than it can be shown to be.
    pub fn created(t: Timestamp, created: Option<Timestamp>) -> Self {
        PodsSeen { oldest_created: created.map_or(t, |c| c.min(t)), ..PodsSeen::at(t) }
    }

    fn merge(self, other: PodsSeen) -> Self {
        PodsSeen {
            first: self.first.min(other.first),
            last: self.last.max(other.last),
            oldest_created: self.oldest_created.min(other.oldest_created),
        }
    }
}

/// The loop's schedule. See the module documentation for the rules.
#[derive(Clone, Debug)]
pub struct LoopSchedule {
    config: ScheduleConfig,
    /// When the next iteration is due without unschedulable pods, and why.
    due: (Timestamp, Trigger),
    /// When the last iteration started: pods seen up to then are in its view.
    last_started: Option<Timestamp>,
    /// Unschedulable pods seen since the last iteration started.
    pending: Option<PodsSeen>,
    /// The oldest creation time of the pods pending when the running (or last) iteration
    /// started: if it finds them all very new, they are not from 2 s after it.
    started_with: Option<Timestamp>,
}

impl LoopSchedule {
    /// A schedule whose first iteration is due at `start`.
    pub fn new(config: ScheduleConfig, start: Timestamp) -> Self {
        LoopSchedule { config, due: (start, Trigger::Start), last_started: None, pending: None, started_with: None }
    }

    pub fn config(&self) -> &ScheduleConfig {
        &self.config
    }

    /// New unschedulable pods were seen. Without frequent loops they change nothing (the timer
    /// alone); pods seen before the last iteration started were in its view.
    pub fn unschedulable_pods_seen(&mut self, seen: PodsSeen) {
        if !self.config.frequent_loops {
            return;
        }
        let seen = match self.last_started {
            Some(started) if seen.last <= started => return,
            // Part of the burst came after the start: it begins, for the window, at the start.
            Some(started) => PodsSeen { first: seen.first.max(started), ..seen },
            None => seen,
        };
        self.pending = Some(self.pending.map_or(seen, |p| p.merge(seen)));
    }

    /// The pod autoscalers anticipate new pods: with frequent loops, the next iteration is due
    /// at once, as after a productive one.
    pub fn pods_anticipated(&mut self, at: Timestamp) {
        if self.config.frequent_loops && at < self.due.0 {
            self.due = (at, Trigger::AnticipatedPods);
        }
    }

    /// An iteration starts at `at`: what was pending is in its view.
    pub fn iteration_started(&mut self, at: Timestamp) {
        self.last_started = Some(at);
        self.started_with = self.pending.take().map(|p| p.oldest_created);
        // Until it ends, nothing is due: the timer counts from its end.
        self.due = (Timestamp::MAX, Trigger::Timer);
    }

    /// The iteration ended at `at` with `outcome`.
    pub fn iteration_finished(&mut self, at: Timestamp, outcome: IterationOutcome) {
        let timer = (later(at, self.config.scan_interval), Trigger::Timer);
        self.due = match outcome {
            _ if !self.config.frequent_loops => timer,
            IterationOutcome::Productive => (at, Trigger::Productive),
            // The pods it saw are no longer very new 2 s after it started (their oldest was
            // created before it started), sooner when the schedule knows when the oldest was
            // created: look again then, not a whole scan interval later.
            IterationOutcome::WaitedForNewPods => {
                let started = self.last_started.unwrap_or(at);
                let oldest = self.started_with.map_or(started, |c| c.min(started));
                let aged = later(oldest, VERY_NEW_POD_AGE).max(at);
                if aged < timer.0 { (aged, Trigger::UnschedulablePods) } else { timer }
            }
            IterationOutcome::Idle | IterationOutcome::Failed => timer,
        };
    }

    /// When the batching window for the pending unschedulable pods closes.
    fn pods_due(&self) -> Option<Timestamp> {
        let p = self.pending?;
        let ScheduleConfig { batch_idle, batch_max, .. } = self.config;
        if batch_idle.is_zero() || batch_max.is_zero() {
            return Some(p.first);
        }
        // Not before the oldest pod is 2 s old: sooner, `decide` would find every pending pod
        // very new and wait one loop (upstream's rule).
        let idle = later(p.last, batch_idle).max(later(p.oldest_created, VERY_NEW_POD_AGE));
        Some(idle.min(later(p.first, batch_max)))
    }

    /// When the next iteration is due (it may be in the past: then at once).
    pub fn next_due(&self) -> Timestamp {
        match self.pods_due() {
            Some(pods) => pods.min(self.due.0),
            None => self.due.0,
        }
    }

    /// Why an iteration is due at `now`, or `None` when none is.
    pub fn due_at(&self, now: Timestamp) -> Option<Trigger> {
        let pods = self.pods_due().filter(|t| *t <= now && *t < self.due.0);
        match pods {
            Some(_) => Some(Trigger::UnschedulablePods),
            None => (self.due.0 <= now).then_some(self.due.1),
        }
    }
}

/// Whether a pod the watch delivers at `now` is a new unschedulable pod: not bound, not
/// finished, `PodScheduled=False` with reason `Unschedulable`, and that condition changed at
/// most [`MAX_POD_CHANGE_AGE`] ago (upstream's `isRecentUnschedulablePod`).
pub fn is_recently_unschedulable(pod: &PodInfo, now: Timestamp) -> bool {
    if !is_unschedulable(pod) {
        return false;
    }
    let changed = pod.state.scheduled.as_ref().and_then(|c| c.last_transition_time());
    // Without a transition time nothing says the pod is old: as new.
    changed.is_none_or(|t| later(t, MAX_POD_CHANGE_AGE) >= now)
}

/// From an adapter that sees unschedulable pods appear to the loop that waits for them. The
/// adapter calls [`record`](Self::record) for each such pod; the loop waits on
/// [`notified`](Self::notified) and [`take`](Self::take)s what accumulated. Only two
/// timestamps are kept, however many pods arrive.
#[derive(Debug, Default)]
pub struct UnschedulablePodSignal {
    seen: Mutex<Option<PodsSeen>>,
    notify: Notify,
}

impl UnschedulablePodSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// An unschedulable pod seen at `at`, created at `created` (`None`: unknown).
    pub fn record(&self, at: Timestamp, created: Option<Timestamp>) {
        let pod = PodsSeen::created(at, created);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        *seen = Some(seen.map_or(pod, |s| s.merge(pod)));
        drop(seen);
        // A permit is stored when nobody waits: a signal between two waits is not lost.
        self.notify.notify_one();
    }

    /// What was recorded since the last call.
    pub fn take(&self) -> Option<PodsSeen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Resolves after the next `record` (at once if one came since the last wait).
    pub async fn notified(&self) {
        self.notify.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn t(seconds: f64) -> Timestamp {
        later(Timestamp::UNIX_EPOCH, Duration::from_secs_f64(seconds))
    }

    fn config() -> ScheduleConfig {
        ScheduleConfig {
            scan_interval: Duration::from_secs(10),
            frequent_loops: true,
            batch_idle: Duration::from_secs(1),
            batch_max: Duration::from_secs(10),
        }
    }

    /// A schedule whose first iteration ran (idle) from 0 s to `end`.
    fn after_first(config: ScheduleConfig, end: f64) -> LoopSchedule {
        let mut s = LoopSchedule::new(config, t(0.0));
        assert_eq!(s.due_at(t(0.0)), Some(Trigger::Start));
        s.iteration_started(t(0.0));
        s.iteration_finished(t(end), IterationOutcome::Idle);
        s
    }

    #[test]
    fn the_first_iteration_is_due_at_start() {
        let s = LoopSchedule::new(config(), t(5.0));
        assert_eq!(s.next_due(), t(5.0));
        assert_eq!(s.due_at(t(4.9)), None);
        assert_eq!(s.due_at(t(5.0)), Some(Trigger::Start));
    }

    #[test]
    fn scan_interval_is_the_longest_gap_counted_from_the_end_of_an_iteration() {
        for outcome in [IterationOutcome::Idle, IterationOutcome::Failed] {
            let mut s = LoopSchedule::new(config(), t(0.0));
            s.iteration_started(t(0.0));
            s.iteration_finished(t(3.0), outcome);
            assert_eq!(s.next_due(), t(13.0), "{outcome:?}");
            assert_eq!(s.due_at(t(12.9)), None);
            assert_eq!(s.due_at(t(13.0)), Some(Trigger::Timer));
        }
    }

    #[test]
    fn nothing_is_due_while_an_iteration_runs() {
        let mut s = LoopSchedule::new(config(), t(0.0));
        s.iteration_started(t(0.0));
        assert_eq!(s.due_at(t(1000.0)), None);
    }

    #[test]
    fn a_productive_iteration_makes_the_next_due_at_once() {
        let mut s = LoopSchedule::new(config(), t(0.0));
        s.iteration_started(t(0.0));
        s.iteration_finished(t(2.0), IterationOutcome::Productive);
        assert_eq!(s.next_due(), t(2.0));
        assert_eq!(s.due_at(t(2.0)), Some(Trigger::Productive));
        // The one after it, idle, waits for the timer again.
        s.iteration_started(t(2.0));
        s.iteration_finished(t(2.5), IterationOutcome::Idle);
        assert_eq!(s.next_due(), t(12.5));
    }

    #[test]
    fn an_unschedulable_pod_starts_an_iteration_once_it_is_no_longer_very_new() {
        // One pod: the idle window (1 s) closes before the pod is 2 s old, when `decide` would
        // skip it as very new; the iteration waits until then.
        let mut s = after_first(config(), 1.0);
        s.unschedulable_pods_seen(PodsSeen::at(t(4.0)));
        assert_eq!(s.next_due(), t(6.0));
        assert_eq!(s.due_at(t(5.9)), None);
        assert_eq!(s.due_at(t(6.0)), Some(Trigger::UnschedulablePods));
    }

    #[test]
    fn an_unschedulable_pod_after_a_quiet_idle_window_starts_an_iteration() {
        let mut c = config();
        c.batch_idle = Duration::from_secs(3);
        let mut s = after_first(c, 1.0);
        s.unschedulable_pods_seen(PodsSeen::at(t(4.0)));
        s.unschedulable_pods_seen(PodsSeen::at(t(5.0)));
        assert_eq!(s.next_due(), t(8.0));
        assert_eq!(s.due_at(t(8.0)), Some(Trigger::UnschedulablePods));
    }

    #[test]
    fn a_burst_of_1000_unschedulable_pods_is_one_iteration() {
        let mut s = after_first(config(), 1.0);
        // 1,000 pods over 4 s, one every 4 ms: the window stays open until 1 s after the last.
        let mut iterations = 0;
        let mut now = t(2.0);
        for i in 0..1000 {
            now = t(2.0 + f64::from(i) * 0.004);
            if s.due_at(now).is_some() {
                iterations += 1;
                s.iteration_started(now);
                s.iteration_finished(now, IterationOutcome::Idle);
            }
            s.unschedulable_pods_seen(PodsSeen::at(now));
        }
        assert_eq!(iterations, 0, "no iteration during the burst");
        let last = now;
        assert_eq!(s.next_due(), later(last, Duration::from_secs(1)));
        assert_eq!(s.due_at(s.next_due()), Some(Trigger::UnschedulablePods));
        s.iteration_started(s.next_due());
        // All of it was in that iteration's view: nothing is left to start another.
        assert_eq!(s.pending, None);
        s.iteration_finished(later(last, Duration::from_secs(2)), IterationOutcome::Idle);
        assert_eq!(s.due_at(later(last, Duration::from_secs(3))), None);
    }

    #[test]
    fn a_burst_that_never_pauses_starts_an_iteration_at_the_batch_max() {
        // A timer far away, and a pod every 0.5 s from 20 s: the idle window never closes, the
        // max does, 10 s after the first.
        let mut c = config();
        c.scan_interval = Duration::from_secs(600);
        let mut s = after_first(c, 0.0);
        let mut started = None;
        for i in 0..100 {
            let now = t(20.0 + f64::from(i) * 0.5);
            if started.is_none() && s.due_at(now).is_some() {
                started = Some(now);
            }
            s.unschedulable_pods_seen(PodsSeen::at(now));
        }
        assert_eq!(started, Some(t(30.0)));
    }

    #[test]
    fn the_window_counts_two_seconds_from_the_oldest_creation_not_from_when_the_pods_were_seen() {
        let mut s = after_first(config(), 0.0);
        // Created at 3.0 s (the API server's whole second), delivered at 3.9 s.
        s.unschedulable_pods_seen(PodsSeen::created(t(3.9), Some(t(3.0))));
        s.unschedulable_pods_seen(PodsSeen::created(t(4.0), Some(t(4.0))));
        // Idle 1 s after the last (5.0 s), and the oldest is 2 s old then.
        assert_eq!(s.next_due(), t(5.0));
        assert_eq!(s.due_at(t(4.9)), None);
        assert_eq!(s.due_at(t(5.0)), Some(Trigger::UnschedulablePods));
        // Delivered 1.5 s after its creation: 0.5 s later, not 2 s.
        let mut s = after_first(config(), 0.0);
        s.unschedulable_pods_seen(PodsSeen::created(t(4.5), Some(t(3.0))));
        assert_eq!(s.next_due(), t(5.5));
    }

    #[test]
    fn a_creation_time_after_the_pod_was_seen_counts_as_the_time_seen() {
        // Clock skew: the API server's clock is ahead. The pod is not taken for older than it
        // can be shown to be, nor kept waiting for a time that has not come.
        assert_eq!(PodsSeen::created(t(4.0), Some(t(9.0))), PodsSeen::at(t(4.0)));
        assert_eq!(PodsSeen::created(t(4.0), None), PodsSeen::at(t(4.0)));
        let mut s = after_first(config(), 0.0);
        s.unschedulable_pods_seen(PodsSeen::created(t(4.0), Some(t(9.0))));
        assert_eq!(s.next_due(), t(6.0));
    }

    #[test]
    fn the_timer_is_not_delayed_by_a_batch() {
        let mut s = after_first(config(), 0.0);
        s.unschedulable_pods_seen(PodsSeen::at(t(9.5)));
        s.unschedulable_pods_seen(PodsSeen::at(t(9.9)));
        assert_eq!(s.next_due(), t(10.0));
        assert_eq!(s.due_at(t(10.0)), Some(Trigger::Timer));
    }

    #[test]
    fn a_zero_window_starts_at_once_as_upstream() {
        for (idle, max) in [(0, 10), (1, 0), (0, 0)] {
            let mut c = config();
            c.batch_idle = Duration::from_secs(idle);
            c.batch_max = Duration::from_secs(max);
            let mut s = after_first(c, 0.0);
            s.unschedulable_pods_seen(PodsSeen::at(t(3.0)));
            assert_eq!(s.due_at(t(3.0)), Some(Trigger::UnschedulablePods), "idle {idle}s, max {max}s");
        }
    }

    #[test]
    fn pods_seen_before_an_iteration_started_were_in_its_view() {
        let mut s = after_first(config(), 0.0);
        s.iteration_started(t(5.0));
        s.unschedulable_pods_seen(PodsSeen::at(t(4.0)));
        s.unschedulable_pods_seen(PodsSeen::at(t(5.0)));
        s.iteration_finished(t(6.0), IterationOutcome::Idle);
        assert_eq!(s.next_due(), t(16.0));
        // Pods seen while it ran were not: they start the next one when the window closes, 1 s
        // after the last (the oldest, created at 4.0 s, is 2 s old before that).
        s.unschedulable_pods_seen(PodsSeen { first: t(4.0), last: t(5.5), oldest_created: t(4.0) });
        assert_eq!(s.next_due(), t(6.5));
        // The batch's maximum counts from the start, the earliest they can have been seen.
        let mut c = config();
        c.batch_max = Duration::from_secs(3);
        c.batch_idle = Duration::from_secs(5);
        let mut s = after_first(c, 0.0);
        s.iteration_started(t(5.0));
        s.unschedulable_pods_seen(PodsSeen { first: t(4.0), last: t(5.5), oldest_created: t(4.0) });
        assert_eq!(s.next_due(), t(8.0));
    }

    #[test]
    fn without_frequent_loops_only_the_timer_starts_iterations() {
        let mut c = config();
        c.frequent_loops = false;
        let mut s = after_first(c, 1.0);
        s.unschedulable_pods_seen(PodsSeen::at(t(2.0)));
        s.pods_anticipated(t(2.0));
        assert_eq!(s.next_due(), t(11.0));
        assert_eq!(s.due_at(t(11.0)), Some(Trigger::Timer));
        s.iteration_started(t(11.0));
        s.iteration_finished(t(12.0), IterationOutcome::Productive);
        assert_eq!(s.next_due(), t(22.0));
    }

    #[test]
    fn an_iteration_that_waited_for_very_new_pods_is_followed_once_they_are_not() {
        let mut s = after_first(config(), 0.0);
        // A timer iteration at 10 s catches pods seen at 9.5 s in their first 2 s.
        s.unschedulable_pods_seen(PodsSeen::at(t(9.5)));
        assert_eq!(s.due_at(t(10.0)), Some(Trigger::Timer));
        s.iteration_started(t(10.0));
        s.iteration_finished(t(10.5), IterationOutcome::WaitedForNewPods);
        // The oldest it knew of is 2 s old at 11.5 s: not 2 s after the start.
        assert_eq!(s.next_due(), t(11.5));
        assert_eq!(s.due_at(t(11.5)), Some(Trigger::UnschedulablePods));
        // Pods it did not know the creation of (in its view, never signalled): 2 s after the
        // start, when even one created just before it is no longer very new.
        let mut s = after_first(config(), 0.0);
        s.iteration_started(t(10.0));
        s.iteration_finished(t(10.5), IterationOutcome::WaitedForNewPods);
        assert_eq!(s.next_due(), t(12.0));
        // An iteration longer than 2 s: the next at once.
        s.iteration_started(t(12.0));
        s.iteration_finished(t(15.0), IterationOutcome::WaitedForNewPods);
        assert_eq!(s.next_due(), t(15.0));
        // Without frequent loops: the timer.
        let mut c = config();
        c.frequent_loops = false;
        let mut s = after_first(c, 0.0);
        s.iteration_started(t(10.0));
        s.iteration_finished(t(10.5), IterationOutcome::WaitedForNewPods);
        assert_eq!(s.next_due(), t(20.5));
    }

    #[test]
    fn anticipated_pods_make_the_next_iteration_due_at_once() {
        let mut s = after_first(config(), 1.0);
        s.pods_anticipated(t(4.0));
        assert_eq!(s.due_at(t(4.0)), Some(Trigger::AnticipatedPods));
    }

    #[test]
    fn a_recently_unschedulable_pod_is_new_for_ten_seconds() {
        let pod = |condition: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": []},
                "status": {"phase": "Pending", "conditions": [condition]},
            }))
            .unwrap()
        };
        let is_recently_unschedulable = |pod: &Pod, now| is_recently_unschedulable(&PodInfo::new(pod), now);
        let changed_at = "1970-01-01T00:01:40Z"; // 100 s
        let unschedulable = pod(serde_json::json!(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": changed_at}));
        assert!(is_recently_unschedulable(&unschedulable, t(100.0)));
        assert!(is_recently_unschedulable(&unschedulable, t(110.0)));
        assert!(!is_recently_unschedulable(&unschedulable, t(110.5)), "changed too long ago");
        let scheduling = pod(serde_json::json!(
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "lastTransitionTime": changed_at}));
        assert!(!is_recently_unschedulable(&scheduling, t(100.0)), "not Unschedulable");
        let mut bound = unschedulable.clone();
        bound.spec.as_mut().unwrap().node_name = Some("n1".into());
        assert!(!is_recently_unschedulable(&bound, t(100.0)), "bound");
    }

    #[tokio::test]
    async fn the_signal_keeps_the_first_and_last_time_and_wakes_a_later_waiter() {
        let signal = UnschedulablePodSignal::new();
        for i in 0..1000 {
            // Created 0.3 s before they are seen, the 500th at 0.5 s; one without a creation time.
            let created = match i {
                500 => Some(t(0.5)),
                999 => None,
                _ => Some(t(0.7 + f64::from(i) / 1000.0)),
            };
            signal.record(t(1.0 + f64::from(i) / 1000.0), created);
        }
        // Recorded before anyone waited: the wait still ends.
        tokio::time::timeout(Duration::from_secs(5), signal.notified()).await.expect("a stored wake-up");
        assert_eq!(signal.take(), Some(PodsSeen { first: t(1.0), last: t(1.999), oldest_created: t(0.5) }));
        assert_eq!(signal.take(), None);
    }
}
