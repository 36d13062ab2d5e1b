//! The controller at scale: runs the real `cluster-autoscaler` binary against the fake API server
//! loaded with a generated cluster, and prints one table per run (README: "Load harness").
//!
//! ```sh
//! scripts/load-harness                              # 5,000 / 150,000 and 15,000 / 450,000
//! scripts/load-harness --nodes 5000 --pods 150000   # one size
//! scripts/load-harness --quick                      # 1,000 / 30,000
//! scripts/load-harness --simulate                   # `simulate` on generated days (simulate.rs)
//! ```
//!
//! For each size: the cluster is generated into an in-process [`FakeApiServer`] (see
//! `cluster.rs`), a full paginated list of its pods is timed (the fake server's own share), the
//! controller starts with `--cloud-provider=static` and otherwise default flags, and the harness
//! measures
//! - **first decision**: from starting the process to the end of its first successful iteration
//!   (`cluster_autoscaler_function_duration_seconds_count{function="mainSuccessful"}` reaching 1,
//!   polled every 250 ms);
//! - **resident memory**: `VmHWM` (peak) and the median `VmRSS` after the first decision
//!   (steady), sampled every 500 ms from `/proc/<pid>/status`;
//! - **iteration time**: p50 / p95 of `cluster_autoscaler_function_duration_seconds{function="main"}`,
//!   interpolated in the histogram's buckets (upstream's buckets grow by 6.8 %, so the quantiles
//!   are within about 3.4 %), in two columns: the quiet iterations after the first and before the
//!   first burst (the timer's, on a settled cluster), and the iterations from the first burst on
//!   (each burst's scale-up and the productive iterations after it);
//! - **pending → node group call**: bursts of pods (1,000 by default) created at once as the
//!   scheduler leaves unschedulable pods, at a random moment of the scan interval; the time from
//!   the moment before the pods are stored to the `called_at` of the controller's `scale-up`
//!   log line (JSON logs): when its `IncreaseSize` calls had returned (the line itself is
//!   written when the iteration ends, after soft taints, deletions and the status ConfigMap).
//!   The pods' timestamps are whole seconds, as an API server writes them: the controller's
//!   "very new pod" rule reads them. After each call the harness adds the
//!   nodes the scale-up asked for and binds the burst's pods to them, as the cloud, the kubelets
//!   and the scheduler would, so every burst starts from a settled cluster.
//!
//! The machine's `MemAvailable` is watched: below `--min-available-gib` the run stops (the
//! controller is killed) and the row says so.

mod cluster;
mod measure;
mod plan;
mod simulate;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use tests::controller::{Controller, free_port, http_get};
use tests::fake_apiserver::FakeApiServer;

use cluster::{Cluster, mix};
use measure::{Histogram, LogTail, ScaleUp, machine_available, nearest_rank, process_memory, sample};

const USAGE: &str = "\
usage: load-harness [--nodes N --pods P | --quick] [options]

  --nodes N, --pods P      one cluster size (default: 5000/150000, then 15000/450000)
  --quick                  1000 nodes, 30000 pods
  --bursts N               bursts of unschedulable pods per size (default 8)
  --burst-pods N           pods per burst (default 1000)
  --quiet-iterations N     iterations without bursts before the first one (default 5)
  --controller PATH        the cluster-autoscaler binary (default: beside this one)
  --flag ARG               one more controller flag, e.g. --flag=--horizontal-pod-autoscaler-mode=off
                           (repeatable)
  --work-dir DIR           kubeconfig, cloud-config and the controller's log (default: a temp dir)
  --min-available-gib G    stop a run when the machine's MemAvailable falls below G (default 2)
  --first-decision-timeout SECONDS   give up waiting for the first decision (default 1800)
  --plan                   instead of the controller: write each size's cluster as a `kubectl get
                           -o json` dump and time `cluster-autoscaler plan` on it (wall, peak RSS)
  --simulate               instead of the controller: write a generated day's scenario with P pods
                           (--pods; default 1000, 5000, 20000, 100000) and time
                           `cluster-autoscaler simulate` on it (wall, peak RSS)
  --simulate-timeout SECONDS   kill a simulate run after this long (default 600)
";

const ITERATION_HISTOGRAM: &str = "cluster_autoscaler_function_duration_seconds";
const SUCCESSFUL_ITERATIONS: &str = "cluster_autoscaler_function_duration_seconds_count{function=\"mainSuccessful\"}";
/// The controller's default `--scan-interval`: bursts land at a random moment of it.
const SCAN_INTERVAL: Duration = Duration::from_secs(10);
/// How long a burst may wait for its node group call (then its pods are deleted and the burst
/// has no figure).
const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long, after a call, the harness waits for another one for the burst's pods that did not
/// fit on the nodes it brought.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

struct Options {
    sizes: Vec<(usize, usize)>,
    bursts: usize,
    burst_pods: usize,
    quiet_iterations: u64,
    controller: PathBuf,
    /// `--flag`: more arguments for the controller.
    controller_flags: Vec<String>,
    work_dir: Option<PathBuf>,
    min_available: u64,
    first_decision_timeout: Duration,
    /// `--plan`: measure `plan` on a dump instead of the controller.
    plan: bool,
    /// `--simulate`: measure `simulate` on generated scenarios of these pod counts.
    simulate: Option<Vec<usize>>,
    simulate_timeout: Duration,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let beside = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join("cluster-autoscaler")));
        let mut options = Options {
            sizes: Vec::new(),
            bursts: 8,
            burst_pods: 1000,
            quiet_iterations: 5,
            controller: beside.unwrap_or_else(|| PathBuf::from("cluster-autoscaler")),
            controller_flags: Vec::new(),
            work_dir: None,
            min_available: 2 << 30,
            first_decision_timeout: Duration::from_secs(1800),
            plan: false,
            simulate: None,
            simulate_timeout: Duration::from_secs(600),
        };
        let (mut nodes, mut pods, mut quick) = (None, None, false);
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            // `--flag=--x=y` as well as `--flag --x=y`.
            if let Some(value) = arg.strip_prefix("--flag=") {
                options.controller_flags.push(value.to_string());
                continue;
            }
            let flag = arg;
            if flag == "--quick" {
                quick = true;
                continue;
            }
            if flag == "--plan" {
                options.plan = true;
                continue;
            }
            if flag == "--simulate" {
                options.simulate = Some(Vec::new());
                continue;
            }
            if flag == "-h" || flag == "--help" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = || value.parse::<u64>().map_err(|_| format!("{flag}: {value:?} is not a whole number"));
            match flag.as_str() {
                "--nodes" => nodes = Some(number()? as usize),
                "--pods" => pods = Some(number()? as usize),
                "--bursts" => options.bursts = number()? as usize,
                "--burst-pods" => options.burst_pods = number()?.max(1) as usize,
                "--quiet-iterations" => options.quiet_iterations = number()?,
                "--controller" => options.controller = PathBuf::from(value),
                "--flag" => options.controller_flags.push(value.clone()),
                "--work-dir" => options.work_dir = Some(PathBuf::from(value)),
                "--min-available-gib" => {
                    let gib: f64 = value.parse().map_err(|_| format!("{flag}: {value:?} is not a number"))?;
                    options.min_available = (gib * GIB) as u64;
                }
                "--first-decision-timeout" => options.first_decision_timeout = Duration::from_secs(number()?),
                "--simulate-timeout" => options.simulate_timeout = Duration::from_secs(number()?),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if let Some(sizes) = &mut options.simulate {
            if nodes.is_some() || quick {
                return Err("--simulate takes --pods only: the scenario sizes its node groups".into());
            }
            *sizes = pods.map_or(simulate::DEFAULT_SIZES.to_vec(), |p| vec![p]);
            pods = None;
        }
        options.sizes = match (nodes, pods, quick) {
            (Some(n), Some(p), false) => vec![(n, p)],
            (None, None, true) => vec![(1000, 30_000)],
            (None, None, false) if options.simulate.is_some() => Vec::new(),
            (None, None, false) => vec![(5000, 150_000), (15_000, 450_000)],
            _ => return Err("give --nodes with --pods, or --quick, or neither".into()),
        };
        if !options.controller.exists() {
            return Err(format!("no controller binary at {} (--controller)", options.controller.display()));
        }
        Ok(options)
    }
}

/// One size's measurements (a `None` was not measured: the run stopped before).
#[derive(Default)]
struct Row {
    nodes: usize,
    pods: usize,
    first_decision: Option<Duration>,
    rss_peak: Option<u64>,
    rss_steady: Option<u64>,
    /// Iterations without bursts (the timer's, on a settled cluster).
    quiet: Histogram,
    /// Iterations from the first burst on (scale-ups of the bursts, and those that follow them).
    busy: Histogram,
    calls: Vec<f64>,
    bursts: usize,
    fake_list: Duration,
    fake_list_bytes: u64,
    fake_rss: u64,
    stopped: Option<String>,
}

fn progress(message: &str) {
    eprintln!("[load-harness {}] {message}", Timestamp::now().strftime("%H:%M:%S"));
}

/// The harness process's own resident memory: the fake API server and its objects.
fn own_rss() -> u64 {
    process_memory(std::process::id()).map_or(0, |(rss, _)| rss)
}

/// Returns freed generator garbage to the kernel, so the harness's RSS is the server's.
fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

async fn scrape(port: u16) -> Option<String> {
    let address = format!("127.0.0.1:{port}");
    tokio::task::spawn_blocking(move || http_get(&address, "/metrics"))
        .await
        .ok()
        .flatten()
        .filter(|(status, _)| *status == 200)
        .map(|(_, body)| body)
}

/// Fills the server: namespaces, workloads, PDBs and HPAs, then nodes with their DaemonSet pods,
/// then the application pods, then the metrics documents the HPAs read.
fn load(server: &FakeApiServer, cluster: &Cluster) -> Result<(), String> {
    server.seed_values(cluster.objects())?;
    for chunk in cluster.node_objects(&cluster.nodes) {
        server.seed_values(chunk)?;
    }
    let mut pods = cluster.nodes.len() * cluster::DAEMONSETS.len();
    for (i, chunk) in cluster.app_pods().enumerate() {
        pods += chunk.len();
        server.seed_values(chunk)?;
        if i % 2000 == 1999 {
            progress(&format!("  {pods} pods stored"));
        }
    }
    for namespace in &cluster.namespaces {
        let path = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods");
        server.serve_document(&path, cluster.pod_metrics(namespace));
    }
    Ok(())
}

/// Lists every pod in pages of 500, as the controller's reflector does, without rate limit and
/// without decoding: the fake API server's own share of the first list. Returns the time and the
/// bytes received.
fn time_full_list(address: &str) -> Result<(Duration, u64), String> {
    let started = Instant::now();
    let mut bytes = 0u64;
    let mut token = String::new();
    loop {
        let path = if token.is_empty() {
            "/api/v1/pods?limit=500&resourceVersion=0".to_string()
        } else {
            format!("/api/v1/pods?limit=500&continue={token}")
        };
        let (status, body) = http_get(address, &path).ok_or("listing pods from the fake API server failed")?;
        if status != 200 {
            return Err(format!("listing pods answered {status}"));
        }
        bytes += body.len() as u64;
        // The list's metadata comes before its items: no need to parse the page.
        let head = &body[..body.len().min(512)];
        token = match head.split_once("\"continue\":\"") {
            Some((_, rest)) => rest.split('"').next().unwrap_or_default().replace('/', "%2F").replace(':', "%3A"),
            None => return Ok((started.elapsed(), bytes)),
        };
    }
}

/// Memory samples of the controller: `(since start, VmRSS)` and the last `VmHWM`.
#[derive(Default)]
struct MemorySamples {
    rss: Vec<(Duration, u64)>,
    peak: u64,
    /// Set when the machine's available memory fell below the limit.
    low_memory: Option<String>,
}

fn sample_memory(
    pid: u32,
    started: Instant,
    min_available: u64,
    samples: Arc<Mutex<MemorySamples>>,
    stop: Arc<AtomicBool>,
) {
    tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            let Some((rss, peak)) = process_memory(pid) else { break };
            let available = machine_available().unwrap_or(u64::MAX);
            {
                let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
                s.rss.push((started.elapsed(), rss));
                s.peak = s.peak.max(peak);
                if available < min_available && s.low_memory.is_none() {
                    s.low_memory = Some(format!(
                        "stopped: the machine's MemAvailable fell to {:.1} GiB (controller at {:.1} GiB)",
                        available as f64 / GIB,
                        rss as f64 / GIB
                    ));
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
}

/// Why the run cannot go on, if it cannot: the controller exited or memory ran low.
fn halted(controller: &mut Controller, samples: &Mutex<MemorySamples>) -> Option<String> {
    if let Some(reason) = samples.lock().unwrap_or_else(|e| e.into_inner()).low_memory.clone() {
        return Some(reason);
    }
    controller.try_exit().map(|status| format!("stopped: the controller exited ({status})"))
}

async fn run_size(options: &Options, nodes: usize, pods: usize) -> Result<Row, String> {
    let mut row = Row { nodes, pods, ..Row::default() };
    progress(&format!("{nodes} nodes / {pods} pods: generating the cluster"));
    let mut cluster = Cluster::plan(nodes, pods)?;
    let server = FakeApiServer::start().await;
    let loading = Instant::now();
    load(&server, &cluster)?;
    release_free_memory();
    row.fake_rss = own_rss();
    progress(&format!(
        "  stored in {:.1} s: {} workloads, harness RSS {:.2} GiB",
        loading.elapsed().as_secs_f64(),
        cluster.workloads.len(),
        row.fake_rss as f64 / GIB
    ));
    let address = server.addr().to_string();
    let (list_time, list_bytes) = tokio::task::spawn_blocking(move || time_full_list(&address))
        .await
        .map_err(|e| format!("the list timing task failed: {e}"))??;
    (row.fake_list, row.fake_list_bytes) = (list_time, list_bytes);
    progress(&format!(
        "  fake API server: all pods in pages of 500 in {:.2} s ({:.2} GiB, {:.1} KB per pod)",
        list_time.as_secs_f64(),
        list_bytes as f64 / GIB,
        list_bytes as f64 / pods as f64 / 1000.0
    ));

    let dir = match &options.work_dir {
        Some(dir) => dir.join(format!("{nodes}-{pods}")),
        None => std::env::temp_dir().join(format!("load-harness-{}-{nodes}-{pods}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let write = |name: &str, content: String| {
        std::fs::write(dir.join(name), content).map_err(|e| format!("writing {}: {e}", dir.join(name).display()))
    };
    write("kubeconfig", server.kubeconfig_yaml())?;
    write("cloud-config.yaml", cluster.cloud_config())?;
    let port = free_port();
    let mut args = vec![
        format!("--kubeconfig={}", dir.join("kubeconfig").display()),
        "--cloud-provider=static".to_string(),
        format!("--cloud-config={}", dir.join("cloud-config.yaml").display()),
        format!("--address=127.0.0.1:{port}"),
        // One replica: the Lease would only add its renewals to the load.
        "--leader-elect=false".to_string(),
        "--logging-format=json".to_string(),
    ];
    progress(&format!("  starting {} (log: {})", options.controller.display(), dir.join("controller.log").display()));
    let started = Instant::now();
    args.extend(options.controller_flags.iter().cloned());
    let mut controller =
        Controller::start_binary(&options.controller, &dir, "controller", &args, &[("RUST_LOG", "info".to_string())]);
    let samples = Arc::new(Mutex::new(MemorySamples::default()));
    let stop_sampling = Arc::new(AtomicBool::new(false));
    sample_memory(controller.pid(), started, options.min_available, samples.clone(), stop_sampling.clone());

    let outcome =
        measure_controller(options, &mut cluster, &server, &mut controller, port, started, &samples, &mut row).await;
    if let Err(reason) = outcome {
        row.stopped = Some(reason);
    }
    stop_sampling.store(true, Ordering::SeqCst);
    if controller.try_exit().is_none() {
        controller.terminate();
        let deadline = Instant::now() + Duration::from_secs(60);
        while controller.try_exit().is_none() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let s = samples.lock().unwrap_or_else(|e| e.into_inner());
    row.rss_peak = (s.peak > 0).then_some(s.peak);
    let steady: Vec<f64> = match row.first_decision {
        Some(first) => s.rss.iter().filter(|(t, _)| *t >= first).map(|(_, rss)| *rss as f64).collect(),
        None => Vec::new(),
    };
    row.rss_steady = nearest_rank(&steady, 0.5).map(|r| r as u64);
    Ok(row)
}

/// Everything measured while the controller runs; an `Err` says why the run stopped early.
#[allow(clippy::too_many_arguments)]
async fn measure_controller(
    options: &Options,
    cluster: &mut Cluster,
    server: &FakeApiServer,
    controller: &mut Controller,
    port: u16,
    started: Instant,
    samples: &Mutex<MemorySamples>,
    row: &mut Row,
) -> Result<(), String> {
    // First decision.
    let deadline = started + options.first_decision_timeout;
    let metrics = loop {
        if let Some(reason) = halted(controller, samples) {
            return Err(reason);
        }
        if Instant::now() > deadline {
            return Err(format!("stopped: no decision after {:?}", options.first_decision_timeout));
        }
        if let Some(text) = scrape(port).await
            && sample(&text, SUCCESSFUL_ITERATIONS).is_some_and(|n| n >= 1.0)
        {
            row.first_decision = Some(started.elapsed());
            break text;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    progress(&format!("  first decision after {:.1} s", started.elapsed().as_secs_f64()));
    let baseline = Histogram::parse(&metrics, ITERATION_HISTOGRAM, ("function", "main")).unwrap_or_default();

    // Iterations without bursts.
    let quiet = baseline.count + options.quiet_iterations;
    progress(&format!("  waiting for {} iterations without bursts", options.quiet_iterations));
    let mut last = metrics;
    while Histogram::parse(&last, ITERATION_HISTOGRAM, ("function", "main")).is_none_or(|h| h.count < quiet) {
        if let Some(reason) = halted(controller, samples) {
            return Err(reason);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        last = scrape(port).await.unwrap_or(last);
    }

    // Bursts.
    let quiet_end = Histogram::parse(&last, ITERATION_HISTOGRAM, ("function", "main")).unwrap_or_default();
    row.quiet = quiet_end.since(&baseline);
    let result = bursts(options, cluster, server, controller, samples, row).await;
    let end = scrape(port).await.unwrap_or(last);
    row.busy = Histogram::parse(&end, ITERATION_HISTOGRAM, ("function", "main")).unwrap_or_default().since(&quiet_end);
    result
}

async fn bursts(
    options: &Options,
    cluster: &mut Cluster,
    server: &FakeApiServer,
    controller: &mut Controller,
    samples: &Mutex<MemorySamples>,
    row: &mut Row,
) -> Result<(), String> {
    for number in 1..=options.bursts {
        let delay = Duration::from_millis(mix(number as u64) % SCAN_INTERVAL.as_millis() as u64);
        tokio::time::sleep(delay).await;
        let mut tail = LogTail::from_end(controller.log_path());
        let (workload, objects) = cluster.burst(number, options.burst_pods);
        // From the moment the first pod can be served (storing 1,000 takes a few milliseconds).
        let pending_at = Timestamp::now();
        server.seed_values(objects)?;
        let mut unbound: Vec<u64> = (0..options.burst_pods as u64).rev().collect();
        let mut first: Option<ScaleUp> = None;
        let mut waited_from = Instant::now();
        while !unbound.is_empty() {
            if let Some(reason) = halted(controller, samples) {
                return Err(reason);
            }
            let ups = tail.scale_ups();
            if ups.is_empty() {
                // After the first call the rest of the pods may have fitted on nodes the harness
                // added with room to spare: no further call comes for them.
                let patience = if first.is_some() { SETTLE_TIMEOUT } else { CALL_TIMEOUT };
                if waited_from.elapsed() > patience {
                    progress(&format!(
                        "  burst {number}: no node group call for {} of its pods in {patience:?}; they are deleted",
                        unbound.len()
                    ));
                    for replica in unbound.drain(..) {
                        server.remove_value("v1", "Pod", Some("burst"), &cluster::pod_name(&workload, replica));
                    }
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            for up in ups {
                if first.is_none() {
                    let latency = up.at.duration_since(pending_at).as_secs_f64();
                    progress(&format!("  burst {number}: {} {} -> {} after {latency:.2} s", up.group, up.from, up.to));
                    row.calls.push(latency);
                    first = Some(up.clone());
                }
                let objects = cluster.fulfil(&up.group, up.to.saturating_sub(up.from), &workload, &mut unbound);
                server.seed_values(objects)?;
            }
            waited_from = Instant::now();
        }
        row.bursts += 1;
    }
    Ok(())
}

fn seconds(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| format!("{v:.2} s"))
}

/// p50 / p95 of some iterations, and how many.
fn iterations(histogram: &Histogram) -> String {
    format!("{} / {} (n={})", seconds(histogram.quantile(0.5)), seconds(histogram.quantile(0.95)), histogram.count)
}

fn gib(value: Option<u64>) -> String {
    value.map_or("-".into(), |v| format!("{:.2} GiB", v as f64 / GIB))
}

fn print_table(rows: &[Row], controller_flags: &[String]) {
    let header = [
        "nodes",
        "pods",
        "first decision",
        "RSS peak",
        "RSS steady",
        "iteration p50 / p95: quiet",
        "bursts",
        "pending→call p50",
        "pending→call p95",
        "fake API: list all pods",
        "fake API RSS",
    ];
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.nodes.to_string(),
                r.pods.to_string(),
                seconds(r.first_decision.map(|d| d.as_secs_f64())),
                gib(r.rss_peak),
                gib(r.rss_steady),
                iterations(&r.quiet),
                iterations(&r.busy),
                format!("{} (n={})", seconds(nearest_rank(&r.calls, 0.5)), r.calls.len()),
                seconds(nearest_rank(&r.calls, 0.95)),
                format!("{:.2} s / {:.2} GiB", r.fake_list.as_secs_f64(), r.fake_list_bytes as f64 / GIB),
                gib(Some(r.fake_rss)),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| lines.iter().map(|l| l[i].chars().count()).chain([header[i].chars().count()]).max().unwrap_or(0))
        .collect();
    let format_line = |cells: Vec<String>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("| {} |", padded.join(" | "))
    };
    println!("{}", format_line(header.iter().map(|h| h.to_string()).collect()));
    println!("|{}|", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|"));
    for line in lines {
        println!("{}", format_line(line));
    }
    if !controller_flags.is_empty() {
        println!("controller flags added: {}", controller_flags.join(" "));
    }
    for r in rows.iter().filter(|r| r.stopped.is_some()) {
        println!("{} nodes / {} pods: {}", r.nodes, r.pods, r.stopped.as_deref().unwrap_or_default());
    }
    println!(
        "first decision: process start → end of the first successful iteration. RSS: VmHWM, and the median VmRSS \
         after the first decision. iteration: function_duration_seconds{{function=\"main\"}} from the histogram's \
         buckets: quiet, the iterations after the first and before the first burst; bursts, from the first \
         burst on. pending→call: bursts of unschedulable pods stored → the IncreaseSize call \
         (`called_at` of the controller's scale-up log line; p95 by nearest rank). fake API: a paginated list of every pod without rate limit, and the \
         harness's RSS with the cluster loaded."
    );
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("load-harness: {message}");
            }
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.plan {
        return plan::run(&options);
    }
    if let Some(sizes) = &options.simulate {
        return simulate::run(&options, sizes);
    }
    let mut rows = Vec::new();
    for &(nodes, pods) in &options.sizes {
        match run_size(&options, nodes, pods).await {
            Ok(row) => rows.push(row),
            Err(message) => {
                eprintln!("load-harness: {nodes} nodes / {pods} pods: {message}");
                rows.push(Row { nodes, pods, stopped: Some(message), ..Row::default() });
            }
        }
        release_free_memory();
    }
    print_table(&rows, &options.controller_flags);
    ExitCode::SUCCESS
}
