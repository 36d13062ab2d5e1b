//! Rich objects survive object → bytes → object unchanged.

#![recursion_limit = "256"]

mod common;

use common::{rich_node, rich_node_json, rich_pod, rich_pod_json};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_protobuf::{node_from_bytes, node_to_bytes, pod_from_bytes, pod_to_bytes};

/// k8s-openapi ignores unknown JSON keys, so a misspelt key would silently test nothing: the
/// fixtures must come back from the typed objects unchanged.
#[test]
fn fixtures_have_no_misspelt_keys() {
    assert_eq!(serde_json::to_value(rich_node()).unwrap(), rich_node_json());
    assert_eq!(serde_json::to_value(rich_pod()).unwrap(), rich_pod_json());
}

#[test]
fn rich_node_round_trips() {
    let node = rich_node();
    let bytes = node_to_bytes(&node);
    assert_eq!(node_from_bytes(&bytes).unwrap(), node);
}

#[test]
fn rich_pod_round_trips() {
    let pod = rich_pod();
    let bytes = pod_to_bytes(&pod);
    assert_eq!(pod_from_bytes(&bytes).unwrap(), pod);
}

#[test]
fn empty_objects_round_trip() {
    assert_eq!(node_from_bytes(&node_to_bytes(&Node::default())).unwrap(), Node::default());
    assert_eq!(pod_from_bytes(&pod_to_bytes(&Pod::default())).unwrap(), Pod::default());
    // Go reads zero bytes as an empty object, and so do we.
    assert_eq!(node_from_bytes(&[]).unwrap(), Node::default());
}

#[test]
fn sub_second_times_round_trip() {
    let mut pod = rich_pod();
    let t = k8s_openapi::jiff::Timestamp::new(1_714_979_289, 123_456_789).unwrap();
    pod.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t));
    assert_eq!(pod_from_bytes(&pod_to_bytes(&pod)).unwrap(), pod);
}
