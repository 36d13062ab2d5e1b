//! The provider's settings: upstream's flags (`--node-group-auto-discovery`, `--cloud-config`)
//! and environment variables (`CAPI_GROUP`, `CAPI_VERSION`, `CAPI_SCALE_ZERO_DEFAULT_ARCH`),
//! and which cluster is the management cluster.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::discovery::Discovery;
use crate::error::ConfigError;
use crate::keys::{DEFAULT_GROUP, Keys};
use crate::template::{DEFAULT_ARCH, KNOWN_ARCHS};

/// Overrides the Cluster API group (and with it the group-prefixed annotation keys).
pub const GROUP_ENV: &str = "CAPI_GROUP";
/// Pins the Cluster API version instead of the group's preferred one.
pub const VERSION_ENV: &str = "CAPI_VERSION";
/// The architecture of scale-from-zero templates.
pub const ARCH_ENV: &str = "CAPI_SCALE_ZERO_DEFAULT_ARCH";

/// Settings the provider works with, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub keys: Keys,
    /// `CAPI_VERSION`; `None`: the group's preferred version, found by discovery.
    pub version: Option<String>,
    pub default_arch: String,
    pub discovery: Discovery,
    /// Refuse every change (`plan`, configuration checks).
    pub read_only: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            keys: Keys::default(),
            version: None,
            default_arch: DEFAULT_ARCH.to_string(),
            discovery: Discovery::default(),
            read_only: false,
        }
    }
}

impl Settings {
    /// The settings from the flags and `env` (the process environment, or a test's).
    pub fn new(
        auto_discovery: &[String],
        read_only: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let group = env(GROUP_ENV).filter(|g| !g.is_empty()).unwrap_or_else(|| DEFAULT_GROUP.to_string());
        let default_arch = match env(ARCH_ENV).filter(|a| !a.is_empty()) {
            None => DEFAULT_ARCH.to_string(),
            Some(arch) if KNOWN_ARCHS.contains(&arch.as_str()) => arch,
            // As upstream: an unknown architecture falls back to amd64, with an error logged.
            Some(arch) => {
                tracing::error!(variable = ARCH_ENV, value = %arch, known = ?KNOWN_ARCHS, "unrecognized architecture, falling back to {DEFAULT_ARCH}");
                DEFAULT_ARCH.to_string()
            }
        };
        Ok(Settings {
            keys: Keys::new(&group),
            version: env(VERSION_ENV).filter(|v| !v.is_empty()),
            default_arch,
            discovery: Discovery::parse(auto_discovery)?,
            read_only,
        })
    }
}

/// Where the management cluster is (upstream's `BuildClusterAPI`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManagementCluster {
    /// `--cloud-config`: a kubeconfig of the management cluster.
    Kubeconfig(PathBuf),
    /// The workload cluster's own client (`--kubeconfig` or in-cluster): both are one cluster,
    /// or the workload cluster's credentials also reach the management cluster.
    WorkloadClient,
    /// `--clusterapi-cloud-config-authoritative` without `--cloud-config`: the in-cluster
    /// configuration, never `--kubeconfig` (the autoscaler runs in the management cluster and
    /// reaches the workload cluster through `--kubeconfig`).
    InCluster,
}

/// Upstream's choice: `--cloud-config` when given; else, unless the cloud config is
/// authoritative, whatever `--kubeconfig` reaches; else the in-cluster configuration.
pub fn management_cluster(cloud_config: Option<&Path>, authoritative: bool) -> ManagementCluster {
    match (cloud_config, authoritative) {
        (Some(path), _) => ManagementCluster::Kubeconfig(path.to_path_buf()),
        (None, false) => ManagementCluster::WorkloadClient,
        (None, true) => ManagementCluster::InCluster,
    }
}

/// Reads and checks a management kubeconfig (its current context must resolve); no I/O but the
/// file.
pub async fn load_kubeconfig(path: &Path) -> Result<kube::Config, ConfigError> {
    let fail = |message: String| ConfigError::Kubeconfig { path: path.to_path_buf(), message };
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| fail(format!("not a readable kubeconfig: {e}")))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environment_moves_the_group_pins_the_version_and_sets_the_architecture() {
        let settings = Settings::new(&[], false, env(&[])).unwrap();
        assert_eq!(settings.keys, Keys::default());
        assert_eq!((settings.version, settings.default_arch.as_str()), (None, "amd64"));
        let settings =
            Settings::new(&[], true, env(&[(GROUP_ENV, "test.k8s.io"), (VERSION_ENV, "v1beta2"), (ARCH_ENV, "arm64")]))
                .unwrap();
        assert_eq!(settings.keys.delete_machine, "test.k8s.io/delete-machine");
        assert_eq!(settings.version.as_deref(), Some("v1beta2"));
        assert_eq!(settings.default_arch, "arm64");
        assert!(settings.read_only);
        assert_eq!(Settings::new(&[], false, env(&[(ARCH_ENV, "mips")])).unwrap().default_arch, "amd64");
        assert!(Settings::new(&["asg:tag=x".into()], false, env(&[])).is_err());
    }

    #[test]
    fn the_management_cluster_is_chosen_as_upstream() {
        let path = Path::new("/etc/mgmt/kubeconfig");
        assert_eq!(management_cluster(Some(path), false), ManagementCluster::Kubeconfig(path.into()));
        assert_eq!(management_cluster(Some(path), true), ManagementCluster::Kubeconfig(path.into()));
        assert_eq!(management_cluster(None, false), ManagementCluster::WorkloadClient);
        assert_eq!(management_cluster(None, true), ManagementCluster::InCluster);
    }

    #[tokio::test]
    async fn a_bad_kubeconfig_names_the_file() {
        let dir = tempfile::Builder::new().prefix("capi-config-").tempdir().unwrap();
        let path = dir.path().join("mgmt.kubeconfig");
        std::fs::write(&path, "clusters: [\n").unwrap();
        let error = load_kubeconfig(&path).await.unwrap_err().to_string();
        assert!(error.starts_with(&format!("--cloud-config {}: ", path.display())), "{error}");
        let error = load_kubeconfig(&dir.path().join("missing")).await.unwrap_err().to_string();
        assert!(error.contains("missing"), "{error}");
        std::fs::write(&path, "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n").unwrap();
        let error = load_kubeconfig(&path).await.unwrap_err().to_string();
        assert!(error.contains("nowhere"), "{error}");
    }
}
