//! `--simulate`: `cluster-autoscaler simulate` on generated scenarios of growing size. For each
//! number of pods the harness writes a scenario YAML (a day of a cluster with that many pods at
//! its morning peak), runs `simulate FILE --output json` once, and reports its wall time and peak
//! resident memory (`ru_maxrss` from `wait4`, as `--plan` does).
//!
//! The scenario, deterministic for a size: four node groups of 32 vCPU / 128 GiB nodes (one of
//! them tainted spot nodes, with its own tolerating Deployments) started at the size that holds
//! the night's pods; a node-exporter DaemonSet; Deployments of 50 to 500 replicas requesting
//! 100m to 500m cpu and 128 to 1024 MiB; a PDB on every fourth; the night starts at 80 % of the
//! replicas, a morning ramp brings every Deployment to its full count (and the autoscaler adds
//! nodes), every tenth Deployment jumps by a fifth at noon, and the evening ramps them back down
//! to 60 % (scale-down). Two Deployments have an HPA on cpu that follows a load trace, and a
//! batch of Jobs arrives in the afternoon.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use crate::cluster::mix;
use crate::plan::wait_with_usage;
use crate::{GIB, Options, progress};

/// Pods per size when `--pods` is not given.
pub const DEFAULT_SIZES: [usize; 4] = [1_000, 5_000, 20_000, 100_000];

/// The node groups: name, spot (tainted), price per hour.
const GROUPS: [(&str, bool, f64); 4] =
    [("general-a", false, 1.54), ("general-b", false, 1.54), ("compute", false, 1.36), ("spot", true, 0.48)];
/// Node allocatable: 32 vCPU, 128 GiB, 110 pods (a pod requests 300m on average: cpu and the pod
/// count run out about together).
const NODE_CPU_MILLI: u64 = 31_850;
const NODE_PODS: u64 = 110;

struct SimulateRow {
    pods: usize,
    deployments: usize,
    initial_nodes: usize,
    wall: Option<Duration>,
    cpu: Option<Duration>,
    peak_rss: Option<u64>,
    summary: Option<String>,
    stopped: Option<String>,
}

pub fn run(options: &Options, sizes: &[usize]) -> ExitCode {
    let mut rows = Vec::new();
    for &pods in sizes {
        match simulate_size(options, pods) {
            Ok(row) => rows.push(row),
            Err(message) => {
                eprintln!("load-harness: {pods} pods: {message}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("| pods | Deployments | nodes at start | simulate wall | CPU | simulate RSS peak | day's outcome |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let wall = match (&r.wall, &r.stopped) {
            (Some(wall), None) => format!("{:.2} s", wall.as_secs_f64()),
            (_, Some(stopped)) => stopped.clone(),
            (None, None) => "-".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.pods,
            r.deployments,
            r.initial_nodes,
            wall,
            r.cpu.map_or("-".into(), |c| format!("{:.2} s", c.as_secs_f64())),
            r.peak_rss.map_or("-".into(), |b| format!("{:.0} MiB", b as f64 / (GIB / 1024.0))),
            r.summary.as_deref().unwrap_or("-")
        );
    }
    println!(
        "simulate: `cluster-autoscaler simulate SCENARIO --output json`, one run of a generated 24h day; pods: \
         replicas at the morning peak. CPU: user + system time (the machine may be shared: CPU is the steadier figure). \
         RSS peak: ru_maxrss."
    );
    ExitCode::SUCCESS
}

fn simulate_size(options: &Options, pods: usize) -> Result<SimulateRow, String> {
    let dir = match &options.work_dir {
        Some(dir) => dir.join(format!("simulate-{pods}")),
        None => std::env::temp_dir().join(format!("load-harness-simulate-{}-{pods}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let scenario = Scenario::generate(pods);
    let file = dir.join("scenario.yaml");
    std::fs::write(&file, &scenario.yaml).map_err(|e| format!("writing {}: {e}", file.display()))?;
    progress(&format!(
        "{pods} pods: {} Deployments, {} nodes at start; running simulate on {}",
        scenario.deployments,
        scenario.initial_nodes,
        file.display()
    ));
    let mut row = SimulateRow {
        pods,
        deployments: scenario.deployments,
        initial_nodes: scenario.initial_nodes,
        wall: None,
        cpu: None,
        peak_rss: None,
        summary: None,
        stopped: None,
    };
    let (wall, status, peak_rss, cpu) = run_simulate(options, &dir, &file)?;
    row.peak_rss = Some(peak_rss);
    row.cpu = Some(cpu);
    match status {
        Some(0) => {
            row.wall = Some(wall);
            let output = std::fs::read_to_string(dir.join("summary.json")).unwrap_or_default();
            row.summary = summarize(&output);
        }
        Some(code) => {
            let stderr = std::fs::read_to_string(dir.join("simulate.log")).unwrap_or_default();
            return Err(format!("simulate exited with status {code}: {stderr}"));
        }
        None => row.stopped = Some(format!("stopped after {:.0} s", wall.as_secs_f64())),
    }
    progress(&format!(
        "  {} in {:.2} s, peak RSS {:.0} MiB",
        if row.stopped.is_some() { "stopped" } else { "done" },
        wall.as_secs_f64(),
        peak_rss as f64 / (GIB / 1024.0)
    ));
    Ok(row)
}

/// Runs `simulate` on the file; a run longer than `--simulate-timeout` is killed (status `None`).
fn run_simulate(options: &Options, dir: &Path, file: &Path) -> Result<(Duration, Option<i32>, u64, Duration), String> {
    let out = dir.join("summary.json");
    let stdout = std::fs::File::create(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    // Its stderr goes to a file: a pipe read only after the exit could fill and stall it.
    let log = dir.join("simulate.log");
    let stderr = std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let started = Instant::now();
    let child = Command::new(&options.controller)
        .arg("simulate")
        .arg(file)
        .arg("--output=json")
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", options.controller.display()))?;
    let pid = child.id();
    let timeout = options.simulate_timeout;
    // The watchdog kills the child (by its own pid, still unreaped: it cannot have been reused)
    // when the run takes too long; `wait4` below then returns.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(timeout).is_err() {
            // SAFETY: sending a signal to our own unreaped child.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            return true;
        }
        false
    });
    let waited = wait_with_usage(pid);
    let wall = started.elapsed();
    let _ = done_tx.send(());
    let killed = watchdog.join().unwrap_or(false);
    let usage = waited?;
    Ok((wall, (!killed).then_some(usage.status), usage.peak_rss, usage.cpu))
}

/// A few figures of `simulate`'s JSON summary, to see the day did what it should.
fn summarize(output: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(output).ok()?;
    let number = |key: &str| value.get(key).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    Some(format!(
        "{:.0} loops, {:.0} scale-ups, {:.0} scale-downs, {:.0} evictions, {:.0} node-hours",
        number("loops"),
        number("scaleUps"),
        number("scaleDowns"),
        number("evictions"),
        number("totalNodeHours")
    ))
}

/// A generated scenario and what it holds.
pub struct Scenario {
    pub yaml: String,
    pub deployments: usize,
    pub initial_nodes: usize,
}

/// One generated Deployment: its peak replicas and requests.
struct Deployment {
    name: String,
    namespace: &'static str,
    replicas: usize,
    cpu_milli: u64,
    memory_mib: u64,
    spot: bool,
}

impl Scenario {
    /// A day with `pods` replicas at its morning peak.
    pub fn generate(pods: usize) -> Scenario {
        const NAMESPACES: [&str; 4] = ["shop", "search", "data", "platform"];
        let mut deployments = Vec::new();
        let mut left = pods;
        let mut i = 0u64;
        while left > 0 {
            let h = mix(i + 1);
            let replicas = (50 + (h % 451) as usize).min(left);
            deployments.push(Deployment {
                name: format!("app-{i}"),
                namespace: NAMESPACES[(i % 4) as usize],
                replicas,
                cpu_milli: 100 * (1 + (h >> 16) % 5),
                memory_mib: 128 << ((h >> 24) % 4),
                spot: i % 5 == 4,
            });
            left -= replicas;
            i += 1;
        }
        // The night's pods (80 %) fit on the nodes at start, spread over the groups that can
        // hold them; the morning ramp needs more.
        let nodes_for = |ds: &mut dyn Iterator<Item = &Deployment>| -> usize {
            let (mut cpu, mut count) = (0u64, 0u64);
            for d in ds {
                let night = night(d.replicas) as u64;
                cpu += night * d.cpu_milli;
                count += night;
            }
            // Daemon pods take 100m and one pod slot of each node.
            let by_cpu = cpu.div_ceil(NODE_CPU_MILLI - 100);
            let by_count = count.div_ceil(NODE_PODS - 1);
            (by_cpu.max(by_count) as usize * 11).div_ceil(10)
        };
        let spot_nodes = nodes_for(&mut deployments.iter().filter(|d| d.spot));
        let other_nodes = nodes_for(&mut deployments.iter().filter(|d| !d.spot));
        let regular = [other_nodes.div_ceil(3), other_nodes.div_ceil(3), other_nodes / 3];
        let max_nodes = (pods / 40).max(20);

        let mut y = String::new();
        let _ = writeln!(y, "# Generated by `scripts/load-harness --simulate`: {pods} pods at the morning peak.");
        let _ = writeln!(y, "name: generated day of {pods} pods");
        y.push_str("start: 2026-11-23T00:00:00Z\nduration: 24h\nseed: 7\n");
        y.push_str(
            "flags: [--expander=least-waste, --scale-down-unneeded-time=10m, --scale-down-delay-after-add=10m]\n",
        );
        y.push_str("cluster: {nodeStartupDelay: 40s, podStartupDelay: 5s}\n");
        y.push_str("nodeGroups:\n");
        let mut initial_nodes = 0;
        for (g, (id, spot, price)) in GROUPS.iter().enumerate() {
            let initial = if *spot { spot_nodes } else { regular[g] };
            initial_nodes += initial;
            let _ = writeln!(y, "  - id: {id}\n    minSize: 0\n    maxSize: {max_nodes}\n    initialSize: {initial}");
            let _ = writeln!(y, "    pricePerHour: {price}\n    provisioningDelay: 2m\n    template:");
            let _ = writeln!(y, "      metadata: {{labels: {{pool: {id}, kubernetes.io/os: linux}}}}");
            if *spot {
                y.push_str("      spec: {taints: [{key: lifecycle, value: spot, effect: NoSchedule}]}\n");
            }
            let _ = writeln!(
                y,
                "      status: {{capacity: {{cpu: \"32\", memory: 128Gi, pods: \"{NODE_PODS}\"}}, allocatable: {{cpu: {NODE_CPU_MILLI}m, memory: 125Gi, pods: \"{NODE_PODS}\"}}}}"
            );
        }
        y.push_str("objects:\n");
        for namespace in NAMESPACES {
            let _ = writeln!(y, "  - {{apiVersion: v1, kind: Namespace, metadata: {{name: {namespace}}}}}");
        }
        y.push_str(concat!(
            "  - apiVersion: apps/v1\n    kind: DaemonSet\n    metadata: {name: node-exporter, namespace: kube-system}\n",
            "    spec:\n      selector: {matchLabels: {app: node-exporter}}\n      template:\n",
            "        metadata: {labels: {app: node-exporter}}\n        spec:\n          tolerations: [{operator: Exists}]\n",
            "          containers: [{name: exporter, image: node-exporter, resources: {requests: {cpu: 100m, memory: 128Mi}}}]\n",
        ));
        for (i, d) in deployments.iter().enumerate() {
            let _ = writeln!(
                y,
                "  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {{name: {}, namespace: {}}}\n    spec:\n      replicas: {}",
                d.name,
                d.namespace,
                night(d.replicas)
            );
            let _ = writeln!(y, "      selector: {{matchLabels: {{app: {}}}}}", d.name);
            let _ = writeln!(y, "      template:\n        metadata: {{labels: {{app: {}}}}}\n        spec:", d.name);
            if d.spot {
                y.push_str("          tolerations: [{key: lifecycle, value: spot, effect: NoSchedule}]\n");
            }
            let _ = writeln!(
                y,
                "          containers: [{{name: app, image: app, resources: {{requests: {{cpu: {}m, memory: {}Mi}}}}}}]",
                d.cpu_milli, d.memory_mib
            );
            if i % 4 == 0 {
                let _ = writeln!(
                    y,
                    "  - {{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {{name: {0}, namespace: {1}}}, spec: {{maxUnavailable: 10%, selector: {{matchLabels: {{app: {0}}}}}}}}}",
                    d.name, d.namespace
                );
            }
        }
        // Two HPAs on cpu, on the first two Deployments that are not spot ones.
        let autoscaled: Vec<&Deployment> = deployments.iter().filter(|d| !d.spot).take(2).collect();
        for d in &autoscaled {
            let _ = writeln!(
                y,
                "  - apiVersion: autoscaling/v2\n    kind: HorizontalPodAutoscaler\n    metadata: {{name: {0}, namespace: {1}}}\n    spec:\n      scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {0}}}\n      minReplicas: {2}\n      maxReplicas: {3}\n      metrics: [{{type: Resource, resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 60}}}}}}]",
                d.name,
                d.namespace,
                night(d.replicas) / 2,
                d.replicas * 2
            );
        }
        y.push_str("events:\n");
        for (i, d) in deployments.iter().enumerate() {
            if autoscaled.iter().any(|a| a.name == d.name) {
                continue;
            }
            let stagger = i % 30;
            let _ = writeln!(
                y,
                "  - {{at: 6h{stagger}m, ramp: {{kind: Deployment, namespace: {}, name: {}, to: {}, over: 2h}}}}",
                d.namespace, d.name, d.replicas
            );
            if i % 10 == 3 {
                let _ = writeln!(
                    y,
                    "  - {{at: 12h{stagger}m, scale: {{kind: Deployment, namespace: {}, name: {}, replicas: {}}}}}",
                    d.namespace,
                    d.name,
                    d.replicas + d.replicas / 5
                );
            }
            let _ = writeln!(
                y,
                "  - {{at: 18h{stagger}m, ramp: {{kind: Deployment, namespace: {}, name: {}, to: {}, over: 3h}}}}",
                d.namespace,
                d.name,
                d.replicas * 3 / 5
            );
        }
        // A batch of Jobs in the afternoon: a tenth of the pods' count, at most 2,000 at a time.
        let parallelism = (pods / 10).clamp(10, 2_000);
        let _ = writeln!(
            y,
            "  - at: 14h\n    create:\n      apiVersion: batch/v1\n      kind: Job\n      metadata: {{name: report, namespace: data}}\n      spec:\n        parallelism: {parallelism}\n        completions: {}\n        template:\n          metadata: {{annotations: {{simulation.cluster-autoscaler.rs/run-duration: 25m}}}}\n          spec:\n            restartPolicy: Never\n            containers: [{{name: report, image: report, resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}}}]",
            parallelism * 2
        );
        y.push_str("loads:\n");
        for d in &autoscaled {
            // Requests/s at 1m each: the HPA holds about the night's replicas at 60 % of 300m
            // each at night, and asks for about twice as many at noon.
            let base = night(d.replicas) as u64 * d.cpu_milli * 6 / 10;
            let _ = writeln!(
                y,
                "  - target: {{kind: Deployment, namespace: {}, name: {}}}\n    costPerUnit: 1m\n    trace: [{{at: 0h, value: {base}}}, {{at: 9h, value: {}}}, {{at: 13h, value: {}}}, {{at: 20h, value: {base}}}]",
                d.namespace,
                d.name,
                base * 3 / 2,
                base * 2
            );
        }
        Scenario { yaml: y, deployments: deployments.len(), initial_nodes }
    }
}

/// A Deployment's replicas at night: 80 % of its peak.
fn night(replicas: usize) -> usize {
    (replicas * 4 / 5).max(1)
}
