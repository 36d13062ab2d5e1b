//! The private IaaS provider served over upstream's externalgrpc protocol, for clusters that run
//! upstream's Go autoscaler (`--cloud-provider=externalgrpc`) or ours pointed at it: the same
//! provider as `private-iaas-autoscaler` links in, behind a network hop instead.
//!
//! ```sh
//! private-iaas-grpc --listen 0.0.0.0:8086 --cloud-config cloud-config.yaml \
//!     --cert tls.crt --key tls.key --cacert ca.crt
//! ```
//!
//! TLS with `--cert` and `--key`; mutual TLS when `--cacert` (the CA of the autoscaler's client
//! certificate) is given too, as upstream's externalgrpc client expects when its cloud-config has
//! `cert`. The first line on stdout is `listening on ADDRESS`. Stops on SIGTERM or Ctrl-C after
//! the calls in flight. Exit codes: 2 for bad flags or files, 1 when the IaaS or the socket fail.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use cloudprovider::{BuildError, ProviderContext, Purpose};
use cloudprovider_externalgrpc::server::{self, ServerTls};

#[derive(Parser)]
#[command(name = "private-iaas-grpc", about = "The private IaaS cloud provider over upstream's externalgrpc protocol")]
struct Args {
    /// The address to serve on; port 0 picks a free one.
    #[arg(long, default_value = "0.0.0.0:8086")]
    listen: String,
    /// The provider's configuration (see the private_iaas crate's `config` module).
    #[arg(long = "cloud-config")]
    cloud_config: PathBuf,
    /// The server's certificate chain (PEM); TLS when given, with --key.
    #[arg(long, requires = "key")]
    cert: Option<PathBuf>,
    /// The server's private key (PEM).
    #[arg(long, requires = "cert")]
    key: Option<PathBuf>,
    /// The CA that signs clients' certificates (PEM): mutual TLS, clients without a certificate
    /// are refused.
    #[arg(long, requires = "cert")]
    cacert: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let tls = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => match ServerTls::from_files(cert, key, args.cacert.as_deref()) {
            Ok(tls) => Some(tls),
            Err(e) => return fail(2, e),
        },
        _ => None,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(1, format!("cannot start the runtime: {e}")),
    };
    runtime.block_on(run(args, tls))
}

async fn run(args: Args, tls: Option<ServerTls>) -> ExitCode {
    let mut context = ProviderContext::new(private_iaas::PROVIDER_NAME, Purpose::Controller);
    context.cloud_config = Some(args.cloud_config.clone());
    let provider = match private_iaas::build(context).await {
        Ok(provider) => provider,
        Err(e @ BuildError::Config(_)) => return fail(2, e),
        Err(e @ BuildError::Unavailable(_)) => return fail(1, e),
    };
    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(listener) => listener,
        Err(e) => return fail(2, format!("--listen={}: {e}", args.listen)),
    };
    match listener.local_addr() {
        Ok(address) => println!("listening on {address}"),
        Err(e) => return fail(1, format!("--listen={}: {e}", args.listen)),
    }
    let _ = std::io::stdout().flush();
    match server::serve(provider, listener, tls, stopped()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(server::ServeError::Tls(message)) => fail(2, message),
        Err(e) => fail(1, e),
    }
}

fn fail(code: u8, error: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(code)
}

/// Completes on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
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
