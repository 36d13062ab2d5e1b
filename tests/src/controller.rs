//! The real `cluster-autoscaler` binary as a child process, for end-to-end tests of the
//! controller against the fake API server.
//!
//! [`controller_binary`] builds the binary (once per test process, with the cargo that runs the
//! tests, into the same target directory) so a test never runs a stale one. [`Controller`] starts
//! it with a kubeconfig for a [`FakeApiServer`](crate::fake_apiserver::FakeApiServer), keeps its
//! log in a file, sends SIGTERM, and kills it when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The target directory's profile folder (`target/debug`), from the test executable's path
/// (`target/debug/deps/<test>-<hash>`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent().and_then(Path::parent).expect("tests run from <target>/<profile>/deps").to_path_buf()
}

/// Builds `cluster-autoscaler` (debug profile, locked) and returns its path.
pub fn controller_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let profile = profile_dir();
        let target_dir = profile.parent().expect("a target directory").to_path_buf();
        let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()))
            .args(["build", "--locked", "-p", "autoscaler", "--bin", "cluster-autoscaler"])
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(crate::package_dir())
            .output()
            .expect("running cargo build for the controller binary");
        assert!(
            output.status.success(),
            "building cluster-autoscaler failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let binary = target_dir.join("debug").join("cluster-autoscaler");
        assert!(binary.exists(), "cargo built no {}", binary.display());
        binary
    })
}

/// A free local TCP port (bound and released at once: good enough for a test's `--address`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// A running controller process.
pub struct Controller {
    child: Child,
    log: PathBuf,
    name: String,
}

impl Controller {
    /// Starts the binary with `args`, logging (at debug level) to `<dir>/<name>.log`.
    pub fn start(dir: &Path, name: &str, args: &[String]) -> Controller {
        Controller::start_with_env(dir, name, args, &[])
    }

    /// [`Controller::start`] with extra environment variables (e.g. the AWS SDK's
    /// `AWS_ENDPOINT_URL` and credentials).
    pub fn start_with_env(dir: &Path, name: &str, args: &[String], env: &[(&str, String)]) -> Controller {
        Controller::start_binary(controller_binary(), dir, name, args, env)
    }

    /// [`Controller::start_with_env`] with a given binary (the load harness runs a release
    /// build). `env` may override the default `RUST_LOG`.
    pub fn start_binary(binary: &Path, dir: &Path, name: &str, args: &[String], env: &[(&str, String)]) -> Controller {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("creating the controller's log file");
        let child = Command::new(binary)
            .args(args)
            .env("RUST_LOG", "info,autoscaler=debug")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("a second handle on the log file"))
            .stderr(file)
            .spawn()
            .expect("starting cluster-autoscaler");
        Controller { child, log, name: name.into() }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file's path.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The process's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM (the kubelet's way of stopping a pod).
    pub fn terminate(&self) {
        let pid = i32::try_from(self.child.id()).expect("a pid fits in pid_t");
        // SAFETY: kill(2) on our own child's pid with a valid signal number has no memory effects.
        let result = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(result, 0, "sending SIGTERM to {}", self.name);
    }

    /// The exit status, if the process has ended.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("polling the controller process")
    }

    /// Waits (polling, at most `timeout`) for the process to end; panics with its log otherwise.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit() {
                return status;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("{} did not exit within {timeout:?}; its log:\n{}", self.name, self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if self.try_exit().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.name, self.log());
        }
    }
}

/// A blocking HTTP/1.1 GET (the tests need no HTTP client crate): (status, body).
pub fn http_get(address: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split(' ').nth(1)?.parse().ok()?;
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Some((status, if chunked { dechunk(body) } else { body.to_string() }))
}

/// The body of a `Transfer-Encoding: chunked` answer.
pub(crate) fn dechunk(mut body: &str) -> String {
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
