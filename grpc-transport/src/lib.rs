//! gRPC plumbing shared by this project's gRPC clients and servers (the `externalgrpc` cloud
//! provider, the gRPC expander), written once:
//!
//! - [`tls`]: TLS from PEM files for clients (the CA to trust, an optional client certificate for
//!   mutual TLS, the server name) and servers (certificate and key, an optional client CA that
//!   makes client certificates mandatory). rustls with the aws-lc-rs provider only: the
//!   workspace's Kubernetes client uses aws-lc-rs, and a second provider (ring) in the process
//!   makes rustls refuse to pick a default one at run time.
//! - [`endpoint`]: a lazily connecting tonic endpoint for `host:port` / `[v6]:port`.
//! - [`bridge`]: [`BlockingBridge`], a background thread with its own tokio runtime on which
//!   channels live and calls run. Synchronous callers (the expanders, `PricingModel`) wait for a
//!   call with a deadline; async callers await it without needing timers in their own runtime.
//! - [`deadline`]: per-call deadlines sent to the server (`grpc-timeout`) and enforced locally,
//!   and the canonical names of status codes for error messages.

pub mod bridge;
pub mod deadline;
pub mod endpoint;
pub mod tls;

pub use bridge::{BlockingBridge, BridgeError};
pub use deadline::{code_name, code_text, request_with_deadline, with_deadline};
pub use endpoint::{EndpointError, error_chain, host_of, lazy_channel};
pub use tls::{ClientTls, ServerTls, TlsError};
