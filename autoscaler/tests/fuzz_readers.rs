//! Hostile input never crashes, hangs or exhausts memory: every reader of what users hand the
//! autoscaler — cluster dumps (`plan --snapshot`, JSON and YAML, `kubectl` Lists), metrics files
//! (`plan --metrics`), `plan` itself on a dump, `simulate` scenarios (read, flags, world built,
//! load traces), the cloud-configs of the static, memory, aws and externalgrpc providers, the
//! priority expander's ConfigMap, Cluster API's node group annotations, the command line,
//! quantities, Go durations and label selectors — answers every input with a value or an
//! error.
//!
//! Inputs (`fuzz/generate.rs`): the repository's real files (`deploy/examples/`, the manifests'
//! command line) mutated as text (bit flips, hostile values such as `1e400`, `8Ei`,
//! `99999999999999h`, truncation, lines duplicated, removed or re-indented, nesting 100,000
//! deep, NUL bytes, invalid UTF-8) and as documents (values replaced by huge, negative or
//! wrongly typed ones, unknown fields, subtrees copied, list items multiplied), documents made
//! from the real files' keys and values, and random strings of each reader's alphabet.
//!
//! Each input runs on its own thread (`fuzz/harness.rs`): a panic is caught and reported with
//! where it was raised and the smallest input that raised it; an input still running after
//! 30 s (`CA_FUZZ_DEADLINE_SECS`) is a hang; a counting allocator fails an input that makes a
//! reader hold more than 48 MiB plus 64 bytes per input byte at once (inputs are at most 1 MiB,
//! command-line arguments at most 128 KiB, the kernel's limit), and ends the process at 2 GiB.
//! The thread has a 2 MiB stack (tokio's workers'), so a recursion that overflows it ends the
//! process with the input's name (`thread 'fuzz snapshot#123' has overflowed its stack`).
//! Every input is reproducible alone from the seed and its number.
//!
//! Oracles: a quantity read by both quantity parsers has one value; a Go duration printed and
//! read again is the same duration; a file reader's refusal names the file.
//!
//! - `cargo test -p autoscaler --test fuzz_readers`: 3,000 inputs in all, about 5 s.
//! - Long run: `CA_FUZZ_INPUTS=100000 cargo test -p autoscaler --test fuzz_readers -- --nocapture`,
//!   1½ to 2½ minutes in a debug build on 2 cores (a release build costs more than it saves).
//!   It prints each reader's count, time, slowest input, largest memory peak and commonest
//!   refusals.
//! - `CA_FUZZ_SEED=<n>`: other inputs (the default seed is fixed, so CI runs the same ones).
//! - `CA_FUZZ_REPLAY=<reader>#<n>`: prints and runs one input (with the seed it failed under).
//!
//! `the_harness_reports_each_failure_with_its_input` checks that each kind of failure fails a
//! run and names its input.
//!
//! What it found (fixed, each with a regression test beside the reader): the exact quantity
//! parser rounded before shifting when digits times a binary suffix overflowed 128 bits
//! (`many_digits_with_a_binary_suffix_stay_exact`); priority expander rules each took up to
//! megabytes compiled and 300 bytes per byte parsed (`priority_rules_share_one_memory_limit`,
//! `priority_rules_have_a_length_limit`). Beside it: YAML dumps of a few thousand objects were
//! refused by the parser's default budget (`large_yaml_dumps_are_read`). Runs of 100,000 inputs
//! (default seed) and 200,000 (`CA_FUZZ_SEED=2`) found nothing else; the slowest inputs were
//! command lines with a 128 KiB unknown flag (up to 4 s in a debug build, in clap's handling of
//! unknown arguments, linear in their length).

mod common;
mod fuzz;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::LazyLock;

use clap::{CommandFactory, Parser};
use k8s_openapi::jiff::Timestamp;
use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use serde_json::{Value, json};

use autoscaler::compose::{ProviderInputs, builtin_providers, compose};
use autoscaler::config::AutoscalingOptions;
use autoscaler::core::ClusterView;
use autoscaler::leader::LeaseConfig;
use autoscaler::plan::{self, PlanArgs, snapshot};
use autoscaler::podscaling::file_metrics::MetricLists;
use autoscaler::run::RunArgs;
use autoscaler::simulate::{scenario, world};
use cloudprovider::Purpose;
use fuzz::generate::{
    Seed, Syntax, Vocabulary, document_input, hostile, mild_document_input, mutate_text, mutate_text_times, random_text,
};
use fuzz::harness::{Outcome, Target, fuzz, refused_naming};

// ---------------------------------------------------------------------------------------------
// The real files.

/// A file of the repository, read at run time (a build cached from a clone at another path
/// carries a stale compile-time `CARGO_MANIFEST_DIR`).
fn repository_file(path: &str) -> PathBuf {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    PathBuf::from(dir).join("..").join(path)
}

fn read_repository_file(path: &str) -> String {
    std::fs::read_to_string(repository_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The example cluster dump's objects.
static EXAMPLE_OBJECTS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let dump: Value = serde_json::from_str(&read_repository_file("deploy/examples/snapshot.json")).expect("dump");
    dump["items"].as_array().expect("a List").clone()
});

/// The example dump cut down to a few nodes: every object but nodes and pods, the nodes named,
/// their pods and the pending ones. Small enough for `plan` to run thousands of times.
fn example_cluster(nodes: &[&str]) -> Vec<Value> {
    EXAMPLE_OBJECTS
        .iter()
        .filter(|o| match o["kind"].as_str() {
            Some("Node") => nodes.contains(&o["metadata"]["name"].as_str().unwrap_or("")),
            Some("Pod") => o["spec"]["nodeName"].as_str().is_none_or(|n| nodes.contains(&n)),
            _ => true,
        })
        .cloned()
        .collect()
}

fn words_of(seeds: &[Seed]) -> Vocabulary {
    Vocabulary::of(&seeds.iter().map(|s| s.doc.clone()).collect::<Vec<_>>())
}

/// An input written to a file, for readers that take a path; removed when dropped.
struct InputFile(PathBuf);

impl InputFile {
    /// Writes `bytes` as `name` in the directory of this process's inputs of the running
    /// reader (inputs of one reader run one at a time).
    fn new(name: &str, bytes: &[u8]) -> InputFile {
        let thread = std::thread::current();
        let reader = thread.name().and_then(|n| n.split('#').next()).unwrap_or("fuzz").replace(' ', "-");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{reader}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("input directory");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write input");
        InputFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for InputFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// A current-thread runtime for the readers that are async (they do no I/O here but files).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(future)
}

// ---------------------------------------------------------------------------------------------
// Cluster dumps and metrics files (`plan --snapshot`, `plan --metrics`).

static DUMP_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let objects = &*EXAMPLE_OBJECTS;
    // Slices that mix kinds (every 26th object), as a List, as YAML documents, as a bare
    // array, one object alone; and the whole dump as written.
    let slice = |k: usize| objects.iter().skip(k).step_by(26).cloned().collect::<Vec<_>>();
    let mut seeds = vec![Seed::parse(&read_repository_file("deploy/examples/snapshot.json"))];
    for k in 0..8 {
        let items = slice(k);
        seeds.push(match k % 4 {
            0 => Seed::written(common::dump(&items), Syntax::Json),
            1 => Seed::written(common::dump(&items), Syntax::Yaml),
            2 => {
                let documents: Vec<String> = items.iter().map(|o| serde_saphyr::to_string(o).expect("yaml")).collect();
                let text = documents.join("---\n");
                Seed { text: text.into_bytes(), doc: Value::Array(items) }
            }
            _ => Seed::written(Value::Array(items), Syntax::Json),
        });
    }
    seeds.push(Seed::written(objects[0].clone(), Syntax::Yaml));
    let words = words_of(&seeds);
    (seeds, words)
});

static METRICS_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let text = read_repository_file("deploy/examples/metrics.json");
    let lists: Vec<Value> =
        serde_json::Deserializer::from_str(&text).into_iter::<Value>().collect::<Result<_, _>>().expect("metrics");
    // The file as written (concatenated lists), and each list alone in either syntax.
    let mut seeds = vec![Seed { text: text.clone().into_bytes(), doc: lists[0].clone() }];
    for (i, list) in lists.iter().enumerate() {
        seeds.push(Seed::written(list.clone(), if i % 2 == 0 { Syntax::Json } else { Syntax::Yaml }));
    }
    let words = words_of(&seeds);
    (seeds, words)
});

/// Reads a dump or metrics file the way `plan` does: text through the text entry, bytes that
/// are not UTF-8 through the file entry (which must refuse them, naming the file).
fn read_dump(bytes: &[u8], name: &str) -> Outcome {
    let mut view = ClusterView::default();
    let mut metrics = MetricLists::default();
    let mut seen = snapshot::Seen::default();
    let read = match std::str::from_utf8(bytes) {
        Ok(text) => snapshot::load_text_with_metrics(&mut view, &mut metrics, &mut seen, text, name),
        Err(_) => snapshot::load_into(&mut view, &mut metrics, &mut seen, InputFile::new(name, bytes).path()),
    };
    match read {
        Ok(()) => {
            snapshot::normalize(&mut view);
            Outcome::Accepted
        }
        Err(e) => refused_naming(e.to_string(), name),
    }
}

// ---------------------------------------------------------------------------------------------
// `plan` on a dump, end to end in process: what reading lets through must not crash deciding.

#[derive(Parser)]
struct PlanCommand {
    #[command(flatten)]
    args: PlanArgs,
}

static PLAN_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let seeds = vec![
        Seed::written(
            common::dump(&example_cluster(&["general-01", "general-02", "compute-01", "gpu-01"])),
            Syntax::Json,
        ),
        Seed::written(common::dump(&example_cluster(&["general-03", "compute-02", "control-plane-1"])), Syntax::Yaml),
    ];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_plan(bytes: &[u8]) -> Outcome {
    let dump = InputFile::new("dump.json", bytes);
    let config = repository_file("deploy/examples/cloud-config.yaml").to_string_lossy().into_owned();
    let metrics = repository_file("deploy/examples/metrics.json").to_string_lossy().into_owned();
    let argv = common::plan_args(dump.path(), &config, &["--metrics", &metrics, "--expander=priority,least-waste"]);
    let command = PlanCommand::try_parse_from(&argv).expect("plan's own arguments parse");
    match block_on(plan::run(&command.args, &builtin_providers())) {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// `simulate` scenarios: read, their flags parsed, the world built, the load traces read.

static SCENARIO_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let day = Seed::parse(&read_repository_file("deploy/examples/scenarios/day.yaml"));
    // A smaller day: two groups, a few objects, events and loads.
    let mut small = day.doc.clone();
    for (key, keep) in [("nodeGroups", 2), ("objects", 6), ("events", 6), ("loads", 1)] {
        if let Some(list) = small[key].as_array_mut() {
            // Faults name groups that may be gone.
            list.retain(|item| item.get("fault").is_none());
            list.truncate(keep);
        }
    }
    // The crash events (the day has none: its results are the README's).
    if let Some(events) = small["events"].as_array_mut() {
        events.push(json!({"at": "2h", "crash": {}}));
        events.push(json!({"at": "3h", "crash": {"after": "Taint ToBeDeleted"}}));
        events.push(json!({"at": "4h", "crash": {"before": "EvictPod"}}));
    }
    let seeds = vec![day, Seed::written(small, Syntax::Yaml)];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_scenario(bytes: &[u8]) -> Outcome {
    const FILE: &str = "scenario.yaml";
    let text = String::from_utf8_lossy(bytes);
    let scenario = match scenario::parse(&text, FILE) {
        Ok(s) => s,
        Err(e) => return refused_naming(e.to_string(), FILE),
    };
    let options = match world::options(&scenario.flags, &[]) {
        Ok(o) => o,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    // Load traces are read (and refused, with their line) by `scenario::parse`.
    match world::build(&scenario, &options) {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Cloud-configs.

static STATIC_CONFIG_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let small = common::cloud_config(&[common::group_option(
        common::template_taint(common::group("general", 1, 10, "4", "16Gi"), "dedicated", "x", "NoSchedule"),
        "scaleDownUnneededTime",
        json!("5m"),
    )]);
    let seeds = vec![
        Seed::parse(&read_repository_file("deploy/examples/cloud-config.yaml")),
        Seed::written(small, Syntax::Json),
    ];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_static_config(bytes: &[u8]) -> Outcome {
    const FILE: &str = "cloud-config.yaml";
    // Alone, and with a `--nodes` value for a group of the file (the bounds are then merged).
    let nodes = ["2:8:general".to_string()];
    let read = match std::str::from_utf8(bytes) {
        Ok(text) => cloudprovider_static::StaticConfig::from_yaml_str(text, FILE)
            .and_then(|_| cloudprovider_static::StaticConfig::from_yaml_str_with_nodes(text, FILE, &nodes)),
        Err(_) => cloudprovider_static::StaticConfig::load(Some(InputFile::new(FILE, bytes).path().as_ref()), &nodes),
    };
    match read {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused_naming(e.to_string(), FILE),
    }
}

static MEMORY_CONFIG_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let seeds = vec![Seed::parse(&read_repository_file("deploy/examples/memory-node-groups.yaml"))];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_memory_config(bytes: &[u8]) -> Outcome {
    const FILE: &str = "memory-node-groups.yaml";
    let file = match cloudprovider_memory::file::parse_cloud_config(&String::from_utf8_lossy(bytes), FILE) {
        Ok(file) => file,
        Err(e) => return refused_naming(e.to_string(), FILE),
    };
    // The provider built from it, with its faults armed, as `--cloud-provider=memory` does.
    let config = cloudprovider_memory::file::provider_config(&file.groups, &Default::default());
    let time = cloudprovider_memory::SharedTime::new(common::NOW.parse().expect("time"));
    let provider = match cloudprovider_memory::MemoryCloudProvider::new(config, time) {
        Ok(provider) => provider,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    match file.faults.iter().try_for_each(|fault| fault.arm(&provider)) {
        Ok(()) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

/// Upstream's gcfg format as the aws provider reads it (README, AWS section).
const AWS_CLOUD_CONFIG: &str = "; upstream's format
[Global]
Zone = us-east-1a
KubernetesClusterTag = prod
DisableSecurityGroupIngress = true

[ServiceOverride \"autoscaling\"]
Service = autoscaling
Region = us-east-1
URL = \"https://autoscaling.example.internal\" ; private endpoint
SigningRegion = us-east-1
SigningMethod = v4

[serviceoverride \"2\"]
service=ec2
region=us-east-1
url=https://ec2.example.internal
signingregion=us-east-1
# trailing comment
";

fn aws_config_input(rng: &mut SmallRng) -> Vec<u8> {
    const ALPHABET: &[u8] = b"[]\"=;#\\ \n\n\tGlobalServiceOverridezoneurlregion12.:/";
    match rng.random_range(0..10) {
        0..=7 => mutate_text_times(rng, AWS_CLOUD_CONFIG.as_bytes().to_vec(), ALPHABET),
        _ => random_text(rng, ALPHABET, 400),
    }
}

fn read_aws_config(bytes: &[u8]) -> Outcome {
    const FILE: &str = "aws-cloud-config.ini";
    let read = match std::str::from_utf8(bytes) {
        Ok(text) => cloudprovider_aws::config::parse_cloud_config(text, FILE),
        Err(_) => cloudprovider_aws::config::load_cloud_config(InputFile::new(FILE, bytes).path().as_ref()),
    };
    match read {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused_naming(e.to_string(), FILE),
    }
}

static GRPC_CONFIG_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    // The deployed one (inside its ConfigMap), and the shortest plaintext one.
    let config_map: Value =
        serde_saphyr::from_str(&read_repository_file("deploy/externalgrpc/cloud-config.yaml")).expect("ConfigMap");
    let deployed = config_map["data"]["cloud-config.yaml"].as_str().expect("the cloud-config key");
    let seeds = vec![Seed::parse(deployed), Seed::parse("address: \"[::1]:8086\"\ngrpc_timeout: 1m30s\n")];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_grpc_config(bytes: &[u8]) -> Outcome {
    const FILE: &str = "externalgrpc-cloud-config.yaml";
    let read = match std::str::from_utf8(bytes) {
        Ok(text) => cloudprovider_externalgrpc::ExternalGrpcConfig::from_yaml_str(text, FILE),
        Err(_) => {
            cloudprovider_externalgrpc::ExternalGrpcConfig::from_file(InputFile::new(FILE, bytes).path().as_ref())
        }
    };
    match read {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused_naming(e.to_string(), FILE),
    }
}

// ---------------------------------------------------------------------------------------------
// The priority expander's ConfigMap and Cluster API's node group annotations.

static PRIORITY_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let example = EXAMPLE_OBJECTS
        .iter()
        .find_map(|o| o["data"]["priorities"].as_str())
        .expect("the example's priority ConfigMap");
    let seeds = vec![
        Seed::parse(example),
        Seed::parse("10:\n  - .*t2\\.large.*\n  - ^general$\n50:\n  - .*m4\\.4xlarge.*\n-5: [\"gpu-(a|b){2,4}\"]\n"),
        // Rules that compile to large automata (Unicode classes, counted repetitions).
        Seed::parse("1:\n  - '\\w{20}-(?i:spot)'\n  - '[[:alpha:]]{5,30}'\n2: ['\\pL{1,40}', '(a|b|c|d){10}']\n"),
    ];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_priorities(bytes: &[u8]) -> Outcome {
    match expander::priority::PriorityConfig::parse(&String::from_utf8_lossy(bytes)) {
        Ok(config) => {
            // The regexes run on group ids, as the expander does.
            let _ = config.priority_of("general-compute-gpu-a1b2");
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

static CLUSTERAPI_SEEDS: LazyLock<(Vec<Seed>, Vocabulary)> = LazyLock::new(|| {
    let group = "cluster.x-k8s.io";
    let machine_deployment = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {
            "name": "workers",
            "namespace": "capi-prod",
            "annotations": {
                format!("{group}/cluster-api-autoscaler-node-group-min-size"): "1",
                format!("{group}/cluster-api-autoscaler-node-group-max-size"): "10",
                "capacity.cluster-autoscaler.kubernetes.io/cpu": "4",
                "capacity.cluster-autoscaler.kubernetes.io/memory": "16Gi",
                "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk": "100Gi",
                "capacity.cluster-autoscaler.kubernetes.io/maxPods": "58",
                "capacity.cluster-autoscaler.kubernetes.io/gpu-type": "nvidia.com/gpu",
                "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "1",
                "capacity.cluster-autoscaler.kubernetes.io/labels": "pool=workers,tier=a",
                "capacity.cluster-autoscaler.kubernetes.io/taints": "dedicated=ml:NoSchedule,spot:PreferNoSchedule",
                format!("{group}/autoscaling-options-scaledownutilizationthreshold"): "0.6",
                format!("{group}/autoscaling-options-scaledownunneededtime"): "5m",
                format!("{group}/autoscaling-options-maxnodeprovisiontime"): "20m",
            }
        },
        "spec": {
            "clusterName": "prod",
            "replicas": 3,
            "selector": {"matchLabels": {"pool": "workers"}},
            "template": {"spec": {
                "metadata": {"labels": {"node-role.kubernetes.io/worker": ""}},
                "taints": [{"key": "dedicated", "value": "ml", "effect": "NoExecute"}]
            }}
        }
    });
    let seeds = vec![Seed::written(machine_deployment, Syntax::Json)];
    let words = words_of(&seeds);
    (seeds, words)
});

fn read_clusterapi_annotations(bytes: &[u8]) -> Outcome {
    match serde_json::from_slice::<kube::api::DynamicObject>(bytes) {
        Ok(object) => {
            let _ = cloudprovider_clusterapi::annotations::read_group(&object, &Default::default());
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// The command line.

/// The controller's command line (the flags of `plan` and `simulate` are the same decision
/// flags, in `RunArgs`).
#[derive(Parser)]
#[command(name = "cluster-autoscaler", args_override_self = true)]
struct ControllerCommand {
    #[command(flatten)]
    args: RunArgs,
}

/// Every long flag of the controller, and whether it takes a value.
static FLAGS: LazyLock<Vec<(String, bool)>> = LazyLock::new(|| {
    ControllerCommand::command()
        .get_arguments()
        .filter_map(|a| Some((a.get_long()?.to_string(), a.get_action().takes_values())))
        .collect()
});

/// Command lines people run: the manifests' and the README's, and a scenario's flags.
static COMMAND_LINES: LazyLock<Vec<Vec<String>>> = LazyLock::new(|| {
    let deployment: Value =
        serde_saphyr::from_str(&read_repository_file("deploy/kubernetes/deployment.yaml")).expect("deployment");
    let deployed = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("the container's args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect::<Vec<_>>();
    let example = |file: &str| repository_file(&format!("deploy/examples/{file}")).to_string_lossy().into_owned();
    let words = |line: &str| line.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    vec![
        deployed,
        words(&format!(
            "--cloud-provider=static --nodes=1:10:general --cloud-config {} --expander=least-waste --leader-elect=false \
             --scale-down-enabled=false --v=2",
            example("cloud-config.yaml")
        )),
        words(
            "--cloud-provider=aws --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod \
             --expander=price --nodes=1:10:my-asg --balance-similar-node-groups --skip-nodes-with-local-storage=false",
        ),
        words(
            "--cloud-provider=clusterapi --node-group-auto-discovery=clusterapi:namespace=capi-prod,clusterName=prod \
             --scale-down-utilization-threshold=0.6 --max-node-provision-time=20m --cores-total=0:320 --memory-total=0:1280 \
             --gpu-total=nvidia.com/gpu:0:8",
        ),
        words(&format!(
            "--cloud-provider=memory --cloud-config={} --max-nodes-total=50 --scan-interval=10s --leader-elect-lease-duration=15s \
             --leader-elect-renew-deadline=10s --leader-elect-retry-period=2s --address=127.0.0.1:8085 --kube-client-qps=20",
            example("memory-node-groups.yaml")
        )),
        vec![
            "--expander=least-waste".into(),
            "--scale-down-unneeded-time=10m".into(),
            "--max-node-provision-time=15m".into(),
        ],
    ]
});

/// A flag with a value from the hostile ones, a mutated real value, or none.
fn random_flag(rng: &mut SmallRng) -> String {
    let Some((name, takes_value)) = FLAGS.choose(rng) else { return "--v=2".into() };
    match (takes_value, rng.random_range(0..4)) {
        (_, 0) => format!("--{name}"),
        (_, 1) => format!("--{name}={}", hostile(rng)),
        (true, _) => {
            let real =
                COMMAND_LINES.iter().flatten().filter_map(|a| a.split_once('=')).map(|(_, v)| v).collect::<Vec<_>>();
            let value = real.choose(rng).copied().unwrap_or("1");
            let value = mutate_text(rng, value.as_bytes().to_vec(), b"0123456789:,.=-smhMGiabc");
            format!("--{name}={}", String::from_utf8_lossy(&value))
        }
        (false, _) => {
            format!("--{name}={}", ["true", "false", "1", "0", "True", ""].choose(rng).copied().unwrap_or("true"))
        }
    }
}

/// A command line (its arguments joined by NUL, which no argument can hold): a real one with
/// flags replaced, added, removed, repeated or mutated, or random flags.
fn flags_input(rng: &mut SmallRng) -> Vec<u8> {
    let mut args: Vec<Vec<u8>> = if rng.random_bool(0.8) {
        let line = COMMAND_LINES.choose(rng).cloned().unwrap_or_default();
        line.into_iter().map(String::into_bytes).collect()
    } else {
        (0..rng.random_range(0..12)).map(|_| random_flag(rng).into_bytes()).collect()
    };
    for _ in 0..rng.random_range(1..=4) {
        let i = rng.random_range(0..=args.len());
        match rng.random_range(0..6) {
            0 | 1 => args.insert(i, random_flag(rng).into_bytes()),
            2 if i < args.len() => {
                args.remove(i);
            }
            3 if i < args.len() => {
                let arg = mutate_text(rng, args[i].clone(), b"-=:,.0123456789abcdefghijklmnopqrstuvwxyz");
                args[i] = arg;
            }
            4 if i < args.len() => {
                // `--name=value` as two arguments, `--name value`.
                if let Some(eq) = args[i].iter().position(|b| *b == b'=') {
                    let value = args[i].split_off(eq + 1);
                    args[i].pop();
                    args.insert(i + 1, value);
                }
            }
            _ => args.insert(i, hostile(rng).as_bytes().to_vec()),
        }
    }
    // The kernel takes no longer argument (MAX_ARG_STRLEN, 128 KiB).
    args.iter_mut().for_each(|a| a.truncate(128 << 10));
    args.join(&0u8)
}

fn read_flags(bytes: &[u8]) -> Outcome {
    let argv = std::iter::once(OsString::from("cluster-autoscaler"))
        .chain(bytes.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| OsString::from_vec(a.to_vec())));
    let command = match ControllerCommand::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let args = command.args;
    // What the controller checks before it connects (`run::run`), and every provider's own
    // reading of `--nodes` and `--node-group-auto-discovery`, whichever provider is chosen.
    let options = match AutoscalingOptions::from_flags(&args.flags) {
        Ok(o) => o,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let lease = LeaseConfig {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    let _ = lease.validate();
    let flags = &args.flags;
    for spec in &flags.nodes {
        let _ = cloudprovider_static::parse_node_group_spec(spec);
    }
    let _ = cloudprovider_aws::config::parse_static_asgs(&flags.nodes);
    let _ = cloudprovider_aws::config::parse_discovery_specs(&flags.node_group_auto_discovery);
    let _ = cloudprovider_clusterapi::discovery::Discovery::parse(&flags.node_group_auto_discovery);
    let check = ProviderInputs { purpose: Purpose::Check, nodes: Vec::new(), now: Timestamp::UNIX_EPOCH, kube: None };
    match block_on(compose(&builtin_providers(), flags, &options, check, Some(1))) {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Quantities, durations, label selectors.

/// A quantity from the grammar (sign, digits, fraction, suffix or exponent), with now and then
/// a part left out, doubled or made huge.
fn quantity_input(rng: &mut SmallRng) -> Vec<u8> {
    const SUFFIXES: &[&str] = &[
        "", "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "K", "mi", "i", "e",
        "E",
    ];
    let digits = |rng: &mut SmallRng| -> String {
        let len = *[0usize, 1, 2, 3, 5, 9, 18, 19, 20, 30, 39, 40, 400].choose(rng).unwrap_or(&1);
        (0..len).map(|_| char::from(b'0' + rng.random_range(0..10u8))).collect()
    };
    let mut text = String::new();
    if rng.random_bool(0.2) {
        text.push(*['-', '+', ' '].choose(rng).unwrap_or(&'-'));
    }
    text.push_str(&digits(rng));
    if rng.random_bool(0.3) {
        text.push('.');
        text.push_str(&digits(rng));
    }
    if rng.random_bool(0.2) {
        let exponent =
            *[0i64, 3, -3, 18, 19, 40, 41, -40, -41, 100, 101, 308, 400, -400, i64::MAX].choose(rng).unwrap_or(&3);
        text.push_str(&format!("{}{exponent}", if rng.random_bool(0.5) { 'e' } else { 'E' }));
    } else {
        text.push_str(SUFFIXES.choose(rng).copied().unwrap_or(""));
    }
    let mut bytes = text.into_bytes();
    match rng.random_range(0..10) {
        0 => bytes = mutate_text(rng, bytes, b"0123456789.+-eEnumkMGTPi "),
        1 => bytes = hostile(rng).as_bytes().to_vec(),
        _ => {}
    }
    bytes
}

fn read_quantity(bytes: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(bytes);
    let exact = simulator::quantity::parse_milli(&text);
    let _ = simulator::quantity::parse_value(&text);
    let approximate = cloudprovider::quantity::quantity_value(&text);
    match (exact, approximate) {
        // Both read it: one value (where a milli-unit integer holds it exactly enough).
        (Ok(milli), Ok(value)) if value.abs() < 9e15 => {
            let expected = value * 1000.0;
            if (milli as f64 - expected).abs() > 1.0 + expected.abs() * 1e-9 {
                Outcome::Lie(format!("{text:?} is {milli} thousandths to one parser and {value} to the other"))
            } else {
                Outcome::Accepted
            }
        }
        (Ok(_), _) | (_, Ok(_)) => Outcome::Accepted,
        (Err(e), Err(_)) => Outcome::Refused(e.to_string()),
    }
}

/// A Go duration from the grammar: components of digits, fraction and unit, now and then
/// signed, unitless, huge or mutated.
fn duration_input(rng: &mut SmallRng) -> Vec<u8> {
    const UNITS: &[&str] = &["ns", "us", "µs", "μs", "ms", "s", "m", "h", "", "d", "H", "sec"];
    let mut text = String::new();
    if rng.random_bool(0.1) {
        text.push(*['-', '+'].choose(rng).unwrap_or(&'+'));
    }
    for _ in 0..rng.random_range(1..=4) {
        let magnitude: u128 = match rng.random_range(0..6) {
            0 => rng.random_range(0..100),
            1 => rng.random_range(0..100_000),
            2 => rng.random::<u64>().into(),
            3 => u128::from(u64::MAX) * u128::from(rng.random::<u32>()),
            4 => 2_562_047,
            _ => 9_223_372_036_854_775_807,
        };
        text.push_str(&magnitude.to_string());
        if rng.random_bool(0.3) {
            text.push('.');
            let places = *[0usize, 1, 9, 20, 40].choose(rng).unwrap_or(&1);
            (0..places).for_each(|_| text.push(char::from(b'0' + rng.random_range(0..10u8))));
        }
        text.push_str(UNITS.choose(rng).copied().unwrap_or("s"));
    }
    let mut bytes = text.into_bytes();
    match rng.random_range(0..10) {
        0 => bytes = mutate_text(rng, bytes, "0123456789.+-nsuµmh".as_bytes()),
        1 => bytes = hostile(rng).as_bytes().to_vec(),
        _ => {}
    }
    bytes
}

fn read_duration(bytes: &[u8]) -> Outcome {
    use cloudprovider::duration::{format_go_duration, parse_go_duration};
    let text = String::from_utf8_lossy(bytes);
    match parse_go_duration(&text) {
        // What the autoscaler prints (its messages, `plan`'s report) reads back the same.
        Ok(d) => match parse_go_duration(&format_go_duration(d)) {
            Ok(again) if again == d => Outcome::Accepted,
            again => {
                Outcome::Lie(format!("{text:?} is {d:?}, printed {:?}, read back {again:?}", format_go_duration(d)))
            }
        },
        Err(e) => Outcome::Refused(e),
    }
}

fn selector_input(rng: &mut SmallRng) -> Vec<u8> {
    const SEEDS: &[&str] = &[
        "app=web",
        "app==web,tier!=cache",
        "tier in (frontend, backend),!legacy,env",
        "environment notin (dev,qa),app.kubernetes.io/name=shop",
        "",
    ];
    const ALPHABET: &[u8] = b"abcxyz=!(), in notin ./-_0123456789";
    match rng.random_range(0..10) {
        0..=6 => {
            let seed = SEEDS.choose(rng).copied().unwrap_or("");
            mutate_text_times(rng, seed.as_bytes().to_vec(), ALPHABET)
        }
        _ => random_text(rng, ALPHABET, 80),
    }
}

fn read_selector(bytes: &[u8]) -> Outcome {
    match simulator::labels::Selector::parse(&String::from_utf8_lossy(bytes)) {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e),
    }
}

// ---------------------------------------------------------------------------------------------
// The readers and their shares of the inputs.

macro_rules! documents {
    ($seeds:ident, $syntaxes:expr) => {
        |rng| {
            let (seeds, words) = &*$seeds;
            document_input(rng, seeds, words, $syntaxes)
        }
    };
}

const JSON_OR_YAML: &[Syntax] = &[Syntax::Json, Syntax::Yaml];
const YAML: &[Syntax] = &[Syntax::Yaml, Syntax::Yaml, Syntax::Json];

static TARGETS: &[Target] = &[
    Target {
        name: "snapshot",
        weight: 14,
        generate: documents!(DUMP_SEEDS, JSON_OR_YAML),
        read: |b| read_dump(b, "dump.json"),
    },
    Target {
        name: "metrics",
        weight: 6,
        generate: documents!(METRICS_SEEDS, JSON_OR_YAML),
        read: |b| read_dump(b, "metrics.json"),
    },
    Target {
        name: "plan",
        weight: 4,
        generate: |rng| {
            let (seeds, words) = &*PLAN_SEEDS;
            mild_document_input(rng, seeds, words, Syntax::Json)
        },
        read: read_plan,
    },
    Target { name: "scenario", weight: 12, generate: documents!(SCENARIO_SEEDS, YAML), read: read_scenario },
    Target {
        name: "static-cloud-config",
        weight: 8,
        generate: documents!(STATIC_CONFIG_SEEDS, YAML),
        read: read_static_config,
    },
    Target {
        name: "memory-cloud-config",
        weight: 6,
        generate: documents!(MEMORY_CONFIG_SEEDS, YAML),
        read: read_memory_config,
    },
    Target { name: "aws-cloud-config", weight: 6, generate: aws_config_input, read: read_aws_config },
    Target {
        name: "externalgrpc-cloud-config",
        weight: 5,
        generate: documents!(GRPC_CONFIG_SEEDS, YAML),
        read: read_grpc_config,
    },
    Target { name: "priority-expander", weight: 5, generate: documents!(PRIORITY_SEEDS, YAML), read: read_priorities },
    Target {
        name: "clusterapi-annotations",
        weight: 5,
        generate: documents!(CLUSTERAPI_SEEDS, &[Syntax::Json]),
        read: read_clusterapi_annotations,
    },
    Target { name: "flags", weight: 10, generate: flags_input, read: read_flags },
    Target { name: "quantity", weight: 7, generate: quantity_input, read: read_quantity },
    Target { name: "duration", weight: 7, generate: duration_input, read: read_duration },
    Target { name: "label-selector", weight: 5, generate: selector_input, read: read_selector },
];

fn run(name: &str) {
    let target = TARGETS.iter().find(|t| t.name == name).expect("a target of that name");
    fuzz(target, TARGETS);
}

#[test]
fn snapshot_reader_survives_hostile_dumps() {
    run("snapshot");
}

#[test]
fn metrics_reader_survives_hostile_metrics_files() {
    run("metrics");
}

#[test]
fn plan_survives_hostile_dumps() {
    run("plan");
}

#[test]
fn scenario_reader_survives_hostile_scenarios() {
    run("scenario");
}

#[test]
fn static_cloud_config_reader_survives_hostile_files() {
    run("static-cloud-config");
}

#[test]
fn memory_cloud_config_reader_survives_hostile_files() {
    run("memory-cloud-config");
}

#[test]
fn aws_cloud_config_reader_survives_hostile_files() {
    run("aws-cloud-config");
}

#[test]
fn externalgrpc_cloud_config_reader_survives_hostile_files() {
    run("externalgrpc-cloud-config");
}

#[test]
fn priority_expander_reader_survives_hostile_config_maps() {
    run("priority-expander");
}

#[test]
fn clusterapi_annotation_reader_survives_hostile_resources() {
    run("clusterapi-annotations");
}

#[test]
fn flag_parser_survives_hostile_command_lines() {
    run("flags");
}

#[test]
fn quantity_parsers_survive_and_agree_on_hostile_quantities() {
    run("quantity");
}

#[test]
fn duration_parser_survives_and_round_trips_hostile_durations() {
    run("duration");
}

#[test]
fn label_selector_parser_survives_hostile_selectors() {
    run("label-selector");
}

// ---------------------------------------------------------------------------------------------
// The harness itself: each kind of failure fails the run and names its input.

fn misbehaving_reader(input: &[u8]) -> Outcome {
    match input {
        b"panic" => panic!("a reader's bug"),
        b"hoard" => {
            // Zeroed: allocated at once, not filled (the peak counts, not the time).
            std::hint::black_box(vec![0u8; 100 << 20]);
            Outcome::Accepted
        }
        b"lie" => Outcome::Lie("a wrong answer".into()),
        b"silent" => Outcome::Refused(" ".into()),
        b"hang" => {
            std::thread::sleep(std::time::Duration::from_secs(5));
            Outcome::Accepted
        }
        _ => Outcome::Refused("a good reason".into()),
    }
}

fn self_test(generate: fn(&mut SmallRng) -> Vec<u8>) -> String {
    let target = Target { name: "self-test", weight: 1, generate, read: misbehaving_reader };
    let settings = fuzz::harness::Settings {
        seed: 1,
        deadline: std::time::Duration::from_secs(1),
        inputs: (0..40).collect(),
        show_inputs: false,
    };
    fuzz::harness::fuzz_with(&target, &settings).expect_err("the misbehaving reader is caught")
}

#[test]
fn the_harness_reports_each_failure_with_its_input() {
    let report = self_test(|rng| {
        ["panic", "hoard", "lie", "silent", "fine"].choose(rng).copied().unwrap_or("fine").as_bytes().to_vec()
    });
    for expected in [
        "Panic(\"autoscaler/tests/fuzz_readers.rs:",
        "a reader's bug",
        "input: \"panic\"",
        "held 100 MiB at once for 5 bytes of input",
        "a wrong answer",
        "refused without saying why",
        "CA_FUZZ_REPLAY=self-test#",
    ] {
        assert!(report.contains(expected), "{expected:?} is missing from the report:\n{report}");
    }
    assert!(!report.contains("input: \"fine\""), "{report}");
    let report = self_test(|rng| if rng.random_bool(0.2) { b"hang".to_vec() } else { b"fine".to_vec() });
    assert!(report.contains("Hang, 1 inputs") && report.contains("no answer after 1s"), "{report}");
}
