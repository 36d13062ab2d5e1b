//! `deploy/externalgrpc/`: `--cloud-provider=externalgrpc` beside a provider Deployment (the
//! example `private-iaas-grpc`), and the chart's `externalgrpc.*` values.
//!
//! The overlay is built here as kustomize builds it (the base's files and the overlay's, the
//! JSON patches applied) and checked as the base is: strict Kubernetes types, flags the binary
//! accepts. Then the wiring: every file a container's arguments or the cloud-config name is
//! resolved through the pod's volume mounts to a key of a ConfigMap the overlay defines or of a
//! Secret its header tells how to create; the Service's port is the cloud-config's and leads to
//! the provider's `--listen` port. Finally both pods' files are laid out on disk as the kubelet
//! would mount them (with certificates made here under the documented Secret keys) and the real
//! processes run: the stand-in IaaS, `private-iaas-grpc` with the overlay's arguments, and the
//! autoscaler's externalgrpc provider built from the overlay's (and the chart's) cloud-config,
//! which must list the provider's node groups over mutual TLS, and fail with a certificate of
//! another CA or none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cloudprovider::{CloudProvider, Purpose};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use tests::private_iaas::{Process, example_binary, workdir};

use super::helm::{rendered_args, template, values};
use super::{
    CLOUD_CONFIG_MOUNT, MANIFEST_DIR, NON_ROOT_UID, autoscaler_container, kustomization_resources, matches_labels,
    parse_flags, pod_labels, pod_spec, read, repo_root, strict, yaml_documents, yaml_value,
};

const OVERLAY_DIR: &str = "deploy/externalgrpc";
const KUSTOMIZATION: &str = "deploy/externalgrpc/kustomization.yaml";
const NAMESPACE: &str = "kube-system";
/// The autoscaler's Deployment (the base's) and the provider's (the overlay's).
const AUTOSCALER: &str = "cluster-autoscaler";
const PROVIDER: &str = "externalgrpc-provider";
/// The Secrets the user creates (the overlay's header says how).
const CLIENT_TLS_SECRET: &str = "cluster-autoscaler-externalgrpc-client-tls";
const SERVER_TLS_SECRET: &str = "externalgrpc-provider-server-tls";
/// Where the overlay and the chart mount the autoscaler's client TLS Secret.
const TLS_MOUNT: &str = "/etc/externalgrpc-tls";
/// The keys of a `kubernetes.io/tls` Secret with its CA, as cert-manager writes it.
const TLS_KEYS: [&str; 3] = ["tls.crt", "tls.key", "ca.crt"];
/// The cloud-config keys naming the client's TLS files, and the Secret key each must be.
const CLIENT_TLS_FILES: [(&str, &str); 3] = [("cert", "tls.crt"), ("key", "tls.key"), ("cacert", "ca.crt")];
/// The provider's flags naming its TLS files, and the Secret key each must be.
const SERVER_TLS_FILES: [(&str, &str); 3] = [("cert", "tls.crt"), ("key", "tls.key"), ("cacert", "ca.crt")];
/// The stand-in IaaS whose flavors, images and pools the overlay's provider configuration names.
const EXAMPLE_IAAS: &str = "cloudprovider/examples/private-iaas/config/iaas.yaml";

// ---------------------------------------------------------------------------------------------
// The overlay, built as kustomize builds it.

fn kustomization() -> Value {
    yaml_value(&read(KUSTOMIZATION), KUSTOMIZATION)
}

/// Every object `kubectl kustomize deploy/externalgrpc` prints: the base's files, the overlay's
/// own, then the patches (each must match exactly one object).
fn built_documents() -> Vec<Value> {
    let kustomization = kustomization();
    let resources: Vec<String> = kustomization["resources"]
        .as_array()
        .expect("the overlay lists resources")
        .iter()
        .map(|r| r.as_str().expect("a resource is a path").to_string())
        .collect();
    assert_eq!(resources.first().map(String::as_str), Some("../kubernetes"), "the overlay builds on {MANIFEST_DIR}");
    let mut documents: Vec<Value> =
        kustomization_resources().iter().flat_map(|file| yaml_documents(&format!("{MANIFEST_DIR}/{file}"))).collect();
    for file in &resources[1..] {
        assert!(!file.contains('/'), "{KUSTOMIZATION}: {file}: the overlay's own files sit beside it");
        documents.extend(yaml_documents(&format!("{OVERLAY_DIR}/{file}")));
    }
    for patch in kustomization["patches"].as_array().expect("the overlay has patches") {
        let target = &patch["target"];
        let matching: Vec<&mut Value> = documents
            .iter_mut()
            .filter(|d| d["kind"] == target["kind"] && d["metadata"]["name"] == target["name"])
            .collect();
        assert_eq!(matching.len(), 1, "{KUSTOMIZATION}: the patch of {target} matches one object");
        let text = patch["patch"].as_str().expect("an inline patch");
        let what = format!("{KUSTOMIZATION} patch of {target}");
        let operations = yaml_value(text, &what);
        for document in matching {
            super::apply_json_patch(document, &operations, &what);
        }
    }
    documents
}

/// The built overlay, typed (strictly: a field the type does not know fails).
#[derive(Default)]
struct Built {
    deployments: Vec<Deployment>,
    services: Vec<Service>,
    config_maps: Vec<ConfigMap>,
}

fn build_overlay() -> Built {
    let mut built = Built::default();
    for (index, document) in built_documents().iter().enumerate() {
        let kind = document["kind"].as_str().unwrap_or_default().to_string();
        let what = format!("{OVERLAY_DIR} object {index} ({kind} {})", document["metadata"]["name"]);
        assert_eq!(document["metadata"]["namespace"].as_str().unwrap_or(NAMESPACE), NAMESPACE, "{what}");
        match kind.as_str() {
            "Deployment" => built.deployments.push(strict(document, &what)),
            "Service" => built.services.push(strict(document, &what)),
            "ConfigMap" => built.config_maps.push(strict(document, &what)),
            "ServiceAccount" => {
                let _: ServiceAccount = strict(document, &what);
            }
            "ClusterRole" => {
                let _: ClusterRole = strict(document, &what);
            }
            "ClusterRoleBinding" => {
                let _: ClusterRoleBinding = strict(document, &what);
            }
            "Role" => {
                let _: Role = strict(document, &what);
            }
            "RoleBinding" => {
                let _: RoleBinding = strict(document, &what);
            }
            "PodDisruptionBudget" => {
                let _: PodDisruptionBudget = strict(document, &what);
            }
            other => panic!("{what}: unexpected kind {other:?}"),
        }
    }
    built
}

fn named<'a, T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>>(
    objects: &'a [T],
    name: &str,
) -> &'a T {
    let found: Vec<&T> = objects.iter().filter(|o| o.metadata().name.as_deref() == Some(name)).collect();
    assert_eq!(found.len(), 1, "exactly one {} named {name} in the built overlay", T::KIND);
    found[0]
}

fn only_container(deployment: &Deployment) -> &Container {
    let containers = &pod_spec(deployment).containers;
    assert_eq!(containers.len(), 1, "{:?}: one container", deployment.metadata.name);
    &containers[0]
}

/// `--name=value` arguments as a map (each name once).
fn flag_map(args: &[String]) -> BTreeMap<String, String> {
    let mut flags = BTreeMap::new();
    for arg in args {
        let (name, value) = arg
            .strip_prefix("--")
            .and_then(|a| a.split_once('='))
            .unwrap_or_else(|| panic!("{arg:?}: not --name=value"));
        assert!(flags.insert(name.to_string(), value.to_string()).is_none(), "--{name} given twice");
    }
    flags
}

fn port_of(address: &str) -> i32 {
    address.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or_else(|| panic!("{address}: no port"))
}

// ---------------------------------------------------------------------------------------------
// Files as a container sees them.

/// What a path in a container is: a key of the ConfigMap or the Secret mounted over its
/// directory.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    ConfigMap { name: String, key: String },
    Secret { name: String, key: String },
}

/// Resolves `path` through the container's mounts (the deepest mount holding it).
fn source_of(spec: &PodSpec, container: &Container, path: &str) -> Source {
    let mount = container
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| path.starts_with(&format!("{}/", m.mount_path.trim_end_matches('/'))))
        .max_by_key(|m| m.mount_path.len())
        .unwrap_or_else(|| panic!("{}: nothing is mounted over {path}", container.name));
    assert!(mount.sub_path.is_none(), "{}: {path}: subPath mounts are not followed here", container.name);
    assert_eq!(mount.read_only, Some(true), "{}: {} is mounted read-only", container.name, mount.mount_path);
    let relative = &path[mount.mount_path.trim_end_matches('/').len() + 1..];
    let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name).unwrap_or_else(|| {
        panic!("{}: the volume {} mounted at {} is not in the pod", container.name, mount.name, mount.mount_path)
    });
    let key_of = |items: &Option<Vec<k8s_openapi::api::core::v1::KeyToPath>>| match items {
        None => relative.to_string(),
        Some(items) => items
            .iter()
            .find(|i| i.path == relative)
            .map(|i| i.key.clone())
            .unwrap_or_else(|| panic!("{}: {path}: no item of {} is {relative}", container.name, volume.name)),
    };
    if let Some(config_map) = &volume.config_map {
        Source::ConfigMap { name: config_map.name.clone(), key: key_of(&config_map.items) }
    } else if let Some(secret) = &volume.secret {
        Source::Secret { name: secret.secret_name.clone().expect("a secretName"), key: key_of(&secret.items) }
    } else {
        panic!("{}: {path} is on the volume {}, neither a ConfigMap nor a Secret", container.name, volume.name)
    }
}

fn config_map_text(built: &Built, name: &str, key: &str) -> String {
    let config_map = named(&built.config_maps, name);
    config_map
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .cloned()
        .unwrap_or_else(|| panic!("ConfigMap {name} has no {key}"))
}

/// A pod's mounted files laid out under a host directory: the container path `/a/b` is
/// `<root>/a/b`, and only what is mounted exists.
struct PodFiles {
    root: PathBuf,
}

impl PodFiles {
    /// Writes every volume the container mounts: ConfigMaps from `config_maps` (with the changes
    /// in `edits`, by ConfigMap name and key), Secrets from `secrets`, emptyDirs empty.
    fn lay_out(
        root: &Path,
        spec: &PodSpec,
        container: &Container,
        config_maps: &[ConfigMap],
        secrets: &BTreeMap<&str, BTreeMap<&str, String>>,
    ) -> PodFiles {
        for mount in container.volume_mounts.iter().flatten() {
            let directory = root.join(mount.mount_path.trim_start_matches('/'));
            std::fs::create_dir_all(&directory).unwrap();
            let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name).unwrap();
            let files: BTreeMap<String, String> = if let Some(source) = &volume.config_map {
                let config_map = config_maps
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(source.name.as_str()))
                    .unwrap_or_else(|| panic!("the ConfigMap {} is mounted but not defined", source.name));
                config_map.data.clone().unwrap_or_default().into_iter().collect()
            } else if let Some(source) = &volume.secret {
                let name = source.secret_name.as_deref().unwrap();
                let secret = secrets.get(name).unwrap_or_else(|| panic!("the Secret {name} is mounted but not made"));
                secret.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
            } else {
                assert!(volume.empty_dir.is_some(), "volume {}: a ConfigMap, a Secret or an emptyDir", volume.name);
                BTreeMap::new()
            };
            for (key, text) in files {
                std::fs::write(directory.join(key), text).unwrap();
            }
        }
        PodFiles { root: root.to_path_buf() }
    }

    /// The host file of a container path; it must exist.
    fn host(&self, path: &str) -> String {
        let file = self.root.join(path.trim_start_matches('/'));
        assert!(file.is_file(), "{path} does not exist in the container");
        file.display().to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// What the overlay documents: the Secrets the user creates.

/// The `kubectl create secret generic <name>` commands of the overlay's header: each Secret's
/// `--type` and `--from-file=<key>=…` keys.
fn documented_secrets() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut commands = Vec::new();
    let mut pending = String::new();
    for line in read(KUSTOMIZATION).lines().take_while(|l| l.starts_with('#')) {
        let line = line.trim_start_matches('#').trim();
        match line.strip_suffix('\\') {
            Some(continued) => {
                pending.push_str(continued);
                pending.push(' ');
            }
            None => {
                pending.push_str(line);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    let mut secrets = BTreeMap::new();
    for command in commands.iter().filter(|c| c.starts_with("kubectl ")) {
        let words: Vec<&str> = command.split_whitespace().collect();
        let Some(at) = words.windows(3).position(|w| w == ["create", "secret", "generic"]) else { continue };
        let name = words[at + 3].to_string();
        assert!(command.contains(&format!("-n {NAMESPACE} ")), "{command}: in {NAMESPACE}");
        let kind = words.iter().find_map(|w| w.strip_prefix("--type=")).unwrap_or("Opaque").to_string();
        let keys = words
            .iter()
            .filter_map(|w| w.strip_prefix("--from-file="))
            .map(|f| f.split_once('=').map_or(f, |(key, _)| key).to_string())
            .collect();
        secrets.insert(name, (kind, keys));
    }
    secrets
}

// ---------------------------------------------------------------------------------------------
// The overlay's wiring.

/// The autoscaler's cloud-config (from the ConfigMap mounted where `--cloud-config` points), as
/// YAML, with the ConfigMap it came from.
fn autoscaler_cloud_config(built: &Built) -> (String, Value) {
    let deployment = named(&built.deployments, AUTOSCALER);
    let args = autoscaler_container(deployment).args.clone().unwrap_or_default();
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("{KUSTOMIZATION}: the autoscaler's args {args:?}: {e}"));
    match source_of(pod_spec(deployment), autoscaler_container(deployment), &run.flags.cloud_config) {
        Source::ConfigMap { name, key } => {
            let text = config_map_text(built, &name, &key);
            (name, yaml_value(&text, "the autoscaler's cloud-config"))
        }
        other => panic!("--cloud-config is {other:?}, not a ConfigMap the overlay defines"),
    }
}

#[test]
fn the_externalgrpc_overlay_lists_its_files_and_pins_the_providers_image() {
    let kustomization = kustomization();
    let listed: BTreeSet<String> =
        kustomization["resources"].as_array().unwrap().iter().skip(1).map(|r| r.as_str().unwrap().into()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(repo_root().join(OVERLAY_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "kustomization.yaml")
        .collect();
    assert_eq!(listed, on_disk, "{KUSTOMIZATION}'s resources and the files beside it differ");

    let built = build_overlay();
    assert_eq!(built.deployments.len(), 2, "the autoscaler and the provider");
    let image = only_container(named(&built.deployments, PROVIDER)).image.clone().expect("an image");
    let (repository, tag) = image.rsplit_once(':').expect("a tagged image");
    let pinned = kustomization["images"].as_array().expect("the overlay pins images");
    assert!(
        pinned.iter().any(|i| i["name"] == repository && i["newTag"] == tag),
        "{KUSTOMIZATION}'s images do not pin {image} (kustomize edit set image needs it)"
    );
    assert!(read(&format!("{OVERLAY_DIR}/provider.yaml")).contains("your provider's image"));
}

#[test]
fn the_externalgrpc_overlay_points_the_autoscaler_at_the_provider_service_over_mutual_tls() {
    let built = build_overlay();
    let deployment = named(&built.deployments, AUTOSCALER);
    let container = autoscaler_container(deployment);
    let args = container.args.clone().unwrap_or_default();
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("{KUSTOMIZATION}: the autoscaler's args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "externalgrpc");
    assert!(run.flags.nodes.is_empty(), "the provider service lists the groups: no --nodes: {args:?}");
    assert!(run.flags.node_group_auto_discovery.is_empty(), "{args:?}");
    assert_eq!(run.flags.cloud_config, format!("{CLOUD_CONFIG_MOUNT}/cloud-config.yaml"), "the chart's path too");

    // The cloud-config is the overlay's ConfigMap, not the base's static one, in upstream's keys.
    let (config_map, config) = autoscaler_cloud_config(&built);
    assert!(read(&format!("{OVERLAY_DIR}/cloud-config.yaml")).contains(&format!("name: {config_map}\n")));
    let keys: BTreeSet<&str> = config.as_object().expect("a map").keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["address", "cert", "key", "cacert", "grpc_timeout"]), "mutual TLS, a timeout");

    // The address is the provider Service's, on its port.
    let service = named(&built.services, PROVIDER);
    let address = config["address"].as_str().expect("an address");
    let (host, port) = address.rsplit_once(':').expect("host:port");
    assert_eq!(host, format!("{PROVIDER}.{NAMESPACE}.svc"), "the Service's in-cluster name");
    assert_eq!(service.metadata.namespace.as_deref(), Some(NAMESPACE));
    let service_spec = service.spec.as_ref().unwrap();
    let service_ports = service_spec.ports.clone().unwrap_or_default();
    assert_eq!(service_ports.len(), 1);
    assert_eq!(service_ports[0].port.to_string(), port, "the cloud-config's port is the Service's");

    // The TLS files are the keys of the client Secret, mounted where the chart mounts it too.
    for (field, key) in CLIENT_TLS_FILES {
        let path = config[field].as_str().unwrap_or_else(|| panic!("cloud-config {field}"));
        assert_eq!(
            source_of(pod_spec(deployment), container, path),
            Source::Secret { name: CLIENT_TLS_SECRET.into(), key: key.into() },
            "cloud-config {field}: {path}"
        );
        assert_eq!(Path::new(path).parent(), Some(Path::new(TLS_MOUNT)), "cloud-config {field}");
    }

    // The provider: its Service selects its pods (and only them), its --listen port is the
    // Service's target, its server TLS files are the server Secret's keys, --cacert included:
    // clients without a certificate of that CA are refused.
    let provider = named(&built.deployments, PROVIDER);
    let provider_container = only_container(provider);
    let provider_labels = pod_labels(provider);
    let selector = service_spec.selector.clone().unwrap_or_default();
    assert!(matches_labels(&selector, &provider_labels), "the Service selects the provider's pods");
    assert!(!matches_labels(&selector, &pod_labels(deployment)), "and not the autoscaler's");
    for other in built.services.iter().filter(|s| s.metadata.name.as_deref() != Some(PROVIDER)) {
        let selector = other.spec.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
        assert!(!matches_labels(&selector, &provider_labels), "{:?} selects the provider", other.metadata.name);
    }
    let flags = flag_map(provider_container.args.as_deref().unwrap_or_default());
    let names: BTreeSet<&str> = flags.keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(["listen", "cloud-config", "cert", "key", "cacert"]));
    let listen_port = port_of(&flags["listen"]);
    let container_port = provider_container
        .ports
        .iter()
        .flatten()
        .find(|p| p.container_port == listen_port)
        .unwrap_or_else(|| panic!("no container port is --listen's {listen_port}"));
    match service_ports[0].target_port.clone().expect("a targetPort") {
        IntOrString::String(name) => assert_eq!(container_port.name.as_deref(), Some(name.as_str()), "targetPort"),
        IntOrString::Int(number) => assert_eq!(number, listen_port, "targetPort"),
    }
    for (flag, key) in SERVER_TLS_FILES {
        assert_eq!(
            source_of(pod_spec(provider), provider_container, &flags[flag]),
            Source::Secret { name: SERVER_TLS_SECRET.into(), key: key.into() },
            "the provider's --{flag}"
        );
    }

    // The provider's configuration is the overlay's ConfigMap; its IaaS timeout is below the
    // autoscaler's per-call deadline.
    let Source::ConfigMap { name, key } = source_of(pod_spec(provider), provider_container, &flags["cloud-config"])
    else {
        panic!("the provider's --cloud-config is not a ConfigMap")
    };
    let provider_config = yaml_value(&config_map_text(&built, &name, &key), "the provider's cloud-config");
    let duration = |text: &Value| cloudprovider::duration::parse_go_duration(text.as_str().unwrap()).unwrap();
    assert!(duration(&provider_config["timeout"]) < duration(&config["grpc_timeout"]), "{provider_config}");

    // The provider runs as the autoscaler does, and needs no API access.
    let spec = pod_spec(provider);
    assert_eq!(spec.automount_service_account_token, Some(false));
    let pod_security = spec.security_context.as_ref().expect("a pod securityContext");
    assert_eq!((pod_security.run_as_non_root, pod_security.run_as_user), (Some(true), Some(NON_ROOT_UID)));
    let security = provider_container.security_context.as_ref().expect("a container securityContext");
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    for probe in [&provider_container.readiness_probe, &provider_container.liveness_probe] {
        let port = probe.as_ref().and_then(|p| p.tcp_socket.as_ref()).expect("a TCP probe").port.clone();
        assert!(port == IntOrString::String("grpc".into()) && container_port.name.as_deref() == Some("grpc"));
    }
}

#[test]
fn every_volume_of_the_overlay_is_defined_by_it_or_a_documented_secret() {
    let built = build_overlay();
    let documented = documented_secrets();
    let readme = read("deploy/README.md");
    let mut mounted_secrets = BTreeSet::new();
    for deployment in &built.deployments {
        let name = deployment.metadata.name.clone().unwrap();
        for volume in pod_spec(deployment).volumes.iter().flatten() {
            if let Some(config_map) = &volume.config_map {
                named(&built.config_maps, &config_map.name);
            } else if let Some(secret) = &volume.secret {
                let secret_name = secret.secret_name.clone().unwrap();
                let (kind, keys) = documented.get(&secret_name).unwrap_or_else(|| {
                    panic!("{name} mounts the Secret {secret_name}, which {KUSTOMIZATION} does not tell how to create")
                });
                assert_eq!(kind, "kubernetes.io/tls", "{secret_name}");
                assert_eq!(keys, &TLS_KEYS.iter().map(|k| k.to_string()).collect(), "{secret_name}'s keys");
                assert!(readme.contains(&secret_name), "deploy/README.md does not name the Secret {secret_name}");
                mounted_secrets.insert(secret_name);
            } else {
                assert!(volume.empty_dir.is_some(), "{name}: volume {}", volume.name);
            }
        }
    }
    let expected = BTreeSet::from([CLIENT_TLS_SECRET.to_string(), SERVER_TLS_SECRET.to_string()]);
    assert_eq!(mounted_secrets, expected);
    assert_eq!(documented.keys().cloned().collect::<BTreeSet<_>>(), expected, "documented but not mounted?");
    // The static cloud-config of the base is still applied but no longer mounted.
    let base_config_maps: BTreeSet<String> =
        super::load_manifests().config_maps.iter().filter_map(|c| c.metadata.name.clone()).collect();
    let autoscaler = named(&built.deployments, AUTOSCALER);
    for volume in pod_spec(autoscaler).volumes.iter().flatten() {
        if let Some(config_map) = &volume.config_map {
            assert!(!base_config_maps.contains(&config_map.name), "the static cloud-config is still mounted");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The chart's externalgrpc values.

/// A value as Go templates print it.
fn printed(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Go templates' truth: empty strings, false, 0, null and empty collections are false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn lookup(values: &Value, reference: &str) -> Value {
    let path = reference.strip_prefix(".Values.").unwrap_or_else(|| panic!("{reference}: not a .Values reference"));
    let pointer = format!("/{}", path.replace('.', "/"));
    values.pointer(&pointer).cloned().unwrap_or_else(|| panic!(".Values.{path} is not in the values"))
}

/// One output action of the cloud-config block: `.Values.a.b`, `.` (inside `with`) or
/// `required "message" .Values.a.b`, piped through `quote` or not.
fn evaluate(action: &str, values: &Value, dot: Option<&Value>) -> Result<String, String> {
    let mut stages = action.split('|').map(str::trim);
    let head = stages.next().unwrap();
    let value = if head == "." {
        dot.cloned().expect("`.` outside `with`")
    } else if let Some(rest) = head.strip_prefix("required ") {
        let (message, reference) = rest.rsplit_once(' ').expect("required \"message\" .Values.x");
        let value = lookup(values, reference);
        if !truthy(&value) {
            return Err(message.trim().trim_matches('"').to_string());
        }
        value
    } else {
        lookup(values, head)
    };
    let mut text = printed(&value);
    for stage in stages {
        assert_eq!(stage, "quote", "{action}: a function this check does not know");
        text = format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    }
    Ok(text)
}

/// The cloud-config `templates/configmap.yaml` writes for `values` with cloudProvider:
/// externalgrpc, rendered from the template itself: the lines under `cloud-config.yaml: |` of
/// its externalgrpc branch, with the constructs they use (`if` / `with` on a value, `end`, the
/// actions of [`evaluate`]). Anything else fails the test, so the template cannot grow a
/// construct this would misread. An error is a `required` value's message.
fn chart_cloud_config(values: &Value) -> Result<String, String> {
    let text = template("configmap.yaml");
    let branch = text
        .split("{{- else if eq .Values.cloudProvider \"externalgrpc\" }}\n")
        .nth(1)
        .expect("templates/configmap.yaml has an externalgrpc branch");
    let body = branch.split("  cloud-config.yaml: |\n").nth(1).expect("the branch writes cloud-config.yaml");
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.last(), Some(&"{{- end }}"), "the branch ends the file");
    let mut rendered = String::new();
    let mut blocks: Vec<(bool, Option<Value>)> = Vec::new();
    for line in &lines[..lines.len() - 1] {
        let content = line.strip_prefix("    ").unwrap_or_else(|| panic!("{line:?}: the block is indented by 4"));
        if let Some(control) = content.trim().strip_prefix("{{-").and_then(|c| c.strip_suffix("}}")) {
            let control = control.trim();
            if control == "end" {
                blocks.pop().expect("an end without a block");
                continue;
            }
            let (keyword, reference) = control.split_once(' ').unwrap_or_else(|| panic!("{control}: unsupported"));
            let value = lookup(values, reference);
            match keyword {
                "if" => blocks.push((truthy(&value), None)),
                "with" => blocks.push((truthy(&value), Some(value))),
                other => panic!("{other}: a construct this check does not know"),
            }
            continue;
        }
        if !blocks.iter().all(|(on, _)| *on) {
            continue;
        }
        let dot = blocks.iter().rev().find_map(|(_, dot)| dot.as_ref());
        let mut rest = content;
        while let Some(start) = rest.find("{{") {
            rendered.push_str(&rest[..start]);
            let end = start + rest[start..].find("}}").expect("a closed action");
            rendered.push_str(&evaluate(rest[start + 2..end].trim(), values, dot)?);
            rest = &rest[end + 2..];
        }
        rendered.push_str(rest);
        rendered.push('\n');
    }
    assert!(blocks.is_empty(), "unbalanced blocks in the cloud-config");
    Ok(rendered)
}

/// The chart's default values switched to `cloudProvider: externalgrpc`, as deploy/README.md
/// shows (its Helm command's `--set`s, applied here).
fn chart_values() -> Value {
    let readme = read("deploy/README.md");
    let command = readme
        .split("```")
        .filter(|block| block.starts_with("sh\n"))
        .flat_map(|block| block.split("\n\n"))
        .map(|command| command.replace("\\\n", " "))
        .flat_map(|lines| lines.lines().map(String::from).collect::<Vec<_>>())
        .find(|line| line.starts_with("helm install") && line.contains("cloudProvider=externalgrpc"))
        .expect("deploy/README.md shows the helm install of cloudProvider: externalgrpc");
    let mut values = values();
    let words: Vec<&str> = command.split_whitespace().collect();
    for pair in words.windows(2) {
        let (set, json) = match pair[0] {
            "--set" => (pair[1], false),
            "--set-json" => (pair[1].trim_matches('\''), true),
            _ => continue,
        };
        let (key, value) = set.split_once('=').unwrap_or_else(|| panic!("{set}: not key=value"));
        let value: Value = if json { serde_json::from_str(value).unwrap() } else { value.into() };
        *values.pointer_mut(&format!("/{}", key.replace('.', "/"))).unwrap_or_else(|| panic!("{key}: no such value")) =
            value;
    }
    values
}

/// The directory the chart mounts `externalgrpc.tlsSecret` at.
fn chart_tls_mount() -> String {
    let deployment = template("deployment.yaml");
    let mount = deployment
        .split("        - name: externalgrpc-tls\n          mountPath: ")
        .nth(1)
        .expect("templates/deployment.yaml mounts externalgrpc-tls");
    mount.lines().next().unwrap().to_string()
}

#[test]
fn chart_externalgrpc_values_write_the_cloud_config_and_mount_the_client_tls_secret() {
    let defaults = values();
    for key in ["address", "grpcTimeout", "tlsSecret"] {
        assert_eq!(defaults["externalgrpc"][key], "", "externalgrpc.{key}: nothing is assumed");
    }
    let values = chart_values();
    assert_eq!(values["cloudProvider"], "externalgrpc");
    assert_eq!(values["cloudConfig"], "", "the template fails with a cloudConfig");
    assert_eq!(values["nodeGroups"], json!([]), "the template fails with nodeGroups");
    assert_eq!(values["externalgrpc"]["tlsSecret"], CLIENT_TLS_SECRET, "the overlay's Secret");

    // The flags: the template passes --cloud-config for externalgrpc (rendered_args knows the
    // other providers' lines).
    let deployment = template("deployment.yaml");
    let line = format!(
        "        {{{{- if eq .Values.cloudProvider \"externalgrpc\" }}}}\n        - --cloud-config={CLOUD_CONFIG_MOUNT}/cloud-config.yaml\n        {{{{- end }}}}\n"
    );
    assert!(deployment.contains(&line), "templates/deployment.yaml passes --cloud-config for externalgrpc");
    let mut args = rendered_args(&values, NAMESPACE);
    args.insert(1, format!("--cloud-config={CLOUD_CONFIG_MOUNT}/cloud-config.yaml"));
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("the chart's externalgrpc args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "externalgrpc");
    assert!(run.flags.nodes.is_empty());
    for guard in [
        "{{- if and (eq .Values.cloudProvider \"externalgrpc\") .Values.cloudConfig }}\n{{- fail ",
        "{{- if and (eq .Values.cloudProvider \"externalgrpc\") .Values.nodeGroups }}\n{{- fail ",
    ] {
        assert!(deployment.contains(guard), "templates/deployment.yaml refuses what the provider would: {guard}");
    }
    assert!(deployment.contains("checksum/externalgrpc: {{ toJson .Values.externalgrpc | sha256sum }}"));

    // The ConfigMap and the client Secret are mounted where the cloud-config says.
    for condition in [
        "{{- if or .Values.cloudConfig (eq .Values.cloudProvider \"externalgrpc\") }}\n        - name: cloud-config\n          mountPath: /etc/cluster-autoscaler\n",
        "{{- if or .Values.cloudConfig (eq .Values.cloudProvider \"externalgrpc\") }}\n      - name: cloud-config\n        configMap:\n",
    ] {
        assert!(deployment.contains(condition), "the cloud-config is mounted for externalgrpc: {condition}");
    }
    let tls = "{{- if and (eq .Values.cloudProvider \"externalgrpc\") .Values.externalgrpc.tlsSecret }}\n";
    assert!(deployment.contains(&format!(
        "{tls}        - name: externalgrpc-tls\n          mountPath: {TLS_MOUNT}\n          readOnly: true\n"
    )));
    assert!(deployment.contains(&format!(
        "{tls}      - name: externalgrpc-tls\n        secret:\n          secretName: {{{{ .Values.externalgrpc.tlsSecret }}}}\n"
    )));
    assert_eq!(chart_tls_mount(), TLS_MOUNT, "the overlay's mount");

    let config = yaml_value(&chart_cloud_config(&values).unwrap(), "the chart's cloud-config");
    assert_eq!(config["address"], values["externalgrpc"]["address"]);
    assert_eq!(config["grpc_timeout"], values["externalgrpc"]["grpcTimeout"]);
    for (field, key) in CLIENT_TLS_FILES {
        assert_eq!(config[field], format!("{TLS_MOUNT}/{key}"), "{field}: the key {key} of the mounted Secret");
    }
    // The overlay writes the same file for the same settings.
    let (_, overlay_config) = autoscaler_cloud_config(&build_overlay());
    assert_eq!(config, overlay_config, "the chart's cloud-config for the README's values and the overlay's");

    // Plaintext without tlsSecret; upstream's default timeout without grpcTimeout; the address
    // is required, and quoted (an IPv6 one would be a YAML list otherwise).
    let mut plain = values.clone();
    plain["externalgrpc"]["tlsSecret"] = "".into();
    plain["externalgrpc"]["grpcTimeout"] = "".into();
    plain["externalgrpc"]["address"] = "[fd00::1]:8086".into();
    let text = chart_cloud_config(&plain).unwrap();
    assert_eq!(yaml_value(&text, "plaintext"), json!({"address": "[fd00::1]:8086"}));
    build_provider(&text, &run.flags).unwrap_or_else(|e| panic!("the chart's plaintext cloud-config: {e}"));
    plain["externalgrpc"]["address"] = "".into();
    let error = chart_cloud_config(&plain).unwrap_err();
    assert!(error.contains("externalgrpc.address is required"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// deploy/README.md: the cert-manager way to the Secrets.

#[test]
fn deploy_readme_documents_the_overlay_the_chart_and_cert_manager_certificates_for_both_secrets() {
    let readme = read("deploy/README.md");
    let section =
        readme.split("### With a provider service (`--cloud-provider=externalgrpc`)").nth(1).expect("the section");
    let section = section.split("\n## ").next().unwrap().split("\n### ").next().unwrap();
    assert!(section.contains("kubectl apply -k deploy/externalgrpc"));
    for name in [CLIENT_TLS_SECRET, SERVER_TLS_SECRET] {
        assert!(section.contains(name), "the section names {name}");
    }
    let documents: Vec<Value> = section
        .split("```yaml\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .flat_map(|block| serde_saphyr::from_multiple::<Value>(block).expect("the README's YAML parses"))
        .collect();
    let of_kind = |kind: &str| documents.iter().filter(|d| d["kind"] == kind).collect::<Vec<_>>();
    let certificates = of_kind("Certificate");
    let certificate = |secret: &str| {
        *certificates
            .iter()
            .find(|c| c["spec"]["secretName"] == secret)
            .unwrap_or_else(|| panic!("no Certificate writes the Secret {secret}"))
    };
    let (_, config) = autoscaler_cloud_config(&build_overlay());
    let host = config["address"].as_str().unwrap().rsplit_once(':').unwrap().0;
    let server = certificate(SERVER_TLS_SECRET);
    assert!(server["spec"]["dnsNames"].as_array().unwrap().iter().any(|n| n == host), "the server names {host}");
    assert!(server["spec"]["usages"].as_array().unwrap().iter().any(|u| u == "server auth"));
    let client = certificate(CLIENT_TLS_SECRET);
    assert!(client["spec"]["usages"].as_array().unwrap().iter().any(|u| u == "client auth"));
    // Both from one CA Issuer (cert-manager writes ca.crt for those), whose CA is a Certificate.
    let issuer_name = &server["spec"]["issuerRef"]["name"];
    assert_eq!(&client["spec"]["issuerRef"]["name"], issuer_name, "one issuer for both");
    let issuer = of_kind("Issuer").into_iter().find(|i| &i["metadata"]["name"] == issuer_name).expect("the Issuer");
    let ca_secret = &issuer["spec"]["ca"]["secretName"];
    let ca = certificates.iter().find(|c| &c["spec"]["secretName"] == ca_secret).expect("the CA's Certificate");
    assert_eq!(ca["spec"]["isCA"], true);
    for document in &documents {
        assert_eq!(document["metadata"]["namespace"], NAMESPACE, "{}", document["metadata"]["name"]);
    }
}

// ---------------------------------------------------------------------------------------------
// End to end: the processes, with the overlay's arguments, files and certificates.

/// A CA and, signed by it, a server certificate for `server_names` and a client certificate:
/// (server Secret, client Secret) with the documented keys.
fn certificates(server_names: &[String]) -> [BTreeMap<&'static str, String>; 2] {
    let (ca_pem, issuer) = certificate_authority("externalgrpc test CA");
    let server = leaf(&issuer, server_names, ExtendedKeyUsagePurpose::ServerAuth, "externalgrpc-provider");
    let client = leaf(&issuer, &[], ExtendedKeyUsagePurpose::ClientAuth, "cluster-autoscaler");
    [server, client]
        .map(|(cert, key)| BTreeMap::from([("tls.crt", cert), ("tls.key", key), ("ca.crt", ca_pem.clone())]))
}

fn certificate_authority(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let pem = params.self_signed(&key).unwrap().pem();
    (pem, Issuer::new(params, key))
}

fn leaf(issuer: &Issuer<'_, KeyPair>, names: &[String], usage: ExtendedKeyUsagePurpose, cn: &str) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.to_vec()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    (params.signed_by(&key, issuer).unwrap().pem(), key.serialize_pem())
}

/// Builds the autoscaler's externalgrpc provider from a cloud-config text, as the controller
/// does (the flags' other settings included); no connection is made.
fn build_provider(
    cloud_config: &str,
    flags: &autoscaler::config::DecisionFlags,
) -> Result<Arc<dyn CloudProvider>, String> {
    let file = tempfile::Builder::new().prefix("deploy-externalgrpc-").suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), cloud_config).unwrap();
    let mut flags = flags.clone();
    flags.cloud_config = file.path().display().to_string();
    let options = autoscaler::config::AutoscalingOptions::from_flags(&flags).unwrap();
    let inputs = autoscaler::compose::ProviderInputs {
        purpose: Purpose::Check,
        nodes: Vec::new(),
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        kube: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let providers = autoscaler::compose::builtin_providers();
    let built = runtime.block_on(autoscaler::compose::compose(&providers, &flags, &options, inputs, None));
    drop(file);
    let (provider, _) = built.map_err(|e| e.to_string())?;
    assert_eq!(provider.name(), "externalgrpc");
    Ok(provider)
}

/// The node groups the provider lists after a refresh: (id, min, max, target size).
fn listed_groups(provider: &Arc<dyn CloudProvider>) -> Result<Vec<(String, usize, usize, usize)>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(async {
        provider.refresh().await.map_err(|e| e.to_string())?;
        let mut groups = Vec::new();
        for group in provider.node_groups().await {
            let size = group.target_size().await.map_err(|e| e.to_string())?;
            groups.push((group.id().to_string(), group.min_size(), group.max_size(), size));
        }
        groups.sort();
        Ok(groups)
    })
}

/// A container's `--name=/path` arguments with the paths on the host.
fn host_args(args: &[String], files: &PodFiles) -> Vec<String> {
    args.iter()
        .map(|arg| match arg.split_once("=/") {
            Some((flag, path)) => format!("{flag}={}", files.host(&format!("/{path}"))),
            None => arg.clone(),
        })
        .collect()
}

/// A cloud-config with the files on the host and the address of the running server.
fn host_cloud_config(config: &Value, address: &str, files: &PodFiles) -> String {
    let mut config = config.clone();
    config["address"] = address.into();
    for (field, _) in CLIENT_TLS_FILES {
        if let Some(path) = config[field].as_str().map(String::from) {
            config[field] = files.host(&path).into();
        }
    }
    config.to_string()
}

#[test]
fn the_overlays_provider_serves_the_autoscaler_over_mutual_tls_with_the_documented_secrets() {
    let built = build_overlay();
    let dir = workdir("deploy-externalgrpc");
    let (_, config) = autoscaler_cloud_config(&built);
    let host = config["address"].as_str().unwrap().rsplit_once(':').unwrap().0.to_string();
    // The server's certificate names the Service (as documented) and the loopback address the
    // test reaches it at.
    let [server_secret, client_secret] = certificates(&[host, "127.0.0.1".into()]);
    let secrets = BTreeMap::from([(SERVER_TLS_SECRET, server_secret), (CLIENT_TLS_SECRET, client_secret)]);

    // The stand-in IaaS the example's configuration names, and the provider's configuration
    // pointed at it (the only change to the overlay's ConfigMap).
    let iaas_args = [
        "--listen".to_string(),
        "127.0.0.1:0".into(),
        "--config".into(),
        repo_root().join(EXAMPLE_IAAS).display().to_string(),
    ];
    let iaas = Process::start(&example_binary("iaas-api"), &iaas_args, &[], &dir, "iaas-api");
    let provider = named(&built.deployments, PROVIDER);
    let container = only_container(provider);
    let flags = flag_map(container.args.as_deref().unwrap_or_default());
    let Source::ConfigMap { name, key } = source_of(pod_spec(provider), container, &flags["cloud-config"]) else {
        panic!("the provider's --cloud-config is not a ConfigMap")
    };
    let mut provider_config = yaml_value(&config_map_text(&built, &name, &key), "the provider's cloud-config");
    provider_config["endpoint"] = iaas.address.clone().into();
    let mut config_maps = built.config_maps.clone();
    for config_map in config_maps.iter_mut().filter(|c| c.metadata.name.as_deref() == Some(name.as_str())) {
        config_map.data.as_mut().unwrap().insert(key.clone(), provider_config.to_string());
    }

    // The provider with the overlay's arguments (listening on a free loopback port instead).
    let provider_files =
        PodFiles::lay_out(&dir.join("provider"), pod_spec(provider), container, &config_maps, &secrets);
    let mut args = host_args(container.args.as_deref().unwrap_or_default(), &provider_files);
    for arg in args.iter_mut().filter(|a| a.starts_with("--listen=")) {
        *arg = "--listen=127.0.0.1:0".into();
    }
    let server =
        Process::start(&example_binary("private-iaas-grpc"), &args, &[("RUST_LOG", "info")], &dir, "private-iaas-grpc");

    // The autoscaler's provider from the overlay's cloud-config and mounts lists the pools.
    let autoscaler = named(&built.deployments, AUTOSCALER);
    let autoscaler_args = autoscaler_container(autoscaler).args.clone().unwrap_or_default();
    let run = parse_flags(&autoscaler_args).unwrap();
    let autoscaler_files = PodFiles::lay_out(
        &dir.join("autoscaler"),
        pod_spec(autoscaler),
        autoscaler_container(autoscaler),
        &config_maps,
        &secrets,
    );
    autoscaler_files.host(&run.flags.cloud_config);
    let expected: Vec<(String, usize, usize, usize)> = {
        let mut groups: Vec<_> = provider_config["nodeGroups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let size = |k: &str| g[k].as_u64().unwrap_or(0) as usize;
                (g["pool"].as_str().unwrap().to_string(), size("minSize"), size("maxSize"), 0)
            })
            .collect();
        groups.sort();
        groups
    };
    assert!(!expected.is_empty());
    let overlay_client = build_provider(&host_cloud_config(&config, &server.address, &autoscaler_files), &run.flags)
        .unwrap_or_else(|e| panic!("the overlay's cloud-config: {e}"));
    assert_eq!(listed_groups(&overlay_client).unwrap_or_else(|e| panic!("over mutual TLS: {e}")), expected);

    // The chart's cloud-config for the README's values, with the same Secret mounted.
    let chart_config = yaml_value(&chart_cloud_config(&chart_values()).unwrap(), "the chart's cloud-config");
    let chart_client =
        build_provider(&host_cloud_config(&chart_config, &server.address, &autoscaler_files), &run.flags)
            .unwrap_or_else(|e| panic!("the chart's cloud-config: {e}"));
    assert_eq!(listed_groups(&chart_client).unwrap_or_else(|e| panic!("the chart's, over mutual TLS: {e}")), expected);

    // Mutual: a client certificate of another CA is refused, and so is a client without TLS.
    let (_, other_issuer) = certificate_authority("another CA");
    let (cert, key) = leaf(&other_issuer, &[], ExtendedKeyUsagePurpose::ClientAuth, "intruder");
    let mut intruder: Value =
        serde_json::from_str(&host_cloud_config(&config, &server.address, &autoscaler_files)).unwrap();
    for (field, text) in [("cert", cert), ("key", key)] {
        let file = dir.join(format!("intruder-{field}.pem"));
        std::fs::write(&file, text).unwrap();
        intruder[field] = file.display().to_string().into();
    }
    let intruder = build_provider(&intruder.to_string(), &run.flags).unwrap();
    assert!(listed_groups(&intruder).is_err(), "a client certificate of another CA was accepted");
    let plaintext =
        build_provider(&json!({"address": server.address, "grpc_timeout": "5s"}).to_string(), &run.flags).unwrap();
    assert!(listed_groups(&plaintext).is_err(), "a plaintext client was served");
}
