//! Upstream's `/health-check` rule.
//!
//! - Until monitoring starts (upstream starts it when this replica begins autoscaling, i.e.
//!   after it won the leader election) the check always passes: a standby replica is healthy.
//! - After that it fails when the last loop activity is older than `--max-inactivity` (10m) or
//!   the last successful loop is older than `--max-failing-time` (15m). "Older" is strict: at
//!   exactly the limit the check still passes.
//! - Until the first successful loop, both limits are `--max-startup-time` (20m), raised to at
//!   least the other two, so a slow first loop (caches filling) is not a failure.
//! - A successful loop is also activity; times only move forward.
//!
//! Every method takes the time explicitly, so tests drive it with any clock; the HTTP handler
//! reads the [`Clock`] given at construction.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::ports::Clock;
use cloudprovider::duration::{elapsed, format_go_duration};

/// The three limits, with upstream's flag defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthCheckConfig {
    /// `--max-inactivity`.
    pub max_inactivity: Duration,
    /// `--max-failing-time`.
    pub max_failing_time: Duration,
    /// `--max-startup-time`.
    pub max_startup_time: Duration,
}

impl Default for HealthCheckConfig {
    fn default() -> Self {
        HealthCheckConfig {
            max_inactivity: Duration::from_secs(10 * 60),
            max_failing_time: Duration::from_secs(15 * 60),
            max_startup_time: Duration::from_secs(20 * 60),
        }
    }
}

#[derive(Debug)]
struct State {
    monitoring: bool,
    last_activity: Timestamp,
    last_success: Timestamp,
    succeeded_once: bool,
}

/// The health of the autoscaler as `/health-check` reports it.
pub struct HealthCheck {
    config: HealthCheckConfig,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthCheck").field("config", &self.config).field("state", &self.state).finish()
    }
}

/// Why the check fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unhealthy {
    pub since_activity: Duration,
    pub since_success: Duration,
}

impl std::fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Error: last activity more than {} ago, last success more than {} ago",
            format_go_duration(self.since_activity),
            format_go_duration(self.since_success)
        )
    }
}

impl HealthCheck {
    /// A check that passes until [`HealthCheck::start_monitoring`]; `clock` is read by
    /// [`HealthCheck::check_now`] (the HTTP handler).
    pub fn new(config: HealthCheckConfig, clock: Arc<dyn Clock>) -> HealthCheck {
        let now = clock.now();
        HealthCheck {
            config,
            clock,
            state: Mutex::new(State {
                monitoring: false,
                last_activity: now,
                last_success: now,
                succeeded_once: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limits before the first successful loop: the startup time, at least the others.
    fn startup_limit(&self) -> Duration {
        self.config.max_startup_time.max(self.config.max_inactivity).max(self.config.max_failing_time)
    }

    /// Turns the check on (when this replica starts autoscaling); the limits count from `now`.
    pub fn start_monitoring(&self, now: Timestamp) {
        let mut state = self.lock();
        state.monitoring = true;
        state.last_activity = state.last_activity.max(now);
        state.last_success = state.last_success.max(now);
    }

    /// A loop iteration started at `at`.
    pub fn record_activity(&self, at: Timestamp) {
        let mut state = self.lock();
        state.last_activity = state.last_activity.max(at);
    }

    /// A loop iteration ended without an error (or with a transient one) at `at`.
    pub fn record_success(&self, at: Timestamp) {
        let mut state = self.lock();
        state.last_success = state.last_success.max(at);
        state.last_activity = state.last_activity.max(at);
        state.succeeded_once = true;
    }

    /// The verdict at `now`.
    pub fn check(&self, now: Timestamp) -> Result<(), Unhealthy> {
        let state = self.lock();
        if !state.monitoring {
            return Ok(());
        }
        let (activity_limit, success_limit) = if state.succeeded_once {
            (self.config.max_inactivity, self.config.max_failing_time)
        } else {
            (self.startup_limit(), self.startup_limit())
        };
        let since_activity = elapsed(state.last_activity, now);
        let since_success = elapsed(state.last_success, now);
        if since_activity > activity_limit || since_success > success_limit {
            Err(Unhealthy { since_activity, since_success })
        } else {
            Ok(())
        }
    }

    /// The verdict now, by the clock given at construction.
    pub fn check_now(&self) -> Result<(), Unhealthy> {
        self.check(self.clock.now())
    }
}
