//! Leader election on a `coordination.k8s.io/v1` Lease, with the semantics of client-go's
//! election that upstream runs (`--leader-elect`, lock `leases/cluster-autoscaler` in
//! `--namespace`, lease 15s / renew deadline 10s / retry period 2s).
//!
//! # The rules
//!
//! - One attempt ([`LeaderElector::try_acquire_or_renew`]): read the Lease. Missing: create it
//!   holding it. Held by another identity and still valid: give up this attempt. Otherwise
//!   (ours, released, or expired): write it holding it, with the `resourceVersion` read, so a
//!   concurrent writer makes the update fail with `409 Conflict` and this attempt is lost.
//! - "Valid" is measured as client-go does, on this process's monotonic clock: a lease is valid
//!   for `leaseDurationSeconds` after the moment this candidate last saw its record *change*.
//!   A candidate therefore never compares its wall clock with the holder's `renewTime`, and a
//!   new candidate waits one full lease duration before taking over a lease it finds held.
//! - A released lease (empty `holderIdentity`) can be taken at once.
//! - While leading, the renewal first writes from the Lease it last wrote (no read); if that
//!   fails (e.g. `409`: the Lease changed behind its back) the attempt falls back to the full
//!   read-then-write path above.
//! - Candidates try every retry period (plus up to 1.2 retry periods of jitter, as client-go).
//!   The leader renews every retry period; a renewal retries every retry period until it
//!   succeeds or the renew deadline passes. Past the deadline leadership is **lost**: upstream
//!   exits the process. Here the `is_leader` channel turns `false` and the election ends with
//!   [`ElectionOutcome::Lost`]; the elector does not campaign again.
//! - On shutdown while leading, the Lease is released (client-go's `ReleaseOnCancel`): empty
//!   holder, `leaseDurationSeconds: 1`, so a standby takes over within a retry period.
//!
//! Use a client without kube's default retry (see `kube_adapter::client::KubeClients`): a
//! renewal must not spend its deadline inside the client's own backoff. Each request is also
//! bounded by the time left before the deadline.
//!
//! # Using it
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), autoscaler::leader::LeaderElectionError> {
//! use autoscaler::leader::{LeaderElector, LeaseConfig, default_identity};
//! let elector = LeaderElector::new(client, "kube-system", "cluster-autoscaler", default_identity()?, LeaseConfig::default())?;
//! let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
//! let mut handle = elector.start(async move { let _ = shutdown_rx.await; });
//! handle.is_leader.wait_for(|leading| *leading).await.ok();   // now act as the leader …
//! // … and stop acting the moment `is_leader` turns false again.
//! # drop(shutdown_tx); Ok(()) }
//! ```

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// client-go's `JitterFactor`: candidates wait between 1 and 2.2 retry periods between attempts.
const JITTER_FACTOR: f64 = 1.2;

/// The three durations of the election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// `--leader-elect-lease-duration`: how long a lease is valid after its last renewal.
    /// Written to the Lease in whole seconds.
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline`: how long the leader keeps retrying a renewal before
    /// it gives leadership up.
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period`: the pause between attempts.
    pub retry_period: Duration,
}

impl Default for LeaseConfig {
    /// Upstream's defaults: 15s, 10s, 2s.
    fn default() -> Self {
        LeaseConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl LeaseConfig {
    /// client-go's checks: lease duration (at least a second) > renew deadline > 1.2 × retry
    /// period > 0. A renew deadline at or past the lease duration would let two leaders overlap.
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        let invalid = |why: String| Err(LeaderElectionError::Config(why));
        if self.lease_duration < Duration::from_secs(1) {
            return invalid(format!("the lease duration must be at least 1s, got {:?}", self.lease_duration));
        }
        if self.retry_period.is_zero() {
            return invalid("the retry period must be positive".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid(format!(
                "the lease duration ({:?}) must be greater than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid(format!(
                "the renew deadline ({:?}) must be greater than {JITTER_FACTOR} × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        Ok(())
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderElectionError {
    #[error("invalid leader election configuration: {0}")]
    Config(String),
    #[error("leader election needs an identity: {0}")]
    Identity(String),
}

/// How an election ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElectionOutcome {
    /// Shutdown came before this candidate ever led.
    NeverLed,
    /// Renewing failed for longer than the renew deadline: another replica may lead now. Fatal
    /// for upstream (the process exits).
    Lost,
    /// Shutdown while leading; `released` says whether the Lease was handed back.
    Stopped { released: bool },
}

/// What [`LeaderElector::start`] returns.
#[derive(Debug)]
pub struct LeaderHandle {
    /// `true` while this candidate leads. Starts `false`; turns `true` once when leadership is
    /// acquired and `false` once when it is lost or released.
    pub is_leader: watch::Receiver<bool>,
    /// The election task; it ends after shutdown or after leadership is lost.
    pub task: JoinHandle<ElectionOutcome>,
}

/// The identity upstream uses: the host name (a pod's name in a Deployment), read as Go's
/// `os.Hostname` does on Linux, or `$HOSTNAME`.
pub fn default_identity() -> Result<String, LeaderElectionError> {
    let from_kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string());
    let from_env = std::env::var("HOSTNAME").ok().map(|s| s.trim().to_string());
    from_kernel.into_iter().chain(from_env).find(|s| !s.is_empty()).ok_or_else(|| {
        LeaderElectionError::Identity("neither /proc/sys/kernel/hostname nor $HOSTNAME gives a host name".to_string())
    })
}

/// The Lease as this candidate last saw it, and when (monotonic) its record last changed.
#[derive(Clone, Debug)]
struct Observed {
    lease: Lease,
    changed_at: Instant,
}

/// One candidate in the election; see the module documentation.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    config: LeaseConfig,
    observed: Option<Observed>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("name", &self.name)
            .field("identity", &self.identity)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn now_micro() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn holder(lease: &Lease) -> &str {
    lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()).unwrap_or("")
}

/// A random fraction in [0, 1) without a random-number crate: `RandomState` is seeded randomly.
fn random_fraction() -> f64 {
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl LeaderElector {
    /// A candidate for the Lease `namespace/name` under `identity`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: impl Into<String>,
        config: LeaseConfig,
    ) -> Result<LeaderElector, LeaderElectionError> {
        config.validate()?;
        let identity = identity.into();
        if identity.is_empty() {
            return Err(LeaderElectionError::Identity("the identity is empty".into()));
        }
        if name.is_empty() || namespace.is_empty() {
            return Err(LeaderElectionError::Config("the lease name and namespace must not be empty".into()));
        }
        Ok(LeaderElector {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity,
            config,
            observed: None,
        })
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether the Lease as last seen names this candidate.
    fn holds_observed(&self) -> bool {
        self.observed.as_ref().is_some_and(|o| holder(&o.lease) == self.identity)
    }

    /// Whether the Lease as last seen is still valid (see the module documentation).
    fn observed_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|o| {
            let seconds = o.lease.spec.as_ref().and_then(|s| s.lease_duration_seconds).unwrap_or(0).max(0);
            o.changed_at + Duration::from_secs(seconds as u64) > now
        })
    }

    /// Remembers the Lease; its record's change time moves only when the record changed.
    fn observe(&mut self, lease: Lease, now: Instant) {
        let changed = self.observed.as_ref().is_none_or(|o| o.lease.spec != lease.spec);
        let changed_at = if changed { now } else { self.observed.as_ref().map_or(now, |o| o.changed_at) };
        self.observed = Some(Observed { lease, changed_at });
    }

    /// The record this candidate writes when it takes or renews `current`.
    fn record(&self, current: Option<&LeaseSpec>, renewing: bool) -> LeaseSpec {
        let now = now_micro();
        let transitions = current.and_then(|s| s.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: if renewing {
                current.and_then(|s| s.acquire_time.clone()).or_else(|| Some(now.clone()))
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if renewing || current.is_none() { transitions } else { transitions + 1 }),
            ..current.cloned().unwrap_or_default()
        }
    }

    /// One attempt to acquire or renew the Lease (see the module documentation). `Ok(true)`:
    /// this candidate holds it now. `Ok(false)`: another candidate holds it, or won a
    /// concurrent write (`409`). `Err`: the API call failed.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let params = PostParams::default();
        // Fast path: the leader renews from what it last wrote, without reading first.
        if self.holds_observed()
            && self.observed_valid(Instant::now())
            && let Some(observed) = self.observed.clone()
        {
            let mut lease = observed.lease;
            lease.spec = Some(self.record(lease.spec.as_ref(), true));
            match self.api.replace(&self.name, &params, &lease).await {
                Ok(written) => {
                    self.observe(written, Instant::now());
                    return Ok(true);
                }
                Err(e) => {
                    tracing::debug!(lease = %self.name, error = %e, "optimistic lease renewal failed, reading it")
                }
            }
        }
        let Some(current) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta { name: Some(self.name.clone()), ..Default::default() },
                spec: Some(self.record(None, false)),
            };
            return match self.api.create(&params, &lease).await {
                Ok(created) => {
                    self.observe(created, Instant::now());
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.is_conflict() => Ok(false),
                Err(e) => Err(e),
            };
        };
        self.observe(current.clone(), Instant::now());
        let current_holder = holder(&current);
        if !current_holder.is_empty() && current_holder != self.identity && self.observed_valid(Instant::now()) {
            return Ok(false);
        }
        let renewing = current_holder == self.identity;
        let mut lease = current;
        lease.spec = Some(self.record(lease.spec.as_ref(), renewing));
        match self.api.replace(&self.name, &params, &lease).await {
            Ok(written) => {
                self.observe(written, Instant::now());
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Hands the Lease back if this candidate holds it: empty holder, 1-second duration, so a
    /// standby takes over at its next attempt. Returns whether the write succeeded.
    pub async fn release(&mut self) -> bool {
        let Some(observed) = self.observed.clone().filter(|o| holder(&o.lease) == self.identity) else {
            return false;
        };
        let now = now_micro();
        let mut lease = observed.lease;
        let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions);
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: transitions,
            ..lease.spec.clone().unwrap_or_default()
        });
        match tokio::time::timeout(
            self.config.renew_deadline,
            self.api.replace(&self.name, &PostParams::default(), &lease),
        )
        .await
        {
            Ok(Ok(written)) => {
                self.observe(written, Instant::now());
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "releasing the leader lease failed");
                false
            }
            Err(_) => {
                tracing::warn!(lease = %self.name, "releasing the leader lease timed out");
                false
            }
        }
    }

    /// Runs the election in a task until `shutdown` completes or leadership is lost.
    pub fn start(self, shutdown: impl Future<Output = ()> + Send + 'static) -> LeaderHandle {
        let (sender, is_leader) = watch::channel(false);
        let task = tokio::spawn(self.run(shutdown, sender));
        LeaderHandle { is_leader, task }
    }

    /// The election: campaign until leading, then renew until shutdown (release) or until a
    /// renewal misses its deadline (lost). `is_leader` follows; see [`LeaderHandle::is_leader`].
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()> + Send,
        is_leader: watch::Sender<bool>,
    ) -> ElectionOutcome {
        let mut shutdown = std::pin::pin!(shutdown);
        let retry = self.config.retry_period;
        // Campaign.
        loop {
            // A hung request must not stall the campaign: bound it by the lease duration.
            match tokio::time::timeout(self.config.lease_duration, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => {}
                Ok(Err(e)) => tracing::debug!(lease = %self.name, error = %e, "acquiring the leader lease failed"),
                Err(_) => tracing::debug!(lease = %self.name, "acquiring the leader lease timed out"),
            }
            let pause = retry.mul_f64(1.0 + JITTER_FACTOR * random_fraction());
            tokio::select! {
                () = &mut shutdown => return ElectionOutcome::NeverLed,
                () = tokio::time::sleep(pause) => {}
            }
        }
        tracing::info!(lease = %self.name, identity = %self.identity, "became the leader");
        is_leader.send_replace(true);
        // Lead.
        loop {
            tokio::select! {
                () = &mut shutdown => return self.stop(&is_leader).await,
                () = tokio::time::sleep(retry) => {}
            }
            let deadline = Instant::now() + self.config.renew_deadline;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(Ok(true)) => break,
                    Ok(Ok(false)) => tracing::debug!(lease = %self.name, "renewing the leader lease: held by another"),
                    Ok(Err(e)) => tracing::debug!(lease = %self.name, error = %e, "renewing the leader lease failed"),
                    Err(_) => {}
                }
                if Instant::now() >= deadline {
                    tracing::warn!(
                        lease = %self.name,
                        identity = %self.identity,
                        deadline = ?self.config.renew_deadline,
                        "leadership lost: the lease could not be renewed within the renew deadline"
                    );
                    is_leader.send_replace(false);
                    return ElectionOutcome::Lost;
                }
                tokio::select! {
                    () = &mut shutdown => return self.stop(&is_leader).await,
                    () = tokio::time::sleep_until(deadline.min(Instant::now() + retry)) => {}
                }
            }
        }
    }

    async fn stop(&mut self, is_leader: &watch::Sender<bool>) -> ElectionOutcome {
        // Stop acting first: the lease is handed back only once this replica is no longer leading.
        is_leader.send_replace(false);
        let released = self.release().await;
        tracing::info!(lease = %self.name, identity = %self.identity, released, "stopped leading");
        ElectionOutcome::Stopped { released }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(lease: u64, renew: u64, retry: u64) -> LeaseConfig {
        LeaseConfig {
            lease_duration: Duration::from_millis(lease),
            renew_deadline: Duration::from_millis(renew),
            retry_period: Duration::from_millis(retry),
        }
    }

    #[test]
    fn upstream_defaults_are_valid() {
        assert_eq!(LeaseConfig::default(), config(15_000, 10_000, 2_000));
        assert!(LeaseConfig::default().validate().is_ok());
    }

    #[test]
    fn lease_duration_must_exceed_renew_deadline() {
        assert!(config(10_000, 10_000, 2_000).validate().is_err());
    }

    #[test]
    fn renew_deadline_must_exceed_jittered_retry_period() {
        // 1.2 × 2s = 2.4s.
        assert!(config(15_000, 2_400, 2_000).validate().is_err());
        assert!(config(15_000, 2_500, 2_000).validate().is_ok());
    }

    #[test]
    fn lease_duration_below_a_second_is_rejected() {
        assert!(config(900, 500, 100).validate().is_err());
    }

    #[test]
    fn zero_retry_period_is_rejected() {
        assert!(config(15_000, 10_000, 0).validate().is_err());
    }

    #[test]
    fn random_fraction_stays_in_unit_interval() {
        for _ in 0..1000 {
            let f = random_fraction();
            assert!((0.0..1.0).contains(&f), "{f}");
        }
    }
}
