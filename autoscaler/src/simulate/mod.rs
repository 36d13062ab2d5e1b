//! `cluster-autoscaler simulate [SCENARIO]`: the whole autoscaler (the real control loop) on an
//! in-memory cluster and cloud, on a virtual clock, as fast as the machine allows. Without a
//! scenario it runs the built-in day in the life of a cluster (`deploy/examples/scenarios/day.yaml`).

pub mod activity;
pub mod chart;
pub mod driver;
pub mod events;
pub mod html;
pub mod load;
pub mod metrics;
pub mod report;
pub mod scenario;
pub mod world;

use std::io::{IsTerminal, Write};

use clap::{Args, ValueEnum};

pub use driver::{Observer, Outcome, SimulateError, TimelineEntry, run_observed, run_with_crash};

/// The built-in scenario.
pub const DEFAULT_SCENARIO: &str = include_str!("../../../deploy/examples/scenarios/day.yaml");

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Scenario file (YAML); the built-in day in the life of a cluster when omitted.
    pub scenario: Option<String>,

    /// Summary format.
    #[arg(long = "output", short = 'o', value_enum, default_value = "text")]
    pub output: OutputFormat,

    /// Write a JSON-lines timeline of every decision and action to this file.
    #[arg(long = "events")]
    pub events: Option<String>,

    /// Write a self-contained HTML report with charts to this file.
    #[arg(long = "report")]
    pub report: Option<String>,

    /// Autoscaler flags that override the scenario's (e.g. `--flag=--expander=price`); repeatable.
    #[arg(long = "flag", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    pub flags: Vec<String>,

    /// Run the scenario a second time with `--hpa-aware-scale-up=false` and compare the
    /// pending-pod seconds. (With `--flag`, the scenario also runs as written, to say what the
    /// flags changed.)
    #[arg(long = "compare-hpa-aware")]
    pub compare_hpa_aware: bool,
}

/// Pending pods with and without HPA-aware scale-up.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HpaAwareComparison {
    pub with_hpa_aware: metrics::Distribution,
    pub without_hpa_aware: metrics::Distribution,
    /// Pending seconds of the pods of workloads that pod autoscalers scale.
    pub autoscaled_with: f64,
    pub autoscaled_without: f64,
    pub autoscaled_pods_with: usize,
    pub autoscaled_pods_without: usize,
    pub cost_with: f64,
    pub cost_without: f64,
    pub currency: String,
}

impl HpaAwareComparison {
    pub fn new(with: &Outcome, without: &Outcome) -> Self {
        let (autoscaled_with, autoscaled_pods_with) = report::autoscaled_pending(&with.metrics);
        let (autoscaled_without, autoscaled_pods_without) = report::autoscaled_pending(&without.metrics);
        HpaAwareComparison {
            with_hpa_aware: with.metrics.pending_seconds.clone(),
            without_hpa_aware: without.metrics.pending_seconds.clone(),
            autoscaled_with,
            autoscaled_without,
            autoscaled_pods_with,
            autoscaled_pods_without,
            cost_with: with.metrics.total_cost,
            cost_without: without.metrics.total_cost,
            currency: with.currency.clone(),
        }
    }
}

/// The key figures of the scenario as written, beside a what-if's.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    pub expander: String,
    pub total_cost: f64,
    pub total_node_hours: f64,
    pub pending_seconds: metrics::Distribution,
    pub packing_efficiency: f64,
    pub scale_ups: usize,
    pub scale_downs: usize,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonSummary<'a> {
    #[serde(flatten)]
    outcome: &'a Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    hpa_aware_comparison: Option<&'a HpaAwareComparison>,
    /// With `--flag`: the scenario as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<Baseline>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimulateCommandError {
    #[error("{0}: {1}")]
    Read(String, std::io::Error),
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error(transparent)]
    Simulation(#[from] SimulateError),
    #[error("{0}: {1}")]
    Write(String, std::io::Error),
    /// An output file that cannot be written, found before the run starts.
    #[error("{flag} {path}: cannot be written: {source}")]
    Output { flag: &'static str, path: String, source: std::io::Error },
}

impl SimulateCommandError {
    /// Bad input exits 2; a failure of the simulation itself exits 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            SimulateCommandError::Simulation(SimulateError::Loop(_)) | SimulateCommandError::Write(..) => 1,
            _ => 2,
        }
    }
}

/// Runs `simulate` and returns the summary to print.
pub async fn run(args: &SimulateArgs) -> Result<String, SimulateCommandError> {
    let (text, name) = match &args.scenario {
        Some(path) => {
            (std::fs::read_to_string(path).map_err(|e| SimulateCommandError::Read(path.clone(), e))?, path.clone())
        }
        None => (DEFAULT_SCENARIO.to_string(), "built-in day scenario".to_string()),
    };
    let scenario = scenario::parse(&text, &name)?;
    // Output files are checked before the run, not after minutes of it: created (or truncated)
    // now, written at the end.
    for (flag, path) in [("--events", &args.events), ("--report", &args.report)] {
        if let Some(path) = path {
            std::fs::File::create(path).map_err(|source| SimulateCommandError::Output {
                flag,
                path: path.clone(),
                source,
            })?;
        }
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(1000);
        bar.set_style(
            indicatif::ProgressStyle::with_template("simulating {bar:40} {percent:>3}% {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let keep_timeline = args.events.is_some() || args.report.is_some();
    let outcome = driver::run(&scenario, &args.flags, keep_timeline, |done| {
        if let Some(b) = &bar {
            b.set_position((done * 1000.0) as u64);
        }
    })
    .await?;
    let comparison = if args.compare_hpa_aware {
        let mut flags = args.flags.clone();
        flags.push("--hpa-aware-scale-up=false".into());
        let without = driver::run(&scenario, &flags, false, |done| {
            if let Some(b) = &bar {
                b.set_message("(again without HPA-aware scale-up)");
                b.set_position((done * 1000.0) as u64);
            }
        })
        .await?;
        Some(HpaAwareComparison::new(&outcome, &without))
    } else {
        None
    };
    // A what-if says what it changed: the scenario runs as written too.
    let baseline = if args.flags.is_empty() {
        None
    } else {
        let as_written = driver::run(&scenario, &[], false, |done| {
            if let Some(b) = &bar {
                b.set_message("(again as the scenario is written)");
                b.set_position((done * 1000.0) as u64);
            }
        })
        .await?;
        Some(as_written)
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &args.events {
        std::fs::write(path, events::file(&outcome.timeline))
            .map_err(|e| SimulateCommandError::Write(path.clone(), e))?;
    }
    if let Some(path) = &args.report {
        let page = html::page(&outcome, baseline.as_ref(), comparison.as_ref());
        std::fs::write(path, page).map_err(|e| SimulateCommandError::Write(path.clone(), e))?;
    }
    let _ = std::io::stderr().flush();
    Ok(match args.output {
        OutputFormat::Json => {
            let baseline = baseline.as_ref().map(|b| Baseline {
                expander: b.expander.clone(),
                total_cost: b.metrics.total_cost,
                total_node_hours: b.metrics.total_node_hours,
                pending_seconds: b.metrics.pending_seconds.clone(),
                packing_efficiency: b.metrics.packing_efficiency,
                scale_ups: b.scale_ups,
                scale_downs: b.scale_downs,
            });
            let summary = JsonSummary { outcome: &outcome, hpa_aware_comparison: comparison.as_ref(), baseline };
            let mut s = serde_json::to_string_pretty(&summary).expect("outcomes serialize");
            s.push('\n');
            s
        }
        OutputFormat::Text => {
            let mut text = report::text(&outcome);
            if let Some(b) = &baseline {
                text.push_str(&report::what_if(&outcome, b));
            }
            if let Some(c) = &comparison {
                text.push_str(&report::comparison(c));
            }
            text
        }
    })
}
