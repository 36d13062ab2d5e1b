//! The IaaS API's JSON shapes, shared by the stand-in server ([`crate::iaas`]) and the provider's
//! client ([`crate::client`]). Field names are camelCase on the wire.
//!
//! A platform team replaces this module with its own API's shapes (or a generated client). Keep
//! the client side lenient: unknown fields in answers are ignored, so the API can grow without
//! breaking the autoscaler; the server side refuses unknown fields in requests.

use serde::{Deserialize, Serialize};

/// A machine size the IaaS offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Flavor {
    pub name: String,
    pub vcpus: u32,
    #[serde(rename = "memoryMiB")]
    pub memory_mib: u64,
    #[serde(default)]
    pub gpus: u32,
    /// The GPU model (`Tesla-T4`), for flavors with GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    pub price_per_hour: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlavorList {
    pub flavors: Vec<Flavor>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageList {
    pub images: Vec<Image>,
}

/// A pool: a quota of VMs (a tenant, a project, an availability zone…).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    pub name: String,
    /// How many VMs the pool may hold (VMs in `error` or `deleting` do not count).
    pub quota: u32,
    /// VMs that count against the quota now.
    pub used: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolList {
    pub pools: Vec<Pool>,
}

/// Where a VM is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VmState {
    /// Created, booting: not a node yet.
    Building,
    /// Up; its kubelet registers a Node named like the VM.
    Active,
    /// Being deleted; gone from lists once done.
    Deleting,
    /// Could not be created; see [`Vm::error`]. Holds no capacity and no quota, but stays
    /// listed until deleted.
    Error,
}

/// Why a VM is in `error`. Codes: `NoValidHost` (no hypervisor has room), `QuotaExceeded` (the
/// pool's quota was full when it was created).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmError {
    pub code: String,
    pub message: String,
}

pub const NO_VALID_HOST: &str = "NoValidHost";
pub const QUOTA_EXCEEDED: &str = "QuotaExceeded";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vm {
    /// Unique across pools, never reused (`vm-000042`).
    pub id: String,
    /// The host name, which the Node takes too; unique among existing VMs.
    pub name: String,
    pub pool: String,
    pub flavor: String,
    pub image: String,
    pub state: VmState,
    /// RFC 3339, UTC.
    pub created: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<VmError>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmList {
    pub vms: Vec<Vm>,
}

/// The body of `POST /v1/pools/{pool}/vms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateVm {
    /// Chosen by the client so that it can find the VM again when the answer is lost (a
    /// timeout); the server names it `<pool>-<id>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub image: String,
    pub flavor: String,
}

/// Every error answer: `{"error": {"code": "NotFound", "message": "…"}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
}

/// The body of `POST /admin/faults`: each field given is set, the others are left alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRequest {
    /// The pool `failNextCreates` and `hangBuilds` apply to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The next N creates in the pool make VMs in `error` with `NoValidHost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_next_creates: Option<u32>,
    /// VMs created in the pool from now on stay `building` forever (false: back to normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_builds: Option<bool>,
    /// The next N requests to `/v1` answer 500 without doing anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_errors: Option<u32>,
    /// The next N requests to `/v1` are carried out, then answered `slowMillis` late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_millis: Option<u64>,
    /// `serverErrors` and `slowRequests` start after this many more `/v1` requests (to fail the
    /// second create of a scale-up, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_requests: Option<u32>,
    /// `serverErrors`, `slowRequests` and `skipRequests` count only requests on this route, as
    /// `/admin/stats` names it (`POST /v1/pools/{pool}/vms`: creates); every `/v1` route when
    /// absent. Set by every request that arms `serverErrors` or `slowRequests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
}

/// The faults armed now (`GET /admin/faults`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    pub server_errors: u32,
    pub slow_requests: u32,
    pub slow_millis: u64,
    pub skip_requests: u32,
    /// The route those request faults are for (`None`: every `/v1` route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Per pool: creates left to fail.
    pub fail_next_creates: std::collections::BTreeMap<String, u32>,
    /// Pools whose new VMs never leave `building`.
    pub hang_builds: std::collections::BTreeSet<String>,
}

/// The body of `POST /admin/settle` (optional: without one, every pool is settled).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettleRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

/// What `POST /admin/settle` moved on: VMs now `active`, and VMs whose deletion finished.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settled {
    pub active: Vec<String>,
    pub gone: Vec<String>,
}

/// Requests served per route (`GET /admin/stats`), e.g. `"GET /v1/pools/{pool}/vms": 3`, so
/// tests can tell what a client asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub requests: std::collections::BTreeMap<String, u64>,
}
