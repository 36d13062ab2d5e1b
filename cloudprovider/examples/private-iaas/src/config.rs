//! The provider's `--cloud-config` file.
//!
//! ```yaml
//! endpoint: https://iaas.example.internal:8774   # the IaaS API, http or https
//! timeout: 10s                  # per request (a Go duration); default 10s
//! caFile: /etc/private-iaas/ca.pem   # optional: extra CA certificates (PEM) for https; a
//!                                    # relative path is relative to this file's directory
//! gpuLabel: nvidia.com/gpu.product   # the node label carrying the GPU type (the default)
//! nodeGroups:                   # one node group per pool
//! - pool: compute               # the IaaS pool; also the node group's id
//!   minSize: 0                  # default 0
//!   maxSize: 12
//!   flavor: m1.xlarge           # what a VM of the pool is made of (and what templates say)
//!   image: ubuntu-24.04-kube-1.33
//!   labels: {pool: compute}     # labels the pool's kubelets register with
//!   taints: [{key: dedicated, value: batch, effect: NoSchedule}]   # and taints
//! ```
//!
//! Every error names the file, the line and the field (`nodeGroups[1].maxSize`). The pools,
//! flavors and images named here are checked against the IaaS when the provider is built for
//! `plan` or the controller, not for a configuration check (which does no I/O).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cloudprovider::DEFAULT_GPU_LABEL;
use cloudprovider::duration::parse_go_duration;
use cloudprovider::yaml::{FileError, line_of};
use k8s_openapi::api::core::v1::Taint;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde::Deserialize;
use serde_saphyr::Spanned;

/// The label naming the flavor, as upstream's providers name the instance type.
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

/// VM names are `<pool>-<8 characters>` and must stay DNS labels (63 characters).
const MAX_POOL_NAME: usize = 54;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct ProviderConfig {
    /// The file the configuration came from, for error messages.
    pub file: String,
    /// The IaaS API's base URL, without a trailing `/`.
    pub endpoint: String,
    pub timeout: Duration,
    /// Extra trusted CA certificates (from `caFile`).
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub gpu_label: String,
    pub node_groups: Vec<PoolGroupConfig>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PoolGroupConfig {
    pub pool: String,
    pub min_size: usize,
    pub max_size: usize,
    pub flavor: String,
    pub image: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Where `pool`, `flavor` and `image` were written, for errors found against the IaaS.
    pub lines: FieldLines,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldLines {
    pub pool: Option<u64>,
    pub flavor: Option<u64>,
    pub image: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--cloud-config={file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error(transparent)]
    Invalid(#[from] FileError),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConfig {
    endpoint: Spanned<String>,
    timeout: Option<Spanned<String>>,
    ca_file: Option<Spanned<String>>,
    gpu_label: Option<Spanned<String>>,
    node_groups: Spanned<Vec<RawGroup>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGroup {
    pool: Spanned<String>,
    min_size: Option<Spanned<usize>>,
    max_size: Spanned<usize>,
    flavor: Spanned<String>,
    image: Spanned<String>,
    labels: Option<Spanned<BTreeMap<String, String>>>,
    taints: Option<Spanned<Vec<Taint>>>,
}

const SPANNED_KEYS: &[&str] = &[
    "endpoint",
    "timeout",
    "caFile",
    "gpuLabel",
    "nodeGroups",
    "pool",
    "minSize",
    "maxSize",
    "flavor",
    "image",
    "labels",
    "taints",
];

impl ProviderConfig {
    /// Reads `path` (and the `caFile` it names). Files only: no network.
    pub fn load(path: &Path) -> Result<ProviderConfig, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { file: file.clone(), source })?;
        Ok(ProviderConfig::parse(&text, &file, path.parent())?)
    }

    /// Reads the text of `file`; a relative `caFile` is looked up in `dir`.
    pub fn parse(text: &str, file: &str, dir: Option<&Path>) -> Result<ProviderConfig, FileError> {
        let raw: RawConfig = cloudprovider::yaml::from_str(text, file, SPANNED_KEYS)?;
        let err = |field: String, line: Option<u64>, message: String| FileError::new(file, field, line, message);

        let endpoint = raw.endpoint.value.trim_end_matches('/').to_string();
        check_endpoint(&endpoint).map_err(|m| err("endpoint".into(), line_of(&raw.endpoint), m))?;
        let timeout = match &raw.timeout {
            None => DEFAULT_TIMEOUT,
            Some(t) => match parse_go_duration(&t.value) {
                Ok(d) if d.is_zero() => return Err(err("timeout".into(), line_of(t), "must be more than 0".into())),
                Ok(d) => d,
                Err(m) => return Err(err("timeout".into(), line_of(t), m)),
            },
        };
        let extra_roots = match &raw.ca_file {
            None => Vec::new(),
            Some(ca) => read_certificates(&ca.value, dir).map_err(|m| err("caFile".into(), line_of(ca), m))?,
        };
        let gpu_label = match &raw.gpu_label {
            None => DEFAULT_GPU_LABEL.to_string(),
            Some(l) if l.value.is_empty() => {
                return Err(err("gpuLabel".into(), line_of(l), "must not be empty".into()));
            }
            Some(l) => l.value.clone(),
        };
        if raw.node_groups.value.is_empty() {
            return Err(err("nodeGroups".into(), line_of(&raw.node_groups), "needs at least one node group".into()));
        }

        let mut node_groups: Vec<PoolGroupConfig> = Vec::new();
        for (i, g) in raw.node_groups.value.into_iter().enumerate() {
            let field = |name: &str| format!("nodeGroups[{i}].{name}");
            let pool = &g.pool.value;
            if !crate::iaas::is_dns_label(pool) || pool.len() > MAX_POOL_NAME {
                return Err(err(
                    field("pool"),
                    line_of(&g.pool),
                    format!("{pool:?} must be a DNS label of at most {MAX_POOL_NAME} characters"),
                ));
            }
            if let Some(first) = node_groups.iter().position(|other| &other.pool == pool) {
                return Err(err(
                    field("pool"),
                    line_of(&g.pool),
                    format!("pool {pool:?} is already nodeGroups[{first}]"),
                ));
            }
            let min_size = g.min_size.as_ref().map_or(0, |m| m.value);
            if min_size > g.max_size.value {
                let line = g.min_size.as_ref().map_or(line_of(&g.max_size), line_of);
                return Err(err(
                    field("minSize"),
                    line,
                    format!("minSize {min_size} is greater than maxSize {}", g.max_size.value),
                ));
            }
            for (name, value) in [("flavor", &g.flavor), ("image", &g.image)] {
                if value.value.is_empty() {
                    return Err(err(field(name), line_of(value), "must not be empty".into()));
                }
            }
            let labels = g.labels.as_ref().map(|l| l.value.clone()).unwrap_or_default();
            for key in labels.keys() {
                if key.is_empty() || key == INSTANCE_TYPE_LABEL || *key == gpu_label {
                    let line = g.labels.as_ref().and_then(line_of);
                    return Err(err(
                        format!("{}.{key}", field("labels")),
                        line,
                        "empty, or set by the provider from the flavor".into(),
                    ));
                }
            }
            let taints = g.taints.as_ref().map(|t| t.value.clone()).unwrap_or_default();
            for (t, taint) in taints.iter().enumerate() {
                let line = g.taints.as_ref().and_then(line_of);
                if taint.key.is_empty() {
                    return Err(err(format!("{}[{t}].key", field("taints")), line, "must not be empty".into()));
                }
                if !matches!(taint.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return Err(err(
                        format!("{}[{t}].effect", field("taints")),
                        line,
                        format!("{:?}: expected NoSchedule, PreferNoSchedule or NoExecute", taint.effect),
                    ));
                }
            }
            node_groups.push(PoolGroupConfig {
                pool: pool.clone(),
                min_size,
                max_size: g.max_size.value,
                flavor: g.flavor.value.clone(),
                image: g.image.value.clone(),
                labels,
                taints,
                lines: FieldLines { pool: line_of(&g.pool), flavor: line_of(&g.flavor), image: line_of(&g.image) },
            });
        }
        Ok(ProviderConfig { file: file.to_string(), endpoint, timeout, extra_roots, gpu_label, node_groups })
    }
}

/// An absolute http(s) URL with a host, no query.
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let uri: http::Uri = endpoint.parse().map_err(|e| format!("{endpoint:?} is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(format!("{endpoint:?}: expected an http:// or https:// URL"));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{endpoint:?}: the URL has no host"));
    }
    if uri.query().is_some() {
        return Err(format!("{endpoint:?}: the URL must not have a query"));
    }
    Ok(())
}

fn read_certificates(path: &str, dir: Option<&Path>) -> Result<Vec<CertificateDer<'static>>, String> {
    let path = match dir {
        Some(dir) if Path::new(path).is_relative() => dir.join(path),
        _ => Path::new(path).to_path_buf(),
    };
    let pem = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{}: no PEM certificate in the file", path.display()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "endpoint: http://127.0.0.1:8774/
nodeGroups:
- pool: compute
  maxSize: 12
  flavor: m1.xlarge
  image: ubuntu
  labels: {pool: compute}
  taints: [{key: dedicated, value: batch, effect: NoSchedule}]
";

    fn parse(text: &str) -> Result<ProviderConfig, FileError> {
        ProviderConfig::parse(text, "cloud.yaml", None)
    }

    #[test]
    fn a_config_reads_with_defaults() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.endpoint, "http://127.0.0.1:8774");
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert_eq!(config.gpu_label, DEFAULT_GPU_LABEL);
        let group = &config.node_groups[0];
        assert_eq!((group.pool.as_str(), group.min_size, group.max_size), ("compute", 0, 12));
        assert_eq!(group.taints[0].effect, "NoSchedule");
        assert_eq!(group.lines, FieldLines { pool: Some(3), flavor: Some(5), image: Some(6) });
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        let cases = [
            (GOOD.replace("maxSize: 12", "maxSize: 12\n  minSize: 13"), "nodeGroups[0].minSize", 5),
            (GOOD.replace("maxSize: 12", "maxSize: -1"), "nodeGroups[0].maxSize", 4),
            (GOOD.replace("maxSize: 12", "maxSise: 12"), "nodeGroups[0].maxSise", 4),
            (GOOD.replace("http://127.0.0.1:8774/", "ftp://x"), "endpoint", 1),
            (GOOD.replace("pool: compute\n", "pool: Compute\n"), "nodeGroups[0].pool", 3),
            (GOOD.replace("NoSchedule", "Never"), "nodeGroups[0].taints[0].effect", 8),
            (format!("timeout: 10\n{GOOD}"), "timeout", 1),
        ];
        for (text, field, line) in cases {
            let error = parse(&text).unwrap_err();
            assert_eq!((error.field.as_str(), error.line), (field, Some(line)), "{error}");
            assert!(error.to_string().starts_with(&format!("cloud.yaml:{line}: ")), "{error}");
        }
    }

    #[test]
    fn labels_the_provider_sets_are_refused() {
        let text = GOOD.replace("{pool: compute}", "{node.kubernetes.io/instance-type: big}");
        let error = parse(&text).unwrap_err();
        assert_eq!(error.field, "nodeGroups[0].labels.node.kubernetes.io/instance-type");
    }

    #[test]
    fn a_missing_ca_file_is_a_config_error() {
        let error = parse(&format!("caFile: /nonexistent/ca.pem\n{GOOD}")).unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("caFile", Some(1)));
    }
}
