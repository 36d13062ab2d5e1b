//! The command line, as a library entry point: `cluster-autoscaler` is [`main`] with the
//! built-in providers, and a platform team's binary is [`main`] with its own registered too.
//!
//! - no subcommand: the controller, against a cluster (`--kubeconfig` or in-cluster), as
//!   upstream's binary runs;
//! - `plan`: what the autoscaler would do now for a cluster dump, and why;
//! - `simulate`: the whole autoscaler on an in-memory cluster over a scenario.
//!
//! ```no_run
//! // A platform team's main.rs: our controller, plan and simulate, every upstream flag, plus
//! // `--cloud-provider=my-iaas`.
//! # async fn build(_: cloudprovider::ProviderContext) -> cloudprovider::BuildResult { unimplemented!() }
//! fn main() -> std::process::ExitCode {
//!     let mut providers = autoscaler::compose::builtin_providers();
//!     providers.register("my-iaas", build);
//!     autoscaler::cli::main(providers)
//! }
//! ```

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cloudprovider::ProviderRegistry;

use crate::plan::{self, PlanArgs};
use crate::run::{self, RunArgs};
use crate::simulate::{self, SimulateArgs};

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

/// Parses the process's arguments and runs the controller, `plan` or `simulate` with
/// `providers` to choose `--cloud-provider` from. Returns the process's exit code: 0 done,
/// 2 bad input, 1 a failure at run time.
pub fn main(providers: ProviderRegistry) -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(plan::run(&args, &providers)) {
                Ok(report) => {
                    print!("{report}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
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
            if let Err(error) = cli.run.logging.init() {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
            // The reflectors, the election, the server and the loop run side by side.
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(run::run(*cli.run, &providers)) {
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
