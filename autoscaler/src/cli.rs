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
//! # async fn build(_: cloudprovider::ProviderContext) -> cloudprovider::BuildResult {
//! #     Err(cloudprovider::BuildError::Config("the my-iaas provider is built here".into()))
//! # }
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
    end_the_process_on_panic();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Plan(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(plan::run(&args, &providers)) {
                Ok(report) => print_output(&report),
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            }
        }
        Some(Command::Simulate(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            match runtime.block_on(simulate::run(&args)) {
                Ok(summary) => print_output(&summary),
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

/// A panic in any thread or task is a bug: it is printed (the default hook: message and place)
/// and ends the process with exit code 1, so a task never dies alone while the process runs on.
fn end_the_process_on_panic() {
    let print = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        print(info);
        eprintln!("error: cluster-autoscaler hit an internal error (a bug; please report it) and stops");
        std::process::exit(1);
    }));
}

/// Writes a command's output to stdout; a reader that went away (`| head`) ends it quietly.
fn print_output(text: &str) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}
