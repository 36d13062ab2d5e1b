//! `cluster-autoscaler simulate`'s command line: bad input exits 2 before the run starts.

mod common;

use common::run_binary;

#[test]
fn an_output_path_that_cannot_be_written_exits_2_before_the_run() {
    for flag in ["--report", "--events"] {
        let path = "/nonexistent-dir/out.file";
        let out = run_binary(&["simulate".to_string(), format!("{flag}={path}")], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(&format!("{flag} {path}: cannot be written")), "{flag}: {err}");
        assert!(out.stdout.is_empty(), "no summary: the run never started");
    }
}

/// A minimal scenario; `objects` and `tail` are appended as written (YAML).
fn scenario(objects: &str, tail: &str) -> String {
    format!(
        "duration: 1h\nflags: [\"--scale-down-unneeded-time=5m\"]\nnodeGroups:\n- id: g\n  minSize: 0\n  maxSize: 3\n  \
         template: {{status: {{capacity: {{cpu: 4, memory: 16Gi, pods: 110}}}}}}\nobjects:\n{objects}{tail}"
    )
}

const WEB: &str = "- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        containers:
        - name: c
          image: x
          resources: {requests: {cpu: 500m}}
";

/// Runs `simulate` on `text` written to a file; returns (exit code, stderr, the file's path).
fn simulate(text: &str) -> (Option<i32>, String, String) {
    let dir = common::temp_dir();
    let path = common::write(dir.path(), "scenario.yaml", text);
    let out = run_binary(&["simulate".to_string(), path.clone()], None);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code(), err, path)
}

fn assert_refused(text: &str, place: &str, words: &str) {
    let (code, err, path) = simulate(text);
    assert_eq!(code, Some(2), "{err}");
    let expected = format!("{path}:{place}");
    assert!(err.contains(&expected), "expected {expected:?}: {err}");
    assert!(err.contains(words), "expected {words:?}: {err}");
    assert!(!err.contains("error: error") && !err.contains("flags: error"), "a doubled prefix: {err}");
}

#[test]
fn a_typo_inside_a_scenario_object_is_an_error_naming_its_line_and_field() {
    let text = scenario(&WEB.replace("        containers:", "        contianers:"), "");
    assert_refused(&text, "18: objects[0].spec.template.spec.contianers", "unknown field");
    let text = scenario(&WEB.replace("{requests:", "{reqeusts:"), "");
    assert_refused(&text, "21: objects[0].spec.template.spec.containers[0].resources.reqeusts", "unknown field");
}

#[test]
fn negative_replicas_and_quantities_are_refused_as_the_api_server_would() {
    assert_refused(
        &scenario(&WEB.replace("replicas: 2", "replicas: -2"), ""),
        "13: objects[0].spec.replicas",
        "must be greater than or equal to 0",
    );
    assert_refused(
        &scenario(&WEB.replace("cpu: 500m", "cpu: -500m"), ""),
        "21: objects[0].spec.template.spec.containers[0].resources.requests.cpu",
        "must be greater than or equal to 0",
    );
    let scale = "events:\n- at: 10m\n  scale: {kind: Deployment, name: web, replicas: -1}\n";
    assert_refused(&scenario(WEB, scale), "24: events[0].scale.replicas", "must be greater than or equal to 0");
    let ramp = "events:\n- at: 10m\n  ramp: {kind: Deployment, name: web, to: -3, over: 5m}\n";
    assert_refused(&scenario(WEB, ramp), "24: events[0].ramp.to", "must be greater than or equal to 0");
}

#[test]
fn a_bad_flag_in_a_scenario_names_its_line_once() {
    let text = scenario(WEB, "").replace("--scale-down-unneeded-time=5m", "--scale-down-unneeded-time=5x");
    assert_refused(&text, "2: flags[0]", "invalid duration \"5x\"");
}

#[test]
fn a_bad_template_quantity_names_the_field_as_written() {
    let text = scenario(WEB, "").replace("cpu: 4,", "cpu: 4x,");
    assert_refused(&text, "7: nodeGroups[0].template.status.capacity.cpu", "invalid quantity \"4x\"");
    let text = scenario(WEB, "").replace("pods: 110", "pods: -110");
    assert_refused(&text, "7: nodeGroups[0].template.status.capacity.pods", "must be greater than or equal to 0");
}

#[test]
fn an_unknown_event_target_names_the_event_file_and_line() {
    let text = scenario(WEB, "events:\n- at: 10m\n  scale: {kind: Deployment, name: wbe, replicas: 3}\n");
    assert_refused(&text, "23: events[0]", "Deployment default/wbe not found");
}

#[test]
fn a_bad_load_names_its_line_and_field() {
    let text = scenario(WEB, "loads:\n- target: {kind: Deployment, name: web}\n  trace: [{at: 0s, value: -5}]\n");
    assert_refused(&text, "23: loads[0].trace[0].value", "must be a non-negative number");
}

#[test]
fn values_of_the_wrong_type_are_said_in_the_users_words() {
    assert_refused(
        &scenario(WEB, "").replace("maxSize: 3", "maxSize: -3"),
        "6: nodeGroups[0].maxSize",
        "expected a whole number",
    );
    let (code, err, path) = simulate("- a\n- b\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("{path}:1: expected a mapping")), "no empty field name: {err}");
}

#[test]
fn a_huge_flag_in_a_scenario_is_refused_before_the_flag_parser() {
    let flag = format!("--{}", "x".repeat(100_000));
    let text = scenario(WEB, "").replace("--scale-down-unneeded-time=5m", &flag);
    assert_refused(&text, "2: flags[0]", "longer than 4096 bytes");
}

#[test]
fn a_bad_crash_event_names_its_line_and_field() {
    let unknown = "events:\n- at: 10m\n  crash: {before: Evict}\n";
    assert_refused(&scenario(WEB, unknown), "24: events[0].crash.before", "unknown call \"Evict\" (one of: ");
    let both = "events:\n- at: 10m\n  crash: {before: EvictPod, after: EvictPod}\n";
    assert_refused(&scenario(WEB, both), "24: events[0].crash", "before or after a call, not both");
    let misspelt = "events:\n- at: 10m\n  crash: {befor: EvictPod}\n";
    assert_refused(&scenario(WEB, misspelt), "24: events[0].crash", "unknown field");
}
