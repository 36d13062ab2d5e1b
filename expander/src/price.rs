//! The `price` expander: prefer the option whose nodes cost least per unit of pod value, nudged
//! toward nodes of the size that suits the cluster, away from GPU nodes and from node groups that
//! would have to be created first.
//!
//! For each option, over the hour starting at `ctx.now`:
//!
//! ```text
//! stabilized_ratio = (node_price × node_count + stab) / (Σ pod_price + stab)
//! unfitness        = max(preferred_cpu / template_cpu, template_cpu / preferred_cpu)
//! suppressed       = (unfitness − 1) × (1 − tanh((node_count − 1) / 15)) + 1   (1000 for GPU templates)
//! score            = suppressed × stabilized_ratio   (× 2 when the group does not exist yet)
//! ```
//!
//! `stab` is the price of a pod requesting 0.5 CPU and 500 MiB (0 when pricing it fails, as
//! upstream "continues without stabilization"). The lowest score wins; exact ties are kept.

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use cloudprovider::PricingModel;

use crate::ExpansionOption;
use crate::context::ExpanderContext;
use crate::filters::{all, template_capacity};
use crate::score::{OptionScore, PriceScore};

/// Node groups that do not exist yet cost this many times more (upstream's fixed penalty).
pub const NOT_EXISTING_GROUP_PENALTY: f64 = 2.0;

/// The unfitness of GPU templates: it makes GPU nodes very unattractive for pods that do not need
/// them, and makes the choice among GPU groups depend on price alone.
pub const GPU_UNFITNESS: f64 = 1000.0;

/// The pod whose price is added to both sides of the price ratio, so options with few or cheap
/// pods do not get extreme ratios: 0.5 CPU and 500 MiB.
static STABILIZATION_POD: LazyLock<Pod> = LazyLock::new(|| Pod {
    metadata: ObjectMeta { name: Some("stabilize".into()), namespace: Some("default".into()), ..Default::default() },
    spec: Some(PodSpec {
        containers: vec![Container {
            name: "stabilize".into(),
            resources: Some(ResourceRequirements {
                requests: Some(
                    [("cpu".to_string(), Quantity("500m".into())), ("memory".to_string(), Quantity("500Mi".into()))]
                        .into(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }),
    status: None,
});

/// CPU (millicores) of the node size that suits a cluster of `cluster_node_count` nodes: the
/// preferred size doubles each time the cluster grows about threefold.
///
/// Upstream falls back to a 4-CPU node when it cannot list the nodes; here the count is an input,
/// so that fallback cannot arise.
pub fn preferred_node_cpu_millis(cluster_node_count: usize) -> i64 {
    let cpus = match cluster_node_count {
        0..=2 => 1,
        3..=6 => 2,
        7..=20 => 4,
        21..=60 => 8,
        61..=200 => 16,
        _ => 32,
    };
    cpus * 1000
}

/// How badly a node with `template_cpu_millis` fits the preferred size (1 = exactly).
/// A template without CPU does not fit at all (+∞).
pub fn unfitness(preferred_cpu_millis: i64, template_cpu_millis: i64) -> f64 {
    if template_cpu_millis <= 0 || preferred_cpu_millis <= 0 {
        return f64::INFINITY;
    }
    let (p, t) = (preferred_cpu_millis as f64, template_cpu_millis as f64);
    (p / t).max(t / p)
}

/// Unfitness matters less the more nodes an option adds: many nodes of an odd size are fine.
pub fn suppressed_unfitness(unfitness: f64, node_count: usize) -> f64 {
    if unfitness.is_infinite() {
        // (∞ − 1) × 0 would be NaN once tanh saturates; a template without CPU stays unfit.
        return f64::INFINITY;
    }
    (unfitness - 1.0) * (1.0 - ((node_count as f64 - 1.0) / 15.0).tanh()) + 1.0
}

/// `price`: keeps the options with the lowest price score (see the module docs).
///
/// An option is left out of the comparison when its node price, or any of its pods' prices,
/// cannot be had (or its score is not a number). When that leaves no option at all (for
/// instance without a pricing model: upstream refuses to start then) every option is kept, so the
/// rest of the chain still decides.
pub fn price(options: &[ExpansionOption], ctx: &ExpanderContext) -> Vec<usize> {
    price_among(options, &all(options), ctx, &mut Vec::new())
}

pub(crate) fn price_among(
    options: &[ExpansionOption],
    candidates: &[usize],
    ctx: &ExpanderContext,
    scores: &mut Vec<(usize, OptionScore)>,
) -> Vec<usize> {
    let Some(pricing) = ctx.pricing else {
        scores.extend(candidates.iter().map(|&i| (i, OptionScore::PriceUnavailable("no pricing model".into()))));
        return candidates.to_vec();
    };
    let start = ctx.now;
    let Ok(end) = start.checked_add(SignedDuration::from_hours(1)) else {
        let reason = format!("cannot price the hour after {start}");
        scores.extend(candidates.iter().map(|&i| (i, OptionScore::PriceUnavailable(reason.clone()))));
        return candidates.to_vec();
    };
    let stabilization = pricing.pod_price(&STABILIZATION_POD, start, end).unwrap_or(0.0);
    let preferred_cpu = preferred_node_cpu_millis(ctx.cluster_node_count);

    let mut best: Option<f64> = None;
    let mut kept = Vec::new();
    for &i in candidates {
        let score = match price_score(&options[i], pricing, start, end, stabilization, preferred_cpu, ctx) {
            Ok(score) => score,
            Err(reason) => {
                scores.push((i, OptionScore::PriceUnavailable(reason)));
                continue;
            }
        };
        let value = score.score;
        scores.push((i, OptionScore::Price(score)));
        match best {
            Some(b) if value > b => {}
            Some(b) if value == b => kept.push(i),
            _ => {
                best = Some(value);
                kept.clear();
                kept.push(i);
            }
        }
    }
    if kept.is_empty() {
        return candidates.to_vec();
    }
    kept
}

fn price_score(
    option: &ExpansionOption,
    pricing: &dyn PricingModel,
    start: Timestamp,
    end: Timestamp,
    stabilization: f64,
    preferred_cpu: i64,
    ctx: &ExpanderContext,
) -> Result<PriceScore, String> {
    let template = &option.template;
    let node_price = pricing
        .node_price(&template.node, start, end)
        .map_err(|e| format!("node price of group {}: {e}", option.node_group_id))?;
    let nodes_price = node_price * option.node_count as f64;
    let mut pods_price = 0.0;
    for pod in &option.pods {
        pods_price +=
            pricing.pod_price(&pod.to_pod(), start, end).map_err(|e| format!("price of pod {}: {e}", pod.key))?;
    }
    let stabilized_ratio = (nodes_price + stabilization) / (pods_price + stabilization);

    let (template_cpu, _) = template_capacity(template);
    let unfitness = unfitness(preferred_cpu, template_cpu);
    let gpu = has_gpu(template, ctx);
    // Upstream replaces the *suppressed* unfitness, so the node count does not damp the GPU penalty.
    let suppressed_unfitness = if gpu { GPU_UNFITNESS } else { suppressed_unfitness(unfitness, option.node_count) };

    let mut score = suppressed_unfitness * stabilized_ratio;
    if !option.exists {
        score *= NOT_EXISTING_GROUP_PENALTY;
    }
    if score.is_nan() {
        return Err(format!(
            "score is not a number (nodes_price={nodes_price} pods_price={pods_price} stabilization={stabilization})"
        ));
    }
    Ok(PriceScore {
        nodes_price,
        pods_price,
        stabilized_ratio,
        unfitness,
        suppressed_unfitness,
        gpu,
        exists: option.exists,
        score,
    })
}

/// A template is a GPU node when it carries the provider's GPU label or allocates some of the GPU
/// resource.
fn has_gpu(template: &simulator::NodeInfo, ctx: &ExpanderContext) -> bool {
    (!ctx.gpu_label.is_empty() && template.label(ctx.gpu_label).is_some())
        || (!ctx.gpu_resource.is_empty() && template.allocatable.get(ctx.gpu_resource) > 0)
}
