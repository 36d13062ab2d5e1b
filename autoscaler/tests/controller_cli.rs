//! The controller's command line (no subcommand): bad input exits 2 with the flag named, before
//! anything connects or serves.

mod common;

use common::run_binary;

fn controller(args: &[&str]) -> (Option<i32>, String) {
    let mut all: Vec<String> = vec!["--leader-elect=false".into(), "--address=127.0.0.1:0".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    let out = run_binary(&all, None);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_bad_api_server_url_exits_2_naming_the_flag() {
    for url in ["ftp://127.0.0.1:6443", "https://", "http://exa mple"] {
        let (code, err) = controller(&[&format!("--kubernetes={url}")]);
        assert_eq!(code, Some(2), "{url}: {err}");
        assert!(err.contains("--kubernetes") && !err.contains("panicked"), "{url}: {err}");
    }
}

#[test]
fn an_unreadable_kubeconfig_exits_2_naming_the_file() {
    let (code, err) = controller(&["--kubeconfig=/nonexistent/kubeconfig"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}

#[test]
fn periods_that_must_be_positive_are() {
    for flag in ["--horizontal-pod-autoscaler-sync-period=0s", "--scan-interval=0s"] {
        let (code, err) = controller(&[flag, "--kubernetes=http://127.0.0.1:1"]);
        assert_eq!(code, Some(2), "{flag}: {err}");
        let name = flag.split('=').next().unwrap().trim_start_matches("--");
        assert!(err.contains(name) && err.contains("must be positive"), "{flag}: {err}");
    }
}
