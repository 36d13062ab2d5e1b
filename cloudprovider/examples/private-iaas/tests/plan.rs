//! The in-process plugin binary, `private-iaas-autoscaler`, running `plan` on the example
//! cluster dump against the IaaS API process: the pool the pending pods need scales up from
//! zero. And its configuration errors.

mod support;

use std::process::{Command, Output};

use serde_json::Value;
use support::{IaasProcess, binary, crate_dir, temp_dir, workspace_dir, write};

/// `private-iaas-autoscaler plan` on the example dump with `cloud_config`.
fn plan(cloud_config: &std::path::Path, extra: &[&str]) -> Output {
    let snapshot = workspace_dir().join("deploy/examples/snapshot.json");
    Command::new(binary("private-iaas-autoscaler"))
        .arg("plan")
        .arg("--snapshot")
        .arg(&snapshot)
        .args(["--now", "2026-11-21T12:00:00Z", "--random-seed", "1", "--cloud-provider=private-iaas"])
        .arg("--cloud-config")
        .arg(cloud_config)
        .args(extra)
        .output()
        .expect("running private-iaas-autoscaler")
}

/// The example cloud-config, pointed at `endpoint`, in a file removed when dropped.
fn example_cloud_config(test: &str, endpoint: &str) -> tempfile::NamedTempFile {
    let example = std::fs::read_to_string(crate_dir().join("config/cloud-config.yaml")).unwrap();
    let text = example.replace("http://127.0.0.1:8774", endpoint);
    assert_ne!(text, example, "the example's endpoint");
    let file = tempfile::Builder::new().prefix(&format!("private-iaas-{test}-")).suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

#[test]
fn plan_scales_the_compute_pool_up_from_zero() {
    let iaas = IaasProcess::start(&crate_dir().join("config/iaas.yaml"));
    let cloud_config = example_cloud_config("plan", &iaas.url);

    let output = plan(cloud_config.path(), &["--output", "json"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "plan failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("plan's JSON");
    let scale_up = &report["scaleUp"];
    assert_eq!(scale_up["result"], "Successful", "{scale_up}");
    let increases = scale_up["increases"].as_array().unwrap();
    assert_eq!(increases.len(), 1, "{scale_up}");
    assert_eq!(increases[0]["nodeGroup"], "compute");
    assert_eq!(increases[0]["currentSize"], 0);
    let delta = increases[0]["delta"].as_u64().unwrap();
    // Ten pending workers of 2 cpu each, on 8-vCPU VMs that also run the DaemonSets.
    assert!((3..=5).contains(&delta), "{scale_up}");
    let triggered: Vec<&str> = scale_up["podsTriggered"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(triggered.len(), 10);
    assert!(triggered.iter().all(|pod| pod.starts_with("batch/worker-")), "{triggered:?}");

    // The text report says where the template came from.
    let output = plan(cloud_config.path(), &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("compute  size 0 (min 0, max 12), 0 ready, 0 upcoming; template from cloud provider"),
        "{text}"
    );
    assert!(text.contains(&format!("+ compute: add {delta} node(s), 0 -> {delta} (max 12)")), "{text}");
    // plan only reads: no VM was created.
    assert_eq!(support::requests(&iaas.url, "POST /v1/pools/{pool}/vms"), 0);
}

#[test]
fn config_errors_name_the_file_line_and_field() {
    let iaas = IaasProcess::start(&crate_dir().join("config/iaas.yaml"));
    let good = std::fs::read_to_string(example_cloud_config("config-errors", &iaas.url).path()).unwrap();
    let dir = temp_dir("config-errors-bad");
    let cases = [
        (good.replace("maxSize: 12", "maxSize: lots"), 9, "nodeGroups[0].maxSize"),
        (good.replace("minSize: 0\n  maxSize: 3", "minSize: 4\n  maxSize: 3"), 14, "nodeGroups[1].minSize"),
        (good.replace("timeout: 10s", "timeout: 10"), 5, "timeout"),
        // Checked against the IaaS: it has no such flavor.
        (good.replace("flavor: m1.xlarge", "flavor: m9.huge"), 10, "nodeGroups[0].flavor"),
    ];
    for (text, line, field) in cases {
        let path = write(dir.path(), "cloud-config.yaml", &text);
        let output = plan(&path, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with(&format!("error: {}:{line}: {field}: ", path.display())), "{stderr}");
    }
}

#[test]
fn an_unreachable_iaas_exits_1_naming_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let output = plan(example_cloud_config("unreachable", &endpoint).path(), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{endpoint}/v1/")), "{stderr}");
}
