//! The stand-in IaaS's model: pools of VMs whose state follows from the time since they were
//! created or deleted, plus the faults tests arm. No timers: every read settles the state at the
//! time of the read, so the service is deterministic for a given sequence of requests and clock.
//! Without build (delete) times, VMs move on only when told to ([`Cloud::settle_now`]): then the
//! service is deterministic for a given sequence of requests alone.

use std::time::{Duration, Instant};

use axum::http::StatusCode;

use super::config::IaasConfig;
use crate::api::{
    CreateVm, FaultRequest, Faults, Flavor, NO_VALID_HOST, Pool, QUOTA_EXCEEDED, Settled, Stats, Vm, VmError, VmState,
};

/// An answer other than success: the HTTP status, a stable code and a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, code: "BadRequest", message: message.into() }
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, code: "NotFound", message: message.into() }
    }
}

/// What an injected fault does to one `/v1` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestFault {
    None,
    /// Answer 500 without doing anything.
    ServerError,
    /// Do it, then answer this late.
    Slow(Duration),
}

/// What happens to a VM after its creation.
#[derive(Clone, Debug)]
enum Fate {
    /// `building` for the build time (or until settled), then `active`.
    Boots,
    /// `building` forever (the `hangBuilds` fault).
    Hangs,
    /// `error` from the start.
    Fails(VmError),
}

#[derive(Clone, Debug)]
struct VmRecord {
    vm: Vm,
    created_at: Instant,
    fate: Fate,
    /// Moved to `active` by [`Cloud::settle_now`], whatever the build time.
    booted: bool,
    deleting_since: Option<Instant>,
}

pub struct Cloud {
    config: IaasConfig,
    next_id: u64,
    /// In creation order.
    vms: Vec<VmRecord>,
    faults: Faults,
    stats: Stats,
}

impl Cloud {
    pub fn new(config: IaasConfig) -> Cloud {
        Cloud { config, next_id: 1, vms: Vec::new(), faults: Faults::default(), stats: Stats::default() }
    }

    pub fn flavors(&self) -> Vec<Flavor> {
        self.config.flavors.clone()
    }

    pub fn images(&self) -> Vec<String> {
        self.config.images.clone()
    }

    pub fn pools(&mut self, now: Instant) -> Vec<Pool> {
        self.forget_deleted(now);
        let pools: Vec<(String, u32)> = self.config.pools.iter().map(|p| (p.name.clone(), p.quota)).collect();
        pools.into_iter().map(|(name, quota)| Pool { used: self.used(&name), name, quota }).collect()
    }

    pub fn list(&mut self, pool: &str, now: Instant) -> Result<Vec<Vm>, ApiError> {
        self.known_pool(pool)?;
        self.forget_deleted(now);
        let build_time = self.config.build_time;
        Ok(self.vms.iter().filter(|r| r.vm.pool == pool).map(|r| view(r, now, build_time)).collect())
    }

    pub fn get(&mut self, pool: &str, id: &str, now: Instant) -> Result<Vm, ApiError> {
        self.known_pool(pool)?;
        self.forget_deleted(now);
        let build_time = self.config.build_time;
        self.vms
            .iter()
            .find(|r| r.vm.pool == pool && r.vm.id == id)
            .map(|r| view(r, now, build_time))
            .ok_or_else(|| ApiError::not_found(format!("no VM {id} in pool {pool}")))
    }

    /// Creates a VM. Past the pool's quota the VM is created in `error` with `QuotaExceeded`,
    /// as OpenStack's scheduler does for a full project: the client learns it from the VM, the
    /// way it learns about `NoValidHost`, and deletes it.
    pub fn create(&mut self, pool: &str, request: CreateVm, now: Instant) -> Result<Vm, ApiError> {
        let quota = self.known_pool(pool)?.quota;
        self.forget_deleted(now);
        if !self.config.images.contains(&request.image) {
            return Err(ApiError::bad_request(format!(
                "unknown image {:?} (images: {})",
                request.image,
                self.config.images.join(", ")
            )));
        }
        if !self.config.flavors.iter().any(|f| f.name == request.flavor) {
            let names: Vec<&str> = self.config.flavors.iter().map(|f| f.name.as_str()).collect();
            return Err(ApiError::bad_request(format!(
                "unknown flavor {:?} (flavors: {})",
                request.flavor,
                names.join(", ")
            )));
        }
        let id = format!("vm-{:06}", self.next_id);
        let name = match request.name {
            Some(name) if !super::is_dns_label(&name) => {
                return Err(ApiError::bad_request(format!(
                    "name {name:?} must be a DNS label (at most 63 lower-case letters, digits and '-')"
                )));
            }
            Some(name) if self.vms.iter().any(|r| r.vm.name == name) => {
                return Err(ApiError {
                    status: StatusCode::CONFLICT,
                    code: "NameInUse",
                    message: format!("a VM named {name:?} exists"),
                });
            }
            Some(name) => name,
            None => format!("{pool}-{}", self.next_id),
        };
        self.next_id += 1;
        let fate = if self.used(pool) >= quota {
            Fate::Fails(VmError {
                code: QUOTA_EXCEEDED.into(),
                message: format!("Quota exceeded for pool {pool}: {quota} VMs allowed"),
            })
        } else if let Some(left) = self.faults.fail_next_creates.get_mut(pool).filter(|left| **left > 0) {
            *left -= 1;
            if *left == 0 {
                self.faults.fail_next_creates.remove(pool);
            }
            Fate::Fails(VmError {
                code: NO_VALID_HOST.into(),
                message: "No valid host was found. There are not enough hosts available.".into(),
            })
        } else if self.faults.hang_builds.contains(pool) {
            Fate::Hangs
        } else {
            Fate::Boots
        };
        let created = jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now());
        let vm = Vm {
            id,
            name,
            pool: pool.to_string(),
            flavor: request.flavor,
            image: request.image,
            state: VmState::Building,
            created: created.to_string(),
            error: None,
        };
        let record = VmRecord { vm, created_at: now, fate, booted: false, deleting_since: None };
        let answer = view(&record, now, self.config.build_time);
        self.vms.push(record);
        Ok(answer)
    }

    /// Starts deleting a VM (any state); deleting one already `deleting` is a no-op.
    pub fn delete(&mut self, pool: &str, id: &str, now: Instant) -> Result<Vm, ApiError> {
        self.known_pool(pool)?;
        self.forget_deleted(now);
        let build_time = self.config.build_time;
        let record = self
            .vms
            .iter_mut()
            .find(|r| r.vm.pool == pool && r.vm.id == id)
            .ok_or_else(|| ApiError::not_found(format!("no VM {id} in pool {pool}")))?;
        record.deleting_since.get_or_insert(now);
        Ok(view(record, now, build_time))
    }

    /// Moves every VM of `pool` (of every pool when `None`) on at once: `building` ones that
    /// boot become `active` (hung ones stay `building`), `deleting` ones are gone. Returns their ids.
    pub fn settle_now(&mut self, pool: Option<&str>, now: Instant) -> Result<Settled, ApiError> {
        if let Some(pool) = pool {
            self.known_pool(pool)?;
        }
        self.forget_deleted(now);
        let build_time = self.config.build_time;
        let mut settled = Settled::default();
        for record in self.vms.iter_mut().filter(|r| pool.is_none_or(|p| r.vm.pool == p)) {
            if record.deleting_since.is_some() {
                settled.gone.push(record.vm.id.clone());
            } else if matches!(record.fate, Fate::Boots) && view(record, now, build_time).state == VmState::Building {
                record.booted = true;
                settled.active.push(record.vm.id.clone());
            }
        }
        self.vms.retain(|r| !settled.gone.contains(&r.vm.id));
        Ok(settled)
    }

    pub fn faults(&self) -> Faults {
        self.faults.clone()
    }

    pub fn arm(&mut self, request: FaultRequest) -> Result<Faults, ApiError> {
        match &request.pool {
            Some(pool) => {
                self.known_pool(pool)?;
            }
            None if request.fail_next_creates.is_some() || request.hang_builds.is_some() => {
                return Err(ApiError::bad_request("failNextCreates and hangBuilds need a pool"));
            }
            None => {}
        }
        let pool = request.pool.unwrap_or_default();
        match request.fail_next_creates {
            Some(0) => {
                self.faults.fail_next_creates.remove(&pool);
            }
            Some(n) => {
                self.faults.fail_next_creates.insert(pool.clone(), n);
            }
            None => {}
        }
        match request.hang_builds {
            Some(true) => {
                self.faults.hang_builds.insert(pool);
            }
            Some(false) => {
                self.faults.hang_builds.remove(&pool);
            }
            None => {}
        }
        if let Some(n) = request.server_errors {
            self.faults.server_errors = n;
        }
        if let Some(n) = request.slow_requests {
            self.faults.slow_requests = n;
        }
        if let Some(ms) = request.slow_millis {
            self.faults.slow_millis = ms;
        }
        if let Some(n) = request.skip_requests {
            self.faults.skip_requests = n;
        }
        if request.server_errors.is_some() || request.slow_requests.is_some() {
            self.faults.route = request.route;
        }
        Ok(self.faults.clone())
    }

    pub fn clear_faults(&mut self) -> Faults {
        self.faults = Faults::default();
        self.faults.clone()
    }

    /// Takes the request-level fault for the next `/v1` request, on `route`
    /// (`POST /v1/pools/{pool}/vms`).
    pub fn take_request_fault(&mut self, route: &str) -> RequestFault {
        if self.faults.route.as_deref().is_some_and(|armed| armed != route) {
            return RequestFault::None;
        }
        let armed = self.faults.server_errors > 0 || self.faults.slow_requests > 0;
        if armed && self.faults.skip_requests > 0 {
            self.faults.skip_requests -= 1;
            return RequestFault::None;
        }
        if self.faults.server_errors > 0 {
            self.faults.server_errors -= 1;
            return RequestFault::ServerError;
        }
        if self.faults.slow_requests > 0 {
            self.faults.slow_requests -= 1;
            return RequestFault::Slow(Duration::from_millis(self.faults.slow_millis));
        }
        RequestFault::None
    }

    pub fn count(&mut self, route: String) {
        *self.stats.requests.entry(route).or_default() += 1;
    }

    pub fn stats(&self) -> Stats {
        self.stats.clone()
    }

    fn known_pool(&self, pool: &str) -> Result<&super::config::PoolConfig, ApiError> {
        self.config.pools.iter().find(|p| p.name == pool).ok_or_else(|| ApiError::not_found(format!("no pool {pool}")))
    }

    /// VMs that hold quota: neither failed nor being deleted.
    fn used(&self, pool: &str) -> u32 {
        let count = self
            .vms
            .iter()
            .filter(|r| r.vm.pool == pool && r.deleting_since.is_none() && !matches!(r.fate, Fate::Fails(_)))
            .count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Forgets VMs whose deletion has finished (never by time without a delete time).
    fn forget_deleted(&mut self, now: Instant) {
        let Some(delete_time) = self.config.delete_time else { return };
        self.vms.retain(|r| r.deleting_since.is_none_or(|since| now.saturating_duration_since(since) < delete_time));
    }
}

/// A VM as the API shows it at `now`.
fn view(record: &VmRecord, now: Instant, build_time: Option<Duration>) -> Vm {
    let mut vm = record.vm.clone();
    if record.deleting_since.is_some() {
        vm.state = VmState::Deleting;
        return vm;
    }
    vm.state = match &record.fate {
        Fate::Fails(error) => {
            vm.error = Some(error.clone());
            VmState::Error
        }
        Fate::Hangs => VmState::Building,
        Fate::Boots if record.booted => VmState::Active,
        Fate::Boots if build_time.is_some_and(|t| now.saturating_duration_since(record.created_at) >= t) => {
            VmState::Active
        }
        Fate::Boots => VmState::Building,
    };
    vm
}
