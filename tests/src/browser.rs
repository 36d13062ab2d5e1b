//! Chromium in headless mode as a child process, for the test that renders the `simulate` report
//! in a real browser.
//!
//! The test command (`scripts/test.sh`) installs Debian's `chromium` package when `chromium` is
//! not on PATH. A missing browser fails the test with what is missing and how to install it: the
//! browser test is never skipped.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The browser's command name (Debian's package and binary are both `chromium`).
pub const BROWSER: &str = "chromium";

/// How long one browser run may take before it is killed and the test fails. Generous: it bounds a
/// hang, it does not measure anything.
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

/// `chromium` on PATH; panics, saying how to install it, when there is none.
pub fn chromium_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join(BROWSER)).find(|candidate| candidate.is_file()).unwrap_or_else(
        || {
            panic!(
                "{BROWSER} is missing: no `{BROWSER}` on PATH ({}). The report's browser test renders the page in \
                 headless Chromium. ./scripts/test.sh installs it (apt-get install {BROWSER}, Debian's package, \
                 which needs the Debian mirrors and root or sudo).",
                path.to_string_lossy()
            )
        },
    )
}

/// What the browser made of a page.
pub struct Rendered {
    /// The screenshot of the viewport (PNG).
    pub png: Vec<u8>,
    /// The DOM after the page's scripts ran (`--dump-dom`).
    pub dom: String,
    /// The browser's log (`--enable-logging=stderr`): console messages, uncaught errors included.
    pub log: String,
}

impl Rendered {
    /// The lines of the log that report an uncaught script error or a `console.error`.
    pub fn console_errors(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains(":ERROR:CONSOLE")))
            .collect()
    }
}

/// Loads the file `page` in headless Chromium with a `width`×`height` window, in a fresh profile
/// under `work` (so that no other browser on the machine is reused), and returns its screenshot,
/// DOM and log. Panics with the log when the browser fails or outlives [`BROWSER_TIMEOUT`].
pub fn render(page: &Path, work: &Path, width: u32, height: u32) -> Rendered {
    let page = std::fs::canonicalize(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    std::fs::create_dir_all(work).expect("creating the browser's work directory");
    let screenshot = work.join("screenshot.png");
    let dom_file = work.join("dom.html");
    let log_file = work.join("browser.log");
    let _ = std::fs::remove_file(&screenshot);
    let file = |path: &Path| std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut child = Command::new(chromium_binary())
        .args([
            "--headless",
            // The tests run as root in containers, where Chromium's sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", work.join("profile").display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        // Files, not pipes: a full pipe would stall the browser while the test only polls it.
        .stdout(file(&dom_file))
        .stderr(file(&log_file))
        // Its own process group, so that the renderer and zygote processes go with it.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {BROWSER}: {e}"));
    let group = i32::try_from(child.id()).expect("a pid fits in pid_t");
    let log = || std::fs::read_to_string(&log_file).unwrap_or_default();
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("polling the browser") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill(2) on the process group this test started, with a valid signal number, has no
    // memory effects; after a normal exit it only ends stragglers (ESRCH when there are none).
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    let Some(status) = status else {
        panic!("{BROWSER} did not finish within {BROWSER_TIMEOUT:?} and was killed; its log:\n{}", log());
    };
    assert!(status.success(), "{BROWSER} failed ({status}); its log:\n{}", log());
    let png = std::fs::read(&screenshot)
        .unwrap_or_else(|e| panic!("{BROWSER} wrote no screenshot {}: {e}; its log:\n{}", screenshot.display(), log()));
    let dom = std::fs::read_to_string(&dom_file).expect("reading the dumped DOM");
    Rendered { png, dom, log: log() }
}

/// The width and height a PNG declares in its header (the IHDR chunk, which must come first).
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    let be = |at: usize| png.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    (png.starts_with(SIGNATURE) && png.get(12..16) == Some(b"IHDR")).then_some(())?;
    Some((be(16)?, be(20)?))
}
