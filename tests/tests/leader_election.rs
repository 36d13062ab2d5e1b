//! Lease-based leader election (`autoscaler::leader`) against the fake API server.
//!
//! Durations are short (lease 3s, renew deadline 2s, retry 200ms) so a test takes a few
//! seconds; every wait goes through `eventually`, and no assertion depends on how fast things
//! happen (only on what cannot happen before a deadline).

use std::time::Duration;

use autoscaler::leader::{ElectionOutcome, LeaderElector, LeaderHandle, LeaseConfig};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tests::eventually;
use tests::fake_apiserver::{FakeApiServer, Fault, Verb};
use tokio::sync::oneshot;

const NAMESPACE: &str = "kube-system";
const NAME: &str = "cluster-autoscaler";
const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler";

fn config() -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
    }
}

/// A client without kube's default retry, as the controller uses for the Lease.
fn client(server: &FakeApiServer) -> kube::Client {
    let mut config = server.kube_config();
    config.default_retry = false;
    kube::Client::try_from(config).expect("a plain-HTTP kube client builds")
}

struct Candidate {
    handle: LeaderHandle,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Candidate {
    fn start(server: &FakeApiServer, identity: &str) -> Candidate {
        let elector = LeaderElector::new(client(server), NAMESPACE, NAME, identity, config()).expect("valid elector");
        let (shutdown, stop) = oneshot::channel::<()>();
        let handle = elector.start(async move {
            let _ = stop.await;
        });
        Candidate { handle, shutdown: Some(shutdown) }
    }

    fn leading(&self) -> bool {
        *self.handle.is_leader.borrow()
    }

    async fn wait_leading(&self, what: &str) {
        eventually(what, || async { self.leading().then_some(()) }).await;
    }

    /// Shuts the candidate down and returns how its election ended.
    async fn stop(mut self) -> ElectionOutcome {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), self.handle.task)
            .await
            .expect("the election task ends after shutdown")
            .expect("the election task does not panic")
    }
}

fn lease(server: &FakeApiServer) -> Option<LeaseSpec> {
    server.get::<Lease>(Some(NAMESPACE), NAME).and_then(|l| l.spec)
}

fn holder(server: &FakeApiServer) -> Option<String> {
    lease(server).and_then(|s| s.holder_identity)
}

fn seed_lease(server: &FakeApiServer, holder: &str, renewed: Timestamp, duration_seconds: i32, transitions: i32) {
    server.seed(&Lease {
        metadata: ObjectMeta { name: Some(NAME.into()), namespace: Some(NAMESPACE.into()), ..Default::default() },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(duration_seconds),
            acquire_time: Some(MicroTime(renewed)),
            renew_time: Some(MicroTime(renewed)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }),
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_candidate_creates_the_lease_and_leads() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    let spec = lease(&server).expect("the lease was created");
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-a"));
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert_eq!(spec.lease_transitions, Some(0));
    assert!(spec.acquire_time.is_some() && spec.renew_time.is_some());
    assert!(server.requests().iter().any(|r| r.verb == Some(Verb::Create) && r.status == 201));
    assert_eq!(a.stop().await, ElectionOutcome::Stopped { released: true });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_candidate_stays_follower_while_the_leader_renews() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    let mut b = Candidate::start(&server, "replica-b");
    let b_started = Timestamp::now();
    // Wait until the leader has renewed for longer than a lease duration past b's start: had it
    // not renewed, b would have taken over by then.
    let beyond = b_started + SignedDuration::from_secs(4);
    eventually("replica-a to renew past one lease duration", || async {
        lease(&server).and_then(|s| s.renew_time).filter(|t| t.0 > beyond).map(|_| ())
    })
    .await;
    assert!(a.leading());
    assert!(!b.leading());
    assert!(!b.handle.is_leader.has_changed().unwrap(), "replica-b never led, not even briefly");
    assert_eq!(holder(&server).as_deref(), Some("replica-a"));
    let b_shutdown = b.shutdown.take();
    drop(b_shutdown);
    let outcome = tokio::time::timeout(Duration::from_secs(30), b.handle.task).await.unwrap().unwrap();
    assert_eq!(outcome, ElectionOutcome::NeverLed);
    assert_eq!(holder(&server).as_deref(), Some("replica-a"), "a follower's shutdown leaves the lease alone");
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_lease_is_taken_over_by_the_standby() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    let b = Candidate::start(&server, "replica-b");
    assert_eq!(a.stop().await, ElectionOutcome::Stopped { released: true });
    b.wait_leading("replica-b to take over the released lease").await;
    let spec = lease(&server).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert_eq!(spec.lease_transitions, Some(1), "a new holder counts one transition");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_hands_back_the_lease_with_an_empty_holder_and_one_second_duration() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    let mut is_leader = a.handle.is_leader.clone();
    assert_eq!(a.stop().await, ElectionOutcome::Stopped { released: true });
    assert!(!*is_leader.borrow_and_update());
    let spec = lease(&server).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_whose_renewals_fail_loses_leadership_after_the_renew_deadline() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    let faulted = tokio::time::Instant::now();
    server.inject_fault(Fault::new(LEASE_PATH, 500).times(usize::MAX));
    let mut is_leader = a.handle.is_leader.clone();
    let outcome = tokio::time::timeout(Duration::from_secs(30), a.handle.task)
        .await
        .expect("the election ends once leadership is lost")
        .unwrap();
    assert_eq!(outcome, ElectionOutcome::Lost);
    assert!(!*is_leader.borrow_and_update(), "the loss is signalled");
    // Leadership cannot be given up before the renew deadline has passed since the last
    // successful renewal, which was at most one retry period before the faults began.
    let held_on = faulted.elapsed();
    assert!(held_on + config().retry_period >= config().renew_deadline, "lost after only {held_on:?}");
    assert!(
        server.requests().iter().any(|r| r.path == LEASE_PATH && r.status == 500),
        "the renewals reached the server and failed"
    );
    server.clear_faults();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_resource_version_update_gets_conflict_and_does_not_lead() {
    let server = FakeApiServer::start().await;
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to lead").await;
    // Another writer takes the lease behind the leader's back: the leader's next renewal
    // writes with the resourceVersion it last saw and gets 409; reading again, it finds the
    // lease held and valid, so it cannot renew and, past the deadline, loses leadership.
    server
        .modify::<Lease>(Some(NAMESPACE), NAME, |lease| {
            let spec = lease.spec.get_or_insert_with(Default::default);
            spec.holder_identity = Some("intruder".into());
            spec.lease_duration_seconds = Some(3600);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
        })
        .expect("the lease exists");
    let outcome = tokio::time::timeout(Duration::from_secs(30), a.handle.task).await.unwrap().unwrap();
    assert_eq!(outcome, ElectionOutcome::Lost);
    assert!(
        server.requests().iter().any(|r| r.path == LEASE_PATH && r.verb == Some(Verb::Update) && r.status == 409),
        "the stale update was refused with 409"
    );
    assert_eq!(holder(&server).as_deref(), Some("intruder"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_first_seen_held_is_valid_for_one_lease_duration_whatever_its_renew_time() {
    let server = FakeApiServer::start().await;
    // renewTime an hour ago: by the holder's clock it expired long ago, but clocks of different
    // machines are not compared (as client-go): the candidate counts one lease duration from
    // its own first sight of this record.
    seed_lease(&server, "ghost", Timestamp::now() - SignedDuration::from_secs(3600), 3, 4);
    let mut elector = LeaderElector::new(client(&server), NAMESPACE, NAME, "replica-a", config()).unwrap();
    assert!(!elector.try_acquire_or_renew().await.unwrap());
    assert_eq!(holder(&server).as_deref(), Some("ghost"));
    assert_eq!(server.request_count(Verb::Update, LEASE_PATH), 0, "a valid lease is not written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_conflict_is_a_lost_attempt_not_an_error() {
    let server = FakeApiServer::start().await;
    // Released: any candidate may take it at once.
    seed_lease(&server, "", Timestamp::now(), 1, 4);
    let mut elector = LeaderElector::new(client(&server), NAMESPACE, NAME, "replica-a", config()).unwrap();
    // Another candidate's write lands between this candidate's read and its write: 409.
    server.inject_fault(Fault::new(LEASE_PATH, 409).verb(Verb::Update));
    assert!(!elector.try_acquire_or_renew().await.unwrap());
    assert_eq!(holder(&server).as_deref(), Some(""));
    // Without the conflict, the released lease is taken at once.
    assert!(elector.try_acquire_or_renew().await.unwrap());
    let spec = lease(&server).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-a"));
    assert_eq!(spec.lease_transitions, Some(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lease_of_a_vanished_holder_is_taken_over() {
    let server = FakeApiServer::start().await;
    seed_lease(&server, "ghost", Timestamp::now() - SignedDuration::from_secs(3600), 3, 4);
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to take over the expired lease").await;
    let spec = lease(&server).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-a"));
    assert_eq!(spec.lease_transitions, Some(5));
    // A new holder's acquire time is its own, not the vanished holder's.
    assert!(spec.acquire_time.unwrap().0 > Timestamp::now() - SignedDuration::from_secs(60));
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_held_by_the_same_identity_is_resumed_without_waiting_for_expiry() {
    let server = FakeApiServer::start().await;
    // Held by this identity (a restarted replica) for an hour: only the holder itself can
    // resume it before it expires.
    seed_lease(&server, "replica-a", Timestamp::now(), 3600, 2);
    let a = Candidate::start(&server, "replica-a");
    a.wait_leading("replica-a to resume its lease").await;
    let spec = lease(&server).unwrap();
    assert_eq!(spec.lease_transitions, Some(2), "resuming is not a transition");
    assert_eq!(spec.lease_duration_seconds, Some(3));
    a.stop().await;
}

#[test]
fn elector_rejects_an_empty_identity() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let server = FakeApiServer::start().await;
        let result = LeaderElector::new(client(&server), NAMESPACE, NAME, "", config());
        assert!(result.is_err());
    });
}
