//! Upstream's caching, counted on the server: NodeGroups and templates once per Refresh;
//! GPULabel and GetAvailableGPUTypes once per process; NodeGroupForNode once per node while its
//! group is listed (upstream: once per node per Refresh).

use cloudprovider::NodeGroup;
use k8s_openapi::api::core::v1::{Node, NodeSpec};

use crate::common::*;

fn node(name: &str, provider_id: &str) -> Node {
    let mut node = Node::default();
    node.metadata.name = Some(name.to_string());
    node.spec = Some(NodeSpec { provider_id: Some(provider_id.to_string()), ..NodeSpec::default() });
    node
}

#[test]
fn groups_groups_of_nodes_and_templates_are_asked_once_per_refresh() {
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory, None);
    let client = plaintext_client(server.address, "5s");
    let nodes =
        [node("general-1", "memory://general/1"), node("general-2", "memory://general/2"), node("stray", "x://y")];
    runtime().block_on(async {
        for loop_number in 1..=2 {
            client.refresh().await.unwrap();
            for _ in 0..3 {
                let groups = client.node_groups().await;
                for group in &groups {
                    let _ = group.template_node_info().await.unwrap();
                }
                for n in &nodes {
                    let _ = client.node_group_for_node(n).await.unwrap();
                }
            }
            assert_eq!(server.counts.of("Refresh"), loop_number);
            assert_eq!(server.counts.of("NodeGroups"), loop_number, "NodeGroups once per refresh");
            assert_eq!(server.counts.of("NodeGroupTemplateNodeInfo"), 3 * loop_number, "one template per group");
            // The two managed nodes once in all (their group is still listed after the
            // refresh); the unmanaged one every time, as upstream.
            assert_eq!(server.counts.of("NodeGroupForNode"), 2 + loop_number * 3);
        }
        // A node's group is the listed group object, sharing its template cache.
        let group = client.node_group_for_node(&nodes[0]).await.unwrap().unwrap();
        let _ = group.template_node_info().await.unwrap();
        assert_eq!(server.counts.of("NodeGroupTemplateNodeInfo"), 6);
        // Sizes and instances are never cached.
        let _ = group.target_size().await.unwrap();
        let _ = group.target_size().await.unwrap();
        assert_eq!(server.counts.of("NodeGroupTargetSize"), 2);
    });
}

#[test]
fn a_nodes_group_is_asked_again_once_no_longer_listed_and_forgotten_once_the_node_is_gone() {
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory.clone(), None);
    let client = plaintext_client(server.address, "5s");
    let general = node("general-1", "memory://general/1");
    let gpu = node("gpu-1", "memory://gpu/1");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        for n in [&general, &gpu] {
            assert!(client.node_group_for_node(n).await.unwrap().is_some());
        }
        assert_eq!(server.counts.of("NodeGroupForNode"), 2);
        // A loop that asks only about general-1: gpu-1 is forgotten at the next refresh.
        client.refresh().await.unwrap();
        assert_eq!(client.node_group_for_node(&general).await.unwrap().unwrap().id(), "general");
        assert_eq!(server.counts.of("NodeGroupForNode"), 2);
        client.refresh().await.unwrap();
        client.node_group_for_node(&gpu).await.unwrap();
        assert_eq!(server.counts.of("NodeGroupForNode"), 3, "gpu-1 asked again");
        // The same name with another providerID is another instance: asked about.
        client.node_group_for_node(&node("general-1", "memory://general/9")).await.unwrap();
        assert_eq!(server.counts.of("NodeGroupForNode"), 4);
    });
}

#[test]
fn the_gpu_label_and_types_are_asked_once_per_process() {
    let (memory, _) = memory_provider();
    let server = TestServer::start(memory, None);
    let client = plaintext_client(server.address, "5s");
    let gpu_node = node("gpu-1", "memory://gpu/1");
    runtime().block_on(async {
        for _ in 0..3 {
            client.refresh().await.unwrap();
            assert_eq!(client.gpu_label(), cloudprovider::DEFAULT_GPU_LABEL);
            assert_eq!(client.available_gpu_types(), ["tesla-t4"]);
            let _ = client.node_gpu_config(&gpu_node);
        }
    });
    assert_eq!(server.counts.of("GPULabel"), 1);
    assert_eq!(server.counts.of("GetAvailableGPUTypes"), 1);
}

#[test]
fn a_failed_gpu_label_is_asked_again() {
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let client = plaintext_client(address, "1s");
    assert_eq!(client.gpu_label(), "", "no answer: empty, as upstream");
    let (memory, _) = memory_provider();
    let server = TestServer::start_on(address, memory, None);
    let mut label = client.gpu_label().to_string();
    for _ in 0..50 {
        if !label.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        label = client.gpu_label().to_string();
    }
    assert_eq!(label, cloudprovider::DEFAULT_GPU_LABEL);
    assert_eq!(server.counts.of("GPULabel"), 1);
    let _unused: Option<&dyn NodeGroup> = None;
}
