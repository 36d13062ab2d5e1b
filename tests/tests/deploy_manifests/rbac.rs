//! RBAC: `deploy/kubernetes/rbac.yaml` grants the autoscaler's ServiceAccount exactly the
//! permission table below (least privilege: nothing more, no wildcards), and the table allows
//! every request the kube adapter makes, checked by running the adapter against the fake API
//! server and authorizing each recorded request the way the API server's RBAC authorizer does.

use std::collections::BTreeSet;
use std::time::Duration;

use autoscaler::kube_adapter::{KubeActions, KubeActionsOptions, KubeClients, KubeCluster, KubeClusterOptions};
use autoscaler::ports::{ClusterActions, ClusterReader, Event, EventType, ObjectRef, ScaleTarget};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, HorizontalPodAutoscalerStatus,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Node, Pod, PodSpec, PodStatus, ReplicationController, ReplicationControllerSpec, Taint,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use tests::eventually;
use tests::fake_apiserver::{FakeApiServer, RequestRecord, Verb};

use super::{Manifests, load_manifests};

/// The ServiceAccount the manifests run the autoscaler as.
const SERVICE_ACCOUNT: (&str, &str) = ("kube-system", "cluster-autoscaler");
/// The leader election Lease (upstream's `--leader-elect-resource-name` default).
const LEASE_NAME: &str = "cluster-autoscaler";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// Granted by a ClusterRoleBinding: cluster-scoped objects and every namespace.
    Cluster,
    /// Granted by a RoleBinding: objects of this namespace only.
    Namespace(String),
}

/// One (scope, API group, resource[/subresource], verb, resource name) a role grants.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Permission {
    scope: Scope,
    group: String,
    resource: String,
    verb: String,
    /// `resourceNames`: `None` grants every object.
    name: Option<String>,
}

/// Who makes the calls a permission is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// The kube adapter (`autoscaler/src/kube_adapter/`); every such permission must be used by
    /// the run in [`adapter_requests`].
    KubeAdapter,
    /// Code that is not in the adapter yet; the manifests grant it ahead.
    Planned(&'static str),
}

/// (scope, API group, resource, verbs, resource name, caller).
type TableRow<'a> = (Scope, &'a str, &'a str, &'a [&'a str], Option<&'a str>, Caller);

/// The permission table: what the code calls, and where. `--namespace` is upstream's
/// `kube-system`; the ConfigMap names are the code's defaults.
fn permission_table() -> Vec<(Permission, Caller)> {
    let (flags, _) = super::parse_flags(&[]).expect("the default flags parse");
    let namespace = flags.namespace.clone();
    let status_config_map = flags.status_config_map_name.clone();
    let priority_config_map = expander::priority::PRIORITY_CONFIG_MAP_NAME.to_string();
    let wpa = Caller::Planned("a WatermarkPodAutoscaler reflector (ClusterView.wpas)");
    let leader = Caller::Planned("leader election on the Lease (--leader-elect)");
    use Caller::KubeAdapter as Adapter;

    let cluster = Scope::Cluster;
    let local = Scope::Namespace(namespace);
    #[rustfmt::skip]
    let rows: Vec<TableRow> = vec![
        // reader.rs: a reflector (list + watch) per kind of ClusterView.
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
        (cluster.clone(), "autoscaling", "horizontalpodautoscalers", &["list", "watch"], None, Adapter),
        (cluster.clone(), "datadoghq.com", "watermarkpodautoscalers", &["list", "watch"], None, wpa),
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
        // actions.rs update_hpa_status: a merge patch of the status subresource.
        (cluster.clone(), "autoscaling", "horizontalpodautoscalers/status", &["patch"], None, Adapter),
        // actions.rs create_event / bump_event: core/v1 Events in the object's namespace.
        (cluster.clone(), "", "events", &["create", "patch"], None, Adapter),
        // actions.rs write_status: get, then update or create the status ConfigMap.
        (local.clone(), "", "configmaps", &["get", "update"], Some(status_config_map.as_str()), Adapter),
        (local.clone(), "", "configmaps", &["create"], None, Adapter),
        // Leader election: get, then update or create the Lease.
        (local.clone(), "coordination.k8s.io", "leases", &["get", "update"], Some(LEASE_NAME), leader),
        (local.clone(), "coordination.k8s.io", "leases", &["create"], None, leader),
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

fn expand(rules: &[PolicyRule], scope: &Scope, source: &str) -> Vec<Permission> {
    let mut permissions = Vec::new();
    for rule in rules {
        assert!(rule.non_resource_urls.is_none(), "{source}: no non-resource URLs are needed");
        let groups = rule.api_groups.clone().unwrap_or_default();
        let resources = rule.resources.clone().unwrap_or_default();
        let names: Vec<Option<String>> = match &rule.resource_names {
            Some(names) if !names.is_empty() => names.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        for word in groups.iter().chain(&resources).chain(&rule.verbs).chain(names.iter().flatten()) {
            assert!(!word.contains('*'), "{source}: wildcard {word:?} (least privilege: name what is needed)");
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
struct Request {
    group: String,
    resource: String,
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
/// matches a request without a name (a create, or a list without a metadata.name selector).
fn allows(permission: &Permission, request: &Request) -> bool {
    let in_scope = match &permission.scope {
        Scope::Cluster => true,
        Scope::Namespace(namespace) => request.namespace.as_deref() == Some(namespace.as_str()),
    };
    in_scope
        && permission.group == request.group
        && permission.resource == request.resource
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

fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
        Verb::DeleteCollection => "deletecollection",
    }
}

/// The authorizer's view of a recorded request; `None` for non-resource paths (discovery, which
/// every authenticated user may read).
fn request_of(record: &RequestRecord) -> Option<Request> {
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
    let verb = verb_name(record.verb.unwrap_or_else(|| panic!("a resource request without a verb: {record:?}")));
    let name = match rest.get(1) {
        Some(name) => Some(name.to_string()),
        None if verb == "list" || verb == "watch" => field_selector_name(&record.query),
        None => None,
    };
    Some(Request { group: group.into(), resource, verb: verb.into(), namespace: namespace.map(String::from), name })
}

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.into()), namespace: namespace.map(String::from), ..Default::default() }
}

fn app_selector(app: &str) -> LabelSelector {
    LabelSelector { match_labels: Some([("app".to_string(), app.to_string())].into()), ..Default::default() }
}

/// Every request the kube adapter makes when each of its reads and actions is used once (twice
/// where the second call takes another path: the status ConfigMap's update, an Event's bump).
async fn adapter_requests() -> Vec<Request> {
    let server = FakeApiServer::builder().watermark_pod_autoscalers(true).start().await;
    server.seed(&Node { metadata: meta(None, "n1"), ..Default::default() });
    server.seed(&Pod {
        metadata: meta(Some("default"), "p1"),
        spec: Some(PodSpec { node_name: Some("n1".into()), ..Default::default() }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    });
    server.seed(&Deployment {
        metadata: meta(Some("default"), "web"),
        spec: Some(DeploymentSpec { replicas: Some(2), selector: app_selector("web"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&ReplicaSet {
        metadata: meta(Some("default"), "rs"),
        spec: Some(ReplicaSetSpec { replicas: Some(1), selector: app_selector("rs"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&StatefulSet {
        metadata: meta(Some("default"), "db"),
        spec: Some(StatefulSetSpec { replicas: Some(1), selector: app_selector("db"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&ReplicationController {
        metadata: meta(Some("default"), "rc"),
        spec: Some(ReplicationControllerSpec {
            replicas: Some(1),
            selector: Some([("app".to_string(), "rc".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    server.seed(&HorizontalPodAutoscaler {
        metadata: meta(Some("default"), "web"),
        spec: Some(HorizontalPodAutoscalerSpec {
            max_replicas: 5,
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            ..Default::default()
        }),
        ..Default::default()
    });
    server.seed(&ConfigMap {
        metadata: meta(Some("kube-system"), expander::priority::PRIORITY_CONFIG_MAP_NAME),
        data: Some([("priorities".to_string(), "10:\n- .*\n".to_string())].into()),
        ..Default::default()
    });

    // No client-side rate limit: the run issues a burst of requests.
    let clients = KubeClients::from_config(server.kube_config(), -1.0, 0).unwrap();
    let (flags, _) = super::parse_flags(&[]).unwrap();
    let cluster = KubeCluster::start_with(clients.client.clone(), KubeClusterOptions::new(&flags.namespace));
    cluster.view().await.expect("the reflectors sync");
    // Each reflector watches after its list; wait until every listed collection is watched.
    eventually("a watch after every list", || async {
        let records = server.requests();
        let watched = |path: &str| records.iter().any(|r| r.verb == Some(Verb::Watch) && r.path == path);
        records.iter().filter(|r| r.verb == Some(Verb::List)).all(|r| watched(&r.path)).then_some(())
    })
    .await;

    let actions = KubeActions::with_options(
        clients,
        KubeActionsOptions {
            conflict_retry_interval: Duration::from_millis(10),
            event_dedup_window: None,
            ..Default::default()
        },
    );
    let taint =
        Taint { key: "ToBeDeletedByClusterAutoscaler".into(), effect: "NoSchedule".into(), ..Default::default() };
    actions.taint_node("n1", taint, true).await.unwrap();
    actions.untaint_node("n1", "ToBeDeletedByClusterAutoscaler", true).await.unwrap();
    actions.evict_pod("default", "p1", 30).await.unwrap();
    for (api_version, kind, name) in [
        ("apps/v1", "Deployment", "web"),
        ("apps/v1", "ReplicaSet", "rs"),
        ("apps/v1", "StatefulSet", "db"),
        ("v1", "ReplicationController", "rc"),
    ] {
        let target = ScaleTarget {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: "default".into(),
            name: name.into(),
        };
        let scale = actions.get_scale(&target).await.unwrap();
        actions.set_scale(&target, scale.spec_replicas + 1).await.unwrap();
    }
    let status = HorizontalPodAutoscalerStatus { current_replicas: Some(2), desired_replicas: 3, ..Default::default() };
    actions.update_hpa_status("default", "web", status).await.unwrap();
    for text in ["autoscalerStatus: Initializing\n", "autoscalerStatus: Running\n"] {
        actions.write_status(&flags.namespace, &flags.status_config_map_name, text, "now").await.unwrap();
    }
    let on_node = Event {
        object: ObjectRef::node("n1"),
        event_type: EventType::Normal,
        reason: "ScaleDown".into(),
        message: "m".into(),
    };
    actions.record_event(on_node.clone()).await.unwrap();
    actions.record_event(on_node).await.unwrap();
    let on_config_map = Event {
        object: ObjectRef::config_map(&flags.namespace, &flags.status_config_map_name),
        event_type: EventType::Warning,
        reason: "ScaleUpFailed".into(),
        message: "m".into(),
    };
    actions.record_event(on_config_map).await.unwrap();
    cluster.stop();

    server.requests().iter().filter_map(request_of).collect()
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

#[tokio::test]
async fn rbac_allows_every_request_the_kube_adapter_makes() {
    let granted = granted(&load_manifests());
    let requests = adapter_requests().await;
    assert!(requests.len() > 20, "the run made requests: {requests:?}");
    for request in &requests {
        assert!(
            granted.iter().any(|permission| allows(permission, request)),
            "the adapter made {request:?}, which rbac.yaml does not allow: grant it (in rbac.yaml, the chart and \
             the table of deploy_manifests/rbac.rs)"
        );
    }
}

#[tokio::test]
async fn every_permission_for_the_kube_adapter_is_used_by_it() {
    let requests = adapter_requests().await;
    for (permission, caller) in permission_table() {
        if caller == Caller::KubeAdapter {
            assert!(
                requests.iter().any(|request| allows(&permission, request)),
                "{permission:?} is granted for the kube adapter, which no longer makes such a request: \
                 drop it from rbac.yaml, the chart and the table"
            );
        }
    }
}

#[test]
fn the_authorizer_refuses_what_is_not_granted() {
    let granted = granted(&load_manifests());
    let allowed = |request: Request| granted.iter().any(|p| allows(p, &request));
    let status = "cluster-autoscaler-status";
    assert!(allowed(Request::new("", "configmaps", "get", Some("kube-system"), Some(status))));
    assert!(!allowed(Request::new("", "configmaps", "get", Some("kube-system"), Some("other"))), "other names");
    assert!(!allowed(Request::new("", "configmaps", "get", Some("default"), Some(status))), "other namespaces");
    assert!(!allowed(Request::new("", "configmaps", "list", Some("kube-system"), None)), "unselected lists");
    assert!(!allowed(Request::new("", "configmaps", "delete", Some("kube-system"), Some(status))));
    assert!(!allowed(Request::new("", "nodes", "delete", None, Some("n1"))), "the autoscaler never deletes nodes");
    assert!(!allowed(Request::new("", "nodes", "patch", None, Some("n1"))), "taints are written with update");
    assert!(!allowed(Request::new("", "pods", "delete", Some("default"), Some("p1"))), "pods leave by eviction");
    assert!(!allowed(Request::new("", "secrets", "list", None, None)));
    assert!(!allowed(Request::new("apps", "deployments", "update", Some("default"), Some("web"))), "only /scale");
    assert!(!allowed(Request::new("coordination.k8s.io", "leases", "update", Some("default"), Some(LEASE_NAME))));
}

#[test]
fn requests_are_read_as_the_authorizer_reads_them() {
    let record = |verb: Verb, path: &str, query: &str| RequestRecord {
        method: String::new(),
        verb: Some(verb),
        path: path.into(),
        query: query.into(),
        content_type: None,
        status: 200,
    };
    assert_eq!(
        request_of(&record(
            Verb::Watch,
            "/api/v1/namespaces/kube-system/configmaps",
            "fieldSelector=metadata.name%3Dx&watch=true"
        )),
        Some(Request::new("", "configmaps", "watch", Some("kube-system"), Some("x")))
    );
    assert_eq!(
        request_of(&record(Verb::Create, "/api/v1/namespaces/default/pods/p1/eviction", "")),
        Some(Request::new("", "pods/eviction", "create", Some("default"), Some("p1")))
    );
    assert_eq!(
        request_of(&record(Verb::Patch, "/apis/apps/v1/namespaces/default/deployments/web/scale", "")),
        Some(Request::new("apps", "deployments/scale", "patch", Some("default"), Some("web")))
    );
    assert_eq!(
        request_of(&record(Verb::List, "/api/v1/namespaces", "")),
        Some(Request::new("", "namespaces", "list", None, None))
    );
    assert_eq!(request_of(&record(Verb::Get, "/apis/apps/v1", "")), None, "discovery");
}
