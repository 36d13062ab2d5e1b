//! The generated cluster: node groups, nodes as a kubelet reports them, DaemonSets with a pod on
//! every node, Deployments with their ReplicaSets and pods (as kube-controller-manager and the
//! kubelet write them, managedFields included), PDBs, HPAs, the pod metrics the HPAs read, and the
//! bursts of unschedulable pods.
//!
//! Everything is deterministic: the same size gives the same cluster. Objects are built as JSON
//! (what the API server stores and sends), close to what a real cluster's API server returns, so
//! that the controller decodes and keeps objects of a real size: an application pod is about
//! 5.3 KB of JSON, a DaemonSet pod about 4 KB, a node about 5 KB.

use serde_json::{Value, json};

/// How many pods each DaemonSet adds: one per node.
pub const DAEMONSETS: &[DaemonSetSpec] = &[
    DaemonSetSpec {
        namespace: "kube-system",
        name: "kube-proxy",
        image: "registry.k8s.io/kube-proxy:v1.33.1",
        cpu_millis: 100,
        memory_mib: 64,
    },
    DaemonSetSpec {
        namespace: "monitoring",
        name: "node-exporter",
        image: "quay.io/prometheus/node-exporter:v1.9.1",
        cpu_millis: 50,
        memory_mib: 50,
    },
    DaemonSetSpec {
        namespace: "logging",
        name: "fluent-bit",
        image: "cr.fluentbit.io/fluent/fluent-bit:4.0.3",
        cpu_millis: 100,
        memory_mib: 128,
    },
];

#[derive(Debug, Clone, Copy)]
pub struct DaemonSetSpec {
    pub namespace: &'static str,
    pub name: &'static str,
    pub image: &'static str,
    pub cpu_millis: u64,
    pub memory_mib: u64,
}

/// A node group: its share of the nodes, its machine and whether its pods are pinned to it.
#[derive(Debug, Clone, Copy)]
pub struct GroupSpec {
    pub id: &'static str,
    /// Share of the cluster's nodes, in percent.
    pub percent: usize,
    pub instance_type: &'static str,
    pub cpu: u64,
    pub memory_gib: u64,
    pub allocatable_cpu_millis: u64,
    pub allocatable_memory_mib: u64,
    /// Spot nodes carry a `NoSchedule` taint only their own pods tolerate.
    pub spot: bool,
    /// The group's pods select it with a nodeSelector (compute- and memory-heavy workloads);
    /// the general group's pods select nothing.
    pub pinned: bool,
    /// Memory per cpu its application pods ask for, in MiB (its machine's shape).
    pub pod_memory_mib_per_cpu: u64,
}

pub const GROUPS: &[GroupSpec] = &[
    GroupSpec {
        id: "general",
        percent: 50,
        instance_type: "m5.2xlarge",
        cpu: 8,
        memory_gib: 32,
        allocatable_cpu_millis: 7910,
        allocatable_memory_mib: 30_208,
        spot: false,
        pinned: false,
        pod_memory_mib_per_cpu: 3328,
    },
    GroupSpec {
        id: "compute",
        percent: 20,
        instance_type: "c5.4xlarge",
        cpu: 16,
        memory_gib: 32,
        allocatable_cpu_millis: 15_890,
        allocatable_memory_mib: 29_696,
        spot: false,
        pinned: true,
        pod_memory_mib_per_cpu: 1536,
    },
    GroupSpec {
        id: "memory",
        percent: 20,
        instance_type: "r5.2xlarge",
        cpu: 8,
        memory_gib: 64,
        allocatable_cpu_millis: 7910,
        allocatable_memory_mib: 62_464,
        spot: false,
        pinned: true,
        pod_memory_mib_per_cpu: 7168,
    },
    GroupSpec {
        id: "spot",
        percent: 10,
        instance_type: "m5.2xlarge",
        cpu: 8,
        memory_gib: 32,
        allocatable_cpu_millis: 7910,
        allocatable_memory_mib: 30_208,
        spot: true,
        pinned: true,
        pod_memory_mib_per_cpu: 3328,
    },
];

const ZONES: &[&str] = &["us-east-1a", "us-east-1b", "us-east-1c"];
const SPOT_TAINT: &str = "node.example.com/spot";
const GROUP_LABEL: &str = "node.example.com/group";
/// Replicas of successive Deployments, in turn (about 24 on average).
const REPLICAS: &[usize] = &[2, 3, 5, 8, 10, 15, 20, 30, 50, 100];
/// Share of the requested cpu the pods use, as the pod metrics report (HPAs target 70 %).
const CPU_USAGE_PERCENT: u64 = 45;
/// The share of a node's memory (after its DaemonSet pods) its application pods request. Their
/// cpu requests fill the nodes: no node has room for one more pod, so a burst's pods need new
/// nodes (as the scheduler said), and no node is a scale-down candidate, so every iteration does
/// the same work.
const MEMORY_FILL_PERCENT: u64 = 85;
const CREATED: &str = "2026-11-20T08:00:00Z";

/// A deterministic 64-bit mix of a number (splitmix64): ids, hashes and delays that look random
/// and are the same on every run.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn uid(kind: u64, n: u64) -> String {
    let a = mix(kind << 40 ^ n);
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

fn hex64(n: u64) -> String {
    let a = mix(n);
    let (b, c) = (mix(a), mix(a ^ 1));
    format!("{a:016x}{b:016x}{c:016x}{:016x}", mix(b))
}

/// The characters of Kubernetes' generated name suffixes.
fn suffix(n: u64, length: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = mix(n);
    (0..length)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

fn ip(n: usize) -> String {
    format!("10.{}.{}.{}", 16 + (n >> 16) % 200, (n >> 8) & 255, n & 255)
}

/// An application workload: a Deployment, its ReplicaSet and its pods.
#[derive(Debug, Clone)]
pub struct Workload {
    pub index: u64,
    pub namespace: String,
    pub name: String,
    pub replicaset: String,
    pub group: usize,
    pub replicas: usize,
    /// Requests of the pod's container.
    pub cpu_millis: u64,
    pub memory_mib: u64,
}

impl Workload {
    fn team(&self) -> &str {
        &self.namespace
    }

    fn hash(&self) -> String {
        self.replicaset.rsplit('-').next().unwrap_or_default().to_string()
    }

    fn labels(&self) -> Value {
        json!({
            "app": self.name,
            "app.kubernetes.io/name": self.name,
            "app.kubernetes.io/instance": format!("{}-prod", self.name),
            "team": self.team(),
            "tier": "backend",
        })
    }

    fn pdb(&self) -> bool {
        self.index.is_multiple_of(2)
    }

    fn hpa(&self) -> bool {
        self.index.is_multiple_of(3)
    }
}

/// A node of the cluster, as the harness placed it.
#[derive(Debug, Clone)]
pub struct NodeRef {
    pub index: usize,
    pub name: String,
    pub group: usize,
}

/// The generated cluster, and what the harness needs to add to it later (burst pods, the nodes
/// a scale-up asked for).
pub struct Cluster {
    pub nodes: Vec<NodeRef>,
    pub namespaces: Vec<String>,
    pub workloads: Vec<Workload>,
    next_node: usize,
    next_workload: u64,
}

impl Cluster {
    /// Lays out `nodes` nodes and `pods` pods: the DaemonSets' pods on every node, the rest in
    /// Deployments filling their group's nodes evenly.
    pub fn plan(nodes: usize, pods: usize) -> Result<Cluster, String> {
        let daemon_pods = nodes * DAEMONSETS.len();
        if pods < daemon_pods {
            return Err(format!(
                "{pods} pods cannot fill {nodes} nodes: the DaemonSets alone put {daemon_pods} pods there"
            ));
        }
        let mut cluster = Cluster {
            nodes: Vec::new(),
            namespaces: (0..(nodes / 50).max(8)).map(|i| format!("team-{i:03}")).collect(),
            workloads: Vec::new(),
            next_node: 0,
            next_workload: 0,
        };
        let app_pods = pods - daemon_pods;
        let mut placed_nodes = 0;
        let mut placed_pods = 0;
        for (g, group) in GROUPS.iter().enumerate() {
            let last = g + 1 == GROUPS.len();
            let group_nodes = if last { nodes - placed_nodes } else { nodes * group.percent / 100 };
            let group_pods = if last { app_pods - placed_pods } else { app_pods * group_nodes / nodes.max(1) };
            placed_nodes += group_nodes;
            placed_pods += group_pods;
            for _ in 0..group_nodes {
                let node = cluster.new_node(g);
                cluster.nodes.push(node);
            }
            let per_node = group_pods.div_ceil(group_nodes.max(1)).max(1) as u64;
            let (cpu, memory) = Self::requests(group, per_node);
            let mut left = group_pods;
            let mut turn = 0;
            while left > 0 {
                let replicas = REPLICAS[turn % REPLICAS.len()].min(left);
                turn += 1;
                left -= replicas;
                let namespace = cluster.namespaces[cluster.next_workload as usize % cluster.namespaces.len()].clone();
                let workload = cluster.new_workload(&namespace, g, replicas, cpu, memory);
                cluster.workloads.push(workload);
            }
        }
        Ok(cluster)
    }

    /// A pod's requests so that `per_node` pods and the DaemonSets' fill a node's cpu, and
    /// take about [`MEMORY_FILL_PERCENT`] of its memory.
    fn requests(group: &GroupSpec, per_node: u64) -> (u64, u64) {
        let daemon_cpu: u64 = DAEMONSETS.iter().map(|d| d.cpu_millis).sum();
        let cpu = (group.allocatable_cpu_millis.saturating_sub(daemon_cpu) / per_node).max(1);
        let daemon_memory: u64 = DAEMONSETS.iter().map(|d| d.memory_mib).sum();
        let memory_room =
            group.allocatable_memory_mib.saturating_sub(daemon_memory) * MEMORY_FILL_PERCENT / 100 / per_node;
        let memory = (cpu * group.pod_memory_mib_per_cpu / 1000).min(memory_room);
        (cpu, memory.max(16) / 16 * 16)
    }

    fn new_node(&mut self, group: usize) -> NodeRef {
        let index = self.next_node;
        self.next_node += 1;
        let address = ip(index);
        NodeRef { index, name: format!("ip-{}.ec2.internal", address.replace('.', "-")), group }
    }

    fn new_workload(&mut self, namespace: &str, group: usize, replicas: usize, cpu: u64, memory: u64) -> Workload {
        let index = self.next_workload;
        self.next_workload += 1;
        let name = format!("{}-svc-{index:05}", GROUPS[group].id);
        Workload {
            index,
            namespace: namespace.to_string(),
            replicaset: format!("{name}-{}", suffix(index, 10)),
            name,
            group,
            replicas,
            cpu_millis: cpu,
            memory_mib: memory,
        }
    }

    /// The static provider's cloud-config: the groups with room for the bursts.
    pub fn cloud_config(&self) -> String {
        let mut yaml = String::from("nodeGroups:\n");
        for (g, group) in GROUPS.iter().enumerate() {
            let count = self.nodes.iter().filter(|n| n.group == g).count();
            yaml.push_str(&format!(
                "- id: {id}\n  minSize: 0\n  maxSize: {max}\n  providerIDPrefix: \"static://{id}/\"\n",
                id = group.id,
                max = count * 2 + 1000,
            ));
        }
        yaml
    }

    /// Every object of the cluster except pods and nodes, in an order a real cluster could have
    /// written them.
    pub fn objects(&self) -> Vec<Value> {
        let mut objects: Vec<Value> = ["kube-system", "monitoring", "logging", "burst"]
            .iter()
            .map(|n| n.to_string())
            .chain(self.namespaces.iter().cloned())
            .map(|name| namespace(&name))
            .collect();
        for (i, ds) in DAEMONSETS.iter().enumerate() {
            objects.push(daemonset(ds, i as u64, self.nodes.len()));
        }
        for w in &self.workloads {
            objects.push(deployment(w));
            objects.push(replicaset(w));
            if w.pdb() {
                objects.push(pdb(w));
            }
            if w.hpa() {
                objects.push(hpa(w));
            }
        }
        objects
    }

    /// The nodes with their DaemonSet pods, in chunks of about `chunk` objects.
    pub fn node_objects<'a>(&'a self, nodes: &'a [NodeRef]) -> impl Iterator<Item = Vec<Value>> + 'a {
        nodes.chunks(256).map(|chunk| {
            let mut objects = Vec::with_capacity(chunk.len() * (1 + DAEMONSETS.len()));
            for n in chunk {
                objects.push(node(n));
                for (i, ds) in DAEMONSETS.iter().enumerate() {
                    objects.push(daemon_pod(ds, i as u64, n));
                }
            }
            objects
        })
    }

    /// The application pods of a workload, placed round robin over the nodes of its group
    /// (`offset` says where the workload starts, so that workloads spread over all nodes).
    pub fn workload_pods(&self, workload: &Workload, group_nodes: &[&NodeRef], offset: usize) -> Vec<Value> {
        let template = app_pod_template(workload);
        (0..workload.replicas)
            .map(|r| {
                let node = group_nodes[(offset + r) % group_nodes.len()];
                running(app_pod(&template, workload, r as u64), node)
            })
            .collect()
    }

    /// The metrics-server answer for a namespace: every pod of its workloads, each container
    /// using [`CPU_USAGE_PERCENT`] of its cpu request.
    pub fn pod_metrics(&self, namespace: &str) -> Value {
        let items: Vec<Value> = self
            .workloads
            .iter()
            .filter(|w| w.namespace == namespace)
            .flat_map(|w| {
                (0..w.replicas).map(move |r| {
                    json!({
                        "metadata": {"name": pod_name(w, r as u64), "namespace": w.namespace, "labels": {"app": w.name}, "creationTimestamp": null},
                        "timestamp": CREATED,
                        "window": "15.004s",
                        "containers": [
                            {"name": "app", "usage": {"cpu": format!("{}m", w.cpu_millis * CPU_USAGE_PERCENT / 100), "memory": format!("{}Mi", w.memory_mib / 2)}},
                        ],
                    })
                })
            })
            .collect();
        json!({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items})
    }

    /// A burst: a new Deployment of `replicas` pods (the general group's shape, no node
    /// selector) whose pods the scheduler could not place.
    pub fn burst(&mut self, number: usize, replicas: usize) -> (Workload, Vec<Value>) {
        let (cpu, memory) =
            self.workloads.iter().find(|w| w.group == 0).map_or((200, 768), |w| (w.cpu_millis, w.memory_mib));
        let workload = self.burst_workload(format!("burst-{number:02}"), replicas, cpu, memory);
        let template = app_pod_template(&workload);
        let mut objects = vec![deployment(&workload), replicaset(&workload)];
        objects.extend((0..replicas).map(|r| unschedulable(app_pod(&template, &workload, r as u64), self.nodes.len())));
        (workload, objects)
    }

    fn burst_workload(&mut self, name: String, replicas: usize, cpu: u64, memory: u64) -> Workload {
        let mut workload = self.new_workload("burst", 0, replicas, cpu, memory);
        workload.replicaset = format!("{name}-{}", suffix(workload.index, 10));
        workload.name = name;
        workload
    }

    /// The nodes a scale-up of `group` by `count` brings (with their DaemonSet pods), and the
    /// burst's pods bound to them, as the cloud, the kubelets and the scheduler would write
    /// them. Pods that do not fit are left out (another scale-up will be asked for them). Room
    /// left on the new nodes is taken by a Deployment of the burst's shape (`<burst>-fill-<n>`),
    /// as other pending work would take it: the cluster stays full, so the next burst needs new
    /// nodes for all of its pods, as the first did.
    pub fn fulfil(&mut self, group_id: &str, count: usize, burst: &Workload, unbound: &mut Vec<u64>) -> Vec<Value> {
        let Some(group) = GROUPS.iter().position(|g| g.id == group_id) else { return Vec::new() };
        let spec = &GROUPS[group];
        let new: Vec<NodeRef> = (0..count).map(|_| self.new_node(group)).collect();
        let mut objects: Vec<Value> = self.node_objects(&new).flatten().collect();
        self.nodes.extend(new.iter().cloned());
        let daemon_cpu: u64 = DAEMONSETS.iter().map(|d| d.cpu_millis).sum();
        let daemon_memory: u64 = DAEMONSETS.iter().map(|d| d.memory_mib).sum();
        let fit = ((spec.allocatable_cpu_millis - daemon_cpu) / burst.cpu_millis)
            .min((spec.allocatable_memory_mib - daemon_memory) / burst.memory_mib)
            .min(110 - DAEMONSETS.len() as u64) as usize;
        let template = app_pod_template(burst);
        let mut room = Vec::new();
        for node in &new {
            let mut free = fit;
            while free > 0 {
                let Some(replica) = unbound.pop() else { break };
                objects.push(running(app_pod(&template, burst, replica), node));
                free -= 1;
            }
            room.extend(std::iter::repeat_n(node, free));
        }
        if !room.is_empty() {
            let name = format!("{}-fill-{}", burst.name, self.next_workload);
            let filler = self.burst_workload(name, room.len(), burst.cpu_millis, burst.memory_mib);
            let template = app_pod_template(&filler);
            objects.push(deployment(&filler));
            objects.push(replicaset(&filler));
            objects
                .extend(room.iter().enumerate().map(|(r, node)| running(app_pod(&template, &filler, r as u64), node)));
        }
        objects
    }

    /// The pods of every workload, by group, in chunks (one workload each).
    pub fn app_pods(&self) -> impl Iterator<Item = Vec<Value>> + '_ {
        let by_group: Vec<Vec<&NodeRef>> =
            (0..GROUPS.len()).map(|g| self.nodes.iter().filter(|n| n.group == g).collect()).collect();
        let mut offsets = vec![0usize; GROUPS.len()];
        self.workloads.iter().map(move |w| {
            let nodes = &by_group[w.group];
            let offset = offsets[w.group];
            offsets[w.group] += w.replicas;
            self.workload_pods(w, nodes, offset)
        })
    }
}

fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}, "creationTimestamp": CREATED},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn fields_v1_time() -> &'static str {
    "2026-11-20T08:00:05Z"
}

fn node(n: &NodeRef) -> Value {
    let group = &GROUPS[n.group];
    let zone = ZONES[n.index % ZONES.len()];
    let address = ip(n.index);
    let images: Vec<Value> = [
        ("registry.example.com/platform/app-base", 187_441_331u64),
        ("docker.io/envoyproxy/envoy", 63_417_882),
        ("cr.fluentbit.io/fluent/fluent-bit", 46_870_312),
        ("registry.k8s.io/kube-proxy", 30_412_716),
        ("quay.io/prometheus/node-exporter", 11_920_112),
        ("602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni", 51_288_013),
        ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause", 298_689),
        ("registry.k8s.io/coredns/coredns", 18_562_039),
    ]
    .iter()
    .enumerate()
    .map(|(i, (name, size))| {
        json!({"names": [format!("{name}@sha256:{}", hex64(i as u64)), format!("{name}:v1.{i}.0")], "sizeBytes": size})
    })
    .collect();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| json!({"type": kind, "status": status, "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED, "reason": reason, "message": message});
    let mut labels = json!({
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": group.instance_type,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": zone,
        "k8s.io/cloud-provider-aws": "a94967527e2ac5a2e1ee3f5f8a1fa2b1",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": group.instance_type,
        "topology.ebs.csi.aws.com/zone": zone,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        GROUP_LABEL: group.id,
    });
    if group.spot {
        labels["node.example.com/lifecycle"] = json!("spot");
    }
    let taints =
        if group.spot { json!([{"key": SPOT_TAINT, "value": "true", "effect": "NoSchedule"}]) } else { json!([]) };
    let capacity = json!({
        "cpu": group.cpu.to_string(),
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": format!("{}Ki", group.memory_gib * 1024 * 1024 - 520_000),
        "pods": "110",
    });
    let allocatable = json!({
        "cpu": format!("{}m", group.allocatable_cpu_millis),
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": format!("{}Mi", group.allocatable_memory_mib),
        "pods": "110",
    });
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "uid": uid(1, n.index as u64),
            "creationTimestamp": CREATED,
            "labels": labels,
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": address,
                "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{:017x}\"}}", mix(n.index as u64) >> 4),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:alpha.kubernetes.io/provided-node-ip": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
                   "f:labels": {".": {}, "f:beta.kubernetes.io/arch": {}, "f:beta.kubernetes.io/os": {}, "f:kubernetes.io/arch": {}, "f:kubernetes.io/hostname": {}, "f:kubernetes.io/os": {}, "f:node.kubernetes.io/instance-type": {}}},
                   "f:spec": {"f:providerID": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:allocatable": {"f:cpu": {}, "f:ephemeral-storage": {}, "f:memory": {}}, "f:capacity": {"f:memory": {}},
                   "f:conditions": {"k:{\"type\":\"DiskPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"MemoryPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"PIDPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}}},
                   "f:images": {}, "f:nodeInfo": {"f:bootID": {}, "f:systemUUID": {}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}}, "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, "v:\"10.244.0.0/24\"": {}}}}},
            ],
        },
        "spec": {
            "providerID": format!("static://{}/{}", group.id, n.name),
            "podCIDR": format!("10.244.{}.0/24", n.index % 256),
            "podCIDRs": [format!("10.244.{}.0/24", n.index % 256)],
            "taints": taints,
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "InternalDNS", "address": n.name},
                {"type": "Hostname", "address": n.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("ec2{:029x}", mix(n.index as u64) >> 12),
                "systemUUID": uid(2, n.index as u64),
                "bootID": uid(3, n.index as u64),
                "kernelVersion": "6.1.134-152.225.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.7.20250512",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kubeletVersion": "v1.33.1-eks-b9b8b3f",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    })
}

fn daemonset(ds: &DaemonSetSpec, index: u64, nodes: usize) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": ds.name, "namespace": ds.namespace, "uid": uid(4, index), "generation": 3, "creationTimestamp": CREATED, "labels": {"k8s-app": ds.name}},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": ds.name}},
            "template": {
                "metadata": {"labels": {"k8s-app": ds.name}},
                "spec": {
                    "containers": [{"name": ds.name, "image": ds.image, "resources": {"requests": {"cpu": format!("{}m", ds.cpu_millis), "memory": format!("{}Mi", ds.memory_mib)}}}],
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": "system-node-critical",
                },
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0}},
            "revisionHistoryLimit": 10,
        },
        "status": {"currentNumberScheduled": nodes, "desiredNumberScheduled": nodes, "numberAvailable": nodes, "numberMisscheduled": 0, "numberReady": nodes, "observedGeneration": 3, "updatedNumberScheduled": nodes},
    })
}

fn daemon_pod(ds: &DaemonSetSpec, index: u64, node: &NodeRef) -> Value {
    let name = format!("{}-{}", ds.name, suffix((index << 32) ^ node.index as u64, 5));
    let host_ip = ip(node.index);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{}-", ds.name),
            "namespace": ds.namespace,
            "uid": uid(5 + index, node.index as u64),
            "creationTimestamp": CREATED,
            "labels": {"k8s-app": ds.name, "controller-revision-hash": "6d8f9c7b5d", "pod-template-generation": "3"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds.name, "uid": uid(4, index), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:controller-revision-hash": {}, "f:k8s-app": {}, "f:pod-template-generation": {}}, "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{}\"}}", uid(4, index)): {}}},
                   "f:spec": {"f:affinity": {".": {}, "f:nodeAffinity": {".": {}, "f:requiredDuringSchedulingIgnoredDuringExecution": {}}}, "f:containers": {format!("k:{{\"name\":\"{}\"}}", ds.name): {".": {}, "f:image": {}, "f:name": {}, "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}}, "f:hostNetwork": {}, "f:priorityClassName": {}, "f:tolerations": {}, "f:volumes": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}},
            ],
        },
        "spec": {
            "volumes": [
                {"name": "varlog", "hostPath": {"path": "/var/log", "type": ""}},
                {"name": "lib-modules", "hostPath": {"path": "/lib/modules", "type": ""}},
                {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}, {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}, {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}},
            ],
            "containers": [{
                "name": ds.name,
                "image": ds.image,
                "args": ["--v=2", format!("--hostname-override={}", node.name)],
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                "resources": {"requests": {"cpu": format!("{}m", ds.cpu_millis), "memory": format!("{}Mi", ds.memory_mib)}},
                "volumeMounts": [{"name": "varlog", "mountPath": "/var/log"}, {"name": "lib-modules", "readOnly": true, "mountPath": "/lib/modules"}, {"name": "kube-api-access", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {"privileged": true},
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": ds.name,
            "serviceAccount": ds.name,
            "nodeName": node.name,
            "hostNetwork": true,
            "securityContext": {},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}]}}},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"operator": "Exists"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "priorityClassName": "system-node-critical",
            "priority": 2_000_001_000,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED},
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": host_ip,
            "podIPs": [{"ip": host_ip}],
            "startTime": CREATED,
            "containerStatuses": [{
                "name": ds.name,
                "state": {"running": {"startedAt": CREATED}},
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": ds.image,
                "imageID": format!("{}@sha256:{}", ds.image.split(':').next().unwrap_or_default(), hex64(index)),
                "containerID": format!("containerd://{}", hex64((index << 40) ^ node.index as u64)),
                "started": true,
            }],
            "qosClass": "Burstable",
        },
    })
}

fn deployment(w: &Workload) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": w.name, "namespace": w.namespace, "uid": uid(10, w.index), "generation": 4, "creationTimestamp": CREATED,
            "labels": w.labels(),
            "annotations": {"deployment.kubernetes.io/revision": "4", "meta.helm.sh/release-name": w.name, "meta.helm.sh/release-namespace": w.namespace},
        },
        "spec": {
            "replicas": w.replicas,
            "selector": {"matchLabels": {"app": w.name}},
            "template": {"metadata": {"labels": w.labels()}, "spec": {"containers": [{"name": "app", "image": format!("registry.example.com/{}/{}:1.4.2", w.team(), w.name)}]}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
        "status": {"observedGeneration": 4, "replicas": w.replicas, "updatedReplicas": w.replicas, "readyReplicas": w.replicas, "availableReplicas": w.replicas},
    })
}

fn replicaset(w: &Workload) -> Value {
    let mut labels = w.labels();
    labels["pod-template-hash"] = json!(w.hash());
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": w.replicaset, "namespace": w.namespace, "uid": uid(11, w.index), "generation": 1, "creationTimestamp": CREATED,
            "labels": labels.clone(),
            "annotations": {"deployment.kubernetes.io/desired-replicas": w.replicas.to_string(), "deployment.kubernetes.io/max-replicas": (w.replicas + w.replicas.div_ceil(4)).to_string(), "deployment.kubernetes.io/revision": "4"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name, "uid": uid(10, w.index), "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "replicas": w.replicas,
            "selector": {"matchLabels": {"app": w.name, "pod-template-hash": w.hash()}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": format!("registry.example.com/{}/{}:1.4.2", w.team(), w.name)}]}},
        },
        "status": {"replicas": w.replicas, "fullyLabeledReplicas": w.replicas, "readyReplicas": w.replicas, "availableReplicas": w.replicas, "observedGeneration": 1},
    })
}

fn pdb(w: &Workload) -> Value {
    let allowed = if w.replicas > 1 { 1 } else { 0 };
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": w.name, "namespace": w.namespace, "uid": uid(12, w.index), "generation": 1, "creationTimestamp": CREATED, "labels": {"app": w.name}},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": w.name}}},
        "status": {"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": w.replicas, "desiredHealthy": w.replicas.saturating_sub(1), "expectedPods": w.replicas,
                   "conditions": [{"type": "DisruptionAllowed", "status": if allowed > 0 { "True" } else { "False" }, "reason": if allowed > 0 { "SufficientPods" } else { "InsufficientPods" }, "message": "", "observedGeneration": 1, "lastTransitionTime": CREATED}]},
    })
}

fn hpa(w: &Workload) -> Value {
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": w.name, "namespace": w.namespace, "uid": uid(13, w.index), "creationTimestamp": CREATED, "labels": {"app": w.name}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name},
            "minReplicas": w.replicas.div_ceil(2).max(1),
            "maxReplicas": w.replicas * 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
        },
        "status": {
            "currentReplicas": w.replicas,
            "desiredReplicas": w.replicas,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": CPU_USAGE_PERCENT, "averageValue": format!("{}m", w.cpu_millis * CPU_USAGE_PERCENT / 100)}}}],
            "conditions": [
                {"type": "AbleToScale", "status": "True", "lastTransitionTime": CREATED, "reason": "ReadyForNewScale", "message": "recommended size matches current size"},
                {"type": "ScalingActive", "status": "True", "lastTransitionTime": CREATED, "reason": "ValidMetricFound", "message": "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"},
                {"type": "ScalingLimited", "status": "False", "lastTransitionTime": CREATED, "reason": "DesiredWithinRange", "message": "the desired count is within the acceptable range"},
            ],
        },
    })
}

/// The name of a workload's pod.
pub fn pod_name(w: &Workload, replica: u64) -> String {
    format!("{}-{}", w.replicaset, suffix((w.index << 20) ^ replica, 5))
}

/// A workload's pod with what every replica shares; [`app_pod`] fills in the replica.
fn app_pod_template(w: &Workload) -> Value {
    let group = &GROUPS[w.group];
    let mut labels = w.labels();
    labels["pod-template-hash"] = json!(w.hash());
    let image = format!("registry.example.com/{}/{}:1.4.2", w.team(), w.name);
    let token_volume = format!("kube-api-access-{}", suffix(w.index ^ 0x5a5a, 5));
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
    let mut tolerations = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
    ];
    if group.spot {
        tolerations.push(json!({"key": SPOT_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"}));
    }
    let mut spec = json!({
        "volumes": [
            {"name": "tmp", "emptyDir": {}},
            {"name": token_volume, "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}, {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}, {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}},
        ],
        "containers": [
            {
                "name": "app",
                "image": image,
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "APP_ENV", "value": "production"},
                    {"name": "LOG_LEVEL", "value": "info"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                ],
                "resources": {
                    "limits": {"cpu": format!("{}m", w.cpu_millis * 2), "memory": format!("{}Mi", w.memory_mib)},
                    "requests": {"cpu": format!("{}m", w.cpu_millis), "memory": format!("{}Mi", w.memory_mib)},
                },
                "volumeMounts": [
                    {"name": "tmp", "mountPath": "/tmp"},
                    {"name": token_volume, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
                ],
                "livenessProbe": probe("/healthz"),
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            },
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": w.name,
        "serviceAccount": w.name,
        "securityContext": {"fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "tolerations": tolerations,
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": w.name}}}],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    });
    if group.pinned {
        spec["nodeSelector"] = json!({GROUP_LABEL: group.id});
    }
    let rs_uid = uid(11, w.index);
    let managed_spec = json!({
        "f:containers": {
            "k:{\"name\":\"app\"}": {".": {}, "f:env": {}, "f:image": {}, "f:livenessProbe": {}, "f:name": {}, "f:ports": {},
                "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}, "f:volumeMounts": {}},
        },
        "f:securityContext": {}, "f:serviceAccountName": {}, "f:topologySpreadConstraints": {}, "f:volumes": {},
    });
    let annotations = json!({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
        "kubectl.kubernetes.io/restartedAt": "2026-11-19T16:12:44Z",
    });
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "",
            "generateName": format!("{}-", w.replicaset),
            "namespace": w.namespace,
            "uid": "",
            "creationTimestamp": CREATED,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": w.replicaset, "uid": rs_uid, "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}, "f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}},
                   "f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:app.kubernetes.io/instance": {}, "f:app.kubernetes.io/name": {}, "f:pod-template-hash": {}, "f:team": {}, "f:tier": {}},
                   "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{rs_uid}\"}}"): {}}}, "f:spec": managed_spec}},
            ],
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    })
}

/// One replica of a workload from its template: name, uid and container ids.
fn app_pod(template: &Value, w: &Workload, replica: u64) -> Value {
    let mut pod = template.clone();
    pod["metadata"]["name"] = json!(pod_name(w, replica));
    pod["metadata"]["uid"] = json!(uid(20, (w.index << 20) ^ replica));
    pod
}

/// As the scheduler, the kubelet and the container runtime leave a pod running on `node`.
fn running(mut pod: Value, node: &NodeRef) -> Value {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let seed = mix(name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))));
    let pod_ip = format!("100.{}.{}.{}", 64 + (seed >> 8) % 64, (seed >> 16) & 255, seed & 255);
    let host_ip = ip(node.index);
    pod["spec"]["nodeName"] = json!(node.name);
    let image = pod["spec"]["containers"][0]["image"].clone();
    let image_base = image.as_str().unwrap_or_default().split(':').next().unwrap_or_default().to_string();
    let condition =
        |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": CREATED});
    let container = |name: &str, image: &Value, image_id: String, salt: u64| json!({"name": name, "state": {"running": {"startedAt": CREATED}}, "lastState": {}, "ready": true, "restartCount": 0, "image": image, "imageID": image_id, "containerID": format!("containerd://{}", hex64(seed ^ salt)), "started": true});
    pod["status"] = json!({
        "phase": "Running",
        "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": CREATED,
        "containerStatuses": [
            container("app", &image, format!("{image_base}@sha256:{}", hex64(seed >> 7)), 1),
        ],
        "qosClass": "Burstable",
    });
    if let Some(fields) = pod["metadata"]["managedFields"].as_array_mut() {
        fields.push(json!({"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": fields_v1_time(), "fieldsType": "FieldsV1", "subresource": "status",
            "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:status": {}, "f:type": {}}, "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}},
              "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, format!("k:{{\"ip\":\"{pod_ip}\"}}"): {".": {}, "f:ip": {}}}, "f:startTime": {}}}}));
    }
    pod
}

/// As the scheduler leaves a pod it could not place on any of the cluster's nodes.
fn unschedulable(mut pod: Value, nodes: usize) -> Value {
    // In whole seconds, as an API server writes every timestamp (and the fake one those it
    // fills in): the controller's "very new pod" rule reads the creation time as it would be
    // served.
    let now = ::tests::fake_apiserver::now_rfc3339();
    pod["metadata"]["creationTimestamp"] = json!(now);
    pod["status"] = json!({
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null, "lastTransitionTime": now, "reason": "Unschedulable",
                        "message": format!("0/{nodes} nodes are available: {nodes} Insufficient cpu. preemption: 0/{nodes} nodes are available: {nodes} No preemption victims found for incoming pod.")}],
        "qosClass": "Burstable",
    });
    pod
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn millicores(quantity: &Value) -> u64 {
        quantity.as_str().and_then(|q| q.strip_suffix('m')).and_then(|q| q.parse().ok()).unwrap()
    }

    #[test]
    fn every_pod_is_placed_and_objects_have_a_real_clusters_size() {
        let cluster = Cluster::plan(100, 3000).unwrap();
        assert_eq!(cluster.nodes.len(), 100);
        let app_pods: Vec<Value> = cluster.app_pods().flatten().collect();
        assert_eq!(app_pods.len() + 100 * DAEMONSETS.len(), 3000);
        let size = |v: &Value| serde_json::to_vec(v).unwrap().len();
        let node_and_daemon_pods: Vec<Value> = cluster.node_objects(&cluster.nodes[..1]).next().unwrap();
        assert!((5000..6500).contains(&size(&app_pods[0])), "an application pod is {} bytes", size(&app_pods[0]));
        assert!(
            (4000..6500).contains(&size(&node_and_daemon_pods[1])),
            "a DaemonSet pod is {} bytes",
            size(&node_and_daemon_pods[1])
        );
        assert!(
            (4000..8000).contains(&size(&node_and_daemon_pods[0])),
            "a node is {} bytes",
            size(&node_and_daemon_pods[0])
        );
    }

    #[test]
    fn no_node_has_room_for_a_burst_pod() {
        let mut cluster = Cluster::plan(100, 3000).unwrap();
        let mut used: HashMap<String, u64> = HashMap::new();
        for pod in cluster.app_pods().flatten() {
            let node = pod["spec"]["nodeName"].as_str().unwrap().to_string();
            *used.entry(node).or_default() += millicores(&pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]);
        }
        let (burst, objects) = cluster.burst(1, 10);
        assert_eq!(objects.len(), 2 + 10, "a Deployment, a ReplicaSet and the pods");
        let daemon_cpu: u64 = DAEMONSETS.iter().map(|d| d.cpu_millis).sum();
        for node in &cluster.nodes {
            let free = GROUPS[node.group].allocatable_cpu_millis - daemon_cpu - used[&node.name];
            assert!(free < burst.cpu_millis, "{} has {free}m free for {}m pods", node.name, burst.cpu_millis);
        }
        let mut unbound: Vec<u64> = (0..10).collect();
        let added = cluster.fulfil("general", 1, &burst, &mut unbound);
        assert!(unbound.is_empty(), "one new general node takes ten burst pods");
        assert_eq!(cluster.nodes.len(), 101);
        let new_node = &cluster.nodes[100].name;
        let pods: Vec<&Value> =
            added.iter().filter(|o| o["kind"] == "Pod" && o["spec"]["nodeName"] == *new_node).collect();
        let requested: u64 =
            pods.iter().map(|p| millicores(&p["spec"]["containers"][0]["resources"]["requests"]["cpu"])).sum();
        assert!(pods.len() > 10 + DAEMONSETS.len(), "the rest of the new node is filled");
        assert!(GROUPS[0].allocatable_cpu_millis - requested < burst.cpu_millis, "the new node is full");
    }
}
