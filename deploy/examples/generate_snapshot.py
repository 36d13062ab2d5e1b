#!/usr/bin/env python3
"""Writes deploy/examples/snapshot.json: a realistic cluster dump, shaped exactly like
`kubectl get nodes,pods,pdb,daemonsets,replicasets,statefulsets,jobs,configmaps,namespaces -A -o json`.

Three autoscaled node groups (general, compute, gpu) and an unmanaged control plane; Deployments,
a StatefulSet, DaemonSets, a Job, kube-system pods, PDBs, a node with the scale-down-disabled
annotation, and pending pods of several shapes. Deterministic: run it again to regenerate.
"""
import json
import os

CREATED = "2026-11-20T08:00:00Z"   # nodes and long-running pods
PENDING_SINCE = "2026-11-21T11:58:00Z"  # pending pods (two minutes before the plan's --now)

items = []


def uid(kind, ns, name):
    return f"uid-{kind.lower()}-{ns}-{name}"


def node(name, pool, cpu, mem, pods, extra_labels=None, taints=None, annotations=None, gpu=0, zone="eu-west-1a"):
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "eu-west-1",
    }
    if pool:
        labels["pool"] = pool
    labels.update(extra_labels or {})
    capacity = {"cpu": cpu[0], "memory": mem[0], "pods": str(pods), "ephemeral-storage": "100Gi"}
    allocatable = {"cpu": cpu[1], "memory": mem[1], "pods": str(pods), "ephemeral-storage": "95Gi"}
    if gpu:
        capacity["nvidia.com/gpu"] = str(gpu)
        allocatable["nvidia.com/gpu"] = str(gpu)
    n = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": uid("node", "", name), "labels": labels, "creationTimestamp": CREATED},
        "spec": {"providerID": f"static://{pool or 'control-plane'}/{name}"},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED, "reason": "KubeletReady"}],
        },
    }
    if taints:
        n["spec"]["taints"] = taints
    if annotations:
        n["metadata"]["annotations"] = annotations
    items.append(n)
    return name


def container(name, cpu, mem, gpu=0, ports=None, volume_mounts=None):
    c = {"name": name, "image": f"registry.example.com/{name}:1.0", "resources": {"requests": {"cpu": cpu, "memory": mem}}}
    if gpu:
        c["resources"]["requests"]["nvidia.com/gpu"] = str(gpu)
        c["resources"]["limits"] = {"nvidia.com/gpu": str(gpu)}
    if ports:
        c["ports"] = ports
    if volume_mounts:
        c["volumeMounts"] = volume_mounts
    return c


def pod(name, ns, containers, owner=None, node_name=None, labels=None, node_selector=None, tolerations=None,
        annotations=None, volumes=None, pending=False, created=CREATED, priority=None, affinity=None, spread=None):
    meta = {"name": name, "namespace": ns, "uid": uid("pod", ns, name), "creationTimestamp": created, "labels": labels or {}}
    if owner:
        kind, oname = owner
        meta["ownerReferences"] = [{
            "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
            "kind": kind, "name": oname, "uid": uid(kind, ns, oname), "controller": True, "blockOwnerDeletion": True,
        }]
    if annotations:
        meta["annotations"] = annotations
    spec = {"containers": containers, "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler"}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if volumes:
        spec["volumes"] = volumes
    if priority is not None:
        spec["priority"] = priority
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    if pending:
        status = {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": created,
            "message": "0/27 nodes are available"}]}
    else:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "startTime": created}
    items.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})


def replicaset(name, ns, replicas, labels):
    items.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": name, "namespace": ns, "uid": uid("ReplicaSet", ns, name), "labels": labels,
                               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                    "name": name.rsplit("-", 1)[0], "uid": uid("Deployment", ns, name), "controller": True}]},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": labels}},
                  "status": {"replicas": replicas}})


def deployment(name, ns, replicas, ready, labels, containers, node_selector=None):
    spec = {"containers": containers}
    if node_selector:
        spec["nodeSelector"] = node_selector
    items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": name, "namespace": ns, "uid": uid("Deployment", ns, name), "labels": labels},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": spec}},
                  "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready}})


def daemonset(name, ns, containers, tolerations=None, node_selector=None):
    spec = {"containers": containers, "tolerations": tolerations or []}
    if node_selector:
        spec["nodeSelector"] = node_selector
    items.append({"apiVersion": "apps/v1", "kind": "DaemonSet",
                  "metadata": {"name": name, "namespace": ns, "uid": uid("DaemonSet", ns, name)},
                  "spec": {"selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}})


def pdb(name, ns, labels, allowed, min_available=None, max_unavailable=None):
    spec = {"selector": {"matchLabels": labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": name, "namespace": ns, "uid": uid("pdb", ns, name)},
                  "spec": spec, "status": {"disruptionsAllowed": allowed, "currentHealthy": 0, "desiredHealthy": 0,
                                           "expectedPods": 0, "observedGeneration": 1}})


for ns in ["default", "kube-system", "monitoring", "frontend", "backend", "batch", "data", "ml"]:
    items.append({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}})

GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
CP_TAINT = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
TOLERATE_ALL = [{"operator": "Exists"}]

zones = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
general = [node(f"general-{i:02d}", "general", ("4", "3920m"), ("16Gi", "15Gi"), 58, zone=zones[i % 3],
                annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"} if i == 14 else None)
           for i in range(1, 18)]
compute = [node(f"compute-{i:02d}", "compute", ("8", "7910m"), ("16Gi", "14848Mi"), 58, zone=zones[i % 3])
           for i in range(1, 6)]
gpus = [node(f"gpu-{i:02d}", "gpu", ("4", "3920m"), ("16Gi", "15Gi"), 29, gpu=1, taints=GPU_TAINT,
             extra_labels={"nvidia.com/gpu.product": "Tesla-T4"}, zone=zones[i % 3]) for i in range(1, 3)]
control = [node(f"control-plane-{i}", None, ("4", "3920m"), ("16Gi", "15Gi"), 110, taints=CP_TAINT,
                extra_labels={"node-role.kubernetes.io/control-plane": ""}, zone=zones[i % 3]) for i in range(1, 4)]

# DaemonSets and their pods on every node.
daemonset("kube-proxy", "kube-system", [container("kube-proxy", "100m", "128Mi")], tolerations=TOLERATE_ALL)
daemonset("node-exporter", "monitoring", [container("node-exporter", "50m", "64Mi")], tolerations=TOLERATE_ALL)
daemonset("nvidia-device-plugin", "kube-system", [container("nvidia-device-plugin", "50m", "64Mi")],
          tolerations=GPU_TAINT and [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
          node_selector={"pool": "gpu"})
for n in general + compute + gpus + control:
    pod(f"kube-proxy-{n}", "kube-system", [container("kube-proxy", "100m", "128Mi")], owner=("DaemonSet", "kube-proxy"),
        node_name=n, labels={"app": "kube-proxy"}, tolerations=TOLERATE_ALL)
    pod(f"node-exporter-{n}", "monitoring", [container("node-exporter", "50m", "64Mi")],
        owner=("DaemonSet", "node-exporter"), node_name=n, labels={"app": "node-exporter"}, tolerations=TOLERATE_ALL)
for n in gpus:
    pod(f"nvidia-device-plugin-{n}", "kube-system", [container("nvidia-device-plugin", "50m", "64Mi")],
        owner=("DaemonSet", "nvidia-device-plugin"), node_name=n, labels={"app": "nvidia-device-plugin"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])

# Control plane: static (mirror) pods.
for n in control:
    for comp, cpu, mem in [("kube-apiserver", "250m", "512Mi"), ("kube-scheduler", "100m", "128Mi"),
                           ("kube-controller-manager", "200m", "256Mi"), ("etcd", "100m", "256Mi")]:
        pod(f"{comp}-{n}", "kube-system", [container(comp, cpu, mem)], node_name=n, labels={"component": comp},
            annotations={"kubernetes.io/config.mirror": f"mirror-{comp}-{n}"}, tolerations=TOLERATE_ALL)

# frontend/web: 25 replicas (4 on each of general-01..06, 1 on general-17); PDB allows 3 disruptions.
web_labels = {"app": "web"}
replicaset("web-7d9f8", "frontend", 25, web_labels)
deployment("web", "frontend", 25, 25, web_labels, [container("web", "500m", "1Gi")])
k = 0
for n in general[:6]:
    for _ in range(4):
        pod(f"web-7d9f8-{k:03d}", "frontend", [container("web", "500m", "1Gi")], owner=("ReplicaSet", "web-7d9f8"),
            node_name=n, labels=web_labels)
        k += 1
pod(f"web-7d9f8-{k:03d}", "frontend", [container("web", "500m", "1Gi")], owner=("ReplicaSet", "web-7d9f8"),
    node_name="general-17", labels=web_labels)
k += 1
pdb("web", "frontend", web_labels, 3, min_available=22)
# backend/api: 18 replicas, zone-spread.
api_labels = {"app": "api"}
replicaset("api-5c6b7", "backend", 18, api_labels)
api_spread = [{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": api_labels}}]
k = 0
for n in general[:6]:
    pod(f"api-5c6b7-{k:03d}", "backend", [container("api", "1", "2Gi")], owner=("ReplicaSet", "api-5c6b7"),
        node_name=n, labels=api_labels, spread=api_spread)
    k += 1
for n in general[6:10]:
    for _ in range(3):
        pod(f"api-5c6b7-{k:03d}", "backend", [container("api", "1", "2Gi")], owner=("ReplicaSet", "api-5c6b7"),
            node_name=n, labels=api_labels, spread=api_spread)
        k += 1

# kube-system: CoreDNS (with a PDB) and metrics-server (no PDB) on general-11.
dns_labels = {"k8s-app": "kube-dns"}
replicaset("coredns-6d4b7", "kube-system", 2, dns_labels)
for i in range(2):
    pod(f"coredns-6d4b7-{i}", "kube-system", [container("coredns", "100m", "70Mi")], owner=("ReplicaSet", "coredns-6d4b7"),
        node_name="general-11", labels=dns_labels, priority=2000000000)
pdb("coredns", "kube-system", dns_labels, 1, max_unavailable=1)
replicaset("metrics-server-8f9c6", "kube-system", 1, {"k8s-app": "metrics-server"})
pod("metrics-server-8f9c6-0", "kube-system", [container("metrics-server", "100m", "200Mi")],
    owner=("ReplicaSet", "metrics-server-8f9c6"), node_name="general-11", labels={"k8s-app": "metrics-server"},
    priority=2000000000, created="2026-11-21T11:30:00Z")  # restarted recently: younger than the 1h system-pod timeout

# data/cache: Redis with an emptyDir on general-12 (local storage blocks scale-down).
replicaset("cache-6f7d8", "data", 1, {"app": "cache"})
pod("cache-6f7d8-0", "data", [container("redis", "500m", "2Gi", volume_mounts=[{"name": "data", "mountPath": "/data"}])],
    owner=("ReplicaSet", "cache-6f7d8"), node_name="general-12", labels={"app": "cache"},
    volumes=[{"name": "data", "emptyDir": {}}])

# default/debug-shell: a bare pod on general-13 (not replicated).
pod("debug-shell", "default", [container("shell", "100m", "64Mi")], node_name="general-13", labels={"run": "debug-shell"})

# data/postgres: a StatefulSet on general-15 and -16, PDB allows one disruption.
pg_labels = {"app": "postgres"}
items.append({"apiVersion": "apps/v1", "kind": "StatefulSet",
              "metadata": {"name": "postgres", "namespace": "data", "uid": uid("StatefulSet", "data", "postgres")},
              "spec": {"replicas": 2, "serviceName": "postgres", "selector": {"matchLabels": pg_labels},
                       "template": {"metadata": {"labels": pg_labels}, "spec": {"containers": [container("postgres", "1", "4Gi")]}}}})
for i, n in enumerate(["general-15", "general-16"]):
    pod(f"postgres-{i}", "data", [container("postgres", "1", "4Gi")], owner=("StatefulSet", "postgres"), node_name=n,
        labels=pg_labels, volumes=[{"name": "pgdata", "persistentVolumeClaim": {"claimName": f"pgdata-postgres-{i}"}}])
pdb("postgres", "data", pg_labels, 1, max_unavailable=1)

# batch/worker: CPU-heavy workers pinned to the compute pool.
worker_labels = {"app": "worker"}
# The queue grew: 10 more workers are pending and the compute pool is full.
replicaset("worker-9b8a7", "batch", 15 + 10, worker_labels)
deployment("worker", "batch", 25, 15, worker_labels, [container("worker", "2", "3Gi")], node_selector={"pool": "compute"})
k = 0
for n in compute[:5]:
    for _ in range(3):
        pod(f"worker-9b8a7-{k:03d}", "batch", [container("worker", "2", "3Gi")], owner=("ReplicaSet", "worker-9b8a7"),
            node_name=n, labels=worker_labels, node_selector={"pool": "compute"})
        k += 1
for _ in range(10):
    pod(f"worker-9b8a7-{k:03d}", "batch", [container("worker", "2", "3Gi")], owner=("ReplicaSet", "worker-9b8a7"),
        labels=worker_labels, node_selector={"pool": "compute"}, pending=True, created=PENDING_SINCE)
    k += 1

# ml/train: a GPU Job on gpu-01; three pending inference replicas need GPUs.
items.append({"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "train-resnet", "namespace": "ml", "uid": uid("Job", "ml", "train-resnet")},
              "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {"containers": [container("train", "2", "8Gi", gpu=1)], "restartPolicy": "Never"}}}})
gpu_toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
pod("train-resnet-x7k2p", "ml", [container("train", "2", "8Gi", gpu=1)], owner=("Job", "train-resnet"), node_name="gpu-01",
    labels={"job-name": "train-resnet"}, tolerations=gpu_toleration, node_selector={"pool": "gpu"})
replicaset("inference-4d5e6", "ml", 3, {"app": "inference"})
for i in range(3):
    pod(f"inference-4d5e6-{i}", "ml", [container("inference", "1", "4Gi", gpu=1)], owner=("ReplicaSet", "inference-4d5e6"),
        labels={"app": "inference"}, tolerations=gpu_toleration, node_selector={"pool": "gpu"}, pending=True,
        created=PENDING_SINCE)

# Pending pods no node group can take.
pod("analytics-bigmem", "batch", [container("analytics", "2", "64Gi")], owner=("Job", "analytics"), labels={"app": "analytics"},
    pending=True, created=PENDING_SINCE)
items.append({"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "analytics", "namespace": "batch", "uid": uid("Job", "batch", "analytics")},
              "spec": {"template": {"spec": {"containers": [container("analytics", "2", "64Gi")], "restartPolicy": "Never"}}}})
replicaset("nvme-cache-1a2b3", "data", 1, {"app": "nvme-cache"})
pod("nvme-cache-1a2b3-0", "data", [container("nvme-cache", "500m", "1Gi")], owner=("ReplicaSet", "nvme-cache-1a2b3"),
    labels={"app": "nvme-cache"}, node_selector={"disktype": "nvme"}, pending=True, created=PENDING_SINCE)
# A low-priority placeholder below the expendable cutoff: never triggers a scale-up.
pod("overprovisioning-0", "default", [container("pause", "1", "1Gi")], owner=("ReplicaSet", "overprovisioning-1"),
    labels={"app": "overprovisioning"}, priority=-100, pending=True, created=PENDING_SINCE)
replicaset("overprovisioning-1", "default", 1, {"app": "overprovisioning"})

# The priority expander's ConfigMap (used with --expander=priority).
items.append({"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
              "data": {"priorities": "10:\n  - .*\n50:\n  - compute\n"}})

# Pod autoscalers: an HPA on the web tier (cpu) and a WPA on the workers (queue depth).
items.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
              "metadata": {"name": "web", "namespace": "frontend"},
              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                       "minReplicas": 10, "maxReplicas": 60,
                       "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                    "target": {"type": "Utilization", "averageUtilization": 60}}}],
                       "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                                                             {"type": "Pods", "value": 4, "periodSeconds": 15}]},
                                    "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                                                  "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
              "status": {"currentReplicas": 25, "desiredReplicas": 25}})
items.append({"apiVersion": "datadoghq.com/v1alpha1", "kind": "WatermarkPodAutoscaler",
              "metadata": {"name": "worker", "namespace": "batch"},
              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
                       "minReplicas": 5, "maxReplicas": 40,
                       "metrics": [{"type": "External", "external": {"metricName": "queue.depth",
                                    "metricSelector": {"matchLabels": {"queue": "jobs"}},
                                    "highWatermark": "100", "lowWatermark": "50"}}]}})

# What the metrics APIs return for them (kubectl get --raw ...), in deploy/examples/metrics.json.
pod_metrics = [{"metadata": {"name": p["metadata"]["name"], "namespace": "frontend", "labels": p["metadata"]["labels"]},
                "timestamp": "2026-11-21T11:59:30Z", "window": "30s",
                "containers": [{"name": "web", "usage": {"cpu": "420m", "memory": "700Mi"}}]}
               for p in items if p["kind"] == "Pod" and p["metadata"]["namespace"] == "frontend"]
metrics = [
    {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetricsList", "metadata": {}, "items": pod_metrics},
    {"apiVersion": "external.metrics.k8s.io/v1beta1", "kind": "ExternalMetricValueList",
     "metadata": {"namespace": "batch"},
     "items": [{"metricName": "queue.depth", "metricLabels": {"queue": "jobs"},
                "timestamp": "2026-11-21T11:59:30Z", "value": "240"}]},
]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics.json"), "w") as f:
    for m in metrics:
        json.dump(m, f, indent=1)
        f.write("\n")

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snapshot.json")
with open(out, "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}, f, indent=1)
    f.write("\n")
print(f"wrote {out}: {len(items)} objects")
