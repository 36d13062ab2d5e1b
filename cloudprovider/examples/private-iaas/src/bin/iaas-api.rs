//! The stand-in IaaS API as a process: `iaas-api --listen 127.0.0.1:0 --config iaas.yaml`.
//! The first line on stdout is `listening on http://ADDRESS`, so a test can start it on a free
//! port and read where it is. Stops on SIGTERM or Ctrl-C. The API is documented in
//! `private_iaas::iaas`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use private_iaas::iaas::{self, IaasConfig};

#[derive(Parser)]
#[command(
    name = "iaas-api",
    about = "A stand-in private IaaS API (flavors, images, pools of VMs), with fault injection"
)]
struct Args {
    /// The address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8774")]
    listen: String,
    /// The IaaS's flavors, images and pools (YAML).
    #[arg(long)]
    config: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match IaasConfig::load(&args.config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(&args.listen).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("error: --listen={}: {e}", args.listen);
                return ExitCode::from(2);
            }
        };
        let address = match listener.local_addr() {
            Ok(address) => address,
            Err(e) => {
                eprintln!("error: --listen={}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        println!("listening on http://{address}");
        let _ = std::io::stdout().flush();
        match iaas::serve(listener, config, stopped()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// Completes on SIGTERM (how Kubernetes and test harnesses stop a process) or Ctrl-C.
async fn stopped() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
