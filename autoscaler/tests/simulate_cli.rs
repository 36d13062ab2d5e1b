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
