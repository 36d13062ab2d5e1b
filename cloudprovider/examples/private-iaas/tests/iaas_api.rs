//! The stand-in IaaS API as a process: its REST shapes, VM lives, quota, bad input and faults.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use support::{IaasProcess, arm, binary, http, settle, temp_dir, write};

/// No build or delete times: VMs move on when the test settles them, never by the clock.
const CONFIG: &str = "buildSeconds: null
deleteSeconds: null
flavors:
- {name: m1.large, vcpus: 4, memoryMiB: 16384, pricePerHour: 0.192}
images: [ubuntu]
pools:
- {name: general, quota: 1}
";

/// The directory goes at the end of the statement: the IaaS reads its config before it says
/// where it listens, which `start` waits for.
fn start(test: &str) -> IaasProcess {
    IaasProcess::start(&write(temp_dir(test).path(), "iaas.yaml", CONFIG))
}

#[test]
fn vms_build_run_and_go_away() {
    let iaas = start("lives");
    let url = &iaas.url;
    let (status, flavors) = http("GET", &format!("{url}/v1/flavors"), None);
    assert_eq!(status, 200);
    assert_eq!(
        flavors,
        json!({"flavors": [{"name": "m1.large", "vcpus": 4, "memoryMiB": 16384, "gpus": 0, "pricePerHour": 0.192}]})
    );
    assert_eq!(http("GET", &format!("{url}/v1/images"), None).1, json!({"images": [{"name": "ubuntu"}]}));

    let create = json!({"image": "ubuntu", "flavor": "m1.large"}).to_string();
    let (status, vm) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create));
    assert_eq!(status, 202, "{vm}");
    assert_eq!(
        (vm["id"].as_str(), vm["name"].as_str(), vm["state"].as_str()),
        (Some("vm-000001"), Some("general-1"), Some("building"))
    );
    assert!(vm["created"].as_str().is_some_and(|t| t.ends_with('Z')), "{vm}");
    assert_eq!(
        http("GET", &format!("{url}/v1/pools"), None).1,
        json!({"pools": [{"name": "general", "quota": 1, "used": 1}]})
    );

    // Past the quota: created, in error.
    let named = json!({"name": "extra", "image": "ubuntu", "flavor": "m1.large"}).to_string();
    let (status, over) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(&named));
    assert_eq!(status, 202);
    assert_eq!(over["state"], "error");
    assert_eq!(over["error"]["code"], "QuotaExceeded");
    assert_eq!(over["name"], "extra");

    // Building until settled, however long that takes.
    let (_, vm) = http("GET", &format!("{url}/v1/pools/general/vms/vm-000001"), None);
    assert_eq!(vm["state"], "building");
    assert_eq!(settle(url), json!({"active": ["vm-000001"], "gone": []}));
    let (status, vm) = http("GET", &format!("{url}/v1/pools/general/vms/vm-000001"), None);
    assert_eq!((status, vm["state"].as_str()), (200, Some("active")));
    let (status, vm) = http("DELETE", &format!("{url}/v1/pools/general/vms/vm-000001"), None);
    assert_eq!((status, vm["state"].as_str()), (202, Some("deleting")));
    let (_, list) = http("GET", &format!("{url}/v1/pools/general/vms"), None);
    let states: Vec<&str> = list["vms"].as_array().unwrap().iter().map(|vm| vm["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["deleting", "error"]);
    // A failed VM is not built by a settle; a deleting one is gone.
    assert_eq!(settle(url), json!({"active": [], "gone": ["vm-000001"]}));
    let (status, answer) = http("GET", &format!("{url}/v1/pools/general/vms/vm-000001"), None);
    assert_eq!((status, answer["error"]["code"].as_str()), (404, Some("NotFound")));
}

#[test]
fn bad_input_answers_400_with_a_json_message() {
    let iaas = start("bad-input");
    let url = &iaas.url;
    let cases = [
        ("POST", "/v1/pools/general/vms", "{not json", 400),
        ("POST", "/v1/pools/general/vms", r#"{"image": "ubuntu"}"#, 400),
        ("POST", "/v1/pools/general/vms", r#"{"image": "ubuntu", "flavor": "m1.large", "colour": "red"}"#, 400),
        ("POST", "/v1/pools/general/vms", r#"{"image": "debian", "flavor": "m1.large"}"#, 400),
        ("POST", "/v1/pools/general/vms", r#"{"image": "ubuntu", "flavor": "huge"}"#, 400),
        ("POST", "/v1/pools/general/vms", r#"{"name": "Not_A_Label", "image": "ubuntu", "flavor": "m1.large"}"#, 400),
        ("POST", "/v1/pools/nowhere/vms", r#"{"image": "ubuntu", "flavor": "m1.large"}"#, 404),
        ("GET", "/v1/pools/general/vms/vm-999999", "", 404),
        ("GET", "/v2/anything", "", 404),
        ("PUT", "/v1/flavors", "", 405),
        ("POST", "/admin/faults", r#"{"failNextCreates": 1}"#, 400),
        ("POST", "/admin/faults", r#"{"pool": "nowhere", "hangBuilds": true}"#, 404),
        ("POST", "/admin/settle", r#"{"pool": "nowhere"}"#, 404),
        ("POST", "/admin/settle", r#"{"pools": ["general"]}"#, 400),
    ];
    for (method, path, body, expected) in cases {
        let (status, answer) = http(method, &format!("{url}{path}"), Some(body));
        assert_eq!(status, expected, "{method} {path} {body}: {answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{method} {path}: {answer}");
    }
    let (_, answer) =
        http("POST", &format!("{url}/v1/pools/general/vms"), Some(r#"{"image": "debian", "flavor": "m1.large"}"#));
    assert_eq!(answer["error"]["message"], r#"unknown image "debian" (images: ubuntu)"#);
    // A name in use is a conflict.
    let named = r#"{"name": "one", "image": "ubuntu", "flavor": "m1.large"}"#;
    assert_eq!(http("POST", &format!("{url}/v1/pools/general/vms"), Some(named)).0, 202);
    let (status, answer) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(named));
    assert_eq!((status, answer["error"]["code"].as_str()), (409, Some("NameInUse")));
}

#[test]
fn faults_are_armed_counted_and_cleared() {
    let iaas = start("faults");
    let url = &iaas.url;
    arm(url, json!({"pool": "general", "failNextCreates": 1, "serverErrors": 1}));
    let create = json!({"image": "ubuntu", "flavor": "m1.large"}).to_string();
    let (status, answer) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create));
    assert_eq!((status, answer["error"]["code"].as_str()), (500, Some("InternalError")));
    let (_, vm) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create));
    assert_eq!((vm["state"].as_str(), vm["error"]["code"].as_str()), (Some("error"), Some("NoValidHost")));

    arm(url, json!({"pool": "general", "hangBuilds": true}));
    let (_, vm) = http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create));
    // A hung build does not even settle.
    assert_eq!(settle(url), json!({"active": [], "gone": []}));
    let (_, vm) = http("GET", &format!("{url}/v1/pools/general/vms/{}", vm["id"].as_str().unwrap()), None);
    assert_eq!(vm["state"], "building");

    arm(url, json!({"slowRequests": 1, "slowMillis": 300}));
    let started = std::time::Instant::now();
    assert_eq!(http("GET", &format!("{url}/v1/flavors"), None).0, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Faults on one route: the create fails, the listing before it does not.
    arm(url, json!({"serverErrors": 1, "route": "POST /v1/pools/{pool}/vms"}));
    assert_eq!(http("GET", &format!("{url}/v1/pools/general/vms"), None).0, 200);
    assert_eq!(http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create)).0, 500);
    assert_eq!(http("POST", &format!("{url}/v1/pools/general/vms"), Some(&create)).0, 202);

    let (_, faults) = http("GET", &format!("{url}/admin/faults"), None);
    assert_eq!(faults["hangBuilds"], json!(["general"]));
    assert_eq!(faults["route"], "POST /v1/pools/{pool}/vms");
    let (status, faults) = http("DELETE", &format!("{url}/admin/faults"), None);
    assert_eq!((status, faults["hangBuilds"].clone()), (200, json!([])));
    let (_, stats) = http("GET", &format!("{url}/admin/stats"), None);
    assert_eq!(stats["requests"]["POST /v1/pools/{pool}/vms"], 5);
    assert_eq!(stats["requests"]["GET /v1/pools/{pool}/vms/{id}"], 1);
}

#[test]
fn a_bad_config_exits_2_naming_the_file_line_and_field() {
    let dir = temp_dir("bad-iaas-config");
    let path = write(dir.path(), "iaas.yaml", &CONFIG.replace("vcpus: 4", "vcpus: four"));
    let output =
        Command::new(binary("iaas-api")).args(["--listen", "127.0.0.1:0", "--config"]).arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with(&format!("error: {}:4: flavors[0].vcpus: ", path.display())), "{stderr}");
}
