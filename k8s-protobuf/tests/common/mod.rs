//! Rich `Node` and `Pod` fixtures shared by the test files. Written as JSON (what `kubectl get -o
//! json` shows) so they read like real manifests; values avoid what the Go rules deliberately
//! normalise (empty strings and lists, which decode to `None`).

#![allow(dead_code)] // each test file uses its part

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

pub fn rich_node() -> Node {
    serde_json::from_value(rich_node_json()).expect("valid node")
}

pub fn rich_pod() -> Pod {
    serde_json::from_value(rich_pod_json()).expect("valid pod")
}

pub fn rich_node_json() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "template-gpu-pool-1",
            "uid": "6a1b5c2e-0000-4000-8000-000000000001",
            "resourceVersion": "12345",
            "generation": 3,
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "labels": {
                "kubernetes.io/hostname": "template-gpu-pool-1",
                "node.kubernetes.io/instance-type": "g5.xlarge",
                "topology.kubernetes.io/zone": "eu-west-1a",
                "nvidia.com/gpu.present": "true"
            },
            "annotations": { "cluster-autoscaler.kubernetes.io/scale-down-disabled": "false" },
            "finalizers": ["example.com/protect"],
            "ownerReferences": [{
                "apiVersion": "cluster.x-k8s.io/v1beta1",
                "kind": "Machine",
                "name": "gpu-pool-1-abcde",
                "uid": "6a1b5c2e-0000-4000-8000-000000000002",
                "controller": true,
                "blockOwnerDeletion": false
            }],
            "managedFields": [{
                "manager": "kubelet",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-05-06T07:08:10Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": { "f:metadata": { "f:labels": { ".": {}, "f:kubernetes.io/hostname": {} } } },
                "subresource": "status"
            }]
        },
        "spec": {
            "providerID": "aws:///eu-west-1a/i-0123456789abcdef0",
            "podCIDR": "10.1.2.0/24",
            "podCIDRs": ["10.1.2.0/24", "fd00:1:2::/64"],
            "unschedulable": false,
            "taints": [
                { "key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule" },
                { "key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2024-05-06T08:00:00Z" }
            ],
            "configSource": { "configMap": {
                "namespace": "kube-system", "name": "kubelet-config", "kubeletConfigKey": "kubelet", "uid": "u1", "resourceVersion": "7"
            } }
        },
        "status": {
            "capacity": {
                "cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "1", "ephemeral-storage": "100Gi"
            },
            "allocatable": {
                "cpu": "3920m", "memory": "15464Mi", "pods": "110", "nvidia.com/gpu": "1", "ephemeral-storage": "95Gi"
            },
            "phase": "Running",
            "conditions": [
                {
                    "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2024-05-06T09:00:00Z", "lastTransitionTime": "2024-05-06T07:09:00Z"
                },
                { "type": "MemoryPressure", "status": "False", "lastTransitionTime": "2024-05-06T07:09:00Z" }
            ],
            "addresses": [
                { "type": "InternalIP", "address": "10.0.1.17" },
                { "type": "Hostname", "address": "ip-10-0-1-17.eu-west-1.compute.internal" }
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": {
                "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1.0",
                "osImage": "Bottlerocket", "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.33.0", "kubeProxyVersion": "v1.33.0",
                "operatingSystem": "linux", "architecture": "amd64",
                "swap": { "capacity": 0 }
            },
            "images": [
                { "names": ["registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause:3.10"], "sizeBytes": 320368 }
            ],
            "volumesInUse": ["kubernetes.io/csi/ebs.csi.aws.com^vol-1"],
            "volumesAttached": [{ "name": "kubernetes.io/csi/ebs.csi.aws.com^vol-1", "devicePath": "/dev/xvdba" }],
            "config": {
                "assigned": { "configMap": { "namespace": "kube-system", "name": "c", "kubeletConfigKey": "k" } },
                "error": "oops"
            },
            "runtimeHandlers": [
                { "name": "runc", "features": { "recursiveReadOnlyMounts": true, "userNamespaces": false } }
            ],
            "features": { "supplementalGroupsPolicy": true }
        }
    })
}

pub fn rich_pod_json() -> Value {
    let probe = |port: serde_json::Value| {
        json!({
            "httpGet": { "path": "/healthz", "port": port, "scheme": "HTTP",
                         "httpHeaders": [{ "name": "X-Probe", "value": "1" }] },
            "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1,
            "successThreshold": 1, "failureThreshold": 3, "terminationGracePeriodSeconds": 0
        })
    };
    let selector = json!({
        "matchLabels": { "app": "web" },
        "matchExpressions": [
            { "key": "tier", "operator": "In", "values": ["frontend", "edge"] },
            { "key": "canary", "operator": "DoesNotExist" }
        ]
    });
    // In three parts to keep each json! under the macro recursion limit.
    let head = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-7d4b9c-xyz12",
            "generateName": "web-7d4b9c-",
            "namespace": "shop",
            "uid": "0b6e2f3a-0000-4000-8000-000000000003",
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "deletionTimestamp": "2024-05-06T10:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "labels": { "app": "web", "tier": "frontend", "pod-template-hash": "7d4b9c" },
            "annotations": { "cluster-autoscaler.kubernetes.io/safe-to-evict": "true" },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c",
                "uid": "0b6e2f3a-0000-4000-8000-000000000004", "controller": true, "blockOwnerDeletion": true
            }]
        }
    });
    let spec = json!({
        "spec": {
            "initContainers": [
                {
                    "name": "migrate", "image": "shop/migrate:1.2", "command": ["/migrate"], "args": ["--up"],
                    "resources": { "requests": { "cpu": "100m", "memory": "64Mi" } }
                },
                {
                    "name": "log-shipper", "image": "fluent/fluent-bit:3", "restartPolicy": "Always",
                    "resources": { "requests": { "cpu": "50m", "memory": "32Mi" }, "limits": { "memory": "64Mi" } },
                    "startupProbe": { "exec": { "command": ["cat", "/ready"] }, "failureThreshold": 30 }
                }
            ],
            "containers": [
                {
                    "name": "web", "image": "shop/web:2.0", "imagePullPolicy": "IfNotPresent", "workingDir": "/srv",
                    "ports": [
                        { "name": "http", "containerPort": 8080, "protocol": "TCP" },
                        { "name": "metrics", "containerPort": 9090, "hostPort": 19090, "hostIP": "0.0.0.0", "protocol": "TCP" }
                    ],
                    "env": [
                        { "name": "MODE", "value": "prod" },
                        { "name": "POD_IP", "valueFrom": { "fieldRef": { "apiVersion": "v1", "fieldPath": "status.podIP" } } },
                        { "name": "LIMIT", "valueFrom": { "resourceFieldRef": { "containerName": "web", "resource": "limits.cpu", "divisor": "1m" } } },
                        { "name": "PASS", "valueFrom": { "secretKeyRef": { "name": "db", "key": "password", "optional": false } } },
                        { "name": "FLAG", "valueFrom": { "configMapKeyRef": { "name": "flags", "key": "flag" } } }
                    ],
                    "envFrom": [
                        { "prefix": "CFG_", "configMapRef": { "name": "web-config", "optional": true } },
                        { "secretRef": { "name": "web-secret" } }
                    ],
                    "resources": {
                        "requests": { "cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1" },
                        "limits": { "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1" },
                        "claims": [{ "name": "gpu", "request": "a" }]
                    },
                    "resizePolicy": [{ "resourceName": "cpu", "restartPolicy": "NotRequired" }],
                    "livenessProbe": probe(json!(8080)),
                    "readinessProbe": probe(json!("http")),
                    "startupProbe": {
                        "tcpSocket": { "port": "http" }, "failureThreshold": 60
                    },
                    "lifecycle": {
                        "preStop": { "sleep": { "seconds": 5 } },
                        "postStart": { "httpGet": { "path": "/warm", "port": 8080 } }
                    },
                    "volumeMounts": [
                        { "name": "cache", "mountPath": "/cache" },
                        { "name": "config", "mountPath": "/etc/web", "readOnly": true, "subPath": "web.yaml" }
                    ],
                    "volumeDevices": [{ "name": "raw", "devicePath": "/dev/xvdz" }],
                    "securityContext": {
                        "runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true, "readOnlyRootFilesystem": true,
                        "allowPrivilegeEscalation": false, "privileged": false,
                        "capabilities": { "add": ["NET_BIND_SERVICE"], "drop": ["ALL"] },
                        "seccompProfile": { "type": "RuntimeDefault" },
                        "appArmorProfile": { "type": "Localhost", "localhostProfile": "web" },
                        "seLinuxOptions": { "type": "spc_t", "level": "s0" }
                    },
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "stdin": false, "tty": false
                },
                {
                    "name": "grpc-sidecar", "image": "shop/grpc:1",
                    "livenessProbe": { "grpc": { "port": 9000, "service": "health" } },
                    "resources": { "requests": { "cpu": "10m" } }
                }
            ],
            "ephemeralContainers": [
                { "name": "debugger", "image": "busybox", "targetContainerName": "web", "stdin": true, "tty": true,
                  "command": ["sh"] }
            ],
            "volumes": [
                { "name": "cache", "emptyDir": { "medium": "Memory", "sizeLimit": "1Gi" } },
                { "name": "host", "hostPath": { "path": "/var/log", "type": "Directory" } },
                { "name": "data", "persistentVolumeClaim": { "claimName": "web-data", "readOnly": false } },
                { "name": "config", "configMap": {
                    "name": "web-config", "defaultMode": 420, "optional": false,
                    "items": [{ "key": "web.yaml", "path": "web.yaml", "mode": 256 }]
                } },
                { "name": "secret", "secret": { "secretName": "web-secret", "defaultMode": 256 } },
                { "name": "projected", "projected": { "defaultMode": 420, "sources": [
                    { "serviceAccountToken": { "audience": "vault", "expirationSeconds": 3600, "path": "token" } },
                    { "configMap": { "name": "ca", "items": [{ "key": "ca.crt", "path": "ca.crt" }] } },
                    { "secret": { "name": "s", "optional": true } },
                    { "downwardAPI": { "items": [{ "path": "labels", "fieldRef": { "fieldPath": "metadata.labels" } }] } },
                    { "clusterTrustBundle": { "signerName": "example.com/s", "labelSelector": { "matchLabels": { "a": "b" } }, "path": "b.pem" } }
                ] } },
                { "name": "podinfo", "downwardAPI": { "items": [
                    { "path": "cpu", "resourceFieldRef": { "containerName": "web", "resource": "requests.cpu", "divisor": "1m" } }
                ] } },
                { "name": "csi", "csi": { "driver": "secrets-store.csi.k8s.io", "readOnly": true,
                                          "volumeAttributes": { "secretProviderClass": "web" },
                                          "nodePublishSecretRef": { "name": "creds" } } },
                { "name": "scratch", "ephemeral": { "volumeClaimTemplate": {
                    "metadata": { "labels": { "type": "scratch" } },
                    "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                              "resources": { "requests": { "storage": "10Gi" } },
                              "dataSourceRef": { "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap" } }
                } } },
                { "name": "model", "image": { "reference": "shop/model:1", "pullPolicy": "IfNotPresent" } },
                { "name": "nfs", "nfs": { "server": "nfs.local", "path": "/export" } },
                { "name": "raw", "awsElasticBlockStore": { "volumeID": "vol-1", "fsType": "ext4", "partition": 1 } }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 45,
            "activeDeadlineSeconds": 600,
            "dnsPolicy": "ClusterFirst",
            "dnsConfig": { "nameservers": ["1.1.1.1"], "searches": ["shop.svc.cluster.local"],
                           "options": [{ "name": "ndots", "value": "2" }, { "name": "edns0" }] },
            "nodeSelector": { "kubernetes.io/os": "linux" },
            "serviceAccountName": "web",
            "serviceAccount": "web",
            "automountServiceAccountToken": false,
            "nodeName": "ip-10-0-1-17",
            "hostNetwork": false,
            "shareProcessNamespace": true,
            "securityContext": {
                "fsGroup": 2000, "fsGroupChangePolicy": "OnRootMismatch", "supplementalGroups": [3000, 3001],
                "supplementalGroupsPolicy": "Merge", "sysctls": [{ "name": "net.core.somaxconn", "value": "1024" }],
                "seccompProfile": { "type": "Localhost", "localhostProfile": "profiles/web.json" },
                "windowsOptions": { "runAsUserName": "web", "hostProcess": false }
            },
            "imagePullSecrets": [{ "name": "regcred" }],
            "hostname": "web-0",
            "subdomain": "web",
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                        { "matchExpressions": [{ "key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge", "g5.2xlarge"] }] },
                        { "matchFields": [{ "key": "metadata.name", "operator": "NotIn", "values": ["bad-node"] }] }
                    ] },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        { "weight": 50, "preference": { "matchExpressions": [{ "key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"] }] } }
                    ]
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        { "labelSelector": { "matchLabels": { "app": "cache" } }, "topologyKey": "topology.kubernetes.io/zone",
                          "namespaces": ["shop"], "namespaceSelector": { "matchLabels": { "team": "shop" } } }
                    ]
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        { "labelSelector": selector.clone(), "topologyKey": "kubernetes.io/hostname",
                          "matchLabelKeys": ["pod-template-hash"], "mismatchLabelKeys": ["canary"] }
                    ],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        { "weight": 100, "podAffinityTerm": { "labelSelector": selector.clone(), "topologyKey": "topology.kubernetes.io/zone" } }
                    ]
                }
            },
            "schedulerName": "default-scheduler",
            "tolerations": [
                { "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule" },
                { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
                { "key": "dedicated", "operator": "Equal", "value": "shop" }
            ],
            "hostAliases": [{ "ip": "10.0.0.1", "hostnames": ["db.local", "cache.local"] }],
            "priorityClassName": "high",
            "priority": 1000,
            "readinessGates": [{ "conditionType": "example.com/ready" }],
            "runtimeClassName": "nvidia",
            "enableServiceLinks": false,
            "preemptionPolicy": "PreemptLowerPriority",
            "overhead": { "cpu": "250m", "memory": "120Mi" },
            "topologySpreadConstraints": [
                { "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": selector, "minDomains": 2, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore",
                  "matchLabelKeys": ["pod-template-hash"] },
                { "maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway" }
            ],
            "setHostnameAsFQDN": false,
            "os": { "name": "linux" },
            "hostUsers": true,
            "schedulingGates": [{ "name": "example.com/quota" }],
            "resourceClaims": [{ "name": "gpu", "resourceClaimTemplateName": "gpu-template" }],
            "resources": { "requests": { "cpu": "2" }, "limits": { "cpu": "4" } }
        }
    });
    let status = json!({
        "status": {
            "phase": "Running",
            "conditions": [
                { "type": "Ready", "status": "True", "lastTransitionTime": "2024-05-06T07:09:00Z", "observedGeneration": 1 },
                { "type": "PodScheduled", "status": "True", "lastProbeTime": "2024-05-06T07:08:10Z",
                  "lastTransitionTime": "2024-05-06T07:08:10Z", "reason": "Scheduled", "message": "ok" }
            ],
            "hostIP": "10.0.1.17",
            "hostIPs": [{ "ip": "10.0.1.17" }],
            "podIP": "10.1.2.3",
            "podIPs": [{ "ip": "10.1.2.3" }, { "ip": "fd00:1:2::3" }],
            "startTime": "2024-05-06T07:08:11Z",
            "qosClass": "Burstable",
            "nominatedNodeName": "ip-10-0-1-18",
            "initContainerStatuses": [{
                "name": "migrate", "ready": false, "restartCount": 0, "image": "shop/migrate:1.2", "imageID": "sha256:1",
                "state": { "terminated": { "exitCode": 0, "reason": "Completed",
                                           "startedAt": "2024-05-06T07:08:12Z", "finishedAt": "2024-05-06T07:08:20Z",
                                           "containerID": "containerd://a" } }
            }],
            "containerStatuses": [{
                "name": "web", "ready": true, "restartCount": 2, "image": "shop/web:2.0", "imageID": "sha256:2",
                "containerID": "containerd://b", "started": true,
                "state": { "running": { "startedAt": "2024-05-06T07:08:30Z" } },
                "lastState": { "terminated": { "exitCode": 137, "signal": 9, "reason": "OOMKilled", "message": "oom",
                                               "startedAt": "2024-05-06T07:08:21Z", "finishedAt": "2024-05-06T07:08:29Z" } },
                "allocatedResources": { "cpu": "500m" },
                "resources": { "requests": { "cpu": "500m" } },
                "volumeMounts": [{ "name": "cache", "mountPath": "/cache", "readOnly": false }],
                "user": { "linux": { "uid": 1000, "gid": 1000, "supplementalGroups": [3000] } },
                "allocatedResourcesStatus": [{ "name": "claim:gpu", "resources": [{ "resourceID": "gpu-0", "health": "Healthy" }] }],
                "stopSignal": "SIGTERM"
            }],
            "ephemeralContainerStatuses": [{
                "name": "debugger", "ready": false, "restartCount": 0, "image": "busybox", "imageID": "sha256:3",
                "state": { "waiting": { "reason": "ContainerCreating", "message": "pulling" } }
            }],
            "resize": "InProgress",
            "resourceClaimStatuses": [{ "name": "gpu", "resourceClaimName": "web-gpu-abc" }],
            "observedGeneration": 1
        }
    });
    let mut pod = head;
    for part in [spec, status] {
        pod.as_object_mut().unwrap().extend(part.as_object().unwrap().clone());
    }
    pod
}
