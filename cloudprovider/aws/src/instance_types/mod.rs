//! EC2 instance types: what a node of a type offers (vCPUs, memory, NVIDIA GPUs, architecture,
//! max pods). From `DescribeInstanceTypes`, asked once per type (never per loop), with the
//! built-in table (`table.rs`, generated, see its header) as the fallback, or as the only source
//! with `--aws-use-static-instance-list`.

mod table;

use aws_sdk_ec2::types::{ArchitectureType, InstanceTypeInfo as ApiInstanceType};

use cloudprovider::template::DEFAULT_MAX_PODS;

/// `kubernetes.io/arch` of a type (its first supported architecture).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Amd64,
    Arm64,
    I386,
}

impl Arch {
    pub fn label(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
            Arch::I386 => "386",
        }
    }
}

/// One row of the built-in table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InstanceTypeInfo {
    name: &'static str,
    vcpus: u32,
    memory_mib: u64,
    gpus: u32,
    gpu: &'static str,
    arch: Arch,
    max_enis: u32,
    ipv4_per_eni: u32,
}

/// What a node of one instance type offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceType {
    pub name: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    /// NVIDIA GPUs (the `nvidia.com/gpu` resource); other accelerators are not counted.
    pub gpus: u32,
    /// The GPU model as a `k8s.amazonaws.com/accelerator` value (`nvidia-tesla-t4`), `""` without.
    pub gpu: String,
    pub arch: Arch,
    /// Network interfaces and IPv4 addresses per interface: the VPC CNI's pod limit.
    pub max_enis: u32,
    pub ipv4_per_eni: u32,
}

impl InstanceType {
    /// The Amazon VPC CNI's pod limit, `ENIs × (IPv4 addresses per ENI − 1) + 2` (every pod
    /// takes a secondary address; two host-network pods are allowed for). Kubelet's default 110
    /// when the interface limits are unknown. A `…/node-template/resources/pods` tag overrides
    /// it (prefix delegation, custom networking).
    pub fn max_pods(&self) -> u64 {
        if self.max_enis == 0 || self.ipv4_per_eni == 0 {
            return DEFAULT_MAX_PODS.parse().unwrap_or(110);
        }
        u64::from(self.max_enis) * (u64::from(self.ipv4_per_eni) - 1) + 2
    }

    /// The type as `DescribeInstanceTypes` describes it; `None` without a name, vCPUs or memory.
    pub fn from_api(info: &ApiInstanceType) -> Option<InstanceType> {
        let name = info.instance_type()?.as_str().to_string();
        let vcpus = u32::try_from(info.v_cpu_info()?.default_v_cpus()?).ok()?;
        let memory_mib = u64::try_from(info.memory_info()?.size_in_mib()?).ok()?;
        let nvidia: Vec<_> = info
            .gpu_info()
            .map(|g| g.gpus())
            .unwrap_or_default()
            .iter()
            .filter(|g| g.manufacturer() == Some("NVIDIA"))
            .collect();
        let gpus = nvidia.iter().filter_map(|g| g.count()).filter_map(|c| u32::try_from(c).ok()).sum();
        let gpu = nvidia.first().and_then(|g| g.name()).map(accelerator_label).unwrap_or_default();
        let arch =
            info.processor_info().and_then(|p| p.supported_architectures().first()).map_or(Arch::Amd64, |a| match a {
                ArchitectureType::Arm64 | ArchitectureType::Arm64Mac => Arch::Arm64,
                ArchitectureType::I386 => Arch::I386,
                _ => Arch::Amd64,
            });
        let network = info.network_info();
        let max_enis = network.and_then(|n| n.maximum_network_interfaces()).and_then(|v| u32::try_from(v).ok());
        let ipv4_per_eni = network.and_then(|n| n.ipv4_addresses_per_interface()).and_then(|v| u32::try_from(v).ok());
        Some(InstanceType {
            name,
            vcpus,
            memory_mib,
            gpus,
            gpu,
            arch,
            max_enis: max_enis.unwrap_or(0),
            ipv4_per_eni: ipv4_per_eni.unwrap_or(0),
        })
    }
}

impl From<&InstanceTypeInfo> for InstanceType {
    fn from(row: &InstanceTypeInfo) -> InstanceType {
        InstanceType {
            name: row.name.to_string(),
            vcpus: row.vcpus,
            memory_mib: row.memory_mib,
            gpus: row.gpus,
            gpu: row.gpu.to_string(),
            arch: row.arch,
            max_enis: row.max_enis,
            ipv4_per_eni: row.ipv4_per_eni,
        }
    }
}

/// A GPU model name as a `k8s.amazonaws.com/accelerator` value: the older models with
/// upstream's `nvidia-tesla-` prefix, the rest `nvidia-<model>` (lowercase, dashes).
fn accelerator_label(name: &str) -> String {
    let slug = name.to_ascii_lowercase().replace(' ', "-");
    if ["K80", "M60", "P100", "V100", "T4", "A100"].contains(&name) {
        format!("nvidia-tesla-{slug}")
    } else {
        format!("nvidia-{slug}")
    }
}

/// The built-in table's entry for `name`.
pub fn builtin(name: &str) -> Option<InstanceType> {
    table::INSTANCE_TYPES.binary_search_by(|row| row.name.cmp(name)).ok().map(|i| (&table::INSTANCE_TYPES[i]).into())
}

/// How many types the built-in table knows.
pub fn builtin_count() -> usize {
    table::INSTANCE_TYPES.len()
}

/// Upstream's known GPU types for AWS (`GetAvailableGPUTypes`).
pub const GPU_TYPES: &[&str] = &[
    "nvidia-tesla-k80",
    "nvidia-tesla-p100",
    "nvidia-tesla-v100",
    "nvidia-tesla-t4",
    "nvidia-tesla-a100",
    "nvidia-a10g",
    "nvidia-l4",
    "nvidia-l40s",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_knows_common_types() {
        assert!(table::INSTANCE_TYPES.windows(2).all(|w| w[0].name < w[1].name), "binary search needs order");
        assert!(builtin_count() > 1000);
        let m5 = builtin("m5.large").unwrap();
        assert_eq!((m5.vcpus, m5.memory_mib, m5.gpus, m5.arch), (2, 8192, 0, Arch::Amd64));
        assert_eq!(m5.max_pods(), 29, "3 ENIs × (10 − 1) + 2, the VPC CNI's limit for m5.large");
        let g4 = builtin("g4dn.xlarge").unwrap();
        assert_eq!((g4.gpus, g4.gpu.as_str()), (1, "nvidia-tesla-t4"));
        assert_eq!(builtin("m6g.large").unwrap().arch.label(), "arm64");
        assert_eq!(builtin("m5.huge"), None);
    }

    #[test]
    fn unknown_interface_limits_give_kubelets_default() {
        let mut t = builtin("m5.large").unwrap();
        t.max_enis = 0;
        assert_eq!(t.max_pods(), 110);
    }

    #[test]
    fn accelerator_labels_follow_upstreams_names() {
        assert_eq!(accelerator_label("A10G"), "nvidia-a10g");
        assert_eq!(accelerator_label("V100"), "nvidia-tesla-v100");
        assert_eq!(accelerator_label("RTX PRO 4500"), "nvidia-rtx-pro-4500");
    }
}
