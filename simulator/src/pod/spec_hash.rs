//! The interner's hash of a pod spec, taken by walking the spec's `Serialize` impl straight into
//! a hasher: every field the API knows takes part, as in a serialization, but strings go in as
//! they are. Serializing to JSON only to hash the text spent most of its time escaping strings
//! (a tenth of reading a large dump; and every pod the memory cluster creates is hashed).
//!
//! Equal values serialize alike, so equal specs hash alike, which is all the interner needs:
//! it compares the specs of a hash's bucket before sharing one. Tags and lengths keep different
//! structures from writing the same stream.

use std::fmt;
use std::hash::Hasher;

use rustc_hash::FxHasher;
use serde::ser::{self, Serialize};

/// Adds `value`'s serialization to `hasher`.
pub(super) fn hash_serialized(value: &impl Serialize, hasher: &mut FxHasher) {
    // Hashing raises no error; were a `Serialize` impl to raise one, the hash would only cover
    // less (equality is checked by the interner).
    let _ = value.serialize(&mut HashSerializer(hasher));
}

struct HashSerializer<'h>(&'h mut FxHasher);

/// What tells the parts of the stream apart.
mod tag {
    pub const NONE: u8 = 0;
    pub const SOME: u8 = 1;
    pub const UNIT: u8 = 2;
    pub const SEQUENCE: u8 = 3;
    pub const MAPPING: u8 = 4;
    pub const END: u8 = 5;
    pub const VARIANT: u8 = 6;
    pub const STRING: u8 = 7;
    pub const BYTES: u8 = 8;
}

impl HashSerializer<'_> {
    fn bytes(&mut self, tag: u8, bytes: &[u8]) {
        self.0.write_u8(tag);
        self.0.write_usize(bytes.len());
        self.0.write(bytes);
    }

    fn variant(&mut self, index: u32) {
        self.0.write_u8(tag::VARIANT);
        self.0.write_u32(index);
    }
}

/// The error type `serde` asks for; hashing never raises one.
#[derive(Debug)]
struct NoError;

impl fmt::Display for NoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value could not be hashed")
    }
}

impl std::error::Error for NoError {}

impl ser::Error for NoError {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NoError
    }
}

type Done = Result<(), NoError>;
/// A sequence, mapping or struct begun.
type Opened<S> = Result<S, NoError>;

/// The serializer's integer methods: each width widened to its family's widest (a value hashes
/// alike whatever field type holds it).
macro_rules! integers {
    ($($method:ident: $ty:ty => $write:ident($wide:ty)),*) => {$(
        fn $method(self, v: $ty) -> Done {
            self.0.$write(<$wide>::from(v));
            Ok(())
        }
    )*};
}

impl<'a, 'h> ser::Serializer for &'a mut HashSerializer<'h> {
    type Ok = ();
    type Error = NoError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Done {
        self.0.write_u8(u8::from(v));
        Ok(())
    }
    integers!(
        serialize_i8: i8 => write_i64(i64),
        serialize_i16: i16 => write_i64(i64),
        serialize_i32: i32 => write_i64(i64),
        serialize_i64: i64 => write_i64(i64),
        serialize_i128: i128 => write_i128(i128),
        serialize_u8: u8 => write_u64(u64),
        serialize_u16: u16 => write_u64(u64),
        serialize_u32: u32 => write_u64(u64),
        serialize_u64: u64 => write_u64(u64),
        serialize_u128: u128 => write_u128(u128),
        serialize_char: char => write_u32(u32)
    );
    fn serialize_f32(self, v: f32) -> Done {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Done {
        self.0.write_u64(v.to_bits());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Done {
        self.bytes(tag::STRING, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Done {
        self.bytes(tag::BYTES, v);
        Ok(())
    }
    fn serialize_none(self) -> Done {
        self.0.write_u8(tag::NONE);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Done {
        self.0.write_u8(tag::SOME);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Done {
        self.0.write_u8(tag::UNIT);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Done {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, index: u32, _variant: &'static str) -> Done {
        self.variant(index);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _name: &'static str, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Done {
        self.variant(index);
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Opened<Self> {
        self.0.write_u8(tag::SEQUENCE);
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Opened<Self> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Opened<Self> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _: &'static str, index: u32, _: &'static str, len: usize) -> Opened<Self> {
        self.variant(index);
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _len: Option<usize>) -> Opened<Self> {
        self.0.write_u8(tag::MAPPING);
        Ok(self)
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Opened<Self> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(self, _: &'static str, index: u32, _: &'static str, len: usize) -> Opened<Self> {
        self.variant(index);
        self.serialize_map(Some(len))
    }
}

impl HashSerializer<'_> {
    fn end(&mut self) -> Done {
        self.0.write_u8(tag::END);
        Ok(())
    }

    /// A struct's field: its name (fields left out are not written), then its value.
    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Done {
        self.bytes(tag::STRING, key.as_bytes());
        value.serialize(self)
    }
}

/// serde's four sequence traits, alike here: each element in turn, then the end.
macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut HashSerializer<'_> {
            type Ok = ();
            type Error = NoError;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Done {
                value.serialize(&mut **self)
            }
            fn end(self) -> Done {
                HashSerializer::end(self)
            }
        }
    )*};
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut HashSerializer<'_> {
    type Ok = ();
    type Error = NoError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Done {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Done {
        value.serialize(&mut **self)
    }
    fn end(self) -> Done {
        HashSerializer::end(self)
    }
}

/// serde's two struct traits, alike here: each field's name and value, then the end.
macro_rules! structure {
    ($($trait:ident),*) => {$(
        impl ser::$trait for &mut HashSerializer<'_> {
            type Ok = ();
            type Error = NoError;
            fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Done {
                self.field(key, value)
            }
            fn end(self) -> Done {
                HashSerializer::end(self)
            }
        }
    )*};
}

structure!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements, Toleration};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn hash(spec: &PodSpec) -> u64 {
        let mut hasher = FxHasher::default();
        hash_serialized(spec, &mut hasher);
        hasher.finish()
    }

    #[test]
    fn equal_specs_hash_alike_and_a_change_anywhere_changes_the_hash() {
        let container = |cpu: &str| Container {
            name: "app".into(),
            image: Some("nginx".into()),
            resources: Some(ResourceRequirements {
                requests: Some([("cpu".to_string(), Quantity(cpu.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let spec = PodSpec {
            containers: vec![container("1")],
            tolerations: Some(vec![Toleration { key: Some("k".into()), ..Default::default() }]),
            priority: Some(5),
            ..Default::default()
        };
        assert_eq!(hash(&spec), hash(&spec.clone()));
        let others = [
            PodSpec { containers: vec![container("2")], ..spec.clone() },
            PodSpec { containers: vec![container("1"), container("1")], ..spec.clone() },
            PodSpec { priority: Some(6), ..spec.clone() },
            PodSpec { priority: None, ..spec.clone() },
            PodSpec { tolerations: Some(vec![]), ..spec.clone() },
            PodSpec { tolerations: None, ..spec.clone() },
            PodSpec { node_name: Some("n".into()), ..spec.clone() },
        ];
        for other in &others {
            assert_ne!(hash(other), hash(&spec), "{other:?}");
        }
    }
}
