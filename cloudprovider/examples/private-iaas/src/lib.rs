//! A worked example for platform teams: your private IaaS as a cloud provider of this
//! autoscaler, in your own crate, without forking the autoscaler.
//!
//! # What is here
//!
//! | Path | What | Copy it? |
//! |---|---|---|
//! | `src/bin/private-iaas-autoscaler.rs` | the autoscaler binary: ours, plus `--cloud-provider=private-iaas` | yes, as is |
//! | `src/provider.rs`, `src/group.rs` | `CloudProvider` and `NodeGroup` over pools of VMs | yes, and adapt |
//! | `src/template.rs`, `src/pricing.rs` | template nodes and prices from flavors | yes, and adapt |
//! | `src/config.rs` | the `--cloud-config` file (errors with file, line, field) | yes, and adapt |
//! | `src/client.rs`, `src/api.rs` | the HTTP client and the API's JSON shapes | replace with your API's |
//! | `src/bin/private-iaas-grpc.rs` | the same provider served over upstream's externalgrpc protocol | if you run upstream's Go autoscaler |
//! | `config/cloud-config.yaml` | the provider's configuration for the example's pools | yes, with your pools |
//! | `tests/` | the provider against the API on real sockets; `plan` through the binary | the shape, against your API's test double |
//! | `src/iaas/`, `src/bin/iaas-api.rs`, `config/iaas.yaml` | a stand-in IaaS API with fault injection, for the tests and demos | no: your IaaS takes its place |
//!
//! The workspace's `tests/tests/private_iaas.rs` runs it all end to end: the autoscaler binary
//! over externalgrpc (mutual TLS) and in process, a pending pod to a VM and back, with faults.
//!
//! The stand-in IaaS has flavors (machine sizes), images and pools (quotas of VMs); VMs are
//! `building`, then `active`, `deleting`, or `error` with a code (`NoValidHost`,
//! `QuotaExceeded`). Its API is documented in [`iaas`]. Most private clouds (OpenStack, vSphere
//! with a portal, an in-house API) have this shape; map your nouns onto it.
//!
//! # Trying it
//!
//! ```sh
//! cargo run -p private-iaas --bin iaas-api -- --listen 127.0.0.1:8774 \
//!     --config cloudprovider/examples/private-iaas/config/iaas.yaml &
//! cargo run -p private-iaas --bin private-iaas-autoscaler -- plan \
//!     --snapshot deploy/examples/snapshot.json --now 2026-11-21T12:00:00Z \
//!     --cloud-provider=private-iaas --cloud-config cloudprovider/examples/private-iaas/config/cloud-config.yaml
//! ```
//!
//! `plan` then shows the `compute` pool scaling up from zero for the example cluster's pending
//! batch pods, with templates made from the `m1.xlarge` flavor. Without a subcommand the binary is
//! the controller, with every upstream flag.
//!
//! # The contract between your VMs and the provider
//!
//! - **providerID**: each VM's kubelet registers with `--provider-id=private-iaas://<pool>/<vm-id>`
//!   (the image reads both from the metadata service). That is how a Node is matched to its VM
//!   and its node group; nodes with other providerIDs are not the autoscaler's to touch.
//! - **Labels and taints**: the kubelet registers with the pool's `labels` and `taints` of the
//!   cloud-config, plus `node.kubernetes.io/instance-type=<flavor>` and, on GPU flavors, the GPU
//!   label. The autoscaler predicts what fits on a new VM from the template built from the same
//!   settings ([`template`]); if the two disagree, it scales up pools that cannot help.
//! - **Allocatable**: templates assume the whole flavor is allocatable. Subtract your kubelet's
//!   reservations in [`template::template_node`] if it has any.
//!
//! # Provider semantics (what to keep when you adapt it)
//!
//! - Node groups are pools, listed in the cloud-config ([`config`]). `refresh()` lists each
//!   pool's VMs once per loop; every other call reads that cache, as the `CloudProvider`
//!   contract asks; changes update it.
//! - Target size: the pool's VMs not being deleted (VMs in `error` count until the autoscaler
//!   deletes them).
//! - `increase_size(n)`: refuses 0 and anything past `maxSize`; creates n VMs, all or none (a
//!   failed create deletes the ones just made). A VM the IaaS creates in `error` is reported by
//!   `nodes()` as a Creating instance with error info (class OutOfResources for `NoValidHost`
//!   and `QuotaExceeded`); the autoscaler backs the pool off and deletes it with `delete_nodes`.
//! - `delete_nodes`: every node must be this pool's; refuses to go below `minSize`; skips VMs
//!   already gone or being deleted.
//! - `decrease_target_size(-n)`: deletes n VMs still `building` (newest first), never an active
//!   one.
//! - Errors from the IaaS are `CloudProviderError::Cloud` with the method, the URL, the status
//!   and the API's message; each request has the configured timeout.
//! - [`build`] with `Purpose::Check` only reads files; for `plan` and the controller it reads
//!   flavors, images and pools and checks the cloud-config against them.
//!
//! # What a real IaaS adds
//!
//! Authentication (a token header in [`client`]), pagination of VM lists, and rate limits.
//! Nothing in the autoscaler changes for those.

pub mod api;
pub mod client;
pub mod config;
mod group;
pub mod iaas;
pub mod pricing;
mod provider;
pub mod template;

pub use client::{IaasClient, IaasError};
pub use config::{ConfigError, PoolGroupConfig, ProviderConfig};
pub use group::PoolNodeGroup;
pub use pricing::FlavorPricing;
pub use provider::{PROVIDER_ID_SCHEME, PROVIDER_NAME, PrivateIaasProvider, build, parse_provider_id, provider_id};
