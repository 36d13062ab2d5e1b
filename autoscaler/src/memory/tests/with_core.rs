//! The in-memory cluster and cloud behind the decision path: what `simulate` will do each loop.

use cloudprovider::{CloudProvider, NodeGroup};

use super::*;
use crate::config::AutoscalingOptions;
use crate::core::{CloudState, ClusterState, DecisionInput, LoopMemory, decide};

#[tokio::test]
async fn autoscaler_scales_up_for_pods_the_memory_scheduler_cannot_place_and_they_land_on_the_new_nodes() {
    let startup = MemoryClusterConfig { node_startup_delay: Duration::from_secs(30), ..Default::default() };
    let mut general = group("general", 1, Duration::from_secs(60));
    general.max_size = 5;
    let (mut c, cloud) = cloud_cluster(startup, vec![general]);
    c.advance(t(0));
    c.apply(deployment("web", 3, "3", "1Gi")).unwrap();
    c.advance(t(1));
    c.advance(t(30));

    let options = AutoscalingOptions::default();
    let view = c.view();
    cloud.refresh().await.unwrap();
    let state = CloudState::gather(cloud.as_ref(), &view.nodes, &options, c.now()).await.unwrap();
    let cluster_state = ClusterState::observe(&view, &state, &options, c.now());
    let memory = LoopMemory::default();
    let input = DecisionInput {
        view: &view,
        cloud: &state,
        state: &cluster_state,
        options: &options,
        memory: &memory,
        now: c.now(),
        anticipated: &[],
    };
    let mut expander = expander::Expander::with_seed(&options.expander, 1).unwrap();
    let plan = decide(&input, &mut expander).plan;
    let increases: Vec<(String, usize)> =
        plan.scale_up.increases.iter().map(|i| (i.node_group.clone(), i.delta)).collect();
    assert_eq!(increases, [("general".to_string(), 2)], "{:?}", plan.scale_up);

    cloud.group("general").unwrap().increase_size(2).await.unwrap();
    c.advance(t(90)); // registered at t(90), NotReady
    assert_eq!(c.nodes().count(), 3);
    c.advance(t(120)); // Ready at t(120): the pending replicas are bound
    let unbound: Vec<String> = c
        .pods()
        .filter(|p| p.spec.as_ref().unwrap().node_name.is_none())
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert!(unbound.is_empty(), "{unbound:?}");
}
