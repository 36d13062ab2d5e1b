//! The stand-in IaaS API: a small HTTP service of the shape private clouds have (an OpenStack
//! Nova in miniature), so the provider has something real to talk to in tests and demos. A
//! platform team does not copy this module: its own IaaS takes its place.
//!
//! Run it with `iaas-api --listen 127.0.0.1:0 --config iaas.yaml` (format in [`config`]); it prints
//! `listening on http://127.0.0.1:PORT` as its first line.
//!
//! # API
//!
//! JSON in and out (shapes in [`crate::api`]). Errors answer `{"error": {"code", "message"}}` with
//! 400 (bad input, unknown image or flavor), 404 (unknown pool, VM or route), 405, 409 (a VM name
//! in use) or 500 (an injected fault).
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /v1/flavors` | 200 `{"flavors": [{"name", "vcpus", "memoryMiB", "gpus", "gpuType", "pricePerHour"}]}` |
//! | `GET /v1/images` | 200 `{"images": [{"name"}]}` |
//! | `GET /v1/pools` | 200 `{"pools": [{"name", "quota", "used"}]}` |
//! | `GET /v1/pools/{pool}/vms` | 200 `{"vms": [vm…]}`, in creation order |
//! | `POST /v1/pools/{pool}/vms` `{"name"?, "image", "flavor"}` | 202 `vm` (state `building`, or `error`) |
//! | `GET /v1/pools/{pool}/vms/{id}` | 200 `vm` |
//! | `DELETE /v1/pools/{pool}/vms/{id}` | 202 `vm` (state `deleting`) |
//!
//! A `vm` is `{"id", "name", "pool", "flavor", "image", "state", "created", "error"?}` with state
//! `building` → `active` after `buildSeconds`; `deleting` → gone after `deleteSeconds`; `error`
//! with `{"code", "message"}`. With `buildSeconds: null` (`deleteSeconds: null`) no time is
//! long enough: VMs move on only through `POST /admin/settle`, which tests use instead of
//! sleeping (a loaded machine cannot make them flaky). Demos keep a build time.
//!
//! **Quota**: a create past the pool's quota is accepted and makes a VM in `error` with code
//! `QuotaExceeded` (as OpenStack reports a full project through the server's fault), which holds
//! no quota and stays listed until deleted. The alternative, refusing the create, would leave a
//! multi-VM scale-up half done; this way the provider reports the failed VMs as instances with
//! errors and the autoscaler backs the pool off and deletes them.
//!
//! # Faults, for tests
//!
//! | Request | Effect |
//! |---|---|
//! | `POST /admin/faults` `{"pool", "failNextCreates": N}` | the pool's next N creates make VMs in `error` (`NoValidHost`) |
//! | `POST /admin/faults` `{"pool", "hangBuilds": true}` | the pool's new VMs stay `building` forever |
//! | `POST /admin/faults` `{"serverErrors": N}` | the next N `/v1` requests answer 500 and do nothing |
//! | `POST /admin/faults` `{"slowRequests": N, "slowMillis": MS}` | the next N `/v1` requests are carried out, then answered MS late |
//! | `POST /admin/faults` `{"skipRequests": K, …}` | the two faults above start after K more `/v1` requests |
//! | `POST /admin/faults` `{"route": "POST /v1/pools/{pool}/vms", …}` | the three above count only requests on that route (as `/admin/stats` names it) |
//! | `GET /admin/faults`, `DELETE /admin/faults` | what is armed; disarm everything |
//! | `GET /admin/stats` | `{"requests": {"GET /v1/pools/{pool}/vms": 3, …}}` |
//! | `POST /admin/settle` `{"pool"?}` | now, whatever the times: building VMs (but hung ones) are `active`, deleting ones gone; answers `{"active": [id…], "gone": [id…]}` |
//!
//! A slow request is carried out before the delay, the worst case for a client: its timeout
//! fires, yet the create happened.

pub mod config;
mod routes;
mod state;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use config::{IaasConfig, IaasConfigError, PoolConfig};
pub use routes::router;
pub use state::{ApiError, Cloud, RequestFault};

/// The service's state, shared by the handlers.
pub type SharedCloud = Arc<Mutex<Cloud>>;

/// Serves the API on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    config: IaasConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cloud = Arc::new(Mutex::new(Cloud::new(config)));
    axum::serve(listener, router(cloud)).with_graceful_shutdown(shutdown).await
}

/// The API serving in this process on a free local port, for tests; stops when dropped.
pub struct RunningIaas {
    pub address: SocketAddr,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningIaas {
    pub async fn start(config: IaasConfig) -> std::io::Result<RunningIaas> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, config, async move {
            let _ = stopped.await;
        }));
        Ok(RunningIaas { address, url: format!("http://{address}"), stop: Some(stop), task })
    }

    /// Stops serving and waits until the listener is closed (later connections are refused).
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Graceful shutdown closes idle keep-alive connections too (the connections are tasks of
        // their own: aborting the server alone would leave them serving); a busy one is cut.
        if tokio::time::timeout(std::time::Duration::from_secs(2), &mut self.task).await.is_err() {
            self.task.abort();
            // `abort` only asks: the listener is closed once the cancelled task has been
            // dropped, which awaiting it waits for.
            let _ = (&mut self.task).await;
        }
    }
}

impl Drop for RunningIaas {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A DNS label: 1–63 lower-case letters, digits and '-', starting and ending alphanumeric (VM
/// names become Node names and host names).
pub fn is_dns_label(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| alnum(c) || c == '-')
        && name.starts_with(alnum)
        && name.ends_with(alnum)
}
