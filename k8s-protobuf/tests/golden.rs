//! Bytes written by hand from the protobuf field numbers in Kubernetes' `generated.proto`, so the
//! encoding is checked against the format itself and not only against its own decoder.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use k8s_protobuf::{node_from_bytes, node_to_bytes, pod_from_bytes, pod_to_bytes};

/// A length-delimited field (wire type 2).
fn ld(field: u8, body: &[u8]) -> Vec<u8> {
    assert!(field < 16 && body.len() < 128, "single-byte tag and length only");
    let mut out = vec![(field << 3) | 2, body.len() as u8];
    out.extend_from_slice(body);
    out
}

/// A varint field (wire type 0) with a single-byte value.
fn varint(field: u8, value: u8) -> Vec<u8> {
    assert!(field < 16 && value < 128);
    vec![field << 3, value]
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn tiny_node() -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("n".into()),
            labels: Some(BTreeMap::from([("a".into(), "b".into())])),
            ..Default::default()
        },
        spec: Some(NodeSpec { provider_id: Some("p".into()), ..Default::default() }),
        status: Some(NodeStatus {
            capacity: Some(BTreeMap::from([("cpu".into(), Quantity("4".into()))])),
            ..Default::default()
        }),
    }
}

/// Node { metadata = 1 { name = 1, labels = 11 (map entry: key = 1, value = 2) },
///        spec = 2 { providerID = 3 },
///        status = 3 { capacity = 1 (map entry: key = 1, value = 2: Quantity { string = 1 }) } }
fn tiny_node_bytes() -> Vec<u8> {
    let metadata = cat(&[&ld(1, b"n"), &ld(11, &cat(&[&ld(1, b"a"), &ld(2, b"b")]))]);
    let spec = ld(3, b"p");
    let status = ld(1, &cat(&[&ld(1, b"cpu"), &ld(2, &ld(1, b"4"))]));
    cat(&[&ld(1, &metadata), &ld(2, &spec), &ld(3, &status)])
}

#[test]
fn tiny_node_bytes_are_as_written_by_hand() {
    let expected: &[u8] = &[
        0x0a, 0x0b, // metadata, 11 bytes
        0x0a, 0x01, b'n', // name
        0x5a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, b'b', // labels["a"] = "b"
        0x12, 0x03, // spec, 3 bytes
        0x1a, 0x01, b'p', // providerID
        0x1a, 0x0c, // status, 12 bytes
        0x0a, 0x0a, 0x0a, 0x03, b'c', b'p', b'u', 0x12, 0x03, 0x0a, 0x01, b'4', // capacity["cpu"] = "4"
    ];
    assert_eq!(tiny_node_bytes(), expected, "the helper agrees with the literal bytes");
    assert_eq!(node_to_bytes(&tiny_node()), expected);
    assert_eq!(node_from_bytes(expected).unwrap(), tiny_node());
}

/// What Go's gogo-protobuf writes for the same node: every non-pointer field, empty or not.
#[test]
fn go_style_empty_fields_decode_to_none() {
    let zero_time: &[u8] = &[]; // Go marshals its zero metav1.Time as an empty message
    let metadata = cat(&[
        &ld(1, b"n"),
        &ld(2, b""),       // generateName ""
        &ld(3, b""),       // namespace ""
        &ld(4, b""),       // selfLink ""
        &ld(5, b""),       // uid ""
        &ld(6, b""),       // resourceVersion ""
        &varint(7, 0),     // generation 0
        &ld(8, zero_time), // creationTimestamp: zero
        &ld(11, &cat(&[&ld(1, b"a"), &ld(2, b"b")])),
    ]);
    let spec = cat(&[
        &ld(1, b""), // podCIDR ""
        &ld(2, b""), // externalID ""
        &ld(3, b"p"),
        &varint(4, 0), // unschedulable false
    ]);
    let status = cat(&[
        &ld(1, &cat(&[&ld(1, b"cpu"), &ld(2, &ld(1, b"4"))])),
        &ld(3, b""), // phase ""
        // daemonEndpoints { kubeletEndpoint { Port 0 } }: a non-pointer struct, kept.
        &ld(6, &ld(1, &varint(1, 0))),
        // nodeInfo with every string empty: kept as a message, its strings None.
        &ld(7, &cat(&[&ld(1, b""), &ld(2, b"")])),
    ]);
    let bytes = cat(&[&ld(1, &metadata), &ld(2, &spec), &ld(3, &status)]);

    let node = node_from_bytes(&bytes).unwrap();
    let mut expected = tiny_node();
    expected.metadata.generation = Some(0);
    expected.spec.as_mut().unwrap().unschedulable = Some(false);
    let status = expected.status.as_mut().unwrap();
    status.daemon_endpoints = Some(k8s_openapi::api::core::v1::NodeDaemonEndpoints {
        kubelet_endpoint: Some(k8s_openapi::api::core::v1::DaemonEndpoint { port: 0 }),
    });
    status.node_info = Some(Default::default());
    assert_eq!(node, expected);
}

#[test]
fn go_zero_time_as_seconds_is_none_and_epoch_is_not() {
    // Timestamp { seconds = 1: -62135596800, nanos = 2: 0 }, seconds as a 10-byte varint.
    let mut go_zero = vec![0x08];
    let mut v = (-62_135_596_800_i64) as u64;
    while v >= 0x80 {
        go_zero.push((v as u8) | 0x80);
        v >>= 7;
    }
    go_zero.push(v as u8);
    go_zero.extend_from_slice(&[0x10, 0x00]);
    let creation = ld(8, &go_zero);
    let deletion = ld(9, &[0x08, 0x00, 0x10, 0x00]); // 1970-01-01T00:00:00Z
    let bytes = ld(1, &cat(&[&ld(1, b"n"), &creation, &deletion]));

    let node = node_from_bytes(&bytes).unwrap();
    assert_eq!(node.metadata.creation_timestamp, None);
    assert_eq!(node.metadata.deletion_timestamp, Some(Time(Timestamp::UNIX_EPOCH)));
}

#[test]
fn times_are_seconds_then_nanos_like_go() {
    let node = Node {
        metadata: ObjectMeta { creation_timestamp: Some(Time(Timestamp::new(1, 0).unwrap())), ..Default::default() },
        ..Default::default()
    };
    // metadata { creationTimestamp = 8 { seconds = 1: 1, nanos = 2: 0 } }: Go writes both.
    let expected = ld(1, &ld(8, &cat(&[&varint(1, 1), &varint(2, 0)])));
    assert_eq!(node_to_bytes(&node), expected);
    assert_eq!(node_from_bytes(&expected).unwrap(), node);
}

#[test]
fn termination_grace_period_zero_survives() {
    let pod = Pod {
        spec: Some(PodSpec { termination_grace_period_seconds: Some(0), ..Default::default() }),
        ..Default::default()
    };
    // Pod { metadata = 1 {}, spec = 2 { terminationGracePeriodSeconds = 4: 0 } }: the required
    // metadata is always written, an empty message.
    let expected = cat(&[&ld(1, b""), &ld(2, &varint(4, 0))]);
    assert_eq!(pod_to_bytes(&pod), expected);
    assert_eq!(pod_from_bytes(&expected).unwrap(), pod);
}

#[test]
fn unknown_fields_from_a_newer_kubernetes_are_skipped() {
    let mut bytes = tiny_node_bytes();
    // Field 15 at the top level and field 99 (two-byte tag) inside metadata.
    bytes.extend(ld(15, b"future"));
    let mut meta_with_unknown = cat(&[&ld(1, b"n"), &[0x9a, 0x06, 0x01, b'x']]);
    meta_with_unknown.extend(ld(11, &cat(&[&ld(1, b"a"), &ld(2, b"b")])));
    bytes.extend(ld(1, &meta_with_unknown)); // a repeated message field merges, as in Go
    assert_eq!(node_from_bytes(&bytes).unwrap(), tiny_node());
}

#[test]
fn garbage_names_what_was_expected() {
    let err = node_from_bytes(&[0xff; 12]).unwrap_err().to_string();
    assert!(err.starts_with("not a protobuf-encoded v1.Node: "), "{err}");
    let err = pod_from_bytes(br#"{"kind":"Pod","apiVersion":"v1"}"#).unwrap_err().to_string();
    assert!(err.starts_with("not a protobuf-encoded v1.Pod: "), "{err}");
    let truncated = &tiny_node_bytes()[..5];
    assert!(node_from_bytes(truncated).is_err());
}

#[test]
fn bad_values_name_their_path() {
    // A taint's timeAdded far beyond year 9999.
    let time_added = ld(4, &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    let taint = cat(&[&ld(1, b"k"), &ld(3, b"NoSchedule"), &time_added]);
    let bytes = ld(2, &ld(5, &taint));
    let err = node_from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.starts_with("not a protobuf-encoded v1.Node: spec.taints[0].time_added: timestamp"), "{err}");
}
