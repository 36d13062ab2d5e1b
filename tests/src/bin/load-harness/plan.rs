//! `--plan`: `cluster-autoscaler plan` on the dump of a generated cluster. Each size's objects
//! are written as `kubectl get … -A -o json` prints them (one `List`, without `managedFields`,
//! which kubectl leaves out unless `--show-managed-fields`), then `plan` runs on the file once,
//! and the harness reports its wall time and peak resident memory (`ru_maxrss` from `wait4`, so
//! the peak is exact however short the run).

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::Cluster;
use crate::{GIB, Options, progress};

struct PlanRow {
    nodes: usize,
    pods: usize,
    dump_bytes: u64,
    wall: Duration,
    peak_rss: u64,
}

pub fn run(options: &Options) -> ExitCode {
    let mut rows = Vec::new();
    for &(nodes, pods) in &options.sizes {
        match plan_size(options, nodes, pods) {
            Ok(row) => rows.push(row),
            Err(message) => {
                eprintln!("load-harness: {nodes} nodes / {pods} pods: {message}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("| cluster | dump | plan wall | plan RSS peak |");
    println!("|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} nodes / {} pods | {:.0} MB | {:.2} s | {:.0} MiB |",
            r.nodes,
            r.pods,
            r.dump_bytes as f64 / 1e6,
            r.wall.as_secs_f64(),
            r.peak_rss as f64 / (GIB / 1024.0)
        );
    }
    println!("plan: `cluster-autoscaler plan --snapshot dump.json --cloud-provider=static --output json`, one run.");
    ExitCode::SUCCESS
}

fn plan_size(options: &Options, nodes: usize, pods: usize) -> Result<PlanRow, String> {
    progress(&format!("{nodes} nodes / {pods} pods: writing the dump"));
    let cluster = Cluster::plan(nodes, pods)?;
    let dir = match &options.work_dir {
        Some(dir) => dir.join(format!("plan-{nodes}-{pods}")),
        None => std::env::temp_dir().join(format!("load-harness-plan-{}-{nodes}-{pods}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let dump = dir.join("dump.json");
    let dump_bytes = write_dump(&cluster, &dump).map_err(|e| format!("writing {}: {e}", dump.display()))?;
    let config = dir.join("cloud-config.yaml");
    std::fs::write(&config, cluster.cloud_config()).map_err(|e| format!("writing {}: {e}", config.display()))?;
    progress(&format!("  {:.0} MB; running plan", dump_bytes as f64 / 1e6));
    // plan's warnings go to a file: a pipe read only after the exit could fill and stall it.
    let log = dir.join("plan.log");
    let stderr = std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let started = Instant::now();
    let child = Command::new(&options.controller)
        .arg("plan")
        .arg(format!("--snapshot={}", dump.display()))
        .arg("--cloud-provider=static")
        .arg(format!("--cloud-config={}", config.display()))
        .arg("--output=json")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", options.controller.display()))?;
    let (status, peak_rss) = wait_with_peak(child.id())?;
    let wall = started.elapsed();
    if status != 0 {
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(format!("plan exited with status {status}: {stderr}"));
    }
    Ok(PlanRow { nodes, pods, dump_bytes, wall, peak_rss })
}

/// Waits for the child and returns its exit status and peak resident memory in bytes.
fn wait_with_peak(pid: u32) -> Result<(i32, u64), String> {
    wait_with_usage(pid).map(|u| (u.status, u.peak_rss))
}

/// What `wait4` reports of a child that ended.
pub struct ChildUsage {
    /// The exit status (-1 when a signal ended it).
    pub status: i32,
    /// Peak resident memory, in bytes.
    pub peak_rss: u64,
    /// CPU time, user and system.
    pub cpu: Duration,
}

/// Waits for the child and returns its exit status, peak resident memory and CPU time.
pub fn wait_with_usage(pid: u32) -> Result<ChildUsage, String> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for; the pointers are to live locals.
    let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    if waited < 0 {
        return Err(format!("waiting for the child: {}", std::io::Error::last_os_error()));
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    let time =
        |t: libc::timeval| Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64);
    Ok(ChildUsage {
        status: code,
        peak_rss: (usage.ru_maxrss.max(0) as u64) * 1024,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
    })
}

/// Writes every object of the cluster as one `List`, as `kubectl get -o json` does.
fn write_dump(cluster: &Cluster, path: &Path) -> std::io::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n")?;
    let mut first = true;
    let chunks =
        std::iter::once(cluster.objects()).chain(cluster.node_objects(&cluster.nodes)).chain(cluster.app_pods());
    for chunk in chunks {
        for mut object in chunk {
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            if !first {
                out.write_all(b",\n")?;
            }
            first = false;
            serde_json::to_writer_pretty(&mut out, &object)?;
        }
    }
    out.write_all(
        b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
    )?;
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}
