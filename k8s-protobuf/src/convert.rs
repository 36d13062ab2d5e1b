//! The generic half of the conversion: two traits and their blanket impls, so that every message
//! in [`crate::messages`] is one line listing its fields.
//!
//! k8s-openapi and k8s-pb are generated from the same Kubernetes schema, so a message's fields
//! correspond one to one; what differs is how each side spells "optional", "list" and "map".
//! [`Convert`] maps one *value* (a string, a quantity, a whole message) and [`Field`] maps one
//! *field* by the shape it has on each side (`T` vs `Option<T>`, `Option<Vec<T>>` vs `Vec<T>`, …),
//! delegating the values to [`Convert`]. The compiler picks the `Field` impl from the two field
//! types, so the message macro needs no per-field annotations.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds: what a non-pointer `metav1.Time`
/// holds when unset.
pub(crate) const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Why a well-formed protobuf message is still not a valid object, and where in it.
///
/// The path is collected on the way out of the recursion (innermost segment first), so building
/// it costs nothing on the success path.
#[derive(Debug)]
pub(crate) struct ConvError {
    reason: String,
    path: Vec<Segment>,
}

#[derive(Debug)]
enum Segment {
    Field(&'static str),
    Index(usize),
    Key(String),
}

impl ConvError {
    fn new(reason: impl Into<String>) -> Self {
        ConvError { reason: reason.into(), path: Vec::new() }
    }

    /// The error happened inside field `name` of the enclosing message.
    pub(crate) fn at(mut self, name: &'static str) -> Self {
        self.path.push(Segment::Field(name));
        self
    }

    fn at_index(mut self, index: usize) -> Self {
        self.path.push(Segment::Index(index));
        self
    }

    fn at_key(mut self, key: &str) -> Self {
        self.path.push(Segment::Key(key.to_owned()));
        self
    }
}

impl fmt::Display for ConvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for segment in self.path.iter().rev() {
            match segment {
                Segment::Field(name) if first => write!(f, "{name}")?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
                Segment::Key(k) => write!(f, "[{k:?}]")?,
            }
            first = false;
        }
        if !first {
            f.write_str(": ")?;
        }
        f.write_str(&self.reason)
    }
}

/// One value between its k8s-openapi type (`Self`) and its k8s-pb type.
///
/// Implemented here for the leaf types and by the `convert!` macro for every message.
pub(crate) trait Convert: Sized {
    type Pb;
    fn to_pb(&self) -> Self::Pb;
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError>;
    /// Whether a decoded value is what Go writes for an unset optional field, which k8s-openapi
    /// spells `None`: Go's gogo-protobuf writes every non-pointer field, but its JSON (which
    /// k8s-openapi mirrors) omits empty strings and zero times.
    fn is_go_unset(&self) -> bool {
        false
    }
}

/// One field between its k8s-openapi shape (`Self`) and its k8s-pb shape `P`.
pub(crate) trait Field<P>: Sized {
    fn to_field(&self) -> P;
    fn from_field(pb: P) -> Result<Self, ConvError>;
}

/// A required field: always written (as Go writes non-pointer fields); absent decodes to the
/// default, as in Go.
impl<T: Convert + Default> Field<Option<T::Pb>> for T {
    fn to_field(&self) -> Option<T::Pb> {
        Some(self.to_pb())
    }
    fn from_field(pb: Option<T::Pb>) -> Result<Self, ConvError> {
        pb.map_or_else(|| Ok(T::default()), T::from_pb)
    }
}

/// An optional field: `None` is absent on the wire; Go's "unset" values decode to `None`.
impl<T: Convert> Field<Option<T::Pb>> for Option<T> {
    fn to_field(&self) -> Option<T::Pb> {
        self.as_ref().map(T::to_pb)
    }
    fn from_field(pb: Option<T::Pb>) -> Result<Self, ConvError> {
        match pb {
            None => Ok(None),
            Some(pb) => T::from_pb(pb).map(|v| (!v.is_go_unset()).then_some(v)),
        }
    }
}

/// A required list.
impl<T: Convert> Field<Vec<T::Pb>> for Vec<T> {
    fn to_field(&self) -> Vec<T::Pb> {
        self.iter().map(T::to_pb).collect()
    }
    fn from_field(pb: Vec<T::Pb>) -> Result<Self, ConvError> {
        pb.into_iter().enumerate().map(|(i, v)| T::from_pb(v).map_err(|e| e.at_index(i))).collect()
    }
}

/// An optional list: protobuf cannot tell an empty list from an absent one, so empty is `None`.
impl<T: Convert> Field<Vec<T::Pb>> for Option<Vec<T>> {
    fn to_field(&self) -> Vec<T::Pb> {
        self.iter().flatten().map(T::to_pb).collect()
    }
    fn from_field(pb: Vec<T::Pb>) -> Result<Self, ConvError> {
        if pb.is_empty() { Ok(None) } else { Vec::from_field(pb).map(Some) }
    }
}

/// A required map.
impl<T: Convert> Field<BTreeMap<String, T::Pb>> for BTreeMap<String, T> {
    fn to_field(&self) -> BTreeMap<String, T::Pb> {
        self.iter().map(|(k, v)| (k.clone(), v.to_pb())).collect()
    }
    fn from_field(pb: BTreeMap<String, T::Pb>) -> Result<Self, ConvError> {
        pb.into_iter().map(|(k, v)| T::from_pb(v).map_err(|e| e.at_key(&k)).map(|v| (k, v))).collect()
    }
}

/// An optional map: empty is `None`, as for lists.
impl<T: Convert> Field<BTreeMap<String, T::Pb>> for Option<BTreeMap<String, T>> {
    fn to_field(&self) -> BTreeMap<String, T::Pb> {
        self.iter().flatten().map(|(k, v)| (k.clone(), v.to_pb())).collect()
    }
    fn from_field(pb: BTreeMap<String, T::Pb>) -> Result<Self, ConvError> {
        if pb.is_empty() { Ok(None) } else { BTreeMap::from_field(pb).map(Some) }
    }
}

/// Scalars that are the same type on both sides.
macro_rules! identity {
    ($($t:ty),*) => {$(
        impl Convert for $t {
            type Pb = $t;
            fn to_pb(&self) -> $t {
                *self
            }
            fn from_pb(pb: $t) -> Result<Self, ConvError> {
                Ok(pb)
            }
        }
    )*};
}
identity!(bool, i32, i64);

impl Convert for String {
    type Pb = String;
    fn to_pb(&self) -> String {
        self.clone()
    }
    fn from_pb(pb: String) -> Result<Self, ConvError> {
        Ok(pb)
    }
    fn is_go_unset(&self) -> bool {
        self.is_empty()
    }
}

impl Convert for ByteString {
    type Pb = Vec<u8>;
    fn to_pb(&self) -> Vec<u8> {
        self.0.clone()
    }
    fn from_pb(pb: Vec<u8>) -> Result<Self, ConvError> {
        Ok(ByteString(pb))
    }
}

/// `resource.Quantity` is its canonical string on both sides; it is passed through unparsed, as
/// k8s-openapi does for JSON.
impl Convert for Quantity {
    type Pb = k8s_pb::apimachinery::pkg::api::resource::Quantity;
    fn to_pb(&self) -> Self::Pb {
        Self::Pb { string: Some(self.0.clone()) }
    }
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError> {
        Ok(Quantity(pb.string.unwrap_or_default()))
    }
}

/// `intstr.IntOrString`: `type` 0 is an int, 1 a string. All three fields are written, as Go does.
impl Convert for IntOrString {
    type Pb = k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    fn to_pb(&self) -> Self::Pb {
        match self {
            IntOrString::Int(i) => Self::Pb { r#type: Some(0), int_val: Some(*i), str_val: Some(String::new()) },
            IntOrString::String(s) => Self::Pb { r#type: Some(1), int_val: Some(0), str_val: Some(s.clone()) },
        }
    }
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError> {
        match pb.r#type.unwrap_or(0) {
            0 => Ok(IntOrString::Int(pb.int_val.unwrap_or(0))),
            1 => Ok(IntOrString::String(pb.str_val.unwrap_or_default())),
            other => Err(ConvError::new(format!("IntOrString type {other} is neither 0 (int) nor 1 (string)"))),
        }
    }
}

/// Protobuf `Timestamp` seconds and nanoseconds (nanoseconds in `0..1e9`, counting forward from
/// `seconds` even before 1970) for a jiff timestamp, which truncates towards zero instead.
fn timestamp_to_pb(ts: Timestamp) -> (i64, i32) {
    let (seconds, nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos < 0 { (seconds - 1, nanos + 1_000_000_000) } else { (seconds, nanos) }
}

/// The instant a `Time` / `MicroTime` message holds. Go marshals its zero time as an *empty*
/// message and reads an empty message back as the zero time, so an empty message is that here
/// too (and then [`Convert::is_go_unset`]).
fn timestamp_from_pb(seconds: Option<i64>, nanos: Option<i32>) -> Result<Timestamp, ConvError> {
    let (seconds, nanos) = match (seconds, nanos) {
        (None, None) => (GO_ZERO_TIME_SECONDS, 0),
        (s, n) => (s.unwrap_or(0), n.unwrap_or(0)),
    };
    Timestamp::new(seconds, nanos)
        .map_err(|e| ConvError::new(format!("timestamp {seconds}s {nanos}ns is out of range: {e}")))
}

fn is_go_zero(ts: Timestamp) -> bool {
    ts.as_second() == GO_ZERO_TIME_SECONDS && ts.subsec_nanosecond() == 0
}

/// `metav1.Time`. Go writes only whole seconds (its JSON has no more) and ignores `nanos` when
/// reading; we carry the nanoseconds both ways so that a round trip is exact, and for the
/// whole-second times every real object has the bytes are the same as Go's.
impl Convert for Time {
    type Pb = k8s_pb::apimachinery::pkg::apis::meta::v1::Time;
    fn to_pb(&self) -> Self::Pb {
        let (seconds, nanos) = timestamp_to_pb(self.0);
        Self::Pb { seconds: Some(seconds), nanos: Some(nanos) }
    }
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError> {
        timestamp_from_pb(pb.seconds, pb.nanos).map(Time)
    }
    fn is_go_unset(&self) -> bool {
        is_go_zero(self.0)
    }
}

/// `metav1.MicroTime`: the same wire shape as `Time`, and Go keeps the nanoseconds.
impl Convert for MicroTime {
    type Pb = k8s_pb::apimachinery::pkg::apis::meta::v1::MicroTime;
    fn to_pb(&self) -> Self::Pb {
        let (seconds, nanos) = timestamp_to_pb(self.0);
        Self::Pb { seconds: Some(seconds), nanos: Some(nanos) }
    }
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError> {
        timestamp_from_pb(pb.seconds, pb.nanos).map(MicroTime)
    }
    fn is_go_unset(&self) -> bool {
        is_go_zero(self.0)
    }
}

/// `metav1.FieldsV1` (managed fields): protobuf carries the JSON document as bytes, k8s-openapi
/// holds it parsed.
impl Convert for FieldsV1 {
    type Pb = k8s_pb::apimachinery::pkg::apis::meta::v1::FieldsV1;
    fn to_pb(&self) -> Self::Pb {
        Self::Pb { raw: Some(self.0.to_string().into_bytes()) }
    }
    fn from_pb(pb: Self::Pb) -> Result<Self, ConvError> {
        match pb.raw {
            None => Ok(FieldsV1::default()),
            Some(raw) if raw.is_empty() => Ok(FieldsV1::default()),
            Some(raw) => k8s_openapi::serde_json::from_slice(&raw)
                .map(FieldsV1)
                .map_err(|e| ConvError::new(format!("FieldsV1 is not JSON: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_before_1970_uses_forward_nanos_and_round_trips() {
        let ts = Timestamp::new(-5, -250_000_000).unwrap();
        let pb = Time(ts).to_pb();
        assert_eq!((pb.seconds, pb.nanos), (Some(-6), Some(750_000_000)));
        assert_eq!(Time::from_pb(pb).unwrap(), Time(ts));
    }

    #[test]
    fn empty_time_message_is_go_zero_time_and_unset() {
        let t = Time::from_pb(Default::default()).unwrap();
        assert!(t.is_go_unset());
        let decoded: Option<Time> = Field::from_field(Some(Default::default())).unwrap();
        assert_eq!(decoded, None);
        // `seconds: 0` is 1970, not "unset".
        let epoch: Option<Time> =
            Field::from_field(Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Time { seconds: Some(0), nanos: None }))
                .unwrap();
        assert_eq!(epoch, Some(Time(Timestamp::UNIX_EPOCH)));
    }

    #[test]
    fn out_of_range_time_is_an_error() {
        let pb = k8s_pb::apimachinery::pkg::apis::meta::v1::MicroTime { seconds: Some(i64::MAX), nanos: Some(0) };
        let err = MicroTime::from_pb(pb).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
        let pb = k8s_pb::apimachinery::pkg::apis::meta::v1::Time { seconds: Some(0), nanos: Some(i32::MIN) };
        assert!(Time::from_pb(pb).is_err());
    }

    #[test]
    fn micro_time_keeps_nanoseconds() {
        let t = MicroTime(Timestamp::new(1_700_000_000, 123_456_789).unwrap());
        assert_eq!(MicroTime::from_pb(t.to_pb()).unwrap(), t);
    }

    #[test]
    fn byte_string_and_fields_v1_round_trip() {
        let b = ByteString(vec![0, 1, 255]);
        assert_eq!(ByteString::from_pb(b.to_pb()).unwrap(), b);
        let f = FieldsV1(k8s_openapi::serde_json::json!({"f:metadata": {"f:labels": {".": {}}}}));
        assert_eq!(FieldsV1::from_pb(f.to_pb()).unwrap(), f);
        let bad = k8s_pb::apimachinery::pkg::apis::meta::v1::FieldsV1 { raw: Some(b"{".to_vec()) };
        assert!(FieldsV1::from_pb(bad).is_err());
    }

    #[test]
    fn int_or_string_both_ways_and_bad_type() {
        for v in [IntOrString::Int(8080), IntOrString::Int(0), IntOrString::String("http".into())] {
            assert_eq!(IntOrString::from_pb(v.to_pb()).unwrap(), v);
        }
        let bad = k8s_pb::apimachinery::pkg::util::intstr::IntOrString { r#type: Some(7), ..Default::default() };
        assert!(IntOrString::from_pb(bad).unwrap_err().to_string().contains("type 7"));
    }

    #[test]
    fn optional_shapes_follow_go_rules() {
        let s: Option<String> = Field::from_field(Some(String::new())).unwrap();
        assert_eq!(s, None);
        let zero: Option<i64> = Field::from_field(Some(0)).unwrap();
        assert_eq!(zero, Some(0));
        let no: Option<bool> = Field::from_field(Some(false)).unwrap();
        assert_eq!(no, Some(false));
        let list: Option<Vec<String>> = Field::from_field(Vec::<String>::new()).unwrap();
        assert_eq!(list, None);
        let required: String = Field::from_field(None::<String>).unwrap();
        assert_eq!(required, "");
        let map: Option<BTreeMap<String, String>> = Field::from_field(BTreeMap::new()).unwrap();
        assert_eq!(map, None);
        assert_eq!(Field::<Vec<String>>::to_field(&None::<Vec<String>>), Vec::<String>::new());
    }

    #[test]
    fn error_path_renders_fields_indexes_and_keys() {
        let e = ConvError::new("bad").at_key("cpu").at("capacity").at_index(2).at("containers").at("spec");
        assert_eq!(e.to_string(), "spec.containers[2].capacity[\"cpu\"]: bad");
        assert_eq!(ConvError::new("bad").to_string(), "bad");
    }
}
