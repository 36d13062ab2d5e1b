//! `cluster-autoscaler`: the binary.
//!
//! - no subcommand: the controller, against a cluster (`--kubeconfig` or in-cluster), as
//!   upstream's binary runs;
//! - `plan`: what the autoscaler would do now for a cluster dump, and why;
//! - `simulate`: the whole autoscaler on an in-memory cluster over a scenario.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use autoscaler::plan::{self, PlanArgs};
use autoscaler::run::{self, RunArgs};
use autoscaler::simulate::{self, SimulateArgs};

#[derive(Parser)]
#[command(
    name = "cluster-autoscaler",
    version,
    about = "A Kubernetes cluster autoscaler compatible with upstream's flags",
    args_conflicts_with_subcommands = true,
    // As Go's flag package: a repeated flag's last value wins (repeatable ones accumulate).
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The controller's flags (no subcommand).
    #[command(flatten)]
    run: Box<RunArgs>,
}

#[derive(Subcommand)]
enum Command {
    /// Print what the autoscaler would do now for a cluster dump, and why.
    #[command(args_override_self = true)]
    Plan(Box<PlanArgs>),
    /// Run the whole autoscaler on an in-memory cluster over a scenario, on a virtual clock.
    #[command(args_override_self = true)]
    Simulate(SimulateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(plan::run(&args)) {
                Ok(report) => {
                    print!("{report}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Simulate(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(simulate::run(&args)) {
                Ok(summary) => {
                    print!("{summary}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            }
        }
        None => {
            run::init_logging(&cli.run);
            // The reflectors, the election, the server and the loop run side by side.
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(run::run(*cli.run)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e @ run::RunError::Config(_)) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
                Err(e) => {
                    tracing::error!(error = %e, "cluster-autoscaler stopped");
                    ExitCode::from(e.exit_code())
                }
            }
        }
    }
}
