//! End-to-end tests of `cluster-autoscaler plan`'s command line: inputs (files, stdin, YAML,
//! several dumps), outputs, and clear errors with exit code 2 for bad input.

mod common;

use std::process::Output;

use common::*;
use serde_json::{Value, json};

fn pending(name: &str) -> Value {
    unschedulable(owned_by(pod("default", name, "1", "1Gi").label("app", "web"), "ReplicaSet", "web"))
}

/// A small cluster: one node of `g`, one pending pod that fits a new node only.
fn small_cluster() -> Vec<Value> {
    vec![
        node("g", "g-1", "4", "16Gi"),
        replicaset("default", "web", 2),
        running_on(owned_by(pod("default", "web-0", "3500m", "1Gi").label("app", "web"), "ReplicaSet", "web"), "g-1"),
        pending("web-1"),
    ]
}

fn groups() -> Value {
    cloud_config(&[group("g", 0, 10, "4", "16Gi")])
}

struct Files {
    /// Removed when the test's `Files` is dropped.
    dir: tempfile::TempDir,
    snapshot: String,
    config: String,
}

fn files(dump_text: &str, config_text: &str) -> Files {
    let dir = temp_dir();
    let snapshot = write(dir.path(), "dump.json", dump_text);
    let config = write(dir.path(), "cloud-config.yaml", config_text);
    Files { dir, snapshot, config }
}

fn default_files() -> Files {
    files(&dump(&small_cluster()).to_string(), &groups().to_string())
}

fn run(args: &[String]) -> Output {
    run_binary(args, None)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_bad_input(out: &Output, must_mention: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {}", stderr(out));
    let err = stderr(out);
    for m in must_mention {
        assert!(err.contains(m), "stderr should mention {m:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "no plan on bad input: {}", String::from_utf8_lossy(&out.stdout));
}

fn parse(out: &Output) -> Value {
    assert!(out.status.success(), "plan failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn malformed_json_dump_exits_2_naming_the_file() {
    let f = files("{\"kind\": \"List\", \"items\": [", &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(&out, &["dump.json", "not valid JSON or YAML"]);
}

#[test]
fn missing_dump_file_exits_2_naming_the_file() {
    let f = default_files();
    let missing = f.dir.path().join("nope.json").to_string_lossy().into_owned();
    let out = run(&plan_args(&missing, &f.config, &[]));
    assert_bad_input(&out, &["nope.json"]);
}

#[test]
fn bad_pod_field_exits_2_naming_file_object_and_field() {
    let bad = pod("default", "broken", "1", "1Gi").set("spec.containers", json!("oops"));
    let f = files(&dump(&[bad]).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(&out, &["dump.json", "Pod default/broken", "spec.containers"]);
}

#[test]
fn invalid_quantity_in_a_pod_exits_2_naming_the_field() {
    let bad = pod("default", "broken", "lots", "1Gi");
    let f = files(&dump(&[bad]).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(&out, &["dump.json", "Pod default/broken", "spec.containers[0].resources.requests.cpu", "lots"]);
}

#[test]
fn invalid_quantity_in_a_node_exits_2_naming_the_field() {
    let bad = bare_node("n1", "4", "16Gi").set_key("status.allocatable", "memory", json!("16Gb"));
    let f = files(&dump(&[bad]).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(&out, &["dump.json", "Node n1", "status.allocatable.memory", "16Gb"]);
}

#[test]
fn unknown_cloud_config_key_exits_2_naming_file_and_key() {
    let mut g = group("g", 0, 10, "4", "16Gi");
    g["maxNodes"] = json!(3);
    let f = files(&dump(&small_cluster()).to_string(), &cloud_config(&[g]).to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(&out, &["cloud-config.yaml", "nodeGroups[0].maxNodes"]);
}

#[test]
fn nodes_flag_with_min_above_max_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--nodes=5:3:g"]));
    assert_bad_input(&out, &["--nodes", "5:3:g"]);
}

#[test]
fn malformed_nodes_flag_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--nodes=three:g"]));
    assert_bad_input(&out, &["--nodes", "three:g"]);
}

#[test]
fn unknown_flag_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--scale-down-wibble=1"]));
    assert_bad_input(&out, &["--scale-down-wibble"]);
}

#[test]
fn invalid_flag_value_exits_2_naming_the_flag() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--scale-down-utilization-threshold=1.5"]));
    assert_bad_input(&out, &["--scale-down-utilization-threshold"]);
    let out = run(&plan_args(&f.snapshot, &f.config, &["--cores-total=10:5"]));
    assert_bad_input(&out, &["--cores-total"]);
    let out = run(&plan_args(&f.snapshot, &f.config, &["--new-pod-scale-up-delay=soon"]));
    assert_bad_input(&out, &["--new-pod-scale-up-delay"]);
}

#[test]
fn unknown_expander_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--expander=cheapest"]));
    assert_bad_input(&out, &["--expander", "cheapest"]);
}

#[test]
fn expander_named_twice_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--expander=least-waste,most-pods,least-waste"]));
    assert_bad_input(&out, &["--expander", "least-waste"]);
}

#[test]
fn expander_after_a_single_result_strategy_exits_2() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--expander=random,most-pods"]));
    assert_bad_input(&out, &["--expander"]);
}

#[test]
fn unknown_cloud_provider_exits_2() {
    let f = default_files();
    let mut args = plan_args(&f.snapshot, &f.config, &[]);
    let i = args.iter().position(|a| a == "--cloud-provider=static").unwrap();
    args[i] = "--cloud-provider=nimbus".into();
    assert_bad_input(&run(&args), &["--cloud-provider", "nimbus"]);
}

#[test]
fn bad_now_exits_2() {
    let f = default_files();
    let mut args = plan_args(&f.snapshot, &f.config, &[]);
    let i = args.iter().position(|a| a == NOW).unwrap();
    args[i] = "tomorrow".into();
    assert_bad_input(&run(&args), &["--now", "tomorrow"]);
}

#[test]
fn price_expander_is_fine_with_the_static_provider() {
    let f = default_files();
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &["--expander=price"])));
    assert_eq!(increases(&plan), vec![inc("g", 1)]);
}

// ---------------------------------------------------------------------------------------------
// Inputs

#[test]
fn dash_reads_the_dump_from_stdin() {
    let f = default_files();
    let out = run_binary(&plan_args("-", &f.config, &[]), Some(&dump(&small_cluster()).to_string()));
    let plan = parse(&out);
    assert_eq!(increases(&plan), vec![inc("g", 1)]);
    assert_eq!(plan["cluster"]["nodes"], 1);
}

#[test]
fn yaml_dumps_with_several_documents_are_read() {
    let docs: Vec<String> = small_cluster().iter().map(|o| serde_saphyr::to_string(o).expect("yaml")).collect();
    let yaml = docs.join("---\n");
    let f = files(&yaml, &groups().to_string());
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &[])));
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
    assert_eq!(plan["cluster"]["pods"], 2);
}

#[test]
fn yaml_list_dump_is_read() {
    let yaml = serde_saphyr::to_string(&dump(&small_cluster())).expect("yaml");
    let f = files(&yaml, &groups().to_string());
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &[])));
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn several_snapshot_files_are_merged() {
    // Nodes in one file, workloads in another, as `kubectl get nodes` and `kubectl get pods,rs` print them.
    let objects = small_cluster();
    let (nodes, rest): (Vec<Value>, Vec<Value>) = objects.into_iter().partition(|o| o["kind"] == "Node");
    let f = files(&dump(&nodes).to_string(), &groups().to_string());
    let second = write(f.dir.path(), "workloads.json", &dump(&rest).to_string());
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &["--snapshot", &second])));
    assert_eq!(plan["cluster"]["nodes"], 1);
    assert_eq!(plan["cluster"]["pods"], 2);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn the_same_dump_given_twice_is_read_once_with_a_warning_never_counted_twice() {
    let f = default_files();
    let out = run(&plan_args(&f.snapshot, &f.config, &["--snapshot", &f.snapshot]));
    let plan = parse(&out);
    assert_eq!((plan["cluster"]["nodes"].clone(), plan["cluster"]["pods"].clone()), (json!(1), json!(2)));
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
    let err = stderr(&out);
    assert!(err.contains("warning:") && err.contains("the same object as"), "{err}");
}

#[test]
fn a_duplicate_node_with_other_contents_exits_2_naming_both_places() {
    let mut objects = small_cluster();
    objects.push(node("g", "g-1", "64", "256Gi"));
    let f = files(&dump(&objects).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(
        &out,
        &["dump.json:1: items[4] (Node g-1)", "dump.json: items[0] (Node g-1), with other contents"],
    );
}

#[test]
fn an_empty_dump_exits_2_unless_empty_is_meant() {
    for text in ["[]", "", "{\"kind\": \"List\", \"items\": []}"] {
        let f = files(text, &groups().to_string());
        let out = run(&plan_args(&f.snapshot, &f.config, &[]));
        assert_bad_input(&out, &["dump.json", "no nodes and no pods", "--allow-empty-snapshot"]);
        let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &["--allow-empty-snapshot"])));
        assert_eq!(plan["cluster"]["nodes"], 0);
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::process::{Command, Stdio};
    let f = default_files();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cluster-autoscaler"))
        .args(plan_args(&f.snapshot, &f.config, &[]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cluster-autoscaler");
    drop(child.stdout.take()); // as `| head -0` would
    let out = child.wait_with_output().expect("wait");
    let err = stderr(&out);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn concatenated_json_lists_in_one_file_are_read() {
    let objects = small_cluster();
    let (nodes, rest): (Vec<Value>, Vec<Value>) = objects.into_iter().partition(|o| o["kind"] == "Node");
    let text = format!("{}\n{}\n", dump(&nodes), dump(&rest));
    let f = files(&text, &groups().to_string());
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &[])));
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn objects_of_other_kinds_are_ignored() {
    let mut objects = small_cluster();
    objects.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                        "spec": {"ports": "this would not parse as a Service"}}));
    objects.push(json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"}}));
    objects.push(json!({"apiVersion": "example.com/v1", "kind": "Node", "metadata": {"name": "not-a-node"}}));
    let f = files(&dump(&objects).to_string(), &groups().to_string());
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &[])));
    assert_eq!(plan["cluster"]["nodes"], 1, "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("g", 1)]);
}

#[test]
fn nodes_flag_overrides_the_cloud_config_bounds() {
    let f = default_files();
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &["--nodes=0:1:g"])));
    assert_eq!(plan["cluster"]["nodeGroups"][0]["maxSize"], 1);
    assert_eq!(skipped_reasons(&plan, "g"), vec!["max node group size reached"], "{plan:#}");
}

#[test]
fn nodes_flag_alone_defines_a_group_of_nodes_with_its_provider_id_prefix() {
    // No cloud-config: g-1 (providerID static://g/g-1) belongs to g, whose template is g-1.
    let dir = temp_dir();
    let snapshot = write(dir.path(), "dump.json", &dump(&small_cluster()).to_string());
    let args: Vec<String> =
        ["plan", "--snapshot", &snapshot, "--cloud-provider=static", "--nodes=1:5:g", "--now", NOW, "-o", "json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let plan = parse(&run(&args));
    assert_eq!(plan["cluster"]["nodeGroups"][0]["id"], "g");
    assert_eq!(plan["cluster"]["nodeGroups"][0]["targetSize"], 1);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn namespace_flag_moves_the_priority_config_map() {
    let mut objects = vec![replicaset("default", "web", 1), pending("web-1")];
    objects.push(config_map("autoscaling", "cluster-autoscaler-priority-expander", &[("priorities", "10:\n  - b\n")]));
    let config = cloud_config(&[group("a", 0, 5, "4", "16Gi"), group("b", 0, 5, "8", "32Gi")]);
    let f = files(&dump(&objects).to_string(), &config.to_string());
    let elsewhere = parse(&run(&plan_args(&f.snapshot, &f.config, &["--expander=priority,least-waste"])));
    assert_eq!(increases(&elsewhere), vec![inc("a", 1)], "{elsewhere:#}");
    let here = parse(&run(&plan_args(
        &f.snapshot,
        &f.config,
        &["--expander=priority,least-waste", "--namespace=autoscaling"],
    )));
    assert_eq!(increases(&here), vec![inc("b", 1)], "{here:#}");
}

// ---------------------------------------------------------------------------------------------
// Outputs

#[test]
fn json_output_has_the_documented_keys() {
    let f = default_files();
    let plan = parse(&run(&plan_args(&f.snapshot, &f.config, &[])));
    assert_eq!(plan["time"], NOW);
    for key in
        ["nodes", "readyNodes", "unreadyNodes", "notStartedNodes", "pods", "pendingPods", "healthy", "nodeGroups"]
    {
        assert!(plan["cluster"].get(key).is_some(), "cluster.{key} missing: {plan:#}");
    }
    for key in ["id", "minSize", "maxSize", "targetSize", "ready", "upcoming", "healthy", "template"] {
        assert!(plan["cluster"]["nodeGroups"][0].get(key).is_some(), "nodeGroups[0].{key} missing");
    }
    for key in [
        "result",
        "message",
        "increases",
        "podsTriggered",
        "podsRemainUnschedulable",
        "podsAwaitEvaluation",
        "podsFitExistingNodes",
        "podsIgnored",
        "options",
        "chosenOption",
        "skippedNodeGroups",
        "expanderEvents",
    ] {
        assert!(plan["scaleUp"].get(key).is_some(), "scaleUp.{key} missing");
    }
    for key in ["status", "message", "unneeded", "unremovable", "deleteNow"] {
        assert!(plan["scaleDown"].get(key).is_some(), "scaleDown.{key} missing");
    }
    assert_eq!(
        plan["scaleUp"]["increases"][0],
        json!({"nodeGroup": "g", "delta": 1, "currentSize": 1, "newSize": 2, "maxSize": 10})
    );
}

#[test]
fn text_output_is_the_default() {
    let f = default_files();
    let mut args = plan_args(&f.snapshot, &f.config, &[]);
    let i = args.iter().position(|a| a == "-o").unwrap();
    args.drain(i..i + 2);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Cluster: 1 nodes"), "{text}");
    assert!(text.contains("Scale-up"), "{text}");
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[test]
fn same_seed_gives_the_same_plan() {
    // Two identical groups: the random expander breaks the tie by the seed.
    let objects = vec![replicaset("default", "web", 1), pending("web-1")];
    let config = cloud_config(&[group("a", 0, 5, "4", "16Gi"), group("b", 0, 5, "4", "16Gi")]);
    let f = files(&dump(&objects).to_string(), &config.to_string());
    let args = plan_args(&f.snapshot, &f.config, &["--expander=random"]);
    let first = run(&args);
    let second = run(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn fields_unknown_to_this_version_in_a_kubectl_dump_warn_once_per_path_with_a_count() {
    let mut objects = small_cluster();
    for o in objects.iter_mut().filter(|o| o["kind"] == "Pod") {
        o["spec"]["containers"][0]["resizePolicy2"] = json!([{"resourceName": "cpu"}]);
    }
    let f = files(&dump(&objects).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("resizePolicy2")).collect();
    assert_eq!(lines.len(), 1, "one line per field path: {err}");
    assert!(
        lines[0].contains("Pod field `spec.containers[].resizePolicy2`") && lines[0].contains("(2 objects)"),
        "{err}"
    );
}

#[test]
fn a_negative_request_in_a_dump_exits_2_naming_the_field() {
    let mut objects = small_cluster();
    objects.push(pod("default", "bad", "-1", "1Gi"));
    let f = files(&dump(&objects).to_string(), &groups().to_string());
    let out = run(&plan_args(&f.snapshot, &f.config, &[]));
    assert_bad_input(
        &out,
        &["Pod default/bad", "spec.containers[0].resources.requests.cpu", "greater than or equal to 0"],
    );
}
