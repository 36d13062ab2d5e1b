//! What the flags and the cloud-config file say: static groups (`--nodes`), discovery specs
//! (`--node-group-auto-discovery`) and the cloud-config file in upstream's gcfg (INI) format.
//!
//! Everything here is pure parsing: `build` with `Purpose::Check` runs it and nothing else.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::ConfigError;

/// An ASG named with `--nodes=<min>:<max>:<name>`; these bounds win over the ASG's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticAsg {
    pub name: String,
    pub min: usize,
    pub max: usize,
}

/// Parses every `--nodes` value. A name given twice is an error (upstream would keep one of
/// them silently).
pub fn parse_static_asgs(specs: &[String]) -> Result<Vec<StaticAsg>, ConfigError> {
    let mut out: Vec<StaticAsg> = Vec::with_capacity(specs.len());
    for spec in specs {
        let fail = |reason: &str| ConfigError::Flag { flag: "--nodes", value: spec.clone(), reason: reason.into() };
        let mut parts = spec.splitn(3, ':');
        let (Some(min), Some(max), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(fail("expected <min>:<max>:<asg-name>"));
        };
        let min: usize = min.trim().parse().map_err(|_| fail("min size must be a non-negative integer"))?;
        let max: usize = max.trim().parse().map_err(|_| fail("max size must be a non-negative integer"))?;
        if name.is_empty() {
            return Err(fail("the ASG name must not be empty"));
        }
        if min > max {
            return Err(fail(&format!("min size {min} is greater than max size {max}")));
        }
        if max == 0 {
            return Err(fail("max size must be positive"));
        }
        if out.iter().any(|s| s.name == name) {
            return Err(fail(&format!("ASG {name} is given twice")));
        }
        out.push(StaticAsg { name: name.to_string(), min, max });
    }
    Ok(out)
}

/// The tags discovered ASGs must all carry: a key with `None` needs only the key (`tag-key`
/// filter), `Some(v)` the value too (`tag:<key>` filter). Several `asg:tag=…` specs are merged
/// into this one set, as upstream does (a key given twice keeps the last value).
pub type DiscoveryTags = BTreeMap<String, Option<String>>;

/// Parses `--node-group-auto-discovery=asg:tag=<k1>[=<v1>],<k2>…` values.
pub fn parse_discovery_specs(specs: &[String]) -> Result<DiscoveryTags, ConfigError> {
    let mut tags = DiscoveryTags::new();
    for spec in specs {
        let fail = |reason: &str| ConfigError::Flag {
            flag: "--node-group-auto-discovery",
            value: spec.clone(),
            reason: reason.into(),
        };
        let Some((discoverer, param)) = spec.split_once(':') else {
            return Err(fail("expected asg:tag=<key>[=<value>],…"));
        };
        if discoverer != "asg" {
            return Err(fail(&format!("unsupported discoverer {discoverer:?}: the aws provider has only \"asg\"")));
        }
        let Some((key, value)) = param.split_once('=') else {
            return Err(fail("expected asg:tag=<key>[=<value>],…"));
        };
        if key != "tag" {
            return Err(fail(&format!("unsupported parameter {key:?}: the only one is \"tag\"")));
        }
        if value.is_empty() {
            return Err(fail("no tag given"));
        }
        for tag in value.split(',') {
            let (k, v) = match tag.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (tag, None),
            };
            if k.is_empty() {
                return Err(fail("a tag key must not be empty"));
            }
            tags.insert(k.to_string(), v);
        }
    }
    Ok(tags)
}

/// An endpoint override for one service in one region (upstream's `[ServiceOverride "n"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceOverride {
    /// `autoscaling` or `ec2` (others, e.g. `eks`, are accepted and unused).
    pub service: String,
    pub region: String,
    pub url: String,
    pub signing_region: String,
}

/// The cloud-config file: only the keys that mean something here are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloudConfig {
    pub overrides: Vec<ServiceOverride>,
    /// Keys of `[Global]` that are accepted for compatibility and have no effect here.
    pub ignored_keys: Vec<String>,
}

impl CloudConfig {
    /// The override for `service` in `region`, if any.
    pub fn override_for(&self, service: &str, region: &str) -> Option<&ServiceOverride> {
        self.overrides.iter().find(|o| o.service == service && o.region == region)
    }
}

/// `[Global]` keys of upstream's AWS cloud config (cloud-provider-aws `CloudConfig`). They
/// configure the in-tree cloud controller, not the autoscaler; they are accepted and ignored.
const GLOBAL_KEYS: &[&str] = &[
    "zone",
    "vpc",
    "subnetid",
    "routetableid",
    "rolearn",
    "sourcearn",
    "kubernetesclustertag",
    "kubernetesclusterid",
    "elbsecuritygroup",
    "disablesecuritygroupingress",
    "disablestrictzonecheck",
    "nodeipfamilies",
    "clusterservicelbhealthcheckssecuritygroupid",
    "clusterservicesharedlbsecuritygroupid",
];

/// `[ServiceOverride "n"]` keys; `signingmethod` and `signingname` are accepted and unused
/// (the SDK signs with SigV4 and the service's own name).
const OVERRIDE_KEYS: &[&str] = &["service", "region", "url", "signingregion", "signingmethod", "signingname"];

/// Reads the cloud-config file.
pub fn load_cloud_config(path: &Path) -> Result<CloudConfig, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { file: file.clone(), source })?;
    parse_cloud_config(&text, &file)
}

/// Parses gcfg: `[Section]` or `[Section "name"]` headers, `key = value` lines (keys and
/// section names are case-insensitive, values may be double-quoted), `;` and `#` comments.
/// Unknown sections and keys are errors naming the file, the line and the key.
pub fn parse_cloud_config(text: &str, file: &str) -> Result<CloudConfig, ConfigError> {
    #[derive(PartialEq)]
    enum Section {
        None,
        Global,
        Override(String),
    }
    struct Pending {
        id: String,
        line: usize,
        values: BTreeMap<String, (String, usize)>,
    }
    let fail = |line: usize, field: &str, message: String| ConfigError::File {
        file: file.to_string(),
        line,
        field: field.to_string(),
        message,
    };
    let mut config = CloudConfig::default();
    let mut section = Section::None;
    let mut pending: Vec<Pending> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with(';') || trimmed.starts_with('#') {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let Some(header) = header.strip_suffix(']') else {
                return Err(fail(line, trimmed, "a section header must end with ]".into()));
            };
            let (name, sub) = match header.split_once(char::is_whitespace) {
                Some((name, sub)) => (name, Some(unquote(sub.trim()).map_err(|m| fail(line, header, m))?)),
                None => (header, None),
            };
            section = match (name.to_ascii_lowercase().as_str(), sub) {
                ("global", None) => Section::Global,
                ("serviceoverride", Some(id)) => {
                    if pending.iter().any(|p| p.id == id) {
                        return Err(fail(line, header, format!("ServiceOverride {id:?} is given twice")));
                    }
                    pending.push(Pending { id: id.clone(), line, values: BTreeMap::new() });
                    Section::Override(id)
                }
                ("serviceoverride", None) => {
                    return Err(fail(line, header, "expected [ServiceOverride \"<name>\"]".into()));
                }
                _ => {
                    return Err(fail(
                        line,
                        header,
                        "unknown section (the aws provider reads [Global] and [ServiceOverride \"<name>\"])".into(),
                    ));
                }
            };
            continue;
        }
        let (key, value) = match trimmed.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            // gcfg: a key without `=` is a boolean true.
            None => (trimmed, "true"),
        };
        let value = unquote(strip_comment(value)).map_err(|m| fail(line, key, m))?;
        let lower = key.to_ascii_lowercase();
        match &section {
            Section::None => return Err(fail(line, key, "a key outside any section".into())),
            Section::Global => {
                if !GLOBAL_KEYS.contains(&lower.as_str()) {
                    return Err(fail(line, &format!("Global.{key}"), "unknown key".into()));
                }
                config.ignored_keys.push(format!("Global.{key}"));
            }
            Section::Override(_) => {
                if !OVERRIDE_KEYS.contains(&lower.as_str()) {
                    return Err(fail(line, &format!("ServiceOverride.{key}"), "unknown key".into()));
                }
                if let Some(current) = pending.last_mut() {
                    current.values.insert(lower, (value, line));
                }
            }
        }
    }
    for p in pending {
        let field = |key: &str| format!("ServiceOverride \"{}\".{key}", p.id);
        let get = |key: &str| -> Result<String, ConfigError> {
            match p.values.get(key) {
                Some((v, _)) if !v.trim().is_empty() => Ok(v.trim().to_string()),
                Some((_, line)) => Err(fail(*line, &field(key), "must not be empty".into())),
                None => Err(fail(p.line, &field(key), "is required".into())),
            }
        };
        let o = ServiceOverride {
            service: get("service")?,
            region: get("region")?,
            url: get("url")?,
            signing_region: get("signingregion")?,
        };
        if config.overrides.iter().any(|other| other.service == o.service && other.region == o.region) {
            return Err(fail(
                p.line,
                &field("service"),
                format!("a second override for {} in {}", o.service, o.region),
            ));
        }
        config.overrides.push(o);
    }
    Ok(config)
}

/// Drops a trailing `;` or `#` comment outside quotes.
fn strip_comment(value: &str) -> &str {
    let mut quoted = false;
    for (i, c) in value.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ';' | '#' if !quoted => return value[..i].trim_end(),
            _ => {}
        }
    }
    value
}

/// Removes surrounding double quotes (with `\"` and `\\` escapes inside).
fn unquote(value: &str) -> Result<String, String> {
    let Some(inner) = value.strip_prefix('"') else { return Ok(value.to_string()) };
    let Some(inner) = inner.strip_suffix('"') else { return Err(format!("unterminated quote in {value}")) };
    Ok(inner.replace("\\\"", "\"").replace("\\\\", "\\"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn static_specs_parse_and_refuse_bad_bounds() {
        let asgs = parse_static_asgs(&strings(&["1:10:general", "0:3:gpu:x"])).unwrap();
        assert_eq!(asgs[0], StaticAsg { name: "general".into(), min: 1, max: 10 });
        assert_eq!(asgs[1].name, "gpu:x", "the name is everything after the second colon");
        let error = parse_static_asgs(&strings(&["5:2:a"])).unwrap_err().to_string();
        assert_eq!(error, "invalid --nodes value \"5:2:a\": min size 5 is greater than max size 2");
        assert!(parse_static_asgs(&strings(&["1:x:a"])).is_err());
        assert!(parse_static_asgs(&strings(&["1:2"])).is_err());
        assert!(parse_static_asgs(&strings(&["1:2:a", "0:3:a"])).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn discovery_specs_merge_keys_and_values() {
        let tags = parse_discovery_specs(&strings(&[
            "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod",
            "asg:tag=team=data",
        ]))
        .unwrap();
        assert_eq!(tags.len(), 3);
        assert_eq!(tags["k8s.io/cluster-autoscaler/enabled"], None);
        assert_eq!(tags["team"], Some("data".into()));
        for bad in ["mig:tag=x", "asg:label=x", "asg:tag=", "asg", "asg:tag=,x"] {
            let error = parse_discovery_specs(&strings(&[bad])).unwrap_err().to_string();
            assert!(error.starts_with(&format!("invalid --node-group-auto-discovery value {bad:?}")), "{error}");
        }
    }

    #[test]
    fn cloud_config_reads_overrides_and_accepts_global_keys() {
        let text = "; upstream's format\n[Global]\nZone = us-east-1a\n\n[ServiceOverride \"1\"]\nService = autoscaling\nRegion = us-east-1\nURL = \"https://autoscaling.example\" ; private\nSigningRegion = us-east-1\n";
        let config = parse_cloud_config(text, "cloud.ini").unwrap();
        assert_eq!(config.ignored_keys, ["Global.Zone"]);
        let o = config.override_for("autoscaling", "us-east-1").unwrap();
        assert_eq!(o.url, "https://autoscaling.example");
        assert!(config.override_for("ec2", "us-east-1").is_none());
    }

    #[test]
    fn cloud_config_errors_name_the_file_line_and_key() {
        let error = parse_cloud_config("[Global]\nRegoin = x\n", "cloud.ini").unwrap_err().to_string();
        assert_eq!(error, "cloud.ini:2: Global.Regoin: unknown key");
        let error = parse_cloud_config("[ServiceOverride \"a\"]\nService = ec2\nRegion = r\n", "c.ini")
            .unwrap_err()
            .to_string();
        assert_eq!(error, "c.ini:1: ServiceOverride \"a\".url: is required");
        let error = parse_cloud_config("[Other]\n", "c.ini").unwrap_err().to_string();
        assert!(error.starts_with("c.ini:1: Other: unknown section"), "{error}");
        let error = parse_cloud_config("key = 1\n", "c.ini").unwrap_err().to_string();
        assert_eq!(error, "c.ini:1: key: a key outside any section");
    }
}
