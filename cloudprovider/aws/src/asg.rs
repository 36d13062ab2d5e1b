//! An Auto Scaling group as the provider keeps it between two `DescribeAutoScalingGroups`, and
//! the instance references (`aws:///<az>/<instance-id>`) nodes carry.

use std::collections::BTreeMap;

use aws_sdk_autoscaling::types::AutoScalingGroup;

/// The providerID prefix of EC2 nodes.
pub const PROVIDER_ID_PREFIX: &str = "aws:///";
/// Upstream's placeholder instance names: `i-placeholder-<asg>-<index>`.
pub const PLACEHOLDER_PREFIX: &str = "i-placeholder";

/// The availability zone and instance id of a providerID `aws:///<az>/<instance-id>`; `None`
/// for any other (or no) providerID: such nodes are not the provider's.
pub fn parse_provider_id(provider_id: &str) -> Option<(&str, &str)> {
    let rest = provider_id.strip_prefix(PROVIDER_ID_PREFIX)?;
    let (zone, id) = rest.split_once('/')?;
    (!zone.is_empty() && !id.is_empty() && !id.contains('/')).then_some((zone, id))
}

pub fn provider_id(zone: &str, instance_id: &str) -> String {
    format!("{PROVIDER_ID_PREFIX}{zone}/{instance_id}")
}

pub fn placeholder_id(asg: &str, index: usize) -> String {
    format!("{PLACEHOLDER_PREFIX}-{asg}-{index}")
}

/// Where an ASG's instance type comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LaunchSource {
    /// A launch template (by id or name) at a version: a number, `$Latest` or `$Default`.
    Template(TemplateRef),
    /// A launch configuration (immutable: its type never changes).
    Configuration(String),
    /// A mixed-instances policy: the first override's type (as upstream), else its template's.
    Mixed { first_override: Option<String>, template: Option<TemplateRef> },
    /// Nothing usable (e.g. instance requirements only).
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateRef {
    pub id: Option<String>,
    pub name: Option<String>,
    /// `$Default` when the ASG names none (AWS's default).
    pub version: String,
}

impl TemplateRef {
    fn from_spec(id: Option<&str>, name: Option<&str>, version: Option<&str>) -> Option<TemplateRef> {
        if id.is_none() && name.is_none() {
            return None;
        }
        Some(TemplateRef {
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            version: version.filter(|v| !v.is_empty()).unwrap_or("$Default").to_string(),
        })
    }

    /// Numbered versions never change; `$Latest` and `$Default` can.
    pub fn is_pinned(&self) -> bool {
        self.version.parse::<u64>().is_ok()
    }

    pub fn describe(&self) -> String {
        format!("{}@{}", self.id.as_deref().or(self.name.as_deref()).unwrap_or("?"), self.version)
    }
}

/// One instance of an ASG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsgInstance {
    pub id: String,
    pub zone: String,
    /// The ASG lifecycle state (`Pending`, `InService`, `Terminating`, …).
    pub lifecycle: String,
}

impl AsgInstance {
    pub fn provider_id(&self) -> String {
        provider_id(&self.zone, &self.id)
    }

    /// `Terminating`, `Terminating:Wait`, `Terminating:Proceed`, `Terminated`: already going.
    pub fn is_terminating(&self) -> bool {
        self.lifecycle.starts_with("Terminat")
    }

    pub fn is_pending(&self) -> bool {
        self.lifecycle.starts_with("Pending")
    }
}

/// An ASG as last described.
#[derive(Clone, Debug, PartialEq)]
pub struct Asg {
    pub name: String,
    pub min: usize,
    pub max: usize,
    pub desired: usize,
    pub zones: Vec<String>,
    pub tags: BTreeMap<String, String>,
    pub instances: Vec<AsgInstance>,
    pub launch: LaunchSource,
}

impl Asg {
    /// The ASG from a `DescribeAutoScalingGroups` answer; `None` without a name.
    pub fn from_api(group: &AutoScalingGroup) -> Option<Asg> {
        let size = |v: Option<i32>| v.and_then(|v| usize::try_from(v).ok()).unwrap_or(0);
        let launch = if let Some(policy) = group.mixed_instances_policy() {
            let template = policy.launch_template();
            let first_override = template
                .map(|t| t.overrides())
                .unwrap_or_default()
                .iter()
                .find_map(|o| o.instance_type())
                .map(str::to_string);
            let spec = template.and_then(|t| t.launch_template_specification());
            LaunchSource::Mixed {
                first_override,
                template: spec.and_then(|s| {
                    TemplateRef::from_spec(s.launch_template_id(), s.launch_template_name(), s.version())
                }),
            }
        } else if let Some(spec) = group.launch_template() {
            TemplateRef::from_spec(spec.launch_template_id(), spec.launch_template_name(), spec.version())
                .map_or(LaunchSource::Unknown, LaunchSource::Template)
        } else if let Some(name) = group.launch_configuration_name() {
            LaunchSource::Configuration(name.to_string())
        } else {
            LaunchSource::Unknown
        };
        let zones: Vec<String> = group.availability_zones().to_vec();
        let default_zone = zones.first().cloned().unwrap_or_default();
        Some(Asg {
            name: group.auto_scaling_group_name()?.to_string(),
            min: size(group.min_size()),
            max: size(group.max_size()),
            desired: size(group.desired_capacity()),
            tags: group
                .tags()
                .iter()
                .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or_default().to_string())))
                .collect(),
            instances: group
                .instances()
                .iter()
                .filter_map(|i| {
                    Some(AsgInstance {
                        id: i.instance_id()?.to_string(),
                        zone: i.availability_zone().map_or_else(|| default_zone.clone(), str::to_string),
                        lifecycle: i.lifecycle_state().map(|s| s.as_str().to_string()).unwrap_or_default(),
                    })
                })
                .collect(),
            zones,
            launch,
        })
    }

    /// The zone new instances are assumed in: the first of the ASG's, as upstream.
    pub fn first_zone(&self) -> &str {
        self.zones.first().map_or("", String::as_str)
    }

    /// Desired capacity not backed by an instance yet.
    pub fn missing(&self) -> usize {
        self.desired.saturating_sub(self.instances.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_parse_only_in_the_aws_form() {
        assert_eq!(parse_provider_id("aws:///us-east-1a/i-0abc"), Some(("us-east-1a", "i-0abc")));
        assert_eq!(parse_provider_id("aws:///us-east-1a/"), None);
        assert_eq!(parse_provider_id("aws://us-east-1a/i-1"), None);
        assert_eq!(parse_provider_id("gce://p/z/n"), None);
        assert_eq!(parse_provider_id(""), None);
        assert_eq!(provider_id("z", &placeholder_id("web", 2)), "aws:///z/i-placeholder-web-2");
    }

    #[test]
    fn launch_sources_follow_upstreams_order() {
        use aws_sdk_autoscaling::types::{
            LaunchTemplate, LaunchTemplateOverrides, LaunchTemplateSpecification, MixedInstancesPolicy,
        };
        let spec = LaunchTemplateSpecification::builder().launch_template_name("lt").build();
        let mixed = AutoScalingGroup::builder()
            .auto_scaling_group_name("m")
            .mixed_instances_policy(
                MixedInstancesPolicy::builder()
                    .launch_template(
                        LaunchTemplate::builder()
                            .launch_template_specification(spec.clone())
                            .overrides(LaunchTemplateOverrides::builder().instance_type("c5.xlarge").build())
                            .overrides(LaunchTemplateOverrides::builder().instance_type("m5.xlarge").build())
                            .build(),
                    )
                    .build(),
            )
            .build();
        let asg = Asg::from_api(&mixed).unwrap();
        assert!(matches!(asg.launch, LaunchSource::Mixed { first_override: Some(ref t), .. } if t == "c5.xlarge"));
        let plain = AutoScalingGroup::builder().auto_scaling_group_name("p").launch_template(spec).build();
        let LaunchSource::Template(template) = Asg::from_api(&plain).unwrap().launch else { panic!() };
        assert_eq!(template.version, "$Default");
        assert!(!template.is_pinned());
        let config = AutoScalingGroup::builder().auto_scaling_group_name("c").launch_configuration_name("lc").build();
        assert_eq!(Asg::from_api(&config).unwrap().launch, LaunchSource::Configuration("lc".into()));
    }
}
