//! Between the protocol's messages and the `cloudprovider` types, for both the client and the
//! server, so the two sides cannot disagree.

use std::collections::BTreeMap;
use std::time::Duration;

use cloudprovider::{
    Instance, InstanceErrorClass, InstanceErrorInfo, InstanceState, InstanceStatus, NodeGroupAutoscalingOptions,
};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use crate::proto;
use crate::proto::instance_status::InstanceState as WireState;

/// Upstream's `OutOfResourcesErrorClass`.
pub const ERROR_CLASS_OUT_OF_RESOURCES: i32 = 1;
/// Upstream's `OtherErrorClass`.
pub const ERROR_CLASS_OTHER: i32 = 99;

/// The parts of a Node the protocol carries (upstream sends exactly these four).
pub fn wire_node(node: &Node) -> proto::ExternalGrpcNode {
    let map = |m: &Option<BTreeMap<String, String>>| m.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    proto::ExternalGrpcNode {
        provider_id: node.spec.as_ref().and_then(|s| s.provider_id.clone()).unwrap_or_default(),
        name: node.metadata.name.clone().unwrap_or_default(),
        labels: map(&node.metadata.labels),
        annotations: map(&node.metadata.annotations),
    }
}

/// The Node a provider behind the server sees: only what the protocol carries, with empty
/// values as absent (as Go's JSON would show them).
pub fn node_from_wire(node: &proto::ExternalGrpcNode) -> Node {
    let map = |m: &std::collections::HashMap<String, String>| {
        (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<BTreeMap<_, _>>())
    };
    Node {
        metadata: ObjectMeta {
            name: (!node.name.is_empty()).then(|| node.name.clone()),
            labels: map(&node.labels),
            annotations: map(&node.annotations),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            provider_id: (!node.provider_id.is_empty()).then(|| node.provider_id.clone()),
            ..NodeSpec::default()
        }),
        status: None,
    }
}

pub fn wire_timestamp(t: Timestamp) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds: t.as_second(), nanos: t.subsec_nanosecond() }
}

pub fn timestamp_from_wire(t: &prost_types::Timestamp) -> Result<Timestamp, String> {
    Timestamp::new(t.seconds, t.nanos).map_err(|e| format!("timestamp {}s {}ns out of range: {e}", t.seconds, t.nanos))
}

/// A duration on the wire; saturates at protobuf's largest (10,000 years is far above any
/// option the autoscaler takes).
pub fn wire_duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(d).unwrap_or(prost_types::Duration { seconds: 315_576_000_000, nanos: 999_999_999 })
}

pub fn duration_from_wire(d: &prost_types::Duration, field: &str) -> Result<Duration, String> {
    Duration::try_from(*d).map_err(|_| format!("{field} {}s {}ns is negative or invalid", d.seconds, d.nanos))
}

/// The seven options the protocol carries.
pub fn wire_options(options: &NodeGroupAutoscalingOptions) -> proto::NodeGroupAutoscalingOptions {
    proto::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: options.scale_down_utilization_threshold,
        scale_down_gpu_utilization_threshold: options.scale_down_gpu_utilization_threshold,
        zero_or_max_node_scaling: options.zero_or_max_node_scaling,
        ignore_daemon_sets_utilization: options.ignore_daemonsets_utilization,
        scale_down_unneeded_duration: Some(wire_duration(options.scale_down_unneeded_time)),
        scale_down_unready_duration: Some(wire_duration(options.scale_down_unready_time)),
        max_node_provision_duration: Some(wire_duration(options.max_node_provision_time)),
    }
}

/// Options from the wire over `base`: the two fields the protocol lacks
/// (`max_node_startup_time`, `allow_non_atomic_scale_up_to_max`) and absent durations keep
/// `base`'s values. Thresholds outside [0, 1] and negative durations are refused.
pub fn options_from_wire(
    wire: &proto::NodeGroupAutoscalingOptions,
    base: &NodeGroupAutoscalingOptions,
) -> Result<NodeGroupAutoscalingOptions, String> {
    let threshold = |value: f64, field: &str| {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            Ok(value)
        } else {
            Err(format!("{field} {value} is outside [0, 1]"))
        }
    };
    let duration = |value: &Option<prost_types::Duration>, field: &str, default: Duration| match value {
        Some(d) => duration_from_wire(d, field),
        None => Ok(default),
    };
    Ok(NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: threshold(
            wire.scale_down_utilization_threshold,
            "scaleDownUtilizationThreshold",
        )?,
        scale_down_gpu_utilization_threshold: threshold(
            wire.scale_down_gpu_utilization_threshold,
            "scaleDownGpuUtilizationThreshold",
        )?,
        scale_down_unneeded_time: duration(
            &wire.scale_down_unneeded_duration,
            "scaleDownUnneededDuration",
            base.scale_down_unneeded_time,
        )?,
        scale_down_unready_time: duration(
            &wire.scale_down_unready_duration,
            "scaleDownUnreadyDuration",
            base.scale_down_unready_time,
        )?,
        max_node_provision_time: duration(
            &wire.max_node_provision_duration,
            "MaxNodeProvisionDuration",
            base.max_node_provision_time,
        )?,
        max_node_startup_time: base.max_node_startup_time,
        zero_or_max_node_scaling: wire.zero_or_max_node_scaling,
        allow_non_atomic_scale_up_to_max: base.allow_non_atomic_scale_up_to_max,
        ignore_daemonsets_utilization: wire.ignore_daemon_sets_utilization,
    })
}

/// An instance as upstream's server wrapper writes it: always a status message, with the
/// `unspecified` state for "no status" and an empty error code for "no error".
pub fn wire_instance(instance: &Instance) -> proto::Instance {
    let status = match &instance.status {
        None => proto::InstanceStatus {
            instance_state: WireState::Unspecified as i32,
            error_info: Some(proto::InstanceErrorInfo::default()),
        },
        Some(status) => proto::InstanceStatus {
            instance_state: match status.state {
                InstanceState::Running => WireState::InstanceRunning,
                InstanceState::Creating => WireState::InstanceCreating,
                InstanceState::Deleting => WireState::InstanceDeleting,
            } as i32,
            error_info: Some(match &status.error {
                None => proto::InstanceErrorInfo::default(),
                Some(error) => proto::InstanceErrorInfo {
                    error_code: error.code.clone(),
                    error_message: error.message.clone(),
                    instance_error_class: match error.class {
                        InstanceErrorClass::OutOfResources => ERROR_CLASS_OUT_OF_RESOURCES,
                        InstanceErrorClass::Other => ERROR_CLASS_OTHER,
                    },
                },
            }),
        },
    };
    proto::Instance { id: instance.id.clone(), status: Some(status) }
}

/// An instance from the wire, as upstream's client reads it: `unspecified` (or no status) is no
/// status, an empty error code is no error. Unknown states are refused (a newer protocol, or a
/// broken server); unknown error classes count as `Other`, the class the autoscaler treats
/// generically.
pub fn instance_from_wire(instance: &proto::Instance) -> Result<Instance, String> {
    if instance.id.is_empty() {
        return Err("an instance without id".to_string());
    }
    let Some(wire) = &instance.status else {
        return Ok(Instance { id: instance.id.clone(), status: None });
    };
    let state = match WireState::try_from(wire.instance_state) {
        Ok(WireState::Unspecified) => return Ok(Instance { id: instance.id.clone(), status: None }),
        Ok(WireState::InstanceRunning) => InstanceState::Running,
        Ok(WireState::InstanceCreating) => InstanceState::Creating,
        Ok(WireState::InstanceDeleting) => InstanceState::Deleting,
        Err(_) => {
            return Err(format!(
                "instance {} has an unknown instanceState {} (known: 0 to 3)",
                instance.id, wire.instance_state
            ));
        }
    };
    let error = wire.error_info.as_ref().filter(|e| !e.error_code.is_empty()).map(|e| InstanceErrorInfo {
        class: match e.instance_error_class {
            ERROR_CLASS_OUT_OF_RESOURCES => InstanceErrorClass::OutOfResources,
            _ => InstanceErrorClass::Other,
        },
        code: e.error_code.clone(),
        message: e.error_message.clone(),
    });
    Ok(Instance { id: instance.id.clone(), status: Some(InstanceStatus { state, error }) })
}

/// A group's sizes from the wire, refused when negative or when min > max.
pub fn sizes_from_wire(group: &proto::NodeGroup) -> Result<(usize, usize), String> {
    let min = usize::try_from(group.min_size).map_err(|_| format!("minSize {} is negative", group.min_size));
    let max = usize::try_from(group.max_size).map_err(|_| format!("maxSize {} is negative", group.max_size));
    let (min, max) = (min?, max?);
    if min > max {
        return Err(format!("minSize {min} is greater than maxSize {max}"));
    }
    Ok((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_round_trip_with_upstreams_numbers() {
        let instances = [
            Instance { id: "a".into(), status: None },
            Instance { id: "b".into(), status: Some(InstanceStatus { state: InstanceState::Running, error: None }) },
            Instance {
                id: "c".into(),
                status: Some(InstanceStatus {
                    state: InstanceState::Creating,
                    error: Some(InstanceErrorInfo {
                        class: InstanceErrorClass::OutOfResources,
                        code: "QUOTA_EXCEEDED".into(),
                        message: "no more".into(),
                    }),
                }),
            },
            Instance { id: "d".into(), status: Some(InstanceStatus { state: InstanceState::Deleting, error: None }) },
        ];
        for instance in &instances {
            let wire = wire_instance(instance);
            assert_eq!(&instance_from_wire(&wire).unwrap(), instance);
        }
        let wire = wire_instance(&instances[2]);
        let status = wire.status.unwrap();
        assert_eq!(status.instance_state, 2);
        assert_eq!(status.error_info.unwrap().instance_error_class, 1);
        assert_eq!(wire_instance(&instances[3]).status.unwrap().instance_state, 3);
        assert_eq!(wire_instance(&instances[1]).status.unwrap().instance_state, 1);
    }

    #[test]
    fn unknown_states_are_refused_and_unknown_classes_are_other() {
        let mut wire = wire_instance(&Instance {
            id: "x".into(),
            status: Some(InstanceStatus {
                state: InstanceState::Running,
                error: Some(InstanceErrorInfo {
                    class: InstanceErrorClass::Other,
                    code: "E".into(),
                    message: "m".into(),
                }),
            }),
        });
        if let Some(status) = wire.status.as_mut() {
            status.error_info.as_mut().unwrap().instance_error_class = 42;
        }
        let instance = instance_from_wire(&wire).unwrap();
        assert_eq!(instance.status.unwrap().error.unwrap().class, InstanceErrorClass::Other);
        wire.status.as_mut().unwrap().instance_state = 7;
        assert!(instance_from_wire(&wire).unwrap_err().contains("unknown instanceState 7"));
    }

    #[test]
    fn options_keep_the_defaults_for_what_the_protocol_lacks() {
        let defaults = NodeGroupAutoscalingOptions {
            max_node_startup_time: Duration::from_secs(123),
            allow_non_atomic_scale_up_to_max: true,
            ..NodeGroupAutoscalingOptions::default()
        };
        let mut wire = wire_options(&NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: 0.7,
            scale_down_unneeded_time: Duration::from_secs(60),
            ..NodeGroupAutoscalingOptions::default()
        });
        wire.scale_down_unready_duration = None;
        let options = options_from_wire(&wire, &defaults).unwrap();
        assert_eq!(options.scale_down_utilization_threshold, 0.7);
        assert_eq!(options.scale_down_unneeded_time, Duration::from_secs(60));
        assert_eq!(options.scale_down_unready_time, defaults.scale_down_unready_time);
        assert_eq!(options.max_node_startup_time, Duration::from_secs(123));
        assert!(options.allow_non_atomic_scale_up_to_max);
        wire.scale_down_gpu_utilization_threshold = f64::NAN;
        assert!(options_from_wire(&wire, &defaults).unwrap_err().contains("scaleDownGpuUtilizationThreshold"));
        wire.scale_down_gpu_utilization_threshold = 0.5;
        wire.max_node_provision_duration = Some(prost_types::Duration { seconds: -5, nanos: 0 });
        assert!(options_from_wire(&wire, &defaults).unwrap_err().contains("MaxNodeProvisionDuration"));
    }

    #[test]
    fn sizes_are_checked() {
        let group = |min, max| proto::NodeGroup { id: "g".into(), min_size: min, max_size: max, debug: String::new() };
        assert_eq!(sizes_from_wire(&group(1, 3)), Ok((1, 3)));
        assert!(sizes_from_wire(&group(-1, 3)).unwrap_err().contains("minSize -1 is negative"));
        assert!(sizes_from_wire(&group(0, -3)).unwrap_err().contains("maxSize -3 is negative"));
        assert!(sizes_from_wire(&group(4, 3)).unwrap_err().contains("greater"));
    }

    #[test]
    fn nodes_keep_the_four_fields_the_protocol_carries() {
        let mut node = Node::default();
        node.metadata.name = Some("n1".into());
        node.metadata.labels = Some([("pool".to_string(), "a".to_string())].into());
        node.spec = Some(NodeSpec { provider_id: Some("p://1".into()), ..NodeSpec::default() });
        let back = node_from_wire(&wire_node(&node));
        assert_eq!(back, node);
    }
}
