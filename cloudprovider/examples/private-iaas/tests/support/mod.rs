//! What the tests share: temporary files, a plain HTTP/1.1 client for the IaaS API's admin and
//! raw requests, and the crate's binaries as child processes.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The crate's directory, read at run time (a target directory shared between clones at
/// other paths may hold test binaries with a stale compile-time path).
pub fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The workspace's directory.
pub fn workspace_dir() -> PathBuf {
    crate_dir().join("../../..")
}

/// A fresh directory for one test's files, removed when dropped.
pub fn temp_dir(test: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("private-iaas-{test}-")).tempdir().expect("creating a temporary directory")
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writing a test file");
    path
}

/// One HTTP/1.1 request on a fresh connection: (status, body as JSON, or `Value::Null`).
pub fn http(method: &str, url: &str, body: Option<&str>) -> (u16, Value) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (address, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
    let mut stream = TcpStream::connect(address).expect("connecting to the IaaS API");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("a read timeout");
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("sending a request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("reading the answer");
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.into() };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// Arms faults through the admin endpoint.
pub fn arm(url: &str, faults: Value) {
    let (status, answer) = http("POST", &format!("{url}/admin/faults"), Some(&faults.to_string()));
    assert_eq!(status, 200, "arming {faults}: {answer}");
}

/// Moves the IaaS's VMs on now (`POST /admin/settle`): building ones are active, deleting ones
/// gone. The tests' configs have no build or delete times, so nothing happens by the clock.
pub fn settle(url: &str) -> Value {
    let (status, answer) = http("POST", &format!("{url}/admin/settle"), None);
    assert_eq!(status, 200, "settling: {answer}");
    answer
}

/// Requests served on a route so far (`GET /v1/pools/{pool}/vms`).
pub fn requests(url: &str, route: &str) -> u64 {
    let (_, stats) = http("GET", &format!("{url}/admin/stats"), None);
    stats["requests"][route].as_u64().unwrap_or(0)
}

/// A pool's VMs as the API lists them.
pub fn vms(url: &str, pool: &str) -> Vec<Value> {
    let (status, answer) = http("GET", &format!("{url}/v1/pools/{pool}/vms"), None);
    assert_eq!(status, 200, "{answer}");
    answer["vms"].as_array().cloned().unwrap_or_default()
}

/// A binary of this crate, built by cargo for the integration tests.
pub fn binary(name: &str) -> PathBuf {
    let var = format!("CARGO_BIN_EXE_{name}");
    let path = std::env::var_os(&var).map(PathBuf::from).unwrap_or_else(|| match name {
        "iaas-api" => PathBuf::from(env!("CARGO_BIN_EXE_iaas-api")),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_private-iaas-autoscaler")),
    });
    assert!(path.exists(), "no binary {}", path.display());
    path
}

/// The `iaas-api` process on a free port; killed when dropped.
pub struct IaasProcess {
    child: Child,
    pub url: String,
}

impl IaasProcess {
    pub fn start(config: &Path) -> IaasProcess {
        let mut child = Command::new(binary("iaas-api"))
            .args(["--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting iaas-api");
        let stdout = child.stdout.take().expect("iaas-api's stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("reading iaas-api's first line");
        let url =
            line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("iaas-api said {line:?}")).to_string();
        IaasProcess { child, url }
    }
}

impl Drop for IaasProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
