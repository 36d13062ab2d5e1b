//! Kubernetes `Node` and `Pod` between the k8s-openapi types the project uses everywhere and the
//! Kubernetes protobuf wire format: the bytes Go's `node.Marshal()` / `pod.Marshal()` write and
//! `Unmarshal()` reads (the bare message, without the `k8s\0` envelope of API responses).
//!
//! Upstream Cluster Autoscaler's gRPC protocols carry nodes and pods that way (`nodeBytes`,
//! `pod_bytes`, `podBytes`), so this has to interoperate with Go's encoding of
//! `k8s.io/api/core/v1.Node` / `Pod`.
//!
//! The wire format is not written by hand: [`k8s_pb`] holds the prost-generated messages, and
//! this crate only converts between the two generated type trees (`convert` for the generic
//! rules, `messages` for one line per message).
//!
//! # Go interoperability
//!
//! Go's gogo-protobuf writes every non-pointer field, even when empty; Go's JSON (which
//! k8s-openapi mirrors) omits empty ones. So, when decoding:
//! - an optional string that is present but empty is `None`;
//! - an optional `Time` / `MicroTime` that is Go's zero time is `None` — Go writes it as an empty
//!   message, which Go reads back as the zero time; seconds = -62135596800, nanos = 0 counts too;
//! - an empty optional list or map is `None` (protobuf cannot tell it from an absent one);
//! - integers and booleans keep `Some(0)` / `Some(false)`: a Go pointer such as
//!   `terminationGracePeriodSeconds: 0` means something;
//! - nested messages are kept even when empty (`spec: {}` is what Go's JSON says as well);
//! - unknown fields (from a newer Kubernetes) are skipped.
//!
//! When encoding, `None` is absent and required fields are always written, as Go writes them.
//! Times carry seconds and nanoseconds exactly; Go itself writes only whole seconds for `Time`
//! and ignores `nanos` when reading it, so for every real object the `Time` bytes are Go's.
//!
//! # Fields that are not converted
//!
//! Every field of the k8s-openapi `Node` and `Pod` trees is converted (`managedFields` too: its
//! `FieldsV1` JSON document travels as bytes on the wire). The other way round, k8s-pb 0.9 is
//! generated from a newer Kubernetes (1.35) than the API version the workspace builds k8s-openapi
//! for (1.33), so these protobuf fields have no k8s-openapi field to land in and are dropped when
//! decoding (and so never written):
//! - `Container.restartPolicyRules` (also in ephemeral containers),
//! - `EnvVarSource.fileKeyRef`,
//! - `NodeStatus.declaredFeatures`,
//! - `PodSpec.hostnameOverride`, `PodSpec.workloadRef`,
//! - `PodStatus.allocatedResources`, `PodStatus.resources`, `PodStatus.extendedResourceClaimStatus`,
//! - `VolumeProjection.podCertificate`.
//!
//! Moving the workspace to a newer k8s-openapi API version makes this crate fail to compile until
//! the new fields are listed in `messages`, since decoding builds every k8s-openapi struct with a
//! complete literal.

mod convert;
// One line per message, wrapped by hand; rustfmt would put each field on its own line.
#[rustfmt::skip]
mod messages;

use k8s_openapi::api::core::v1::{Node, Pod};
use prost::Message;

use crate::convert::Convert;

/// Why bytes are not a protobuf-encoded `v1.Node` / `v1.Pod`: malformed protobuf, or a well-formed
/// message with a value no Kubernetes object can hold (a timestamp out of range, an IntOrString
/// of unknown type, managed fields that are not JSON), with the path to it.
#[derive(Debug, thiserror::Error)]
#[error("not a protobuf-encoded {kind}: {detail}")]
pub struct DecodeError {
    kind: &'static str,
    detail: String,
}

/// A `Node` as Go's `node.Marshal()` writes it.
pub fn node_to_bytes(node: &Node) -> Vec<u8> {
    node.to_pb().encode_to_vec()
}

/// A `Node` from the bytes Go's `node.Marshal()` writes.
pub fn node_from_bytes(bytes: &[u8]) -> Result<Node, DecodeError> {
    decode("v1.Node", bytes)
}

/// A `Pod` as Go's `pod.Marshal()` writes it.
pub fn pod_to_bytes(pod: &Pod) -> Vec<u8> {
    pod.to_pb().encode_to_vec()
}

/// A `Pod` from the bytes Go's `pod.Marshal()` writes.
pub fn pod_from_bytes(bytes: &[u8]) -> Result<Pod, DecodeError> {
    decode("v1.Pod", bytes)
}

fn decode<T>(kind: &'static str, bytes: &[u8]) -> Result<T, DecodeError>
where
    T: Convert<Pb: Message + Default>,
{
    let msg = T::Pb::decode(bytes).map_err(|e| DecodeError { kind, detail: e.to_string() })?;
    T::from_pb(msg).map_err(|e| DecodeError { kind, detail: e.to_string() })
}
