//! RBAC: `deploy/kubernetes/rbac.yaml` grants the autoscaler's ServiceAccount exactly the
//! permission table below (least privilege: nothing more, and no wildcard except the resources
//! of the custom and external metrics APIs, whose resources are metric names), and the table
//! allows every request the controller makes, checked by running the kube adapter and a leader
//! election round against the fake API server and authorizing each recorded request the way
//! the API server's RBAC authorizer does.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use k8s_openapi::api::rbac::v1::PolicyRule;
use tests::fake_apiserver::RequestRecord;

use super::controller_run::{self, HPA_EXTERNAL_METRIC, OBJECT_METRIC, PODS_METRIC, WPA_EXTERNAL_METRIC};
use super::{Manifests, load_manifests};

/// The ServiceAccount the manifests run the autoscaler as.
const SERVICE_ACCOUNT: (&str, &str) = ("kube-system", "cluster-autoscaler");

/// The only API groups where `resources: ["*"]` is granted. Their resources are metric names
/// (`custom.metrics.k8s.io/…/pods/*/<metric>`, `external.metrics.k8s.io/…/<metric>`), chosen by
/// whoever writes an HPA or WPA, so they cannot be listed in advance; kube-controller-manager's
/// `system:controller:horizontal-pod-autoscaler` ClusterRole grants them the same way.
const METRIC_NAME_API_GROUPS: &[&str] = &["custom.metrics.k8s.io", "external.metrics.k8s.io"];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Scope {
    /// Granted by a ClusterRoleBinding: cluster-scoped objects and every namespace.
    Cluster,
    /// Granted by a RoleBinding: objects of this namespace only.
    Namespace(String),
}

/// One (scope, API group, resource[/subresource], verb, resource name) a role grants.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Permission {
    scope: Scope,
    group: String,
    /// `*` (only in [`METRIC_NAME_API_GROUPS`]) is every resource and subresource.
    pub(super) resource: String,
    verb: String,
    /// `resourceNames`: `None` grants every object.
    name: Option<String>,
}

/// Who makes the calls a permission is for. Every permission must be used by the recorded run
/// ([`controller_run::recorded_requests`]), whoever makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// The kube adapter (`autoscaler/src/kube_adapter/`): reflectors, actions, metrics.
    KubeAdapter,
    /// `autoscaler/src/leader.rs`, which the controller runs with `--leader-elect`.
    LeaderElector,
}

/// (scope, API group, resource, verbs, resource name, caller).
type TableRow<'a> = (Scope, &'a str, &'a str, &'a [&'a str], Option<&'a str>, Caller);

/// The permission table: what the code calls, and where. `--namespace` is upstream's
/// `kube-system`; the ConfigMap and Lease names are the code's defaults.
fn permission_table() -> Vec<(Permission, Caller)> {
    let run = super::parse_flags(&[]).expect("the default flags parse");
    let namespace = run.flags.namespace.clone();
    let status_config_map = run.flags.status_config_map_name.clone();
    let lease = run.leader_elect_resource_name.clone();
    let priority_config_map = expander::priority::PRIORITY_CONFIG_MAP_NAME.to_string();
    use Caller::{KubeAdapter as Adapter, LeaderElector as Leader};

    let cluster = Scope::Cluster;
    let local = Scope::Namespace(namespace);
    #[rustfmt::skip]
    let rows: Vec<TableRow> = vec![
        // reader.rs: a reflector (list + watch) per kind of ClusterView; WPAs when discovery
        // finds their CRD.
        (cluster.clone(), "", "nodes", &["list", "watch"], None, Adapter),
        (cluster.clone(), "", "pods", &["list", "watch"], None, Adapter),
        (cluster.clone(), "", "namespaces", &["list", "watch"], None, Adapter),
        (cluster.clone(), "", "replicationcontrollers", &["list", "watch"], None, Adapter),
        (cluster.clone(), "apps", "daemonsets", &["list", "watch"], None, Adapter),
        (cluster.clone(), "apps", "deployments", &["list", "watch"], None, Adapter),
        (cluster.clone(), "apps", "replicasets", &["list", "watch"], None, Adapter),
        (cluster.clone(), "apps", "statefulsets", &["list", "watch"], None, Adapter),
        (cluster.clone(), "batch", "jobs", &["list", "watch"], None, Adapter),
        (cluster.clone(), "policy", "poddisruptionbudgets", &["list", "watch"], None, Adapter),
        // reader.rs: what the scheduler's volume filters read.
        (cluster.clone(), "", "persistentvolumeclaims", &["list", "watch"], None, Adapter),
        (cluster.clone(), "", "persistentvolumes", &["list", "watch"], None, Adapter),
        (cluster.clone(), "storage.k8s.io", "storageclasses", &["list", "watch"], None, Adapter),
        (cluster.clone(), "storage.k8s.io", "csinodes", &["list", "watch"], None, Adapter),
        (cluster.clone(), "autoscaling", "horizontalpodautoscalers", &["list", "watch"], None, Adapter),
        (cluster.clone(), "datadoghq.com", "watermarkpodautoscalers", &["list", "watch"], None, Adapter),
        // reader.rs: the priority expander's ConfigMap, watched with a metadata.name field selector.
        (local.clone(), "", "configmaps", &["list", "watch"], Some(priority_config_map.as_str()), Adapter),
        // actions.rs update_node: taints and cordons, read-modify-write with conflict retries.
        (cluster.clone(), "", "nodes", &["get", "update"], None, Adapter),
        // actions.rs evict_pod: the policy/v1 Eviction subresource.
        (cluster.clone(), "", "pods/eviction", &["create"], None, Adapter),
        // actions.rs get_scale / set_scale (merge patch): the workloads pod autoscalers target.
        (cluster.clone(), "apps", "deployments/scale", &["get", "patch"], None, Adapter),
        (cluster.clone(), "apps", "replicasets/scale", &["get", "patch"], None, Adapter),
        (cluster.clone(), "apps", "statefulsets/scale", &["get", "patch"], None, Adapter),
        (cluster.clone(), "", "replicationcontrollers/scale", &["get", "patch"], None, Adapter),
        // actions.rs update_wpa_status: a merge patch of the status subresource (HPA status only
        // with --horizontal-pod-autoscaler-mode=act, not the default).
        (cluster.clone(), "datadoghq.com", "watermarkpodautoscalers/status", &["patch"], None, Adapter),
        // actions.rs create_event / bump_event: core/v1 Events in the object's namespace.
        (cluster.clone(), "", "events", &["create", "patch"], None, Adapter),
        // metrics.rs refresh: every pod's usage in one list; a custom metric of the pods
        // (`pods/*/<metric>`: a get of the name `*`) or of one object (`<resource>/<name>/<metric>`);
        // an external metric (`<metric>` in the namespace: a list).
        (cluster.clone(), "metrics.k8s.io", "pods", &["list"], None, Adapter),
        (cluster.clone(), "custom.metrics.k8s.io", "*", &["get"], None, Adapter),
        (cluster.clone(), "external.metrics.k8s.io", "*", &["list"], None, Adapter),
        // actions.rs write_status: get, then update or create the status ConfigMap;
        // delete_status: the controller removes it when it exits cleanly.
        (local.clone(), "", "configmaps", &["get", "update", "delete"], Some(status_config_map.as_str()), Adapter),
        (local.clone(), "", "configmaps", &["create"], None, Adapter),
        // leader.rs: get, then update (replace) or create the Lease; the release is an update.
        (local.clone(), "coordination.k8s.io", "leases", &["get", "update"], Some(lease.as_str()), Leader),
        (local.clone(), "coordination.k8s.io", "leases", &["create"], None, Leader),
    ];
    rows.into_iter()
        .flat_map(|(scope, group, resource, verbs, name, caller)| {
            verbs.iter().map(move |verb| {
                let permission = Permission {
                    scope: scope.clone(),
                    group: group.into(),
                    resource: resource.into(),
                    verb: verb.to_string(),
                    name: name.map(String::from),
                };
                (permission, caller)
            })
        })
        .collect()
}

pub(super) fn expand(rules: &[PolicyRule], scope: &Scope, source: &str) -> Vec<Permission> {
    let mut permissions = Vec::new();
    for rule in rules {
        assert!(rule.non_resource_urls.is_none(), "{source}: no non-resource URLs are needed");
        let groups = rule.api_groups.clone().unwrap_or_default();
        let resources = rule.resources.clone().unwrap_or_default();
        let names: Vec<Option<String>> = match &rule.resource_names {
            Some(names) if !names.is_empty() => names.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        for word in groups.iter().chain(&rule.verbs).chain(names.iter().flatten()) {
            assert!(!word.contains('*'), "{source}: wildcard {word:?} (least privilege: name what is needed)");
        }
        for resource in &resources {
            if resource == "*" {
                assert!(
                    groups.iter().all(|g| METRIC_NAME_API_GROUPS.contains(&g.as_str())),
                    "{source}: resources [\"*\"] in {groups:?}: only the metric APIs {METRIC_NAME_API_GROUPS:?} \
                     may have a resource wildcard (their resources are metric names)"
                );
            } else {
                assert!(
                    !resource.contains('*'),
                    "{source}: wildcard {resource:?} (least privilege: name what is needed)"
                );
            }
        }
        assert!(!groups.is_empty() && !resources.is_empty(), "{source}: a rule without groups or resources");
        for group in &groups {
            for resource in &resources {
                for verb in &rule.verbs {
                    for name in &names {
                        permissions.push(Permission {
                            scope: scope.clone(),
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
    }
    permissions
}

fn binds_service_account(subjects: Option<&Vec<k8s_openapi::api::rbac::v1::Subject>>) -> bool {
    subjects.into_iter().flatten().any(|s| {
        s.kind == "ServiceAccount"
            && s.name == SERVICE_ACCOUNT.1
            && s.namespace.as_deref() == Some(SERVICE_ACCOUNT.0)
            && s.api_group.as_deref().unwrap_or_default().is_empty()
    })
}

/// Everything the manifests grant the ServiceAccount. Every role must be bound to it and every
/// binding must name an existing role.
fn granted(m: &Manifests) -> BTreeSet<Permission> {
    let mut granted = BTreeSet::new();
    let mut bound_cluster_roles = BTreeSet::new();
    let mut bound_roles = BTreeSet::new();
    for binding in &m.cluster_role_bindings {
        let name = binding.metadata.name.clone().unwrap_or_default();
        assert!(binds_service_account(binding.subjects.as_ref()), "ClusterRoleBinding {name} binds the ServiceAccount");
        assert_eq!(binding.role_ref.kind, "ClusterRole");
        assert_eq!(binding.role_ref.api_group, "rbac.authorization.k8s.io");
        let role = m
            .cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(binding.role_ref.name.as_str()))
            .unwrap_or_else(|| panic!("ClusterRoleBinding {name} names a missing ClusterRole"));
        bound_cluster_roles.insert(binding.role_ref.name.clone());
        granted.extend(expand(role.rules.as_deref().unwrap_or_default(), &Scope::Cluster, &name));
    }
    for binding in &m.role_bindings {
        let name = binding.metadata.name.clone().unwrap_or_default();
        let namespace = binding.metadata.namespace.clone().expect("a RoleBinding has a namespace");
        assert!(binds_service_account(binding.subjects.as_ref()), "RoleBinding {name} binds the ServiceAccount");
        assert_eq!(binding.role_ref.kind, "Role", "RoleBinding {name} binds a Role of its namespace");
        let role = m
            .roles
            .iter()
            .find(|r| {
                r.metadata.name.as_deref() == Some(binding.role_ref.name.as_str())
                    && r.metadata.namespace.as_deref() == Some(namespace.as_str())
            })
            .unwrap_or_else(|| panic!("RoleBinding {name} names a missing Role"));
        bound_roles.insert(binding.role_ref.name.clone());
        granted.extend(expand(role.rules.as_deref().unwrap_or_default(), &Scope::Namespace(namespace), &name));
    }
    for role in &m.cluster_roles {
        assert!(bound_cluster_roles.contains(role.metadata.name.as_deref().unwrap()), "an unbound ClusterRole");
    }
    for role in &m.roles {
        assert!(bound_roles.contains(role.metadata.name.as_deref().unwrap()), "an unbound Role");
    }
    granted
}

/// A resource request as the API server's authorizer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Request {
    group: String,
    pub(super) resource: String,
    verb: String,
    namespace: Option<String>,
    name: Option<String>,
}

impl Request {
    fn new(group: &str, resource: &str, verb: &str, namespace: Option<&str>, name: Option<&str>) -> Request {
        Request {
            group: group.into(),
            resource: resource.into(),
            verb: verb.into(),
            namespace: namespace.map(String::from),
            name: name.map(String::from),
        }
    }
}

/// Whether `permission` allows `request`. As in Kubernetes RBAC, a rule with resourceNames never
/// matches a request without a name (a create, or a list without a metadata.name selector), and
/// the resource `*` matches every resource and subresource of its groups.
pub(super) fn allows(permission: &Permission, request: &Request) -> bool {
    let in_scope = match &permission.scope {
        Scope::Cluster => true,
        Scope::Namespace(namespace) => request.namespace.as_deref() == Some(namespace.as_str()),
    };
    in_scope
        && permission.group == request.group
        && (permission.resource == "*" || permission.resource == request.resource)
        && permission.verb == request.verb
        && permission.name.as_ref().is_none_or(|name| request.name.as_ref() == Some(name))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok()))
            .flatten();
        match (escaped, bytes[i]) {
            (Some(byte), _) => {
                decoded.push(byte);
                i += 3;
                continue;
            }
            (None, b'+') => decoded.push(b' '),
            (None, byte) => decoded.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The object name a list or watch is limited to by a `metadata.name` field selector, which the
/// API server hands to the authorizer as the request's name.
fn field_selector_name(query: &str) -> Option<String> {
    let selector = query.split('&').find_map(|pair| pair.strip_prefix("fieldSelector="))?;
    percent_decode(selector).split(',').find_map(|term| {
        let value = term.strip_prefix("metadata.name==").or_else(|| term.strip_prefix("metadata.name="))?;
        Some(value.to_string())
    })
}

/// Whether a list asks for a watch: `watch` set to anything but false or 0, as the API server
/// reads it.
fn watch_requested(query: &str) -> bool {
    query.split('&').filter_map(|pair| pair.strip_prefix("watch=")).any(|value| {
        let value = percent_decode(value).to_ascii_lowercase();
        value != "false" && value != "0"
    })
}

/// The authorizer's verb: from the HTTP method and whether the path names an object, as the API
/// server's request info does. Read from the request, not from what the fake server served, so
/// requests to API groups the fake server does not serve (the metrics APIs) are read too.
fn authorizer_verb(record: &RequestRecord, named: bool) -> &'static str {
    match (record.method.as_str(), named) {
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) if watch_requested(&record.query) => "watch",
        ("GET" | "HEAD", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (method, _) => panic!("a resource request with method {method:?}: {record:?}"),
    }
}

/// The authorizer's view of a recorded request; `None` for non-resource paths (discovery, which
/// every authenticated user may read).
pub(super) fn request_of(record: &RequestRecord) -> Option<Request> {
    let segments: Vec<&str> = record.path.trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    if rest.is_empty() {
        return None;
    }
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
        _ => (None, rest),
    };
    let resource = match rest.get(2) {
        Some(subresource) => format!("{}/{subresource}", rest[0]),
        None => rest[0].to_string(),
    };
    let verb = authorizer_verb(record, rest.len() > 1);
    let name = match rest.get(1) {
        Some(name) => Some(percent_decode(name)),
        None if verb == "list" || verb == "watch" => field_selector_name(&record.query),
        None => None,
    };
    Some(Request { group: group.into(), resource, verb: verb.into(), namespace: namespace.map(String::from), name })
}

/// The authorizer's view of every request of [`controller_run::recorded_requests`].
fn controller_requests() -> &'static [Request] {
    static REQUESTS: OnceLock<Vec<Request>> = OnceLock::new();
    REQUESTS.get_or_init(|| controller_run::recorded_requests().iter().filter_map(request_of).collect())
}

#[test]
fn rbac_grants_exactly_the_permission_table() {
    let granted = granted(&load_manifests());
    let table: BTreeSet<Permission> = permission_table().into_iter().map(|(p, _)| p).collect();
    let missing: Vec<_> = table.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&table).collect();
    assert!(missing.is_empty(), "the code needs these and rbac.yaml does not grant them: {missing:#?}");
    assert!(extra.is_empty(), "rbac.yaml grants these beyond the table (least privilege): {extra:#?}");
}

#[test]
fn rbac_allows_every_request_the_controller_makes() {
    let granted = granted(&load_manifests());
    let requests = controller_requests();
    assert!(requests.len() > 20, "the run made requests: {requests:?}");
    for request in requests {
        assert!(
            granted.iter().any(|permission| allows(permission, request)),
            "the controller made {request:?}, which rbac.yaml does not allow: grant it (in rbac.yaml, the chart \
             and the table of deploy_manifests/rbac.rs)"
        );
    }
}

#[test]
fn every_permission_is_used_by_the_controller() {
    let requests = controller_requests();
    for (permission, caller) in permission_table() {
        assert!(
            requests.iter().any(|request| allows(&permission, request)),
            "{permission:?} is granted for {caller:?}, which no longer makes such a request: drop it from \
             rbac.yaml, the chart and the table"
        );
    }
}

#[test]
fn the_run_asks_each_metrics_api_as_the_pod_autoscalers_reference_it() {
    let requests = controller_requests();
    let namespace = Some("default");
    for expected in [
        // Pod metrics of the namespaces whose autoscalers use resource metrics.
        Request::new("metrics.k8s.io", "pods", "list", namespace, None),
        Request::new("custom.metrics.k8s.io", &format!("pods/{PODS_METRIC}"), "get", namespace, Some("*")),
        Request::new("custom.metrics.k8s.io", &format!("services/{OBJECT_METRIC}"), "get", namespace, Some("web")),
        Request::new("external.metrics.k8s.io", HPA_EXTERNAL_METRIC, "list", namespace, None),
        Request::new("external.metrics.k8s.io", WPA_EXTERNAL_METRIC, "list", namespace, None),
    ] {
        assert!(requests.contains(&expected), "no {expected:?} among the recorded requests: {requests:#?}");
    }
}

#[test]
fn the_run_elects_a_leader_and_cleans_up_as_the_controller_exits() {
    let requests = controller_requests();
    let run = super::parse_flags(&[]).unwrap();
    let lease = run.leader_elect_resource_name.as_str();
    let leases = |verb: &str, name: Option<&str>| {
        requests
            .iter()
            .filter(|r| r.group == "coordination.k8s.io" && r.resource == "leases" && r.verb == verb)
            .all(|r| r.namespace.as_deref() == Some(run.flags.namespace.as_str()) && r.name.as_deref() == name)
    };
    let count = |verb: &str| requests.iter().filter(|r| r.resource == "leases" && r.verb == verb).count();
    // Acquire: a get (missing), a create; release: an update (renewals are updates too). Never
    // a patch.
    assert!(count("get") >= 1 && count("create") == 1 && count("update") >= 1, "{requests:#?}");
    assert_eq!(count("patch") + count("delete"), 0);
    assert!(leases("get", Some(lease)) && leases("update", Some(lease)) && leases("create", None));
    let status =
        Request::new("", "configmaps", "delete", Some(&run.flags.namespace), Some(&run.flags.status_config_map_name));
    assert!(requests.contains(&status), "the status ConfigMap is deleted on exit");
}

#[test]
fn the_run_watches_wpas_and_patches_their_status() {
    let requests = controller_requests();
    let wpas = |verb: &str| Request::new("datadoghq.com", "watermarkpodautoscalers", verb, None, None);
    assert!(requests.contains(&wpas("list")) && requests.contains(&wpas("watch")), "WPAs are watched cluster-wide");
    let status = Request::new("datadoghq.com", "watermarkpodautoscalers/status", "patch", Some("default"), Some("web"));
    assert!(requests.contains(&status), "the WPA status is patched");
}

#[test]
fn the_authorizer_refuses_what_is_not_granted() {
    let granted = granted(&load_manifests());
    let allowed = |request: Request| granted.iter().any(|p| allows(p, &request));
    let run = super::parse_flags(&[]).unwrap();
    let (namespace, status) = (Some("kube-system"), run.flags.status_config_map_name.as_str());
    let lease = run.leader_elect_resource_name.as_str();
    assert!(allowed(Request::new("", "configmaps", "get", namespace, Some(status))));
    assert!(!allowed(Request::new("", "configmaps", "get", namespace, Some("other"))), "other names");
    assert!(!allowed(Request::new("", "configmaps", "get", Some("default"), Some(status))), "other namespaces");
    assert!(!allowed(Request::new("", "configmaps", "list", namespace, None)), "unselected lists");
    assert!(allowed(Request::new("", "configmaps", "delete", namespace, Some(status))), "removed on exit");
    assert!(!allowed(Request::new("", "configmaps", "delete", namespace, Some("other"))), "only the status");
    assert!(!allowed(Request::new("", "configmaps", "deletecollection", namespace, None)));
    let priority = expander::priority::PRIORITY_CONFIG_MAP_NAME;
    assert!(!allowed(Request::new("", "configmaps", "delete", namespace, Some(priority))), "the user's ConfigMap");
    assert!(!allowed(Request::new("", "nodes", "delete", None, Some("n1"))), "the autoscaler never deletes nodes");
    assert!(!allowed(Request::new("", "nodes", "create", None, None)), "the memory provider's nodes: opt-in");
    assert!(!allowed(Request::new("", "nodes", "patch", None, Some("n1"))), "taints are written with update");
    assert!(!allowed(Request::new("", "pods", "delete", Some("default"), Some("p1"))), "pods leave by eviction");
    assert!(!allowed(Request::new("", "secrets", "list", None, None)));
    assert!(!allowed(Request::new("apps", "deployments", "update", Some("default"), Some("web"))), "only /scale");
    assert!(!allowed(Request::new("datadoghq.com", "watermarkpodautoscalers", "patch", Some("d"), Some("w"))));
    assert!(allowed(Request::new("coordination.k8s.io", "leases", "update", namespace, Some(lease))));
    assert!(!allowed(Request::new("coordination.k8s.io", "leases", "update", Some("default"), Some(lease))));
    assert!(!allowed(Request::new("coordination.k8s.io", "leases", "update", namespace, Some("other"))));
    assert!(!allowed(Request::new("coordination.k8s.io", "leases", "patch", namespace, Some(lease))));
    assert!(!allowed(Request::new("coordination.k8s.io", "leases", "delete", namespace, Some(lease))));
    // The metric APIs: their resources are metric names, granted by wildcard, with the verbs used.
    assert!(allowed(Request::new("custom.metrics.k8s.io", "pods/anything", "get", Some("ns"), Some("*"))));
    assert!(allowed(Request::new("custom.metrics.k8s.io", "ingresses/hits", "get", Some("ns"), Some("web"))));
    assert!(!allowed(Request::new("custom.metrics.k8s.io", "pods/anything", "list", Some("ns"), None)));
    assert!(allowed(Request::new("external.metrics.k8s.io", "queue_length", "list", Some("ns"), None)));
    assert!(!allowed(Request::new("external.metrics.k8s.io", "queue_length", "watch", Some("ns"), None)));
    assert!(!allowed(Request::new("external.metrics.k8s.io", "queue_length", "get", Some("ns"), Some("x"))));
    assert!(allowed(Request::new("metrics.k8s.io", "pods", "list", None, None)));
    assert!(!allowed(Request::new("metrics.k8s.io", "nodes", "list", None, None)), "no wildcard there");
    assert!(!allowed(Request::new("metrics.k8s.io", "pods", "get", Some("ns"), Some("p1"))));
}

#[test]
fn a_resource_wildcard_matches_every_resource_and_subresource_of_its_group_only() {
    let wildcard = Permission {
        scope: Scope::Cluster,
        group: "custom.metrics.k8s.io".into(),
        resource: "*".into(),
        verb: "get".into(),
        name: None,
    };
    let request = |group: &str, resource: &str| Request::new(group, resource, "get", Some("ns"), Some("x"));
    assert!(allows(&wildcard, &request("custom.metrics.k8s.io", "pods/requests")));
    assert!(allows(&wildcard, &request("custom.metrics.k8s.io", "services")));
    assert!(!allows(&wildcard, &request("external.metrics.k8s.io", "services")), "another group");
    assert!(!allows(&wildcard, &request("", "pods")), "another group");
    let named = Permission { resource: "pods".into(), ..wildcard.clone() };
    assert!(!allows(&named, &request("custom.metrics.k8s.io", "pods/requests")), "a resource is not its subresources");
}

#[test]
fn wildcards_outside_the_metric_apis_are_rejected() {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let rejected = |rule: PolicyRule| std::panic::catch_unwind(|| expand(&[rule], &Scope::Cluster, "inline")).is_err();
    assert!(!rejected(rule(&["custom.metrics.k8s.io"], &["*"], &["get"])));
    assert!(!rejected(rule(&["custom.metrics.k8s.io", "external.metrics.k8s.io"], &["*"], &["list"])));
    assert!(rejected(rule(&["apps"], &["*"], &["get"])), "a resource wildcard elsewhere");
    assert!(rejected(rule(&["custom.metrics.k8s.io", "apps"], &["*"], &["get"])), "mixed with another group");
    assert!(rejected(rule(&["metrics.k8s.io"], &["*"], &["list"])), "resource metrics are named: pods");
    assert!(rejected(rule(&["*"], &["pods"], &["get"])), "a group wildcard");
    assert!(rejected(rule(&["custom.metrics.k8s.io"], &["*"], &["*"])), "a verb wildcard");
    assert!(rejected(rule(&["apps"], &["*/scale"], &["get"])), "a partial resource wildcard");
}

#[test]
fn requests_are_read_as_the_authorizer_reads_them() {
    let record = |method: &str, path: &str, query: &str| RequestRecord {
        method: method.into(),
        // What the fake server served; the authorizer's view is read from the request itself.
        verb: None,
        path: path.into(),
        query: query.into(),
        content_type: None,
        status: 200,
    };
    let read = |method: &str, path: &str, query: &str| request_of(&record(method, path, query));
    assert_eq!(
        read("GET", "/api/v1/namespaces/kube-system/configmaps", "fieldSelector=metadata.name%3Dx&watch=true"),
        Some(Request::new("", "configmaps", "watch", Some("kube-system"), Some("x")))
    );
    assert_eq!(
        read("GET", "/api/v1/namespaces/kube-system/configmaps", "watch=false"),
        Some(Request::new("", "configmaps", "list", Some("kube-system"), None))
    );
    assert_eq!(
        read("POST", "/api/v1/namespaces/default/pods/p1/eviction", ""),
        Some(Request::new("", "pods/eviction", "create", Some("default"), Some("p1")))
    );
    assert_eq!(
        read("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", ""),
        Some(Request::new("apps", "deployments/scale", "patch", Some("default"), Some("web")))
    );
    assert_eq!(
        read("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", ""),
        Some(Request::new("coordination.k8s.io", "leases", "update", Some("kube-system"), Some("l")))
    );
    assert_eq!(
        read("DELETE", "/api/v1/namespaces/kube-system/configmaps/s", ""),
        Some(Request::new("", "configmaps", "delete", Some("kube-system"), Some("s")))
    );
    assert_eq!(
        read("DELETE", "/api/v1/namespaces/kube-system/configmaps", ""),
        Some(Request::new("", "configmaps", "deletecollection", Some("kube-system"), None))
    );
    assert_eq!(read("GET", "/api/v1/namespaces", ""), Some(Request::new("", "namespaces", "list", None, None)));
    assert_eq!(read("GET", "/apis/apps/v1", ""), None, "discovery");
    // The metrics APIs: the metric is the subresource of a pods or object request, and the
    // resource itself of an external one.
    assert_eq!(
        read("GET", "/apis/metrics.k8s.io/v1beta1/pods", ""),
        Some(Request::new("metrics.k8s.io", "pods", "list", None, None))
    );
    assert_eq!(
        read("GET", "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/hits", "metricLabelSelector=a%3Db"),
        Some(Request::new("custom.metrics.k8s.io", "pods/hits", "get", Some("ns"), Some("*")))
    );
    assert_eq!(
        read("GET", "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/services/web/hits", ""),
        Some(Request::new("custom.metrics.k8s.io", "services/hits", "get", Some("ns"), Some("web")))
    );
    assert_eq!(
        read("GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue_length", "labelSelector=a%3Db"),
        Some(Request::new("external.metrics.k8s.io", "queue_length", "list", Some("ns"), None))
    );
}
