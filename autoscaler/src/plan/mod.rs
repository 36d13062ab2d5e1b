//! `cluster-autoscaler plan`: what the autoscaler would do now, for a cluster dump.
//!
//! It runs the same decision path as the control loop (`core::decide`) once, with no memory of
//! earlier loops: unneeded nodes are shown as they would be removed once unneeded long enough.

pub mod report;
pub mod snapshot;

use clap::{Args, ValueEnum};
use cloudprovider::{ProviderRegistry, Purpose};
use k8s_openapi::jiff::Timestamp;

use crate::compose::{self, ComposeError, ProviderInputs};
use crate::config::{AutoscalingOptions, ConfigError, DecisionFlags};
use crate::control::registry::Registry;
use crate::core::{CloudState, ClusterView, DecisionInput, LoopMemory, decide};
use crate::kube_adapter::{
    KubeClientOptions, KubeClients, KubeCluster, KubeClusterOptions, KubeMetrics, wpa_crd_installed,
};
use crate::podscaling::file_metrics::{FileMetrics, MetricLists};
use crate::podscaling::{AutoscalerReport, PodScaling, ScaleTargets, anticipated_pods};
use crate::ports::ClusterReader;
use cloudprovider::duration::format_go_duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// A cluster dump (`kubectl get nodes,pods,pdb,daemonsets,replicasets,statefulsets,jobs,configmaps -A -o json`),
    /// JSON or YAML; `-` reads stdin. Repeatable. Without it, plan reads a live cluster
    /// (`--kubeconfig`, `--kubernetes` or `--in-cluster`).
    #[arg(long = "snapshot", action = clap::ArgAction::Append)]
    pub snapshot: Vec<String>,

    /// A live cluster through this kubeconfig: one read-only observation (lists and metrics
    /// reads; nothing is written).
    #[arg(long = "kubeconfig", conflicts_with = "snapshot")]
    pub kubeconfig: Option<String>,

    /// A live cluster at this API server URL (overrides the kubeconfig's).
    #[arg(long = "kubernetes", conflicts_with = "snapshot")]
    pub kubernetes: Option<String>,

    /// The live cluster this pod runs in (its service account).
    #[arg(long = "in-cluster", default_value_t = false, conflicts_with_all = ["snapshot", "kubeconfig"])]
    pub in_cluster: bool,

    /// Plan for a dump without nodes or pods (refused otherwise: an empty dump is more often a
    /// mistake than an empty cluster).
    #[arg(long = "allow-empty-snapshot", default_value_t = false)]
    pub allow_empty_snapshot: bool,

    /// Client-side rate limit for the live read: requests per second (`<= 0`: none).
    #[arg(long = "kube-client-qps", default_value_t = 5.0)]
    pub kube_client_qps: f32,

    /// Client-side rate limit for the live read: burst.
    #[arg(long = "kube-client-burst", default_value_t = 10)]
    pub kube_client_burst: u32,

    /// Report format.
    #[arg(long = "output", short = 'o', value_enum, default_value = "text")]
    pub output: OutputFormat,

    /// Evaluate as of this time (RFC 3339); default: now.
    #[arg(long = "now")]
    pub now: Option<String>,

    /// Metrics API answers (`kubectl get --raw /apis/metrics.k8s.io/v1beta1/pods`, custom and
    /// external metric lists) for the HPAs and WPAs of the snapshot. Repeatable.
    #[arg(long = "metrics", action = clap::ArgAction::Append)]
    pub metrics: Vec<String>,

    /// Seed for the expanders' random tie-breaks, for reproducible plans.
    #[arg(long = "random-seed")]
    pub random_seed: Option<u64>,

    #[command(flatten)]
    pub flags: DecisionFlags,
}

/// What `plan --output json` prints: the decision and the pod autoscalers' answers.
#[derive(serde::Serialize)]
pub struct PlanOutput {
    #[serde(flatten)]
    pub plan: crate::core::Plan,
    pub hpa: Vec<AutoscalerReport>,
}

/// Errors of `plan`: bad input (exit code 2), or a provider out of reach (1).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Snapshot(#[from] snapshot::SnapshotError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("--now={0:?}: not an RFC 3339 time (e.g. 2026-11-21T12:00:00Z)")]
    Now(String),
    #[error(transparent)]
    Compose(#[from] ComposeError),
    #[error("cloud provider: {0}")]
    Cloud(#[from] cloudprovider::CloudProviderError),
    #[error(
        "plan needs a cluster: --snapshot FILE (a dump), or a live cluster with --kubeconfig, --kubernetes or --in-cluster"
    )]
    NoSource,
    #[error(
        "--snapshot {0}: no nodes and no pods (a wrong file, or an empty kubectl answer?); \
         --allow-empty-snapshot plans for an empty cluster"
    )]
    EmptySnapshot(String),
    /// The live cluster could not be read: exit 1.
    #[error("{0}")]
    Cluster(String),
}

impl PlanError {
    pub fn exit_code(&self) -> u8 {
        match self {
            PlanError::Compose(e) => e.exit_code(),
            PlanError::Cloud(_) | PlanError::Cluster(_) => 1,
            _ => 2,
        }
    }
}

/// Runs `plan` with the cloud provider `--cloud-provider` names among `providers` (read only)
/// and returns the report.
pub async fn run(args: &PlanArgs, providers: &ProviderRegistry) -> Result<String, PlanError> {
    let options = AutoscalingOptions::from_flags(&args.flags)?;
    let live = args.kubeconfig.is_some() || args.kubernetes.is_some() || args.in_cluster;
    if args.snapshot.is_empty() && !live {
        return Err(PlanError::NoSource);
    }
    let mut metric_lists = MetricLists::default();
    let mut seen = snapshot::Seen::default();
    let (view, live) = if live {
        let live = LiveCluster::observe(args, &options).await?;
        for source in &args.metrics {
            snapshot::load_into(&mut ClusterView::default(), &mut metric_lists, &mut seen, source)?;
        }
        (live.view.clone(), Some(live))
    } else {
        let mut view = ClusterView::default();
        for source in args.snapshot.iter().chain(&args.metrics) {
            snapshot::load_into(&mut view, &mut metric_lists, &mut seen, source)?;
        }
        // Nothing to plan for is more often a wrong file or an empty kubectl answer than an
        // empty cluster: said, unless --allow-empty-snapshot says it is meant.
        if view.nodes.is_empty() && view.pods.is_empty() && !args.allow_empty_snapshot {
            return Err(PlanError::EmptySnapshot(args.snapshot.join(", ")));
        }
        snapshot::normalize(&mut view);
        (view, None)
    };
    for warning in seen.all_warnings() {
        eprintln!("warning: {warning}");
    }
    let now = match &args.now {
        Some(t) => t.parse::<Timestamp>().map_err(|_| PlanError::Now(t.clone()))?,
        None => Timestamp::now(),
    };
    let nodes: Vec<_> = view.nodes.iter().map(|n| (**n).clone()).collect();
    let kube = live.as_ref().map(|l| l.clients.client.clone());
    let inputs = ProviderInputs { purpose: Purpose::Plan, nodes, now, kube };
    let (provider, mut expander) = compose::compose(providers, &args.flags, &options, inputs, args.random_seed).await?;
    provider.refresh().await?;
    let cloud = CloudState::gather(provider.as_ref(), &view.nodes, &options, now).await?;
    // The state a freshly started controller's first loop sees (no scale-up of its own in
    // flight), through the same registry the loop uses.
    let state = Registry::new(&options).update(&view, &cloud, &options, now).state;
    let memory = LoopMemory::for_plan();
    // The pod autoscalers run first in a loop (a freshly started controller's first
    // reconcile); their scale-ups are anticipated by the node autoscaler's decision.
    let mut pod_scaling = PodScaling::new(options.hpa.clone());
    let pods_by_namespace = crate::podscaling::PodsByNamespace::new(&view.pods);
    let file_metrics = FileMetrics { lists: &metric_lists, pods: &pods_by_namespace };
    // A live cluster's metrics APIs, unless metric files were given.
    let metrics: &dyn crate::hpa::MetricsSource = match &live {
        Some(live) if args.metrics.is_empty() => &live.metrics,
        _ => &file_metrics,
    };
    let targets = ScaleTargets::of(&view);
    // The targets' pods are found in the same index as the metric files' pods (built once: its
    // label index is most of the pod autoscalers' time on a large dump).
    let selected_pods = |namespace: &str, selector: &simulator::labels::Selector| {
        Some(pods_by_namespace.selected(namespace, selector).cloned().collect())
    };
    let autoscalers = pod_scaling.reconcile(&view, &|t| targets.state(t), &selected_pods, metrics, now);
    let anticipated: Vec<_> = if options.hpa_aware_scale_up {
        autoscalers
            .iter()
            .filter_map(|a| a.rescale.as_ref().filter(|r| r.to > a.current_replicas))
            .flat_map(|r| anticipated_pods(r, now))
            .collect()
    } else {
        Vec::new()
    };
    let input = DecisionInput {
        view: &view,
        cloud: &cloud,
        state: &state,
        options: &options,
        memory: &memory,
        now,
        anticipated: &anticipated,
    };
    let decision = decide(&input, &mut expander);
    let output = PlanOutput { plan: decision.plan, hpa: autoscalers };
    let text = match args.output {
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(&output).expect("plans serialize");
            s.push('\n');
            s
        }
        OutputFormat::Text => report::render(
            &output.plan,
            &output.hpa,
            &format_go_duration(options.node_group_defaults.scale_down_unneeded_time),
        ),
    };
    // Freeing a large dump's objects one by one took a tenth of `plan`'s run: they (the view,
    // the decision's snapshot kept in `memory`, the pods' interner in `seen`) are freed on
    // another thread, which the process's exit may cut short (the memory goes back at once).
    std::thread::spawn(move || drop((view, memory, seen)));
    Ok(text)
}

/// One read-only observation of a live cluster: the controller's reflectors until they have
/// synced once, then stopped, and its metrics reads. Nothing is written.
struct LiveCluster {
    clients: KubeClients,
    view: ClusterView,
    metrics: KubeMetrics,
}

impl LiveCluster {
    /// How long the first sync may take before plan gives up.
    const SYNC_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

    async fn observe(args: &PlanArgs, options: &AutoscalingOptions) -> Result<LiveCluster, PlanError> {
        let client_options = KubeClientOptions {
            kubeconfig: args.kubeconfig.clone().map(Into::into),
            master_url: args.kubernetes.clone(),
            qps: args.kube_client_qps,
            burst: args.kube_client_burst,
        };
        let clients = KubeClients::connect(&client_options).await.map_err(|e| PlanError::Cluster(e.to_string()))?;
        let watch_wpas = wpa_crd_installed(&clients.client).await;
        let cluster_options = KubeClusterOptions {
            watch_wpas,
            server: clients.server.clone(),
            ..KubeClusterOptions::new(&options.namespace)
        };
        let cluster = KubeCluster::start_with(clients.watch_client.clone(), cluster_options);
        let deadline = tokio::time::Instant::now() + Self::SYNC_DEADLINE;
        let view = loop {
            match cluster.view().await {
                Ok(view) => break view,
                Err(error) if tokio::time::Instant::now() >= deadline => {
                    cluster.stop();
                    return Err(PlanError::Cluster(format!("could not read the cluster: {error}")));
                }
                Err(error) => tracing::debug!(%error, "waiting for the caches to sync"),
            }
        };
        cluster.stop();
        let metrics = KubeMetrics::new(clients.metrics_client.clone());
        metrics.refresh(&view).await;
        Ok(LiveCluster { clients, view, metrics })
    }
}
