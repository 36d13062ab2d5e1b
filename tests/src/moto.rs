//! moto (an AWS API server for tests, from PyPI) in server mode, one process per test, on a free
//! loopback port.
//!
//! The test command (`scripts/test.sh`) installs `moto[server,ec2,autoscaling]==`[`MOTO_VERSION`]
//! into a virtual environment and exports its path as `CA_MOTO_VENV`; without the variable the
//! venv is looked for at `<workspace>/.venv`. A missing moto fails the test with what is missing
//! and how to install it: the AWS tests are never skipped silently.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto version the test command installs (keep in step with `scripts/test.sh`).
pub const MOTO_VERSION: &str = "5.2.5";
/// The environment variable naming the venv that has moto.
pub const VENV_VARIABLE: &str = "CA_MOTO_VENV";

/// The venv with moto: `$CA_MOTO_VENV`, else `<workspace>/.venv`.
pub fn venv_dir() -> PathBuf {
    match std::env::var_os(VENV_VARIABLE) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        // The workspace root: the first directory above the running package with a Cargo.lock.
        _ => crate::package_dir()
            .ancestors()
            .find(|dir| dir.join("Cargo.lock").exists())
            .map_or_else(|| PathBuf::from(".venv"), |root| root.join(".venv")),
    }
}

/// `moto_server` of [`venv_dir`]; panics, saying how to install it, when it is missing.
pub fn moto_server_binary() -> PathBuf {
    let binary = venv_dir().join("bin").join("moto_server");
    if !binary.exists() {
        panic!(
            "moto is missing: {} does not exist. The AWS tests run against moto {MOTO_VERSION} in server mode. \
             ./scripts/test.sh installs it (python3 -m venv .venv && .venv/bin/pip install \
             'moto[server,ec2,autoscaling]=={MOTO_VERSION}', which needs PyPI); or point {VENV_VARIABLE} \
             at a venv that has it.",
            binary.display()
        );
    }
    binary
}

/// A running moto server; killed when dropped.
pub struct MotoServer {
    child: Child,
    port: u16,
}

impl MotoServer {
    /// Starts `moto_server` on a free loopback port and waits until it answers.
    pub fn start() -> MotoServer {
        let binary = moto_server_binary();
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = crate::controller::free_port();
            let child = Command::new(&binary)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
            let mut server = MotoServer { child, port };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = server.child.try_wait() {
                    last_error = format!("moto_server exited with {status} (port {port} taken?)");
                    break;
                }
                if server.request("GET", "/moto-api/").is_some() {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if last_error.is_empty() {
                last_error = format!("moto_server did not answer on port {port} within 30s");
            }
        }
        panic!("{last_error}");
    }

    /// `http://127.0.0.1:<port>`, for `AWS_ENDPOINT_URL` or an SDK `endpoint_url`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Forgets every resource (`POST /moto-api/reset`).
    pub fn reset(&self) {
        self.request("POST", "/moto-api/reset").expect("moto answers a reset");
    }

    /// A bodiless HTTP/1.1 request: the status code.
    fn request(&self, method: &str, path: &str) -> Option<u16> {
        let address = format!("127.0.0.1:{}", self.port);
        let mut stream = TcpStream::connect(&address).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(stream, "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).ok()?;
        String::from_utf8_lossy(&answer).lines().next()?.split(' ').nth(1)?.parse().ok()
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
