//! Property test: the counts of every term, whether registered through the label index or kept
//! up to date by pod mutations, forks and reverts, equal a scan of every pod; and the existing
//! pods' anti-affinity terms an incoming pod is checked against are those a scan would find.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use proptest::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use crate::index::term_matches_pod;
use crate::labels::{Labels, Requirement, Selector};
use crate::pod::{NamespaceSet, PodInfo, PodTerm, TermKind};
use crate::snapshot::{ClusterSnapshot, NodeId};
use crate::testing::{node, pod, with_labels, with_namespace, with_node_labels};
use crate::well_known::{HOSTNAME_LABEL, NAMESPACE_NAME_LABEL};

const KEYS: [&str; 3] = ["app", "tier", "team"];
const VALUES: [&str; 3] = ["a", "b", "c"];
const NAMESPACES: [&str; 3] = ["default", "ns1", "ns2"];
const NODES: usize = 4;

#[derive(Clone, Debug)]
struct PodSpec {
    namespace: usize,
    labels: Vec<(usize, usize)>,
    terminating: bool,
    /// Index of a term the pod carries as a required anti-affinity term.
    carries: Option<usize>,
}

#[derive(Clone, Debug)]
enum Op {
    Add { pod: usize, node: usize },
    Remove { pod: usize },
    RemoveNode { node: usize },
    Register { term: usize },
    Fork,
    Revert,
    Commit,
}

fn values() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(0..VALUES.len(), 1..3)
        .prop_map(|vs| vs.into_iter().map(|v| VALUES[v].to_string()).collect())
}

fn requirement() -> impl Strategy<Value = Requirement> {
    let key = (0..KEYS.len()).prop_map(|k| KEYS[k].to_string());
    prop_oneof![
        3 => (key.clone(), values()).prop_map(|(k, vs)| Requirement::In(k, vs)),
        1 => (key.clone(), values()).prop_map(|(k, vs)| Requirement::NotIn(k, vs)),
        1 => key.clone().prop_map(Requirement::Exists),
        1 => key.prop_map(Requirement::DoesNotExist),
    ]
}

fn term() -> impl Strategy<Value = Arc<PodTerm>> {
    let selector = prop_oneof![
        1 => Just(Selector::Nothing),
        6 => proptest::collection::vec(requirement(), 0..3).prop_map(Selector::All),
    ];
    let namespaces = prop_oneof![
        3 => proptest::collection::vec(0..NAMESPACES.len(), 1..3).prop_map(|ns| NamespaceSet {
            names: ns.into_iter().map(|n| NAMESPACES[n].to_string()).collect(),
            selector: None,
        }),
        1 => Just(NamespaceSet { names: Vec::new(), selector: Some(Selector::everything()) }),
        1 => Just(NamespaceSet {
            names: Vec::new(),
            selector: Some(Selector::All(vec![Requirement::In("env".into(), vec!["prod".into()])])),
        }),
        1 => Just(NamespaceSet {
            names: vec!["ns1".into()],
            selector: Some(Selector::All(vec![Requirement::In(NAMESPACE_NAME_LABEL.into(), vec!["default".into()])])),
        }),
    ];
    let topology_key = prop_oneof![Just("zone".to_string()), Just(HOSTNAME_LABEL.to_string())];
    let kind = prop_oneof![Just(TermKind::Affinity), Just(TermKind::Spread)];
    (kind, selector, namespaces, topology_key).prop_map(|(kind, selector, namespaces, topology_key)| {
        Arc::new(PodTerm::new(kind, selector, namespaces, topology_key))
    })
}

fn pod_spec(terms: usize) -> impl Strategy<Value = PodSpec> {
    (
        0..NAMESPACES.len(),
        proptest::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..3),
        proptest::bool::weighted(0.2),
        proptest::option::weighted(0.3, 0..terms),
    )
        .prop_map(|(namespace, labels, terminating, carries)| PodSpec { namespace, labels, terminating, carries })
}

fn op(pods: usize, terms: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..pods, 0..NODES).prop_map(|(pod, node)| Op::Add { pod, node }),
        3 => (0..pods).prop_map(|pod| Op::Remove { pod }),
        1 => (0..NODES).prop_map(|node| Op::RemoveNode { node }),
        2 => (0..terms).prop_map(|term| Op::Register { term }),
        2 => Just(Op::Fork),
        2 => Just(Op::Revert),
        1 => Just(Op::Commit),
    ]
}

fn scenario() -> impl Strategy<Value = (Vec<Arc<PodTerm>>, Vec<PodSpec>, Vec<Op>)> {
    (1usize..6, 1usize..12).prop_flat_map(|(terms, pods)| {
        (
            proptest::collection::vec(term(), terms),
            proptest::collection::vec(pod_spec(terms), pods),
            proptest::collection::vec(op(pods, terms), 1..40),
        )
    })
}

fn pod_info(index: usize, spec: &PodSpec, terms: &[Arc<PodTerm>]) -> Arc<PodInfo> {
    let labels: Vec<(&str, &str)> = spec.labels.iter().map(|(k, v)| (KEYS[*k], VALUES[*v])).collect();
    let mut p =
        with_namespace(with_labels(pod(&format!("p{index}"), "10m", "1Mi"), &labels), NAMESPACES[spec.namespace]);
    if spec.terminating {
        p.metadata.deletion_timestamp = Some(Time(Default::default()));
    }
    let mut info = PodInfo::new(&p);
    std::sync::Arc::make_mut(&mut info.shape).anti_affinity_terms =
        spec.carries.map(|t| terms[t].clone()).into_iter().collect();
    Arc::new(info)
}

fn snapshot() -> ClusterSnapshot {
    let mut s = ClusterSnapshot::new();
    // `ns1` is labelled, `default` has an object without labels, `ns2` has no object at all.
    let ns = |name: &str, labels: Option<Labels>| Namespace {
        metadata: ObjectMeta { name: Some(name.into()), labels, ..Default::default() },
        ..Default::default()
    };
    s.set_namespaces(&[ns("ns1", Some([("env".to_string(), "prod".to_string())].into())), ns("default", None)]);
    let zones = [Some("a"), Some("a"), Some("b"), None];
    for (i, zone) in zones.iter().enumerate() {
        let mut n = node(&format!("n{i}"), "100", "100Gi");
        if let Some(z) = zone {
            n = with_node_labels(n, &[("zone", z)]);
        }
        s.add_node(Arc::new(n)).unwrap();
    }
    s
}

/// A term's counts by the definition: every pod of every node tested.
fn scanned(s: &ClusterSnapshot, term: &PodTerm) -> (HashMap<NodeId, u32>, HashMap<String, u32>, u32) {
    let mut per_node = HashMap::default();
    let mut per_domain = HashMap::default();
    let mut total = 0;
    for (id, node) in s.nodes() {
        let matching = node.pods.iter().filter(|p| term_matches_pod(term, p, s.namespace_labels())).count() as u32;
        if matching == 0 {
            continue;
        }
        per_node.insert(id, matching);
        if let Some(v) = node.label(&term.topology_key) {
            *per_domain.entry(v.to_string()).or_insert(0) += matching;
            total += matching;
        }
    }
    (per_node, per_domain, total)
}

fn assert_term(s: &ClusterSnapshot, term: &PodTerm) -> Result<(), TestCaseError> {
    let id = s.index.term_id(term).expect("registered");
    let counts = &s.index.terms[id];
    let (per_node, per_domain, total) = scanned(s, term);
    prop_assert_eq!(&counts.per_node, &per_node, "per node, {:?}", term);
    prop_assert_eq!(&counts.per_domain, &per_domain, "per domain, {:?}", term);
    prop_assert_eq!(counts.total_in_domains, total, "total, {:?}", term);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn indexed_term_counts_equal_a_scan_of_every_pod((terms, specs, ops) in scenario()) {
        let mut s = snapshot();
        let pods: Vec<Arc<PodInfo>> = specs.iter().enumerate().map(|(i, p)| pod_info(i, p, &terms)).collect();
        for op in ops {
            match op {
                Op::Add { pod, node } => {
                    let id = s.node_id(&format!("n{node}"));
                    if let Some(id) = id.filter(|_| s.pod_node(&pods[pod].key).is_none()) {
                        s.add_pod(pods[pod].clone(), id).unwrap();
                    }
                }
                Op::Remove { pod } => {
                    if s.pod_node(&pods[pod].key).is_some() {
                        s.remove_pod(&pods[pod].key).unwrap();
                    }
                }
                Op::RemoveNode { node } => {
                    if let Some(id) = s.node_id(&format!("n{node}")) {
                        s.remove_node(id).unwrap();
                    }
                }
                Op::Register { term } => {
                    s.ensure_term(&terms[term]);
                }
                Op::Fork => s.fork(),
                Op::Revert => {
                    if s.fork_depth() > 0 {
                        s.revert();
                    }
                }
                Op::Commit => {
                    if s.fork_depth() > 0 {
                        s.commit();
                    }
                }
            }
            for term in terms.iter().filter(|t| s.index.term_id(t).is_some()) {
                assert_term(&s, term)?;
            }
            for incoming in &pods {
                let scanned: Vec<usize> = s
                    .index
                    .carriers
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.total > 0 && term_matches_pod(&c.term, incoming, s.namespace_labels()))
                    .map(|(i, _)| i)
                    .collect();
                let prepared = s.prepare(incoming);
                prop_assert_eq!(&prepared.blocking_carriers, &scanned);
            }
        }
        // Every term registered last, on the final state, through the label index.
        for term in &terms {
            s.ensure_term(term);
            assert_term(&s, term)?;
        }
    }
}
