//! Status conditions and events, set the way the controllers set them.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

pub use crate::ports::EventType;

/// A Kubernetes event the controller would record on the autoscaler object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HpaEvent {
    pub type_: EventType,
    /// kube-controller-manager's reason, as it words it.
    pub reason: &'static str,
    pub message: String,
}

impl HpaEvent {
    pub fn normal(reason: &'static str, message: impl Into<String>) -> Self {
        HpaEvent { type_: EventType::Normal, reason, message: message.into() }
    }

    pub fn warning(reason: &'static str, message: impl Into<String>) -> Self {
        HpaEvent { type_: EventType::Warning, reason, message: message.into() }
    }
}

/// Upstream's `setConditionInList`: update the condition of that type in place (or append it);
/// the transition time moves only when the status changes.
pub(crate) fn set_condition(
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let index = match conditions.iter().position(|c| c.type_ == type_) {
        Some(index) => index,
        None => {
            conditions.push(HorizontalPodAutoscalerCondition { type_: type_.into(), ..Default::default() });
            conditions.len() - 1
        }
    };
    let condition = &mut conditions[index];
    if condition.status != status {
        condition.last_transition_time = Some(Time(now));
    }
    condition.status = status.into();
    condition.reason = Some(reason.into());
    condition.message = Some(message.into());
}

pub(crate) fn find<'a>(
    conditions: &'a [HorizontalPodAutoscalerCondition],
    type_: &str,
) -> Option<&'a HorizontalPodAutoscalerCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}
