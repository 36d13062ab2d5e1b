//! The `simulate` report in a real browser (headless Chromium, `tests::browser`): the page draws
//! its charts, and its scripts run to the end without an error.

use std::path::{Path, PathBuf};

use autoscaler::simulate::{self, OutputFormat, SimulateArgs};
use tests::TestDir;
use tests::browser::{self, png_size};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 2400;

/// `simulate --report <dir>/day.html` on the built-in day: the page a user opens.
async fn write_report(dir: &Path) -> PathBuf {
    let report = dir.join("day.html");
    let args = SimulateArgs {
        scenario: None,
        output: OutputFormat::Text,
        events: None,
        report: Some(report.to_string_lossy().into_owned()),
        flags: Vec::new(),
        compare_hpa_aware: false,
    };
    simulate::run(&args).await.expect("simulate writes its report");
    report
}

/// The value of attribute `name` on the first element of `html` whose start tag begins with
/// `opening` (such as `<body` or `<div id="script-errors"`).
fn attribute<'a>(html: &'a str, opening: &str, name: &str) -> Option<&'a str> {
    let start = html.find(opening)?;
    let tag = &html[start..start + html[start..].find('>')?];
    let needle = format!(" {name}=\"");
    let value = &tag[tag.find(&needle)? + needle.len()..];
    Some(&value[..value.find('"')?])
}

fn count(html: &str, opening: &str, name: &str) -> usize {
    attribute(html, opening, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {name} on {opening}…>"))
}

#[tokio::test]
async fn the_report_draws_its_charts_in_a_browser_without_script_errors() {
    // A missing browser fails here, before the simulated day.
    browser::chromium_binary();
    // The report and the browser's files stay if the test fails.
    let dir = TestDir::new("ca-report-browser-");
    let report = write_report(&dir).await;
    let written = std::fs::read_to_string(&report).expect("reading the report");
    let page = browser::render(&report, &dir.join("report"), WIDTH, HEIGHT);
    let context = || format!("browser log:\n{}", page.log);

    // No script error: none caught by the page's own handlers, none uncaught in the console.
    assert_eq!(
        attribute(&page.dom, "<div id=\"script-errors\"", "data-count"),
        Some("0"),
        "the page caught script errors: {:?}",
        page.dom.find("<div id=\"script-errors\"").map(|i| &page.dom[i..(i + 400).min(page.dom.len())])
    );
    assert!(page.console_errors().is_empty(), "console errors: {:#?}\n{}", page.console_errors(), context());
    assert_eq!(
        attribute(&page.dom, "<body", "data-ready"),
        Some("yes"),
        "the last script ran to its end\n{}",
        context()
    );

    // The charts: every line written into the page is in the DOM, and the browser laid each out
    // with a length.
    let charts = written.matches("<svg class=\"chart\"").count();
    let lines = written.matches("<path class=\"series\"").count();
    assert!(charts >= 6, "nodes, pending pods, cost, packing and the two pod autoscalers: {charts} charts");
    assert!(lines >= charts, "each chart has at least one line: {lines} lines in {charts} charts");
    assert_eq!(page.dom.matches("<svg class=\"chart\"").count(), charts, "charts in the DOM");
    assert_eq!(count(&page.dom, "<body", "data-series"), lines, "lines the page's script found");
    assert_eq!(count(&page.dom, "<body", "data-series-drawn"), lines, "lines the browser drew");

    // The screenshot: the requested size, and not blank. PNG compresses a uniform area to almost
    // nothing, so its size measures what is drawn; a blank page shot by the same browser at the
    // same size is the yardstick (an absolute number would depend on the browser's version).
    assert_eq!(png_size(&page.png), Some((WIDTH, HEIGHT)), "the screenshot's size (PNG header)");
    let blank_page = dir.join("blank.html");
    std::fs::write(&blank_page, "<!DOCTYPE html><html><head><title>blank</title></head><body></body></html>")
        .expect("writing the blank page");
    let blank = browser::render(&blank_page, &dir.join("blank"), WIDTH, HEIGHT);
    assert_eq!(png_size(&blank.png), Some((WIDTH, HEIGHT)), "the blank page's screenshot size");
    assert!(
        page.png.len() > 5 * blank.png.len(),
        "the report's screenshot ({} bytes) is hardly more than a blank page's ({} bytes): nothing drawn?",
        page.png.len(),
        blank.png.len()
    );
}
