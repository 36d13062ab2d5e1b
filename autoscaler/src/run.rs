//! The controller: `cluster-autoscaler [FLAGS]` with no subcommand, as upstream runs.
//!
//! Start-up: flags → Kubernetes clients (`--kubeconfig` or in-cluster) → reflectors, waiting
//! for their first sync → the cloud provider → (with `--leader-elect`) wait for the Lease →
//! the loop: one `run_once` when `control::schedule` says (at most `--scan-interval` after the
//! last; with `--frequent-loops-enabled`, at once after a productive one and after a batch of new
//! unschedulable pods from the pod watch); every `--horizontal-pod-autoscaler-sync-period` a pod
//! autoscaler sync, its metrics read by a task beside the loop. SIGTERM / SIGINT: cancel the
//! iteration at its next await, delete the status ConfigMap, release the Lease, exit 0. Losing the Lease stops every action at once and exits 1.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgAction, Args};
use cloudprovider::{ProviderRegistry, Purpose};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;

use crate::compose::{self, ProviderInputs};
use crate::config::logging::LoggingFlags;
use crate::config::{AutoscalingOptions, DecisionFlags};
use crate::control::schedule::{IterationOutcome, LoopSchedule, ScheduleConfig, Trigger};
use crate::control::{Autoscaler, LoopReport, Parts, pod_autoscaler_view};
use crate::kube_adapter::{
    KubeActions, KubeActionsOptions, KubeClientError, KubeClientOptions, KubeClients, KubeCluster, KubeClusterOptions,
    KubeMetrics, wpa_crd_installed,
};
use crate::leader::{LeaderElector, LeaseConfig, default_identity};
use crate::podscaling::PodAutoscalerMode;
use crate::ports::{ClusterReader, SystemClock};
use crate::serve::{
    Function, HealthCheck, HealthCheckConfig, HttpServer, Metrics, TRANSIENT_ERROR, cluster_resources, parse_address,
};
use cloudprovider::duration::parse_go_duration;

fn duration(s: &str) -> Result<Duration, String> {
    parse_go_duration(s)
}

/// The controller's flags: every decision flag plus upstream's flags for running in a cluster.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub flags: DecisionFlags,

    /// Path to a kubeconfig; empty: in-cluster configuration.
    #[arg(long = "kubeconfig", help_heading = "Kubernetes API and leader election", default_value = "")]
    pub kubeconfig: String,

    /// The API server URL (overrides the kubeconfig's).
    #[arg(long = "kubernetes", help_heading = "Kubernetes API and leader election", default_value = "")]
    pub kubernetes: String,

    /// Client-side rate limit: requests per second.
    #[arg(long = "kube-client-qps", help_heading = "Kubernetes API and leader election", default_value_t = 5.0)]
    pub kube_client_qps: f32,

    /// Client-side rate limit: burst.
    #[arg(long = "kube-client-burst", help_heading = "Kubernetes API and leader election", default_value_t = 10)]
    pub kube_client_burst: u32,

    /// Where `/metrics` and `/health-check` are served (`:8085` is every interface).
    #[arg(long = "address", help_heading = "Status and loop", default_value = ":8085")]
    pub address: String,

    /// Run only while holding the leader Lease.
    #[arg(long = "leader-elect", help_heading = "Kubernetes API and leader election", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub leader_elect: bool,

    #[arg(long = "leader-elect-lease-duration", help_heading = "Kubernetes API and leader election", default_value = "15s", value_parser = duration)]
    pub leader_elect_lease_duration: Duration,

    #[arg(long = "leader-elect-renew-deadline", help_heading = "Kubernetes API and leader election", default_value = "10s", value_parser = duration)]
    pub leader_elect_renew_deadline: Duration,

    #[arg(long = "leader-elect-retry-period", help_heading = "Kubernetes API and leader election", default_value = "2s", value_parser = duration)]
    pub leader_elect_retry_period: Duration,

    /// Only `leases` is supported (upstream's default).
    #[arg(
        long = "leader-elect-resource-lock",
        help_heading = "Kubernetes API and leader election",
        default_value = "leases"
    )]
    pub leader_elect_resource_lock: String,

    #[arg(
        long = "leader-elect-resource-name",
        help_heading = "Kubernetes API and leader election",
        default_value = "cluster-autoscaler"
    )]
    pub leader_elect_resource_name: String,

    /// Accepted for compatibility; as upstream, the Lease lives in `--namespace`.
    #[arg(
        long = "leader-elect-resource-namespace",
        help_heading = "Kubernetes API and leader election",
        default_value = ""
    )]
    pub leader_elect_resource_namespace: String,

    /// Record every Event, without the 5-minute de-duplication.
    #[arg(long = "record-duplicated-events", help_heading = "Status and loop", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub record_duplicated_events: bool,

    /// `/health-check` fails when no loop started for this long.
    #[arg(long = "max-inactivity", help_heading = "Status and loop", default_value = "10m", value_parser = duration)]
    pub max_inactivity: Duration,

    /// `/health-check` fails when no loop succeeded for this long.
    #[arg(long = "max-failing-time", help_heading = "Status and loop", default_value = "15m", value_parser = duration)]
    pub max_failing_time: Duration,

    /// Both limits above before the first successful loop.
    #[arg(long = "max-startup-time", help_heading = "Status and loop", default_value = "20m", value_parser = duration)]
    pub max_startup_time: Duration,

    /// Register upstream's per-node-group gauges (`node_group_min_count`, …) in /metrics.
    #[arg(long = "emit-per-nodegroup-metrics", help_heading = "Status and loop", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub emit_per_nodegroup_metrics: bool,

    #[command(flatten)]
    pub logging: LoggingFlags,

    /// What the embedded loop does with HorizontalPodAutoscalers: `recommend` (compute their
    /// recommendations for HPA-aware scale-up and /metrics, write nothing: kube-controller-manager
    /// acts on them), `act` (write /scale, HPA status and events, for clusters whose
    /// kube-controller-manager runs without its HPA controller) or `off`.
    #[arg(
        long = "horizontal-pod-autoscaler-mode",
        help_heading = "Pod autoscalers",
        value_enum,
        default_value = "recommend"
    )]
    pub hpa_mode: PodAutoscalerMode,

    /// The same for WatermarkPodAutoscalers, which nothing else reconciles: `act` by default.
    #[arg(long = "watermark-pod-autoscaler-mode", help_heading = "Pod autoscalers", value_enum, default_value = "act")]
    pub wpa_mode: PodAutoscalerMode,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad flags or configuration: exit 2.
    #[error("{0}")]
    Config(String),
    /// Could not start or keep running: exit 1.
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Config(_) => 2,
            RunError::Runtime(_) => 1,
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// How a step of the loop ended: done, or cut short.
enum Stop<T> {
    Done(T),
    LeaseLost,
    Shutdown,
}

/// A unique holder identity: the host name (the pod's name in a Deployment, as upstream) and a
/// random suffix, so two processes on one host never both believe they hold the Lease.
fn identity() -> Result<String, RunError> {
    let host = default_identity().map_err(|e| RunError::Runtime(e.to_string()))?;
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    Ok(format!("{host}_{:016x}", hasher.finish()))
}

/// Runs the controller until SIGTERM / SIGINT or the loss of the Lease, with the cloud provider
/// `--cloud-provider` names among `providers`.
pub async fn run(args: RunArgs, providers: &ProviderRegistry) -> Result<(), RunError> {
    let mut options = AutoscalingOptions::from_flags(&args.flags).map_err(|e| RunError::Config(e.to_string()))?;
    options.hpa_mode = args.hpa_mode;
    options.wpa_mode = args.wpa_mode;
    if args.leader_elect_resource_lock != "leases" {
        return Err(RunError::Config(format!(
            "--leader-elect-resource-lock={}: only leases is supported",
            args.leader_elect_resource_lock
        )));
    }
    let lease_config = LeaseConfig {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    lease_config.validate().map_err(|e| RunError::Config(e.to_string()))?;
    let address = parse_address(&args.address).map_err(RunError::Config)?;
    // The provider's and the expander's flags and files are checked before anything connects
    // (built again, with the cluster's nodes and a client, once the caches have synced).
    let check = ProviderInputs { purpose: Purpose::Check, nodes: Vec::new(), now: Timestamp::now(), kube: None };
    compose::compose(providers, &args.flags, &options, check, None).await.map_err(compose_error)?;
    let client_options = KubeClientOptions {
        kubeconfig: (!args.kubeconfig.is_empty()).then(|| args.kubeconfig.clone().into()),
        master_url: (!args.kubernetes.is_empty()).then(|| args.kubernetes.clone()),
        qps: args.kube_client_qps,
        burst: args.kube_client_burst,
    };
    let clients = KubeClients::connect(&client_options).await.map_err(|e| match e {
        // Bad input: exit 2.
        KubeClientError::Kubeconfig { .. } | KubeClientError::MasterUrl { .. } => RunError::Config(e.to_string()),
        _ => RunError::Runtime(e.to_string()),
    })?;

    // Serving starts first, leader or not, so a stuck start-up shows in /health-check.
    let metrics =
        Arc::new(if args.emit_per_nodegroup_metrics { Metrics::with_per_node_group_metrics() } else { Metrics::new() });
    metrics.set_limits(&options);
    metrics.register_kube_client(&clients.requests);
    let health = Arc::new(HealthCheck::new(
        HealthCheckConfig {
            max_inactivity: args.max_inactivity,
            max_failing_time: args.max_failing_time,
            max_startup_time: args.max_startup_time,
        },
        Arc::new(SystemClock),
    ));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |rx: &watch::Receiver<bool>| {
        let mut rx = rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let server = HttpServer::bind(address, metrics.clone(), health.clone())
        .await
        .map_err(|e| RunError::Runtime(e.to_string()))?;
    tracing::info!(address = %address, "serving /metrics and /health-check");
    let server = tokio::spawn(server.run(stopped(&stop_rx)));

    let watch_wpas = wpa_crd_installed(&clients.client).await;
    let cluster_options = KubeClusterOptions {
        watch_wpas,
        server: clients.server.clone(),
        ..KubeClusterOptions::new(&options.namespace)
    };
    let cluster = Arc::new(KubeCluster::start_with(clients.watch_client.clone(), cluster_options));
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    // The caches must sync before anything is decided; a signal meanwhile is a clean exit.
    let first_view = loop {
        tokio::select! {
            _ = &mut shutdown => {
                let _ = stop_tx.send(true);
                let _ = server.await;
                return Ok(());
            }
            view = cluster.view() => match view {
                Ok(view) => break view,
                Err(error) => tracing::warn!(%error, "waiting for the caches to sync"),
            }
        }
    };
    let nodes: Vec<Node> = first_view.nodes.iter().map(|n| (**n).clone()).collect();
    let inputs = ProviderInputs {
        purpose: Purpose::Controller,
        nodes,
        now: Timestamp::now(),
        kube: Some(clients.client.clone()),
    };
    let (provider, expander) =
        compose::compose(providers, &args.flags, &options, inputs, None).await.map_err(compose_error)?;
    metrics.register_provider(provider.as_ref());
    let actions = Arc::new(KubeActions::with_options(
        clients.clone(),
        KubeActionsOptions {
            record_duplicated_events: args.record_duplicated_events,
            status_config_map: (options.namespace.clone(), options.status_config_map_name.clone()),
            ..Default::default()
        },
    ));
    let kube_metrics = Arc::new(KubeMetrics::new(clients.metrics_client.clone()));

    // Leadership: nothing acts before the Lease is ours; losing it stops everything at once.
    let mut election = if args.leader_elect {
        let elector = LeaderElector::new(
            clients.lease_client.clone(),
            &options.namespace,
            &args.leader_elect_resource_name,
            identity()?,
            lease_config,
        )
        .map_err(|e| RunError::Config(e.to_string()))?;
        tracing::info!(identity = %elector.identity(), lease = %args.leader_elect_resource_name, "campaigning for the leader Lease");
        Some(elector.start(stopped(&stop_rx)))
    } else {
        None
    };
    if let Some(handle) = election.as_mut() {
        tokio::select! {
            acquired = handle.is_leader.wait_for(|l| *l) => {
                if acquired.is_err() {
                    return Err(RunError::Runtime("leader election ended before leading".into()));
                }
            }
            _ = &mut shutdown => {
                let _ = stop_tx.send(true);
                let _ = server.await;
                return Ok(());
            }
        }
        tracing::info!("became the leader");
    }
    health.start_monitoring(Timestamp::now());

    let mut autoscaler = Autoscaler::new(Parts {
        options: options.clone(),
        provider: provider.clone(),
        reader: cluster.clone(),
        actions: actions.clone(),
        clock: Arc::new(SystemClock),
        expander,
        metrics: Some(kube_metrics.clone()),
    });
    // One schedule with `simulate` (`control::schedule`): the timer, productive iterations and
    // the pod watch's new unschedulable pods, batched.
    let mut schedule = LoopSchedule::new(ScheduleConfig::from_options(&options), Timestamp::now());
    let unschedulable_pods = cluster.unschedulable_pods();
    // The pod autoscalers' metrics are read beside the loop (with their own request budget),
    // not in it: hundreds of HPAs across namespaces take seconds to read, and a burst of
    // unschedulable pods must not wait for them. The sync itself (decisions and their few
    // writes) runs in the loop once its metrics are in.
    let mut metrics_refresh: Option<tokio::task::JoinHandle<()>> = None;
    let result = loop {
        let next_loop = schedule.next_due();
        let sync_due = if metrics_refresh.is_some() { None } else { autoscaler.next_pod_autoscaler_sync() };
        let wake = sync_due.map_or(next_loop, |sync| sync.min(next_loop));
        let refreshed = async {
            match metrics_refresh.as_mut() {
                Some(task) => {
                    let _ = task.await;
                }
                None => std::future::pending().await,
            }
        };
        // SIGTERM first: a timer that is already due must not win over it (Kubernetes kills the
        // pod 30 s after SIGTERM by default).
        let metrics_in = tokio::select! {
            biased;
            _ = &mut shutdown => break Ok(()),
            _ = leadership_lost(&mut election) => break Err(lost_lease()),
            _ = refreshed => true,
            _ = tokio::time::sleep_until(instant_at(wake)) => false,
            // New unschedulable pods can make the loop due sooner: look again.
            _ = unschedulable_pods.notified() => false,
        };
        if let Some(seen) = unschedulable_pods.take() {
            schedule.unschedulable_pods_seen(seen);
        }
        if metrics_in {
            metrics_refresh = None;
            // Losing the Lease (or SIGTERM) cancels the sync at its next await: no write after.
            let sync_started = std::time::Instant::now();
            let synced = tokio::select! {
                biased;
                _ = leadership_lost(&mut election) => Stop::LeaseLost,
                _ = &mut shutdown => Stop::Shutdown,
                synced = autoscaler.sync_pod_autoscalers() => Stop::Done(synced),
            };
            // The sync read the metrics fetched for it; the next one fetches its own.
            kube_metrics.release();
            let synced = match synced {
                Stop::Done(synced) => synced,
                Stop::LeaseLost => break Err(lost_lease()),
                Stop::Shutdown => break Ok(()),
            };
            match synced {
                Ok(report) => {
                    // An iteration due meanwhile waits for it: its time is in the log.
                    let took = sync_started.elapsed();
                    tracing::info!(
                        autoscalers = report.autoscalers.len(),
                        took_ms = ms(took),
                        "pod autoscalers synced"
                    );
                    metrics.record_pod_autoscaling(&report);
                    for (name, target, from, to) in &report.rescaled {
                        tracing::info!(autoscaler = %name, %target, from, to, "rescaled");
                    }
                    if report.anticipated > 0 {
                        schedule.pods_anticipated(Timestamp::now());
                    }
                }
                Err(error) => tracing::warn!(%error, "pod autoscaler sync failed"),
            }
        } else if metrics_refresh.is_none() && sync_due.is_some_and(|t| Timestamp::now() >= t) {
            let (cluster, kube_metrics, options) = (cluster.clone(), kube_metrics.clone(), options.clone());
            metrics_refresh = Some(tokio::spawn(async move {
                if let Ok(view) = cluster.view().await {
                    kube_metrics.refresh(&pod_autoscaler_view(&options, view)).await;
                }
            }));
        }
        let started_at = Timestamp::now();
        let Some(trigger) = schedule.due_at(started_at) else { continue };
        // As upstream, at the default level: why each iteration ran.
        tracing::info!(%trigger, "autoscaler loop triggered");
        schedule.iteration_started(started_at);
        let started = std::time::Instant::now();
        health.record_activity(started_at);
        metrics.set_last_activity(Function::Main, started_at);
        // Losing the Lease cancels the iteration at its next await, before its next write
        // (taint, eviction, DeleteNodes, /scale, status): the process then exits. SIGTERM
        // cancels it the same way, so that shutdown takes a moment at any cluster size; a
        // deletion cut short is finished or undone by the next process, as after a crash.
        let ran = tokio::select! {
            biased;
            _ = leadership_lost(&mut election) => Stop::LeaseLost,
            _ = &mut shutdown => Stop::Shutdown,
            ran = autoscaler.run_once() => Stop::Done(ran),
        };
        let ran = match ran {
            Stop::Done(ran) => ran,
            Stop::LeaseLost => break Err(lost_lease()),
            Stop::Shutdown => break Ok(()),
        };
        let outcome = match ran {
            Ok(report) => {
                if let Some(state) = &report.cluster_state {
                    metrics.record_loop(&report, state, started.elapsed());
                }
                metrics.record_events_dropped(actions.events().dropped());
                let nodes = cluster.snapshot().nodes;
                let (cores, memory) = cluster_resources(nodes.iter().map(|n| &**n), Timestamp::now());
                metrics.set_cluster_resources(cores, memory);
                // As upstream's loop: a failed IncreaseSize is reported (event, failed_scale_ups_total,
                // backoff) but does not fail the iteration, whose scale-down still runs.
                health.record_success(Timestamp::now());
                log_report(&report, trigger, started.elapsed());
                IterationOutcome::of(&report)
            }
            Err(error) => {
                metrics.record_loop_error(error.error_type(), started.elapsed());
                if error.error_type() == TRANSIENT_ERROR {
                    health.record_success(Timestamp::now());
                }
                tracing::warn!(%error, "autoscaler loop failed");
                IterationOutcome::Failed
            }
        };
        schedule.iteration_finished(Timestamp::now(), outcome);
    };
    // Exit as upstream's clean-up: the events queued so far get a moment to be written, the
    // status ConfigMap goes; then the Lease is released and the server stops. After losing the
    // Lease nothing more is written.
    if result.is_ok() {
        actions.events().flush(Duration::from_secs(1)).await;
    } else {
        actions.events().stop();
    }
    if options.write_status_configmap
        && result.is_ok()
        && let Err(error) = actions.delete_status(&options.namespace, &options.status_config_map_name).await
    {
        tracing::warn!(%error, "could not delete the status ConfigMap");
    }
    if let Some(task) = metrics_refresh {
        task.abort();
    }
    let _ = stop_tx.send(true);
    if let Some(handle) = election {
        match handle.task.await {
            Ok(outcome) => tracing::info!(?outcome, "leader election ended"),
            Err(error) => tracing::warn!(%error, "leader election task failed"),
        }
    }
    let _ = server.await;
    cluster.stop();
    result
}

/// The monotonic instant of a wall-clock time (now when it is past).
fn instant_at(t: Timestamp) -> tokio::time::Instant {
    let wait = t.duration_since(Timestamp::now()).as_secs_f64().max(0.0);
    // Capped, so that a far time (`Timestamp::MAX`) cannot overflow the monotonic clock.
    tokio::time::Instant::now() + Duration::from_secs_f64(wait.min(86_400.0 * 365.0))
}

/// Resolves when this process stops being the leader (never without leader election).
async fn leadership_lost(election: &mut Option<crate::leader::LeaderHandle>) {
    match election.as_mut() {
        Some(handle) => {
            let _ = handle.is_leader.wait_for(|leading| !*leading).await;
        }
        None => std::future::pending::<()>().await,
    }
}

fn lost_lease() -> RunError {
    RunError::Runtime("lost the leader Lease; stopping".into())
}

fn compose_error(error: compose::ComposeError) -> RunError {
    match error.exit_code() {
        2 => RunError::Config(error.to_string()),
        _ => RunError::Runtime(error.to_string()),
    }
}

/// Milliseconds, for the log.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn log_report(report: &LoopReport, trigger: Trigger, took: Duration) {
    // `called_at`: when the IncreaseSize calls had returned, earlier than the line itself,
    // which is written when the iteration ends.
    let called_at = report.scale_ups_called_at.map(|t| t.to_string()).unwrap_or_default();
    for i in &report.scale_ups {
        tracing::info!(group = %i.node_group, from = i.current_size, to = i.new_size, %called_at, "scale-up");
    }
    // Where the iteration's time went (also upstream's function_duration_seconds).
    let t = &report.timings;
    tracing::info!(
        %trigger,
        total_ms = ms(took),
        cloud_refresh_ms = ms(t.cloud_refresh),
        update_cluster_state_ms = ms(t.update_cluster_state),
        snapshot_ms = ms(t.decide.snapshot),
        snapshot_base = %t.decide.base,
        filter_out_schedulable_ms = ms(t.decide.filter_out_schedulable),
        scale_up_simulation_ms = ms(t.decide.scale_up),
        find_unneeded_ms = ms(t.decide.find_unneeded),
        scale_up_calls_ms = ms(t.scale_up_calls),
        soft_taint_ms = ms(t.soft_taint),
        scale_down_ms = ms(t.scale_down),
        status_ms = ms(t.status),
        "iteration timings"
    );
    for d in &report.deleted {
        tracing::info!(node = %d.node, group = %d.node_group, reason = d.reason.as_str(), "node removed");
    }
    for (group, error) in &report.scale_up_failures {
        tracing::warn!(%group, %error, "scale-up failed");
    }
    for (node, error) in &report.deletion_failures {
        tracing::warn!(%node, %error, "scale-down failed");
    }
    if let Some(why) = &report.stopped {
        tracing::info!(reason = %why, "loop stopped early");
    }
}
