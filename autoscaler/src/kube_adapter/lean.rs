//! `Lean<K>`: a Kubernetes object read from the API server without the parts the autoscaler
//! never reads and that weigh most: `metadata.managedFields`, kubectl's last-applied
//! annotation, a pod's container states and addresses, its containers' environment, commands,
//! probes and mounts, the sources of its token, ConfigMap, Secret and downward API volumes, and
//! a node's list of cached images. They are skipped while parsing (the parser steps over their
//! text), never built and then dropped: on a large cluster's initial lists they are most of
//! each object (and of the time spent parsing it). The rest is trimmed (`core::compact`) as
//! soon as the object is parsed; what is skipped is exactly what it would drop.
//!
//! The reflectors watch `Api<Lean<K>>` and store the plain `K`. The skipping is a thin
//! deserializer that forwards everything to the JSON one except those keys, and only where
//! they have that meaning (`Place`): `managedFields` directly in an object's (or template's)
//! `metadata`, the annotation in its `annotations`, a container's fields in a pod spec's
//! `containers`, and so on. Other maps (a ConfigMap's data, labels) are untouched.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use ::kube::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// The annotation kubectl writes on `kubectl apply`: a copy of the whole applied object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A `K` parsed without its managed fields and last-applied annotation.
#[derive(Clone, Debug)]
pub struct Lean<K>(pub K);

impl<K: Resource> Resource for Lean<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

/// Each object is also trimmed (`core::compact`) as soon as it is parsed: a list's objects are
/// all held until the list is complete, and untrimmed they would be about 2.5 times bigger.
impl<'de, K: de::Deserialize<'de> + Resource + std::any::Any> de::Deserialize<'de> for Lean<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = K::deserialize(Skipping { inner: deserializer, at: At::object(None) })?;
        crate::core::compact::compact(&mut object);
        Ok(Lean(object))
    }
}

/// `deserializer` stepping over what `Lean` skips in the object it reads, without trimming the
/// rest: for readers that wrap it further (the dump reader lists the
/// fields its types do not know around it, so what is stepped over is never listed).
pub fn skipping<'de, D: Deserializer<'de>>(deserializer: D) -> impl Deserializer<'de, Error = D::Error> {
    Skipping { inner: deserializer, at: At::object(None) }
}

/// `skipping`, raising `unread` when the type reading the object leaves a field unread (one it
/// does not know: k8s-openapi's types read such a field's value as `IgnoredAny`). A flag, not
/// the field's path: the dump reader reads the rare object that raises it again with
/// `serde_ignored` for the paths, so the others do not pay for tracking them (a copy of every
/// key read).
pub fn skipping_noting_unread<'de, 'n, D: Deserializer<'de> + 'n>(
    deserializer: D,
    unread: &'n Cell<bool>,
) -> impl Deserializer<'de, Error = D::Error> + 'n {
    Skipping { inner: deserializer, at: At::object(Some(unread)) }
}

/// Where a value sits, for what may be skipped in it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Any value outside an object's metadata: its `metadata` key is an `ObjectMeta`.
    Object,
    /// An `ObjectMeta`: `managedFields` is skipped.
    Metadata,
    /// `metadata.annotations`: the last-applied annotation is skipped.
    Annotations,
    /// Inside the metadata's other fields (labels, owners…): nothing is skipped.
    Plain,
    /// An object's `spec`: where a pod spec's containers and volumes are.
    Spec,
    /// A pod spec's `containers` or `initContainers` (not its ephemeral containers, which
    /// `core::compact` keeps whole).
    Containers,
    /// One container: what `core::compact` drops from it is skipped.
    Container,
    /// A pod spec's `volumes`.
    Volumes,
    /// One volume: the sources `core::compact` drops (a volume left without a source is
    /// dropped by it) are skipped.
    Volume,
    /// An object's `status`: a pod's container states and addresses, a node's cached images.
    Status,
}

/// What `core::compact` drops from every container (its `compact_container`).
const CONTAINER_SKIPS: &[&str] = &[
    "env",
    "envFrom",
    "command",
    "args",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "volumeMounts",
    "volumeDevices",
    "securityContext",
];

/// Volume sources nothing reads, on nearly every pod (service account tokens, ConfigMaps,
/// Secrets, the downward API). `core::compact` keeps only claims, ephemeral claims, hostPath
/// and emptyDir volumes.
const VOLUME_SKIPS: &[&str] = &["projected", "configMap", "secret", "downwardAPI"];

/// What `core::compact` drops from a pod's status (`compact_pod`) and a node's (`compact_node`).
const STATUS_SKIPS: &[&str] =
    &["containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses", "podIPs", "hostIPs", "images"];

impl Place {
    /// The place of the value under `key` in a map at `self`.
    fn child(self, key: &str) -> Place {
        match (self, key) {
            (Place::Object, "metadata") => Place::Metadata,
            (Place::Object, "spec") => Place::Spec,
            (Place::Object, "status") => Place::Status,
            (Place::Spec, "containers" | "initContainers") => Place::Containers,
            (Place::Spec, "volumes") => Place::Volumes,
            // Anything else in an object (a workload's pod template, a list's items, a
            // container's resources…) may hold objects with metadata of their own.
            (Place::Object | Place::Spec | Place::Status | Place::Container | Place::Volume, _) => Place::Object,
            (Place::Metadata, "annotations") => Place::Annotations,
            _ => Place::Plain,
        }
    }

    /// The place of a list's items in a list at `self`.
    fn element(self) -> Place {
        match self {
            Place::Containers => Place::Container,
            Place::Volumes => Place::Volume,
            // The items of a list in an object are objects of their own (list items, a
            // StatefulSet's claim templates…).
            Place::Object | Place::Spec | Place::Status | Place::Container | Place::Volume => Place::Object,
            Place::Metadata | Place::Annotations | Place::Plain => Place::Plain,
        }
    }

    fn skips(self, key: &str) -> bool {
        match self {
            Place::Metadata => key == "managedFields",
            Place::Annotations => key == LAST_APPLIED,
            Place::Container => CONTAINER_SKIPS.contains(&key),
            Place::Volume => VOLUME_SKIPS.contains(&key),
            Place::Status => STATUS_SKIPS.contains(&key),
            Place::Object | Place::Plain | Place::Spec | Place::Containers | Place::Volumes => false,
        }
    }
}

/// Where a value sits, and the flag to raise when a field in it is left unread (see
/// `skipping_noting_unread`).
#[derive(Clone, Copy)]
struct At<'n> {
    place: Place,
    unread: Option<&'n Cell<bool>>,
}

impl<'n> At<'n> {
    fn object(unread: Option<&'n Cell<bool>>) -> At<'n> {
        At { place: Place::Object, unread }
    }
    fn element(self) -> At<'n> {
        At { place: self.place.element(), ..self }
    }
}

struct Skipping<'n, D> {
    inner: D,
    at: At<'n>,
}

/// Forwards `deserialize_*` methods to the inner deserializer with the visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* Wrapped { inner: visitor, at: self.at })
        })*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Skipping<'_, D> {
    type Error = D::Error;

    forward! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(),
        deserialize_i64(), deserialize_i128(), deserialize_u8(), deserialize_u16(), deserialize_u32(),
        deserialize_u64(), deserialize_u128(), deserialize_f32(), deserialize_f64(), deserialize_char(),
        deserialize_str(), deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(), deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str), deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize), deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(),
    }

    /// A value the type does not read: a field it does not know.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        if let Some(unread) = self.at.unread {
            unread.set(true);
        }
        self.inner.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor whose maps and sequences skip what their place says.
struct Wrapped<'n, V> {
    inner: V,
    at: At<'n>,
}

macro_rules! pass {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        })*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrapped<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    pass! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64), visit_i128(i128),
        visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64), visit_u128(u128), visit_f32(f32),
        visit_f64(f64), visit_char(char), visit_str(&str), visit_borrowed_str(&'de str), visit_string(String),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Skipping { inner: d, at: self.at })
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Skipping { inner: d, at: self.at })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(Elements { inner: seq, at: self.at.element() })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Entries { inner: map, at: self.at, value_place: Place::Plain })
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Variant { inner: data, at: self.at })
    }
}

/// An enum value (our own types' enums; k8s-openapi's have none) read at `place`.
struct Variant<'n, A> {
    inner: A,
    at: At<'n>,
}

impl<'de, 'n, A: EnumAccess<'de>> EnumAccess<'de> for Variant<'n, A> {
    type Error = A::Error;
    type Variant = Variant<'n, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(seed)?;
        Ok((value, Variant { inner: variant, at: self.at }))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(Seed { inner: seed, at: self.at })
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner.tuple_variant(len, Wrapped { inner: visitor, at: self.at })
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.struct_variant(fields, Wrapped { inner: visitor, at: self.at })
    }
}

/// A seed whose value is read at `at`.
struct Seed<'n, S> {
    inner: S,
    at: At<'n>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Skipping { inner: d, at: self.at })
    }
}

struct Elements<'n, A> {
    inner: A,
    at: At<'n>,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Elements<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Seed { inner: seed, at: self.at })
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct Entries<'n, A> {
    inner: A,
    at: At<'n>,
    /// The place of the value after the key just read (its flag is the map's).
    value_place: Place,
}

/// A map key, borrowed from the input when it has no escapes.
pub(crate) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

/// Reads a map key as a `Key`.
pub(crate) struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

impl<'de> DeserializeSeed<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key_seed(KeyVisitor)? else { return Ok(None) };
            if self.at.place.skips(key.as_str()) {
                self.inner.next_value::<IgnoredAny>()?;
                continue;
            }
            self.value_place = self.at.place.child(key.as_str());
            return match key {
                Key::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
                Key::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.next_value_seed(Seed { inner: seed, at: At { place: self.value_place, ..self.at } })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    /// `text` parsed with the skipping alone (`Lean` also trims).
    fn skipping<K: de::DeserializeOwned>(text: &str) -> Result<K, serde_json::Error> {
        K::deserialize(Skipping { inner: &mut serde_json::Deserializer::from_str(text), at: At::object(None) })
    }

    #[test]
    fn managed_fields_and_the_last_applied_annotation_are_never_built() {
        let text = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns",
                "labels": {"managedFields": "a label may have any name", "app": "web"},
                "annotations": {LAST_APPLIED: "{\"big\": true}", "keep": "me"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}],
            },
            "spec": {
                "containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}],
                                "resources": {"requests": {"cpu": "250m"}}}],
                "nodeName": "n1",
            },
            "status": {"phase": "Running"},
        })
        .to_string();
        let pod: Pod = skipping(&text).unwrap();
        let mut expected: Pod = serde_json::from_str(&text).unwrap();
        expected.metadata.managed_fields = None;
        expected.metadata.annotations.as_mut().unwrap().remove(LAST_APPLIED);
        expected.spec.as_mut().unwrap().containers[0].env = None;
        assert_eq!(pod, expected);
        assert_eq!(pod.metadata.labels.as_ref().unwrap().len(), 2, "labels are data: none is skipped");
        // `Lean` trims the rest as it parses.
        let Lean(lean): Lean<Pod> = serde_json::from_str(&text).unwrap();
        let mut trimmed = pod;
        crate::core::compact::compact(&mut trimmed);
        assert_eq!(lean, trimmed);
        assert_eq!(lean.spec.unwrap().containers[0].env, None);
    }

    /// What the skipping steps over is exactly what `core::compact` drops: parsing with `Lean`
    /// gives the same object as parsing everything and trimming it.
    #[test]
    fn lean_parsing_equals_full_parsing_then_trimming() {
        fn same_as_trimmed<K>(text: &str)
        where
            K: de::DeserializeOwned + Resource + std::any::Any + PartialEq + fmt::Debug,
        {
            let Lean(lean): Lean<K> = serde_json::from_str(text).unwrap();
            let mut trimmed: K = serde_json::from_str(text).unwrap();
            crate::core::compact::compact(&mut trimmed);
            assert_eq!(lean, trimmed);
        }
        let container = json!({
            "name": "app", "image": "registry/app:1",
            "command": ["/app"], "args": ["--serve"],
            "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            "envFrom": [{"configMapRef": {"name": "cm"}}],
            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "ports": [{"containerPort": 8080, "hostPort": 80}],
            "livenessProbe": {"httpGet": {"path": "/", "port": 8080}},
            "readinessProbe": {"exec": {"command": ["true"]}},
            "startupProbe": {"tcpSocket": {"port": 8080}},
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "securityContext": {"runAsUser": 1000},
            "restartPolicy": "Always",
        });
        let pod_spec = json!({
            "containers": [container.clone()],
            "initContainers": [container.clone()],
            "ephemeralContainers": [{"name": "debug", "image": "busybox", "env": [{"name": "B", "value": "2"}]}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
                {"name": "config", "configMap": {"name": "cm"}},
                {"name": "secret", "secret": {"secretName": "s"}},
                {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "both", "emptyDir": {}, "secret": {"secretName": "s"}},
            ],
            "nodeSelector": {"env": "prod", "containers": "x"},
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}},
            "nodeName": "n1",
        });
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"env": "prod", "images": "x"},
                         "annotations": {LAST_APPLIED: "{}", "command": "kept"},
                         "managedFields": [{"manager": "m"}]},
            "spec": pod_spec.clone(),
            "status": {
                "phase": "Running", "podIP": "10.0.0.1",
                "podIPs": [{"ip": "10.0.0.1"}], "hostIPs": [{"ip": "192.168.0.1"}],
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
                "containerStatuses": [{"name": "app", "image": "i", "imageID": "id", "ready": true, "restartCount": 0,
                                       "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}],
                "initContainerStatuses": [{"name": "app", "image": "i", "imageID": "id", "ready": true, "restartCount": 0}],
            },
        })
        .to_string();
        same_as_trimmed::<Pod>(&pod);
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"images": "kept"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4"}, "images": [{"names": ["registry/app:1"], "sizeBytes": 1}],
                       "conditions": [{"type": "Ready", "status": "True"}]},
        })
        .to_string();
        same_as_trimmed::<k8s_openapi::api::core::v1::Node>(&node);
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}, "managedFields": [{"manager": "m"}]},
                                  "spec": pod_spec}},
            "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True"}]},
        })
        .to_string();
        same_as_trimmed::<k8s_openapi::api::apps::v1::Deployment>(&deployment);
        let Lean(d): Lean<k8s_openapi::api::apps::v1::Deployment> = serde_json::from_str(&deployment).unwrap();
        let template = d.spec.unwrap().template.spec.unwrap();
        let names: Vec<&str> = template.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["data", "scratch", "both"], "the volumes decisions read stay");
        assert_eq!(template.containers[0].resources.as_ref().unwrap().requests.as_ref().unwrap()["cpu"].0, "250m");
        assert_eq!(template.containers[0].ports.as_ref().unwrap()[0].host_port, Some(80));
        assert!(template.ephemeral_containers.unwrap()[0].env.is_some(), "ephemeral containers are kept whole");
        // Data named like skipped fields, in a ConfigMap and in a spec's maps, stays.
        let config_map = json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"},
            "data": {"env": "a", "containerStatuses": "b", "spec": "c", "images": "d", "projected": "e"},
        })
        .to_string();
        let Lean(cm): Lean<ConfigMap> = serde_json::from_str(&config_map).unwrap();
        assert_eq!(cm.data.unwrap().len(), 5);
    }

    #[test]
    fn data_keys_named_like_skipped_fields_are_kept() {
        let text = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "kube-system"},
            "data": {"managedFields": "x", LAST_APPLIED: "y", "metadata": "z"},
        })
        .to_string();
        let config_map: ConfigMap = skipping(&text).unwrap();
        assert_eq!(config_map, serde_json::from_str::<ConfigMap>(&text).unwrap());
    }

    #[test]
    fn escaped_keys_bad_values_and_templates_behave_as_without_skipping() {
        // An escaped key is not borrowed from the input.
        let text = r#"{"metadata": {"name": "p", "managedFields": [], "na\u006de2": 1}, "spec": {"containers": []}}"#;
        let pod: Pod = skipping(text).unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        // A wrong type is the same error as without skipping.
        let bad = r#"{"metadata": {"name": 5}}"#;
        let lean = skipping::<Pod>(bad).unwrap_err().to_string();
        let plain = serde_json::from_str::<Pod>(bad).unwrap_err().to_string();
        assert_eq!(lean, plain);
        // A workload's pod template has metadata of its own: its managed fields go too.
        let text = r#"{"metadata": {"name": "d"}, "spec": {"selector": {}, "template": {"metadata": {"managedFields": [{"manager": "m"}], "labels": {"a": "b"}}}}}"#;
        let deployment: k8s_openapi::api::apps::v1::Deployment = skipping(text).unwrap();
        let template = deployment.spec.unwrap().template.metadata.unwrap();
        assert_eq!(template.managed_fields, None);
        assert_eq!(template.labels.unwrap()["a"], "b");
    }

    /// The flag is raised exactly when `read_listing` (`serde_ignored` around the same skipping)
    /// lists a field:
    /// unknown fields at any depth raise it; skipped fields and data maps with any keys do not.
    #[test]
    fn the_unread_flag_agrees_with_serde_ignored() {
        let known = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"anything": "x"}, "managedFields": [{"manager": "m"}],
                         "annotations": {LAST_APPLIED: "{}"}},
            "spec": {"containers": [{"name": "c", "env": [{"name": "A"}], "resources": {"requests": {"cpu": "1"}}}],
                     "volumes": [{"name": "v", "projected": {"sources": []}}], "nodeSelector": {"zone": "a"}},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "unknownInASkippedPart": 1}]},
        });
        let mut cases = vec![(known.clone(), false)];
        for (pointer, field) in [
            ("", "newTopLevel"),
            ("/metadata", "newInMetadata"),
            ("/spec", "newInSpec"),
            ("/spec/containers/0", "newInContainer"),
            ("/spec/containers/0/resources", "reqeusts"),
            ("/spec/volumes/0", "newVolumeSource"),
            ("/status", "newInStatus"),
        ] {
            let mut object = known.clone();
            object.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert(field.into(), json!({"x": [1]}));
            cases.push((object, true));
        }
        for (object, expected) in cases {
            let text = object.to_string();
            let unread = Cell::new(false);
            let noted = <Pod as de::Deserialize>::deserialize(skipping_noting_unread(
                &mut serde_json::Deserializer::from_str(&text),
                &unread,
            ));
            let tracked = cloudprovider::objects::read_listing::<Pod, _>(super::skipping(
                &mut serde_json::Deserializer::from_str(&text),
            ))
            .unwrap();
            let listed = tracked.unknown_fields;
            assert_eq!(noted.unwrap(), tracked.object, "{text}");
            assert_eq!(unread.get(), expected, "{text}: {listed:?}");
            assert_eq!(listed.is_empty(), !expected, "{text}: {listed:?}");
        }
    }
}
