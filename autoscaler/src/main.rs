//! `cluster-autoscaler`: the binary.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use autoscaler::plan::{self, PlanArgs};
use autoscaler::simulate::{self, SimulateArgs};

#[derive(Parser)]
#[command(
    name = "cluster-autoscaler",
    version,
    about = "A Kubernetes cluster autoscaler compatible with upstream's flags"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Print what the autoscaler would do now for a cluster dump, and why.
    Plan(Box<PlanArgs>),
    /// Run the whole autoscaler on an in-memory cluster over a scenario, on a virtual clock.
    Simulate(SimulateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    match cli.command {
        Some(Command::Plan(args)) => match runtime.block_on(plan::run(&args)) {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Some(Command::Simulate(args)) => match runtime.block_on(simulate::run(&args)) {
            Ok(summary) => {
                print!("{summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(e.exit_code())
            }
        },
        None => {
            eprintln!(
                "error: running as a controller against a cluster is not built yet; use `cluster-autoscaler plan`"
            );
            ExitCode::from(2)
        }
    }
}
