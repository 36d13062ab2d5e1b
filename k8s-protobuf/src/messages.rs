//! Every message of the `Node` and `Pod` trees, one `convert!` each: the k8s-openapi type (and the
//! k8s-pb name where the two generators spell it differently) and its fields.
//!
//! The lines were generated from the two crates' sources and are checked by the compiler both
//! ways: decoding builds the k8s-openapi struct with a literal, so a field missing here does not
//! compile, and every listed field must exist on the k8s-pb side with a shape [`Field`] knows.
//!
//! Syntax: `convert!(module::OpenApiName [= PbName] { field [: pb_field], … [; pb_embedded: PbType
//! { field [: pb_field], … }] });`. The optional group is for Go's embedded structs, which protobuf
//! keeps as a nested message but k8s-openapi (like Go's JSON) flattens into the parent:
//! `LocalObjectReference` in the ConfigMap/Secret references, `ProbeHandler` in `Probe`,
//! `VolumeSource` in `Volume`, `EphemeralContainerCommon` in `EphemeralContainer`.
//!
//! rustfmt skips this module (see `lib.rs`): it would spread the longer lines one field per line.

use crate::convert::{ConvError, Convert, Field};

/// The k8s-openapi side, by the short module names the lines below use.
mod oa {
    pub(super) use k8s_openapi::api::core::v1 as core;
    pub(super) use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
}

/// The k8s-pb side, by the same short module names.
mod pb {
    pub(super) use k8s_pb::api::core::v1 as core;
    pub(super) use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
}

/// `pb_field!(msg, field [, pb_field])`: the k8s-pb field, renamed where the names differ.
macro_rules! pb_field {
    ($msg:ident, $f:ident) => {
        $msg.$f
    };
    ($msg:ident, $f:ident, $pf:ident) => {
        $msg.$pf
    };
}

/// `set_pb!(msg, field [, pb_field], value)`: assigns the k8s-pb field.
macro_rules! set_pb {
    ($msg:ident, $f:ident, $v:expr) => {
        $msg.$f = $v
    };
    ($msg:ident, $f:ident, $pf:ident, $v:expr) => {
        $msg.$pf = $v
    };
}

macro_rules! convert {
    ($m:ident :: $oa:ident { $($body:tt)* }) => {
        convert!($m :: $oa = $oa { $($body)* });
    };
    ($m:ident :: $oa:ident = $pbt:ident {
        $($f:ident $(: $pf:ident)?),* $(,)?
        $(; $emb:ident : $et:ident { $($ef:ident $(: $epf:ident)?),* $(,)? })?
    }) => {
        impl Convert for oa::$m::$oa {
            type Pb = pb::$m::$pbt;

            fn to_pb(&self) -> Self::Pb {
                let mut out = pb::$m::$pbt::default();
                $( set_pb!(out, $f $(, $pf)?, Field::to_field(&self.$f)); )*
                $(
                    let mut embedded = pb::$m::$et::default();
                    $( set_pb!(embedded, $ef $(, $epf)?, Field::to_field(&self.$ef)); )*
                    out.$emb = Some(embedded);
                )?
                out
            }

            fn from_pb(msg: Self::Pb) -> Result<Self, ConvError> {
                $( let embedded = msg.$emb.unwrap_or_default(); )?
                Ok(Self {
                    $( $f: Field::from_field(pb_field!(msg, $f $(, $pf)?)).map_err(|e| e.at(stringify!($f)))?, )*
                    $($(
                        $ef: Field::from_field(pb_field!(embedded, $ef $(, $epf)?))
                            .map_err(|e| e.at(stringify!($ef)))?,
                    )*)?
                })
            }
        }
    };
}

convert!(core::AWSElasticBlockStoreVolumeSource = AwsElasticBlockStoreVolumeSource { fs_type, partition, read_only,
    volume_id });
convert!(core::Affinity { node_affinity, pod_affinity, pod_anti_affinity });
convert!(core::AppArmorProfile { localhost_profile, type_: r#type });
convert!(core::AttachedVolume { device_path, name });
convert!(core::AzureDiskVolumeSource { caching_mode, disk_name, disk_uri, fs_type, kind, read_only });
convert!(core::AzureFileVolumeSource { read_only, secret_name, share_name });
convert!(core::CSIVolumeSource { driver, fs_type, node_publish_secret_ref, read_only, volume_attributes });
convert!(core::Capabilities { add, drop });
convert!(core::CephFSVolumeSource = CephFsVolumeSource { monitors, path, read_only, secret_file, secret_ref, user });
convert!(core::CinderVolumeSource { fs_type, read_only, secret_ref, volume_id });
convert!(core::ClusterTrustBundleProjection { label_selector, name, optional, path, signer_name });
convert!(core::ConfigMapEnvSource { optional; local_object_reference: LocalObjectReference { name } });
convert!(core::ConfigMapKeySelector { key, optional; local_object_reference: LocalObjectReference { name } });
convert!(core::ConfigMapNodeConfigSource { kubelet_config_key, name, namespace, resource_version, uid });
convert!(core::ConfigMapProjection { items, optional; local_object_reference: LocalObjectReference { name } });
convert!(core::ConfigMapVolumeSource { default_mode, items, optional; local_object_reference: LocalObjectReference {
    name } });
convert!(core::Container { args, command, env, env_from, image, image_pull_policy, lifecycle, liveness_probe, name,
    ports, readiness_probe, resize_policy, resources, restart_policy, security_context, startup_probe, stdin,
    stdin_once, termination_message_path, termination_message_policy, tty, volume_devices, volume_mounts, working_dir
    });
convert!(core::ContainerImage { names, size_bytes });
convert!(core::ContainerPort { container_port, host_ip, host_port, name, protocol });
convert!(core::ContainerResizePolicy { resource_name, restart_policy });
convert!(core::ContainerState { running, terminated, waiting });
convert!(core::ContainerStateRunning { started_at });
convert!(core::ContainerStateTerminated { container_id, exit_code, finished_at, message, reason, signal, started_at });
convert!(core::ContainerStateWaiting { message, reason });
convert!(core::ContainerStatus { allocated_resources, allocated_resources_status, container_id, image, image_id,
    last_state, name, ready, resources, restart_count, started, state, stop_signal, user, volume_mounts });
convert!(core::ContainerUser { linux });
convert!(core::DaemonEndpoint { port });
convert!(core::DownwardAPIProjection { items });
convert!(core::DownwardAPIVolumeFile { field_ref, mode, path, resource_field_ref });
convert!(core::DownwardAPIVolumeSource { default_mode, items });
convert!(core::EmptyDirVolumeSource { medium, size_limit });
convert!(core::EnvFromSource { config_map_ref, prefix, secret_ref });
convert!(core::EnvVar { name, value, value_from });
convert!(core::EnvVarSource { config_map_key_ref, field_ref, resource_field_ref, secret_key_ref });
convert!(core::EphemeralContainer { target_container_name; ephemeral_container_common: EphemeralContainerCommon { args,
    command, env, env_from, image, image_pull_policy, lifecycle, liveness_probe, name, ports, readiness_probe,
    resize_policy, resources, restart_policy, security_context, startup_probe, stdin, stdin_once,
    termination_message_path, termination_message_policy, tty, volume_devices, volume_mounts, working_dir } });
convert!(core::EphemeralVolumeSource { volume_claim_template });
convert!(core::ExecAction { command });
convert!(core::FCVolumeSource = FcVolumeSource { fs_type, lun, read_only, target_wwns: target_ww_ns, wwids });
convert!(core::FlexVolumeSource { driver, fs_type, options, read_only, secret_ref });
convert!(core::FlockerVolumeSource { dataset_name, dataset_uuid });
convert!(core::GCEPersistentDiskVolumeSource = GcePersistentDiskVolumeSource { fs_type, partition, pd_name, read_only
    });
convert!(core::GRPCAction = GrpcAction { port, service });
convert!(core::GitRepoVolumeSource { directory, repository, revision });
convert!(core::GlusterfsVolumeSource { endpoints, path, read_only });
convert!(core::HTTPGetAction = HttpGetAction { host, http_headers, path, port, scheme });
convert!(core::HTTPHeader = HttpHeader { name, value });
convert!(core::HostAlias { hostnames, ip });
convert!(core::HostIP = HostIp { ip });
convert!(core::HostPathVolumeSource { path, type_: r#type });
convert!(core::ISCSIVolumeSource = IscsiVolumeSource { chap_auth_discovery, chap_auth_session, fs_type, initiator_name,
    iqn, iscsi_interface, lun, portals, read_only, secret_ref, target_portal });
convert!(core::ImageVolumeSource { pull_policy, reference });
convert!(core::KeyToPath { key, mode, path });
convert!(core::Lifecycle { post_start, pre_stop, stop_signal });
convert!(core::LifecycleHandler { exec, http_get, sleep, tcp_socket });
convert!(core::LinuxContainerUser { gid, supplemental_groups, uid });
convert!(core::LocalObjectReference { name });
convert!(core::NFSVolumeSource = NfsVolumeSource { path, read_only, server });
convert!(core::Node { metadata, spec, status });
convert!(core::NodeAddress { address, type_: r#type });
convert!(core::NodeAffinity { preferred_during_scheduling_ignored_during_execution,
    required_during_scheduling_ignored_during_execution });
convert!(core::NodeCondition { last_heartbeat_time, last_transition_time, message, reason, status, type_: r#type });
convert!(core::NodeConfigSource { config_map });
convert!(core::NodeConfigStatus { active, assigned, error, last_known_good });
convert!(core::NodeDaemonEndpoints { kubelet_endpoint });
convert!(core::NodeFeatures { supplemental_groups_policy });
convert!(core::NodeRuntimeHandler { features, name });
convert!(core::NodeRuntimeHandlerFeatures { recursive_read_only_mounts, user_namespaces });
convert!(core::NodeSelector { node_selector_terms });
convert!(core::NodeSelectorRequirement { key, operator, values });
convert!(core::NodeSelectorTerm { match_expressions, match_fields });
convert!(core::NodeSpec { config_source, external_id, pod_cidr, pod_cidrs: pod_cid_rs, provider_id, taints,
    unschedulable });
convert!(core::NodeStatus { addresses, allocatable, capacity, conditions, config, daemon_endpoints, features, images,
    node_info, phase, runtime_handlers, volumes_attached, volumes_in_use });
convert!(core::NodeSwapStatus { capacity });
convert!(core::NodeSystemInfo { architecture, boot_id, container_runtime_version, kernel_version, kube_proxy_version,
    kubelet_version, machine_id, operating_system, os_image, swap, system_uuid });
convert!(core::ObjectFieldSelector { api_version, field_path });
convert!(core::PersistentVolumeClaimSpec { access_modes, data_source, data_source_ref, resources, selector,
    storage_class_name, volume_attributes_class_name, volume_mode, volume_name });
convert!(core::PersistentVolumeClaimTemplate { metadata, spec });
convert!(core::PersistentVolumeClaimVolumeSource { claim_name, read_only });
convert!(core::PhotonPersistentDiskVolumeSource { fs_type, pd_id });
convert!(core::Pod { metadata, spec, status });
convert!(core::PodAffinity { preferred_during_scheduling_ignored_during_execution,
    required_during_scheduling_ignored_during_execution });
convert!(core::PodAffinityTerm { label_selector, match_label_keys, mismatch_label_keys, namespace_selector, namespaces,
    topology_key });
convert!(core::PodAntiAffinity { preferred_during_scheduling_ignored_during_execution,
    required_during_scheduling_ignored_during_execution });
convert!(core::PodCondition { last_probe_time, last_transition_time, message, observed_generation, reason, status,
    type_: r#type });
convert!(core::PodDNSConfig = PodDnsConfig { nameservers, options, searches });
convert!(core::PodDNSConfigOption = PodDnsConfigOption { name, value });
convert!(core::PodIP = PodIp { ip });
convert!(core::PodOS = PodOs { name });
convert!(core::PodReadinessGate { condition_type });
convert!(core::PodResourceClaim { name, resource_claim_name, resource_claim_template_name });
convert!(core::PodResourceClaimStatus { name, resource_claim_name });
convert!(core::PodSchedulingGate { name });
convert!(core::PodSecurityContext { app_armor_profile, fs_group, fs_group_change_policy, run_as_group, run_as_non_root,
    run_as_user, se_linux_change_policy, se_linux_options, seccomp_profile, supplemental_groups,
    supplemental_groups_policy, sysctls, windows_options });
convert!(core::PodSpec { active_deadline_seconds, affinity, automount_service_account_token, containers, dns_config,
    dns_policy, enable_service_links, ephemeral_containers, host_aliases, host_ipc, host_network, host_pid, host_users,
    hostname, image_pull_secrets, init_containers, node_name, node_selector, os, overhead, preemption_policy, priority,
    priority_class_name, readiness_gates, resource_claims, resources, restart_policy, runtime_class_name,
    scheduler_name, scheduling_gates, security_context, service_account, service_account_name, set_hostname_as_fqdn,
    share_process_namespace, subdomain, termination_grace_period_seconds, tolerations, topology_spread_constraints,
    volumes });
convert!(core::PodStatus { conditions, container_statuses, ephemeral_container_statuses, host_ip, host_ips,
    init_container_statuses, message, nominated_node_name, observed_generation, phase, pod_ip, pod_ips, qos_class,
    reason, resize, resource_claim_statuses, start_time });
convert!(core::PortworxVolumeSource { fs_type, read_only, volume_id });
convert!(core::PreferredSchedulingTerm { preference, weight });
convert!(core::Probe { failure_threshold, initial_delay_seconds, period_seconds, success_threshold,
    termination_grace_period_seconds, timeout_seconds; handler: ProbeHandler { exec, grpc, http_get, tcp_socket } });
convert!(core::ProjectedVolumeSource { default_mode, sources });
convert!(core::QuobyteVolumeSource { group, read_only, registry, tenant, user, volume });
convert!(core::RBDVolumeSource = RbdVolumeSource { fs_type, image, keyring, monitors, pool, read_only, secret_ref, user
    });
convert!(core::ResourceClaim { name, request });
convert!(core::ResourceFieldSelector { container_name, divisor, resource });
convert!(core::ResourceHealth { health, resource_id });
convert!(core::ResourceRequirements { claims, limits, requests });
convert!(core::ResourceStatus { name, resources });
convert!(core::SELinuxOptions = SeLinuxOptions { level, role, type_: r#type, user });
convert!(core::ScaleIOVolumeSource = ScaleIoVolumeSource { fs_type, gateway, protection_domain, read_only, secret_ref,
    ssl_enabled, storage_mode, storage_pool, system, volume_name });
convert!(core::SeccompProfile { localhost_profile, type_: r#type });
convert!(core::SecretEnvSource { optional; local_object_reference: LocalObjectReference { name } });
convert!(core::SecretKeySelector { key, optional; local_object_reference: LocalObjectReference { name } });
convert!(core::SecretProjection { items, optional; local_object_reference: LocalObjectReference { name } });
convert!(core::SecretVolumeSource { default_mode, items, optional, secret_name });
convert!(core::SecurityContext { allow_privilege_escalation, app_armor_profile, capabilities, privileged, proc_mount,
    read_only_root_filesystem, run_as_group, run_as_non_root, run_as_user, se_linux_options, seccomp_profile,
    windows_options });
convert!(core::ServiceAccountTokenProjection { audience, expiration_seconds, path });
convert!(core::SleepAction { seconds });
convert!(core::StorageOSVolumeSource = StorageOsVolumeSource { fs_type, read_only, secret_ref, volume_name,
    volume_namespace });
convert!(core::Sysctl { name, value });
convert!(core::TCPSocketAction = TcpSocketAction { host, port });
convert!(core::Taint { effect, key, time_added, value });
convert!(core::Toleration { effect, key, operator, toleration_seconds, value });
convert!(core::TopologySpreadConstraint { label_selector, match_label_keys, max_skew, min_domains, node_affinity_policy,
    node_taints_policy, topology_key, when_unsatisfiable });
convert!(core::TypedLocalObjectReference { api_group, kind, name });
convert!(core::TypedObjectReference { api_group, kind, name, namespace });
convert!(core::Volume { name; volume_source: VolumeSource { aws_elastic_block_store, azure_disk, azure_file, cephfs,
    cinder, config_map, csi, downward_api, empty_dir, ephemeral, fc, flex_volume, flocker, gce_persistent_disk,
    git_repo, glusterfs, host_path, image, iscsi, nfs, persistent_volume_claim, photon_persistent_disk, portworx_volume,
    projected, quobyte, rbd, scale_io, secret, storageos, vsphere_volume } });
convert!(core::VolumeDevice { device_path, name });
convert!(core::VolumeMount { mount_path, mount_propagation, name, read_only, recursive_read_only, sub_path,
    sub_path_expr });
convert!(core::VolumeMountStatus { mount_path, name, read_only, recursive_read_only });
convert!(core::VolumeProjection { cluster_trust_bundle, config_map, downward_api, secret, service_account_token });
convert!(core::VolumeResourceRequirements { limits, requests });
convert!(core::VsphereVirtualDiskVolumeSource { fs_type, storage_policy_id, storage_policy_name, volume_path });
convert!(core::WeightedPodAffinityTerm { pod_affinity_term, weight });
convert!(core::WindowsSecurityContextOptions { gmsa_credential_spec, gmsa_credential_spec_name, host_process,
    run_as_user_name });
convert!(meta::LabelSelector { match_expressions, match_labels });
convert!(meta::LabelSelectorRequirement { key, operator, values });
convert!(meta::ManagedFieldsEntry { api_version, fields_type, fields_v1, manager, operation, subresource, time });
convert!(meta::ObjectMeta { annotations, creation_timestamp, deletion_grace_period_seconds, deletion_timestamp,
    finalizers, generate_name, generation, labels, managed_fields, name, namespace, owner_references, resource_version,
    self_link, uid });
convert!(meta::OwnerReference { api_version, block_owner_deletion, controller, kind, name, uid });
