//! The stand-in IaaS's configuration file.
//!
//! ```yaml
//! buildSeconds: 1          # how long a VM stays `building` before `active` (default 1)
//! deleteSeconds: 0         # how long a VM stays `deleting` before it is gone (default 0)
//! flavors:
//! - {name: m1.xlarge, vcpus: 8, memoryMiB: 16384, pricePerHour: 0.34}
//! - {name: g1.xlarge, vcpus: 4, memoryMiB: 16384, gpus: 1, gpuType: Tesla-T4, pricePerHour: 0.526}
//! images: [ubuntu-24.04-kube-1.33]
//! pools:
//! - {name: compute, quota: 12}
//! ```
//!
//! `buildSeconds: null` (or `deleteSeconds: null`) takes the clock out: VMs stay `building`
//! (`deleting`) until `POST /admin/settle` moves them on, so tests decide when a VM is up
//! instead of sleeping past a build time (see [`crate::iaas`]).

use std::path::Path;
use std::time::Duration;

use cloudprovider::yaml::{FileError, line_of};
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::api::Flavor;

#[derive(Clone, Debug, PartialEq)]
pub struct IaasConfig {
    /// How long a VM builds; `None`: until `POST /admin/settle`.
    pub build_time: Option<Duration>,
    /// How long a deletion takes; `None`: until `POST /admin/settle`.
    pub delete_time: Option<Duration>,
    pub flavors: Vec<Flavor>,
    pub images: Vec<String>,
    pub pools: Vec<PoolConfig>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    pub name: String,
    pub quota: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum IaasConfigError {
    #[error("{file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error(transparent)]
    Invalid(#[from] FileError),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConfig {
    /// Absent: the default; `null`: no clock (`Some(None)`).
    #[serde(default, deserialize_with = "present")]
    build_seconds: Option<Spanned<Option<f64>>>,
    #[serde(default, deserialize_with = "present")]
    delete_seconds: Option<Spanned<Option<f64>>>,
    flavors: Vec<RawFlavor>,
    images: Vec<Spanned<String>>,
    pools: Vec<RawPool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFlavor {
    name: Spanned<String>,
    vcpus: Spanned<u32>,
    #[serde(rename = "memoryMiB")]
    memory_mib: Spanned<u64>,
    #[serde(default)]
    gpus: u32,
    gpu_type: Option<String>,
    price_per_hour: Spanned<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    name: Spanned<String>,
    quota: u32,
}

/// A key that is present, even as `null` (serde reads a missing key as `None` through `default`).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Spanned<Option<f64>>>, D::Error> {
    Spanned::<Option<f64>>::deserialize(deserializer).map(Some)
}

const SPANNED_KEYS: &[&str] =
    &["buildSeconds", "deleteSeconds", "name", "vcpus", "memoryMiB", "pricePerHour", "images"];

impl IaasConfig {
    pub fn load(path: &Path) -> Result<IaasConfig, IaasConfigError> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| IaasConfigError::Read { file: file.clone(), source })?;
        Ok(IaasConfig::parse(&text, &file)?)
    }

    /// Reads the file's text; errors name `file`, the line and the field.
    pub fn parse(text: &str, file: &str) -> Result<IaasConfig, FileError> {
        let raw: RawConfig = cloudprovider::yaml::from_str(text, file, SPANNED_KEYS)?;
        let err = |field: String, line: Option<u64>, message: &str| FileError::new(file, field, line, message);
        let seconds = |value: &Option<Spanned<Option<f64>>>, field: &str, default: f64| match value {
            None => Ok(Some(Duration::from_secs_f64(default))),
            Some(Spanned { value: None, .. }) => Ok(None),
            Some(s @ Spanned { value: Some(seconds), .. }) => {
                Duration::try_from_secs_f64(*seconds).map(Some).map_err(|_| {
                    err(
                        field.to_string(),
                        line_of(s),
                        "must be a non-negative number of seconds, or null (until settled)",
                    )
                })
            }
        };
        let build_time = seconds(&raw.build_seconds, "buildSeconds", 1.0)?;
        let delete_time = seconds(&raw.delete_seconds, "deleteSeconds", 0.0)?;
        let mut flavors: Vec<Flavor> = Vec::new();
        for (i, f) in raw.flavors.into_iter().enumerate() {
            let field = |name: &str| format!("flavors[{i}].{name}");
            if f.name.value.is_empty() || flavors.iter().any(|other| other.name == f.name.value) {
                return Err(err(field("name"), line_of(&f.name), "must be a unique, non-empty name"));
            }
            if f.vcpus.value == 0 {
                return Err(err(field("vcpus"), line_of(&f.vcpus), "must be at least 1"));
            }
            if f.memory_mib.value == 0 {
                return Err(err(field("memoryMiB"), line_of(&f.memory_mib), "must be at least 1"));
            }
            if !f.price_per_hour.value.is_finite() || f.price_per_hour.value < 0.0 {
                return Err(err(field("pricePerHour"), line_of(&f.price_per_hour), "must be a non-negative number"));
            }
            flavors.push(Flavor {
                name: f.name.value,
                vcpus: f.vcpus.value,
                memory_mib: f.memory_mib.value,
                gpus: f.gpus,
                gpu_type: f.gpu_type,
                price_per_hour: f.price_per_hour.value,
            });
        }
        let mut images: Vec<String> = Vec::new();
        for (i, image) in raw.images.into_iter().enumerate() {
            if image.value.is_empty() || images.contains(&image.value) {
                return Err(err(format!("images[{i}]"), line_of(&image), "must be a unique, non-empty name"));
            }
            images.push(image.value);
        }
        let mut pools: Vec<PoolConfig> = Vec::new();
        for (i, p) in raw.pools.into_iter().enumerate() {
            if !crate::iaas::is_dns_label(&p.name.value) || pools.iter().any(|other| other.name == p.name.value) {
                return Err(err(
                    format!("pools[{i}].name"),
                    line_of(&p.name),
                    "must be a unique DNS label (lower-case letters, digits and '-')",
                ));
            }
            pools.push(PoolConfig { name: p.name.value, quota: p.quota });
        }
        Ok(IaasConfig { build_time, delete_time, flavors, images, pools })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "buildSeconds: 0.5
flavors:
- {name: m1.large, vcpus: 4, memoryMiB: 16384, pricePerHour: 0.19}
images: [ubuntu]
pools:
- {name: general, quota: 3}
";

    #[test]
    fn a_config_reads_with_defaults() {
        let config = IaasConfig::parse(GOOD, "iaas.yaml").unwrap();
        assert_eq!(config.build_time, Some(Duration::from_millis(500)));
        assert_eq!(config.delete_time, Some(Duration::ZERO));
        assert_eq!(config.flavors[0].gpus, 0);
        assert_eq!(config.pools, [PoolConfig { name: "general".into(), quota: 3 }]);
    }

    #[test]
    fn null_times_wait_for_a_settle() {
        let text = GOOD.replace("buildSeconds: 0.5", "buildSeconds: null\ndeleteSeconds: ~");
        let config = IaasConfig::parse(&text, "iaas.yaml").unwrap();
        assert_eq!((config.build_time, config.delete_time), (None, None));
        let config = IaasConfig::parse(&GOOD.replace("buildSeconds: 0.5\n", ""), "iaas.yaml").unwrap();
        assert_eq!(config.build_time, Some(Duration::from_secs(1)));
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        let error = IaasConfig::parse(&GOOD.replace("vcpus: 4", "vcpus: 0"), "iaas.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("flavors[0].vcpus", Some(3)));
        let error = IaasConfig::parse(&GOOD.replace("general", "Gen_eral"), "iaas.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("pools[0].name", Some(6)));
        let error = IaasConfig::parse(&GOOD.replace("quota: 3", "quota: -3"), "iaas.yaml").unwrap_err();
        assert!(error.to_string().starts_with("iaas.yaml:6: pools[0].quota: "), "{error}");
        let error = IaasConfig::parse(&GOOD.replace("buildSeconds: 0.5", "buildSeconds: -1"), "i.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("buildSeconds", Some(1)));
    }
}
