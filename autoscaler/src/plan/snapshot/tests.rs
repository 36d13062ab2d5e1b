use super::*;

#[test]
fn kubectl_list_json_is_read_and_unknown_kinds_ignored() {
    let text = r#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[]}},
        {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}
    ]}"#;
    let mut view = ClusterView::default();
    load_text(&mut view, text, "dump.json").unwrap();
    assert_eq!(view.nodes.len(), 1);
    assert_eq!(view.pods.len(), 1);
}

#[test]
fn yaml_documents_are_read() {
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds, namespace: kube-system}\nspec: {selector: {}, template: {}}\n";
    let mut view = ClusterView::default();
    load_text(&mut view, text, "dump.yaml").unwrap();
    assert_eq!(view.nodes.len(), 1);
    assert_eq!(view.daemonsets.len(), 1);
}

#[test]
fn malformed_object_names_file_item_and_field() {
    let text = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":"oops"}}]}"#;
    let err = load_text(&mut ClusterView::default(), text, "dump.json").unwrap_err().to_string();
    assert!(err.contains("dump.json"), "{err}");
    assert!(err.contains("items[0] (Pod ns/p)"), "{err}");
    assert!(err.contains("spec.containers"), "{err}");
}

#[test]
fn errors_in_a_dump_name_the_line_of_the_field() {
    let json = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}}
    ]}))
    .unwrap();
    let cpu_line = json.lines().position(|l| l.contains("\"cpu\"")).unwrap() as u64 + 1;
    let err = load_text(&mut ClusterView::default(), &json, "dump.json").unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "dump.json:{cpu_line}: items[1] (Pod ns/p): field `spec.containers[0].resources.requests.cpu`"
        )),
        "{err}"
    );
    let yaml = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\nstatus:\n  allocatable:\n    memory: lots\n";
    let err = load_text(&mut ClusterView::default(), yaml, "dump.yaml").unwrap_err().to_string();
    assert!(err.starts_with("dump.yaml:11: document 2 (Node n2): field `status.allocatable.memory`"), "{err}");
}

#[test]
fn an_item_refused_is_placed_in_its_own_text_whatever_follows_it() {
    let pods: Vec<Value> = (0..3)
        .map(|i| serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": if i == 1 { "-1" } else { "1" }}}}]}}))
        .collect();
    let list = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": pods})).unwrap();
    let cpu_line = list.lines().position(|l| l.contains("\"-1\"")).unwrap() as u64 + 1;
    // A syntax error after the refused item: the file cannot be read again as a whole.
    let text = format!("{list}\n{{\"kind\": \"List\", \"items\": [ oops");
    let err = load_text(&mut ClusterView::default(), &text, "dump.json").unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "dump.json:{cpu_line}: items[1] (Pod ns/p1): field `spec.containers[0].resources.requests.cpu`"
        )),
        "{err}"
    );
    // A copy that differs, in a second document: at the line its item starts.
    let changed = list.replace("\"-1\"", "\"2\"");
    let first = list.replace("\"-1\"", "\"1\"");
    let text = format!("{first}\n{changed}");
    let lines: Vec<&str> = text.lines().collect();
    let name_line = lines.iter().rposition(|l| l.contains("\"p1\"")).unwrap();
    let item_line = lines[..name_line].iter().rposition(|l| l.trim() == "{").unwrap() + 1;
    let err = load_text(&mut ClusterView::default(), &text, "dump.json").unwrap_err().to_string();
    let expected = format!("dump.json:{item_line}: items[1] (Pod ns/p1): the same kind");
    assert!(err.starts_with(&expected), "{err}\nexpected: {expected}");
}

#[test]
fn pods_parsed_on_the_parser_thread_come_in_order_and_the_first_error_wins() {
    let pod = |i: usize, cpu: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}})
    };
    let list = |items: &[Value]| serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": items}));
    let pods: Vec<Value> = (0..700).map(|i| pod(i, "1")).collect();
    let mut view = ClusterView::default();
    load_text(&mut view, &list(&pods).unwrap(), "dump.json").unwrap();
    let keys: Vec<String> = view.pods.iter().map(|p| p.key.to_string()).collect();
    assert_eq!(keys, (0..700).map(|i| format!("ns/p{i}")).collect::<Vec<_>>(), "in the order read");
    assert!(view.pods.iter().all(|p| Arc::ptr_eq(&p.shape, &view.pods[0].shape)), "one interner");

    // A refused pod, then a copy of another with other contents, then bad text: the
    // refused pod is the first error, as read one at a time.
    let mut bad = pods.clone();
    bad[300] = pod(300, "-1");
    bad[500] = pod(10, "2");
    bad[650] = pod(650, "-2");
    let text = list(&bad).unwrap();
    let cpu_line = text.lines().position(|l| l.contains("\"-1\"")).unwrap() + 1;
    let err = load_text(&mut ClusterView::default(), &format!("{text}\n[ oops"), "dump.json").unwrap_err();
    assert!(err.to_string().starts_with(&format!("dump.json:{cpu_line}: items[300] (Pod ns/p300)")), "{err}");
    // The unit tests' rule parses every second batch of 128 on the reading thread (see
    // `Sharing`): a pod refused there (batch 1) is placed the same way, and wins over a later
    // one refused on the parser thread (batch 2).
    bad[200] = pod(200, "-3");
    let text = list(&bad).unwrap();
    let cpu_line = text.lines().position(|l| l.contains("\"-3\"")).unwrap() + 1;
    let err = load_text(&mut ClusterView::default(), &text, "dump.json").unwrap_err();
    assert!(err.to_string().starts_with(&format!("dump.json:{cpu_line}: items[200] (Pod ns/p200)")), "{err}");
    bad[200] = pod(200, "1");
    (bad[300], bad[650]) = (pod(300, "1"), pod(650, "1"));
    let err = load_text(&mut ClusterView::default(), &format!("{}\n[ oops", list(&bad).unwrap()), "dump.json");
    let err = err.unwrap_err().to_string();
    assert!(err.contains("items[500] (Pod ns/p10): the same kind, namespace and name as"), "{err}");
    bad[500] = pod(500, "1");
    let err = load_text(&mut ClusterView::default(), &format!("{}\n[ oops", list(&bad).unwrap()), "dump.json");
    assert!(matches!(err, Err(SnapshotError::Syntax { .. })), "{err:?}");
}

#[test]
fn metrics_lists_are_read_though_their_items_come_before_their_kind() {
    // kubectl writes keys in order: `items` before `kind`.
    let text = r#"{"apiVersion":"metrics.k8s.io/v1beta1","items":[
        {"metadata":{"name":"p","namespace":"ns"},"timestamp":"2026-01-01T00:00:00Z","window":"30s",
         "containers":[{"name":"c","usage":{"cpu":"250m","memory":"1Gi"}}]}],
        "kind":"PodMetricsList","metadata":{}}"#;
    let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, text, "m.json").unwrap();
    assert!(!metrics.is_empty(), "the pod metrics were read");
    let bad = text.replace("250m", "lots");
    let err = load_text_with_metrics(&mut view, &mut MetricLists::default(), &mut seen, &bad, "m.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("m.json:1: document 1 (PodMetricsList): field `items`: items[0].containers.usage.cpu"),
        "{err}"
    );
    // The same items in a plain List are not metrics: without a kind they are not objects.
    let list = text.replace("PodMetricsList", "List");
    let mut metrics = MetricLists::default();
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, &list, "l.json").unwrap();
    assert!(metrics.is_empty());
}

#[test]
fn json_files_are_read_as_a_stream_with_errors_placed() {
    let dir = tempfile::Builder::new().prefix("snapshot-stream-").tempdir().unwrap();
    let path = dir.path().join("dump.json");
    let pods: Vec<Value> = (0..3)
        .map(|i| serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": if i == 2 { "-1" } else { "1" }}}}]}}))
        .collect();
    let good = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": &pods[..2]})).unwrap();
    // Two documents back to back, as `kubectl get -o json` per resource writes them.
    std::fs::write(&path, format!("\n\n{good}\n{good}")).unwrap();
    let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
    load_into(&mut view, &mut metrics, &mut seen, path.to_str().unwrap()).unwrap();
    assert_eq!(view.pods.len(), 2, "the second document repeats the first: read once");
    let bad = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": pods})).unwrap();
    std::fs::write(&path, &bad).unwrap();
    let line = bad.lines().position(|l| l.contains("\"-1\"")).unwrap() + 1;
    let err = load_into(&mut ClusterView::default(), &mut metrics, &mut Seen::default(), path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("{}:{line}: items[2] (Pod ns/p2)", path.display())), "{err}");
    std::fs::write(&path, "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"").unwrap();
    let err =
        load_into(&mut ClusterView::default(), &mut metrics, &mut Seen::default(), path.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, SnapshotError::Syntax { .. }), "{err}");
}

#[test]
fn items_parsed_from_their_text_keep_copies_and_syntax_errors_as_a_tree_would() {
    // The same node as a List item in JSON and as a YAML document, its fields in another
    // order: one object. Its managed fields are stepped over, not unknown fields.
    let node = serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": {"a": "1", "b": "2"}, "managedFields": [{"manager": "kubelet"}]},
        "status": {"allocatable": {"cpu": "4"}}});
    let list = serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "items": [node]})).unwrap();
    let yaml = "kind: Node\napiVersion: v1\nstatus: {allocatable: {cpu: \"4\"}}\nmetadata:\n  labels: {b: \"2\", a: \"1\"}\n  name: n1\n  managedFields: [{manager: kubelet}]\n";
    let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, &list, "a.json").unwrap();
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, yaml, "b.yaml").unwrap();
    assert_eq!(view.nodes.len(), 1);
    assert_eq!(
        seen.all_warnings(),
        ["b.yaml: document 1 (Node n1): the same object as a.json: items[0] (Node n1); read once"]
    );
    assert_eq!(view.nodes[0].metadata.managed_fields, None);
    // A bad scalar inside an item, of a kind read or not, is the error serde_json gives for
    // the whole text, at the same line and column.
    for kind in ["Pod", "Service"] {
        let text = format!(
            "{{\"kind\": \"List\", \"items\": [\n  {{\"apiVersion\": \"v1\", \"kind\": \"{kind}\", \"metadata\": {{\"name\": \"p\"}},\n   \"spec\": {{\"containers\": [], \"hostNetwork\": tru}}}}]}}"
        );
        let whole = serde_json::from_str::<Value>(&text).unwrap_err();
        let err = load_text(&mut ClusterView::default(), &text, "dump.json").unwrap_err();
        assert!(matches!(err, SnapshotError::Syntax { .. }), "{err}");
        assert_eq!(err.to_string(), format!("dump.json: not valid JSON or YAML: {whole}"));
    }
}

#[test]
fn storage_objects_turn_the_volume_filters_on() {
    let mut view = ClusterView::default();
    load_text(
        &mut view,
        r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}]}"#,
        "a.json",
    )
    .unwrap();
    assert!(!view.volumes_observed, "a dump without storage objects says nothing about volumes");
    let text = r#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"db"},
         "spec":{"resources":{"requests":{"storage":"10Gi"}}}},
        {"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"capacity":{"storage":"10Gi"}}},
        {"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"gp3"},"provisioner":"ebs.csi.aws.com"},
        {"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"n1"},"spec":{"drivers":[]}}
    ]}"#;
    load_text(&mut view, text, "b.json").unwrap();
    assert!(view.volumes_observed);
    assert_eq!(
        (view.persistent_volume_claims.len(), view.persistent_volumes.len()),
        (1, 1),
        "claims and volumes are read"
    );
    assert_eq!((view.storage_classes.len(), view.csi_nodes.len()), (1, 1));
    let bad = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"lots"}}}]}"#;
    let err = load_text(&mut ClusterView::default(), bad, "c.json").unwrap_err().to_string();
    assert!(err.contains("spec.capacity.storage"), "{err}");
}

#[test]
fn duplicate_objects_are_read_once_when_identical_and_refused_when_not() {
    let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}}"#;
    let other = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"8"}}}"#;
    let mut view = ClusterView::default();
    let mut seen = Seen::default();
    let mut metrics = MetricLists::default();
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, &format!("[{node},{node}]"), "a.json").unwrap();
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, node, "b.json").unwrap();
    assert_eq!(view.nodes.len(), 1, "read once");
    assert_eq!(seen.warnings.len(), 2, "{:?}", seen.warnings);
    assert!(seen.warnings[1].starts_with("b.json: document 1 (Node n1): the same object as a.json: document 1 item 0"));
    let err = load_text_with_metrics(&mut view, &mut metrics, &mut seen, other, "c.json").unwrap_err().to_string();
    assert!(err.starts_with("c.json:1: document 1 (Node n1): the same kind, namespace and name as a.json"), "{err}");
    // Same name, another kind or namespace: not a duplicate.
    let pod = |ns: &str| format!(r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"n1","namespace":"{ns}"}}}}"#);
    load_text_with_metrics(&mut view, &mut metrics, &mut seen, &format!("[{},{}]", pod("a"), pod("b")), "d.json")
        .unwrap();
    assert_eq!(view.pods.len(), 2);
}

#[test]
fn large_yaml_dumps_are_read() {
    // Found beside the readers' fuzz test: 3,000 objects in YAML passed the parser's default
    // budget of 250,000 nodes and were refused as "not valid JSON or YAML".
    let namespaces: String =
        (0..60_000).map(|i| format!("- {{apiVersion: v1, kind: Namespace, metadata: {{name: ns-{i}}}}}\n")).collect();
    let mut view = ClusterView::default();
    load_text(&mut view, &format!("kind: List\nitems:\n{namespaces}"), "dump.yaml").unwrap();
    assert_eq!(view.namespaces.len(), 60_000);
    // As separate documents, and nested as deep as JSON may be.
    let documents = vec!["apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n"; 2_000].join("---\n");
    load_text(&mut ClusterView::default(), &documents, "dump.yaml").unwrap();
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\nextra: {deep}\n");
    load_text(&mut ClusterView::default(), &yaml, "dump.yaml").unwrap();
    load_text(
        &mut ClusterView::default(),
        &yaml.replace(&deep, &format!("{}1{}", "[".repeat(200), "]".repeat(200))),
        "dump.yaml",
    )
    .unwrap_err();
}

#[test]
fn syntax_errors_name_the_file() {
    let err = load_text(&mut ClusterView::default(), "{ not json", "x.json").unwrap_err().to_string();
    assert!(err.starts_with("x.json: not valid JSON or YAML"), "{err}");
}

#[test]
fn copies_in_files_are_compared_by_their_contents_read_again_from_the_files() {
    // Files are scanned without fingerprints: a second copy sends the reader back to the
    // first one's text. Copies in other writings (fields reordered, escapes, indentation,
    // YAML) are one object; other contents are refused, naming both places.
    let dir = tempfile::Builder::new().prefix("snapshot-copies-").tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"a":"1","b":"2"}},"status":{"allocatable":{"cpu":"4"}}}"#;
    let rewritten = "{\n    \"kind\": \"Node\", \"apiVersion\": \"v1\",\n    \"status\": {\"allocatable\": {\"cpu\": \"\\u0034\"}},\n    \"metadata\": {\"labels\": {\"b\": \"2\", \"a\": \"1\"}, \"name\": \"n1\"}\n}";
    let a = file("a.json", &format!("  \n{{\"kind\": \"List\", \"items\": [{node}, {rewritten}]}}"));
    let b = file(
        "b.yaml",
        "kind: Node\napiVersion: v1\nmetadata: {name: n1, labels: {b: \"2\", a: \"1\"}}\nstatus: {allocatable: {cpu: \"4\"}}\n",
    );
    let (mut view, mut metrics, mut seen) = (ClusterView::default(), MetricLists::default(), Seen::default());
    for source in [&a, &b, &a] {
        load_into(&mut view, &mut metrics, &mut seen, source).unwrap();
    }
    assert_eq!(view.nodes.len(), 1, "read once");
    assert_eq!(
        seen.warnings,
        [
            format!("{a}: items[1] (Node n1): the same object as {a}: items[0] (Node n1); read once"),
            format!("{b}: document 1 (Node n1): the same object as {a}: items[0] (Node n1); read once"),
            format!("{a}: items[0] (Node n1): the same object as {a}: items[0] (Node n1); read once"),
            format!("{a}: items[1] (Node n1): the same object as {a}: items[0] (Node n1); read once"),
        ]
    );
    for (name, text) in [
        ("c.json", format!("[{}]", node.replace(r#""cpu":"4""#, r#""cpu":"8""#))),
        ("d.json", format!("[{}]", node.replace(r#""b":"2""#, r#""b":"2","c":"3""#))),
    ] {
        let other = file(name, &text);
        let err = load_into(&mut view, &mut metrics, &mut seen, &other).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{other}:1: document 1 item 0 (Node n1): the same kind, namespace and name as {a}: items[0]"
            )),
            "{err}"
        );
    }
    // The first copy's file changed since it was read: said, not guessed.
    std::fs::write(&a, "{}").unwrap();
    let err = load_into(&mut view, &mut metrics, &mut seen, &b).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{a}: cannot read")), "{err}");
}
