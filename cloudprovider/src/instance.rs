//! Cloud instances as node groups report them (registered or not).

/// Upstream's `InstanceState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstanceState {
    Running,
    Creating,
    Deleting,
}

/// Upstream's `InstanceErrorClass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstanceErrorClass {
    /// Stock-outs and quota (`OutOfResource`).
    OutOfResources,
    Other,
}

impl InstanceErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceErrorClass::OutOfResources => "OutOfResource",
            InstanceErrorClass::Other => "Other",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceErrorInfo {
    pub class: InstanceErrorClass,
    pub code: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceStatus {
    pub state: InstanceState,
    pub error: Option<InstanceErrorInfo>,
}

/// One instance of a node group. `id` equals the Node's `spec.providerID` once registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub id: String,
    pub status: Option<InstanceStatus>,
}
