//! `cluster-autoscaler simulate [SCENARIO]`: the whole autoscaler (the real control loop) on an
//! in-memory cluster and cloud, on a virtual clock, as fast as the machine allows. Without a
//! scenario it runs the built-in day in the life of a cluster (`deploy/examples/scenarios/day.yaml`).

pub mod driver;
pub mod metrics;
pub mod report;
pub mod scenario;
pub mod world;

use std::io::{IsTerminal, Write};

use clap::{Args, ValueEnum};

pub use driver::{Observer, Outcome, SimulateError, TimelineEntry, run_observed};

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
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &args.events {
        let mut out = String::new();
        for e in &outcome.timeline {
            out.push_str(&serde_json::to_string(e).expect("timeline entries serialize"));
            out.push('\n');
        }
        std::fs::write(path, out).map_err(|e| SimulateCommandError::Write(path.clone(), e))?;
    }
    if let Some(path) = &args.report {
        std::fs::write(path, report::html(&outcome)).map_err(|e| SimulateCommandError::Write(path.clone(), e))?;
    }
    let _ = std::io::stderr().flush();
    Ok(match args.output {
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(&outcome).expect("outcomes serialize");
            s.push('\n');
            s
        }
        OutputFormat::Text => report::text(&outcome),
    })
}
