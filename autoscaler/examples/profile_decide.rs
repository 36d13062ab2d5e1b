//! Runs one benchmark scenario's decision in a loop, for profilers: `profile_decide <scenario> <n>`.
use autoscaler::config::AutoscalingOptions;
use autoscaler::core::fixtures;
use autoscaler::core::{ClusterState, DecisionInput, LoopMemory, decide};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (view, cloud) = match args.get(1).map(String::as_str) {
        Some("down") => fixtures::scale_down_2000(),
        Some("surge") => fixtures::anti_affinity_surge(),
        _ => fixtures::scale_up_50k(),
    };
    if args.get(3).is_some() {
        return;
    }
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let options = AutoscalingOptions::default();
    let now = "2026-01-02T00:00:00Z".parse().unwrap();
    for _ in 0..n {
        let t = std::time::Instant::now();
        let state = ClusterState::observe(&view, &cloud, &options, now);
        let memory = LoopMemory::for_plan();
        let mut expander = expander::Expander::with_seed(&options.expander, 1).unwrap();
        let input = DecisionInput {
            view: &view,
            cloud: &cloud,
            state: &state,
            options: &options,
            memory: &memory,
            now,
            anticipated: &[],
        };
        let plan = decide(&input, &mut expander).plan;
        eprintln!("{:?} up={:?} unneeded={}", t.elapsed(), plan.scale_up.result, plan.scale_down.unneeded.len());
    }
}
