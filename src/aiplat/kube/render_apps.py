"""``storage/``, ``serving/`` and ``workloads/``: where data lives, how inference is reached,
and one runnable example per spec workload.

Workload shape: the pods the plan sized (``plan.pods.pod_groups``: a pod per inference
replica with its tensor/pipeline-parallel GPUs, a training gang in equal pods of at most a
node). Multi-pod training runs as a JobSet, batch inference as a Job, online inference and RAG
as a Deployment per group of replicas (a RAG service's query encoder is its own, with a
Service), each behind the gateway's InferencePool. Each
carries the LocalQueue label, the WorkloadPriorityClass, tolerations and node affinity for
its pool, and a Kueue podset topology annotation: *required* rack when the pods fit in a
rack, *required* block when they fit a block, *preferred* block otherwise.

Serving scales on its SLO (``plan/serving_scale.py`` has the figures): each serving group's
Deployment starts at the planned replicas (the floor, what ``kube.agree`` checks) and a
HorizontalPodAutoscaler (autoscaling/v2) scales it up to the pool's ceiling on three
per-pod metrics vLLM exports, served through prometheus-adapter's custom metrics API
(``serving/autoscaling.yaml`` holds its rules; a headless Service and a ServiceMonitor per
group put the series in Prometheus): ``vllm:num_requests_waiting`` against the
queue the TTFT target allows, the p90 of ``vllm:time_to_first_token_seconds`` against the
target itself, and ``vllm:kv_cache_usage_perc`` against 90 % (a full KV cache makes vLLM
preempt sequences). Names as vLLM v0.11 registers them
(https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/metrics/loggers.py;
``vllm:gpu_cache_usage_perc`` is the deprecated name of the last).

Why an HPA and not KEDA: the floor is at least one replica, so KEDA's one capability the HPA
lacks (scaling to and from zero) buys nothing; a KEDA ScaledObject would add an operator and
a CRD the cluster must run, and KEDA itself creates an HPA underneath. prometheus-adapter is
one Deployment beside the Prometheus the platform already runs, and the HPA is core API that
every ``kube validate`` and every cluster knows. Scale-up has no stabilisation window (a
replica takes minutes to start: ``sim compare`` itemises the chain), scale-down waits 10
minutes so a dip does not throw away a loaded model.

The Deployment carries ``replicas`` = the floor so a first apply starts at the plan's size;
re-applying the tree sets a scaled-up Deployment back to the floor and the HPA scales it
again within a sync period (drop ``replicas`` from the applied fields if that matters).

A pool that autoscales also gets a Kueue ``ProvisioningRequestConfig`` and ``AdmissionCheck``
(``best-effort-atomic-scale-up.autoscaling.x-k8s.io``: the cluster-autoscaler provisions
a workload's nodes all at once or not at all). They are not wired into the ClusterQueues:
a check no controller answers (no cluster-autoscaler with ProvisioningRequest support, as
in aiplat's lab) holds every workload of the flavor pending; add
``admissionChecksStrategy: {admissionChecks: [{name: <pool>-provisioning, onFlavors:
[<pool>]}]}`` to a ClusterQueue where one runs.

A replica that spans nodes (tensor x pipeline parallel GPUs beyond a node) is a
LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``, kubernetes-sigs/lws v0.9.0, its CRD
packaged and installed by the lab): per replica a leader that heads a Ray cluster and serves,
and workers that join it, admitted by Kueue as one group and restarted as one; the HPA
scales its replicas (LWS has a scale subresource) and the metrics come from the leaders.
"""

from __future__ import annotations

import math
from typing import Any

from aiplat.catalog.storage import DEFAULT_PROVISIONERS, driver
from aiplat.kube.facts import POOL_LABEL, RDMA_RESOURCE, PoolFacts, uses_tas
from aiplat.kube.objects import Obj, obj, restricted_security_context, toleration
from aiplat.kube.render_gateway import (
    EPP_GRPC,
    GATEWAY_CLASS,
    endpoint_pickers,
    epp_name,
    gateway_class,
)
from aiplat.kube.render_models import attach_model
from aiplat.kube.render_rdma import rail_names
from aiplat.kube.render_tenants import GATEWAY_NS, MONITORING_NS
from aiplat.kube.yamlout import dump_docs
from aiplat.plan.kubelet import pod_cpus, pod_memory_gib
from aiplat.plan.models import WorkloadPlan
from aiplat.plan.pods import COMPONENTS, PodGroup, pod_groups
from aiplat.plan.serving_scale import ServingScale, serving_scales
from aiplat.sizing.result import precision_bytes
from aiplat.spec.models import Platform, StorageClassSpec, WorkloadSpec

MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"
"""The pod annotation Multus attaches secondary networks by (NAD names, comma-separated)."""

SERVING_PORT = 8000
TRAIN_IMAGE = "nvcr.io/nvidia/pytorch:25.08-py3"
SERVE_IMAGE = "vllm/vllm-openai:v0.11.0"
# vLLM v0.11's metric names (vllm/v1/metrics/loggers.py) and what prometheus-adapter serves
# them as: the custom metrics API's names are path segments, so no colon.
VLLM_METRICS = {
    "vllm:num_requests_waiting": "vllm_num_requests_waiting",
    "vllm:time_to_first_token_seconds": "vllm_time_to_first_token_p90_seconds",
    "vllm:kv_cache_usage_perc": "vllm_kv_cache_usage_perc",
}
KV_CACHE_TARGET = "900m"  # 90 %: headroom before vLLM preempts sequences for KV blocks
SCALE_DOWN_WINDOW_S = 600
PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def _provisioner(sc: StorageClassSpec) -> str:
    return sc.provisioner or DEFAULT_PROVISIONERS[sc.tier]


def _can(sc: StorageClassSpec, what: str) -> bool:
    """Whether the class's driver implements ``what`` (catalog/storage.py); a driver aiplat
    does not know keeps what its tier usually has."""
    d = driver(_provisioner(sc))
    if d is not None:
        return bool(getattr(d, what))
    usual = driver(DEFAULT_PROVISIONERS[sc.tier])
    return usual is not None and bool(getattr(usual, what))


def render_storage(platform: Platform, params: dict[str, float]) -> dict[str, list[Obj]]:
    classes = platform.storage.classes
    out: dict[str, list[Obj]] = {}
    scs = []
    for sc in classes:
        cls = obj("storage.k8s.io/v1", "StorageClass", sc.name,
                  labels={"aiplat.io/tier": sc.tier}, provisioner=_provisioner(sc))
        if sc.parameters:
            cls["parameters"] = dict(sc.parameters)
        cls |= {"reclaimPolicy": "Delete" if sc.tier == "local-nvme" else "Retain",
                "volumeBindingMode": "WaitForFirstConsumer",
                "allowVolumeExpansion": _can(sc, "expansion")}
        scs.append(cls)
    if not scs:
        return out
    out["storage/storageclasses.yaml"] = scs
    snap = [sc for sc in classes if _can(sc, "snapshots")]
    group = [sc for sc in classes if _can(sc, "group_snapshots")]
    if snap or group:
        out["storage/snapshotclasses.yaml"] = [
            *(obj("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass", f"{sc.name}-snapshot",
                  driver=_provisioner(sc), deletionPolicy="Retain") for sc in snap),
            *(obj("groupsnapshot.storage.k8s.io/v1beta2", "VolumeGroupSnapshotClass",
                  f"{sc.name}-group-snapshot", driver=_provisioner(sc), deletionPolicy="Retain")
              for sc in group),
        ]
    pvcs = _tenant_claims(platform, params)
    if pvcs:
        out["storage/pvcs.yaml"] = pvcs
    return out


def _tenant_claims(platform: Platform, params: dict[str, float]) -> list[Obj]:
    """Per tenant: the read-only model cache (file or object tier) and, for training, the
    shared checkpoints (file tier); a static PV first where the driver cannot provision."""
    classes = platform.storage.classes
    shared = next((sc for sc in classes if sc.tier == "file"), None)
    cache_class = _model_cache_class(platform)
    out: list[Obj] = []
    for t in platform.tenants:
        ws = [w for w in platform.workloads if w.tenant == t.name]
        if not ws:
            continue
        if cache_class is not None:
            gib = sum(params[w.name] * precision_bytes(w.precision.value) for w in ws) * 1.2
            out += _claim("model-cache", t.name, cache_class, "ReadOnlyMany",
                          max(10, math.ceil(gib / 2**30)))
        train = [w for w in ws if w.kind.trains]
        if train and shared is not None:
            # weights + fp32 master + Adam moments ≈ 16 bytes/param; keep three checkpoints.
            gib = max(params[w.name] for w in train) * 16 * 3
            out += _claim("checkpoints", t.name, shared, "ReadWriteMany",
                          max(10, math.ceil(gib / 2**30)))
    return out


def _claim(name: str, ns: str, sc: StorageClassSpec, mode: str, gib: int) -> list[Obj]:
    pvc = obj("v1", "PersistentVolumeClaim", name, ns, spec={
        "accessModes": [mode], "storageClassName": sc.name,
        "resources": {"requests": {"storage": f"{gib}Gi"}, "limits": {"storage": f"{gib}Gi"}}})
    if _can(sc, "dynamic") or sc.tier != "object":
        return [pvc]
    # Mountpoint for S3 provisions nothing: a PV names the bucket, one prefix per tenant,
    # bound to exactly this claim.
    pv_name = f"{sc.name}-{ns}-{name}"
    pvc["spec"]["volumeName"] = pv_name
    pv = obj("v1", "PersistentVolume", pv_name, spec={
        "capacity": {"storage": f"{gib}Gi"}, "accessModes": [mode],
        "persistentVolumeReclaimPolicy": "Retain", "storageClassName": sc.name,
        "mountOptions": [f"prefix {ns}/"] + (["read-only"] if mode == "ReadOnlyMany" else []),
        "claimRef": {"namespace": ns, "name": name},
        "csi": {"driver": _provisioner(sc), "volumeHandle": pv_name,
                "volumeAttributes": {"bucketName": sc.parameters.get("bucketName", "")}}})
    return [pv, pvc]


def adapter_rules() -> list[Obj]:
    """prometheus-adapter's rules that serve vLLM's metrics per pod to the HPA (its chart's
    ``rules.custom``; mount this ConfigMap as its config). The series need the ``namespace``
    and ``pod`` labels a pod scrape gives."""
    rules = []
    for metric, name in VLLM_METRICS.items():
        series = metric
        if metric.endswith("_seconds"):  # a histogram: its p90 over the last two minutes
            query = ("histogram_quantile(0.9, sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) "
                     "by (le, <<.GroupBy>>))")
            series = f"{metric}_bucket"
        else:
            query = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
        res = {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}}
        rules.append({"seriesQuery": f'{series}{{namespace!="",pod!=""}}', "resources": res,
                      "name": {"matches": f"^{series}$", "as": name}, "metricsQuery": query})
    return [obj("v1", "Namespace", MONITORING_NS),
            obj("v1", "ConfigMap", "prometheus-adapter-vllm", MONITORING_NS,
                data={"config.yaml": dump_docs([{"rules": rules}])})]


def provisioning(platform: Platform) -> list[Obj]:
    """Per autoscaled pool, Kueue's ProvisioningRequest admission check (not wired into a
    ClusterQueue: the module docstring says why)."""
    out: list[Obj] = []
    for p in platform.pools:
        if p.autoscaling is None:
            continue
        name = f"{p.name}-provisioning"
        api = f"kueue.x-k8s.io/{platform.kubernetes.kueue_api}"
        out.append(obj(api, "ProvisioningRequestConfig", name,
                       spec={"provisioningClassName": PROVISIONING_CLASS}))
        out.append(obj(api, "AdmissionCheck", name, spec={
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                           "name": name}}))
    return out


def autoscaler(scale: ServingScale, target: str) -> Obj:
    """The HPA of one serving group's Deployment ``target``: floor to ceiling, on vLLM's
    metrics against the plan's targets."""
    def pods_metric(series: str, average: str) -> Obj:
        return {"type": "Pods", "pods": {"metric": {"name": VLLM_METRICS[series]},
                                         "target": {"type": "AverageValue",
                                                    "averageValue": average}}}
    metrics = []
    if scale.queue_allowance is not None:
        metrics.append(pods_metric("vllm:num_requests_waiting", str(scale.queue_allowance)))
    if scale.ttft_target_s is not None:
        metrics.append(pods_metric("vllm:time_to_first_token_seconds",
                                   f"{round(scale.ttft_target_s * 1000)}m"))
    metrics.append(pods_metric("vllm:kv_cache_usage_perc", KV_CACHE_TARGET))
    ref = ({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}
           if scale.pods_per_replica > 1 else {"apiVersion": "apps/v1", "kind": "Deployment"})
    return obj("autoscaling/v2", "HorizontalPodAutoscaler", target, scale.tenant, spec={
        "scaleTargetRef": {**ref, "name": target},
        "minReplicas": scale.floor, "maxReplicas": scale.ceiling, "metrics": metrics,
        "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 60},
                {"type": "Pods", "value": 1, "periodSeconds": 60}]},
            "scaleDown": {"stabilizationWindowSeconds": SCALE_DOWN_WINDOW_S, "policies": [
                {"type": "Pods", "value": 1, "periodSeconds": 120}]}}})


def scrape(platform: Platform, w: WorkloadSpec, g: PodGroup) -> list[Obj]:
    """What puts a serving group's vLLM metrics in Prometheus with the ``namespace`` and
    ``pod`` labels the adapter's rules need: a headless Service over its pods and a
    prometheus-operator ServiceMonitor on it, labelled for the Prometheus's selector."""
    name = f"{w.name}-metrics"
    sel = _app_labels(w, g)
    labels = {"app.kubernetes.io/name": name, "aiplat.io/metrics": "vllm"}
    return [
        obj("v1", "Service", name, w.tenant, labels=labels, spec={
            "clusterIP": "None", "selector": sel,
            "ports": [{"name": "http", "port": SERVING_PORT, "targetPort": "http"}]}),
        obj("monitoring.coreos.com/v1", "ServiceMonitor", name, w.tenant,
            labels={**platform.operations.monitoring.selector_labels, **labels}, spec={
                "selector": {"matchLabels": labels},
                "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}]}),
    ]


def render_serving(platform: Platform) -> dict[str, list[Obj]]:
    online = [w for w in platform.workloads if w.kind.serves]
    if not online:
        return {}
    gw = "gateway.networking.k8s.io/v1"
    objs: list[Obj] = [
        obj("v1", "Namespace", GATEWAY_NS, labels={
            "pod-security.kubernetes.io/enforce": "restricted"}),
        obj(gw, "Gateway", "aiplat-inference", GATEWAY_NS, spec={
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80,
                           "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
                               "matchExpressions": [{"key": "aiplat.io/tenant",
                                                     "operator": "Exists"}]}}}}]}),
    ]
    for w in online:
        labels = {"app.kubernetes.io/name": w.name}
        objs.append(obj("inference.networking.k8s.io/v1", "InferencePool", w.name, w.tenant,
                        spec={"selector": {"matchLabels": labels},
                              "targetPorts": [{"number": SERVING_PORT}],
                              "endpointPickerRef": {"name": epp_name(w), "port":
                                                    {"number": EPP_GRPC}}}))
        objs.append(obj(gw, "HTTPRoute", w.name, w.tenant, spec={
            "parentRefs": [{"name": "aiplat-inference", "namespace": GATEWAY_NS}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": f"/{w.name}"}}],
                       "backendRefs": [{"group": "inference.networking.k8s.io",
                                        "kind": "InferencePool", "name": w.name}]}]}))
    return {"serving/gateway.yaml": [gateway_class(platform), *objs],
            "serving/endpoint-pickers.yaml": endpoint_pickers(platform),
            "serving/autoscaling.yaml": [*adapter_rules(), *provisioning(platform)]}


def topology_annotation(pool: PoolFacts, pods: int) -> dict[str, str]:
    """The podset's topology request on a TAS pool. A flavor with a Topology admits only
    podsets that ask for one ("supports only TopologyAwareScheduling"), so a single pod
    (and each pod of a Deployment, a workload of its own) asks for none in particular."""
    if not uses_tas(pool):
        return {}
    if pods <= 1:
        return {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    t = pool.spec.topology
    if pods <= pool.nodes_per_rack:
        return {"kueue.x-k8s.io/podset-required-topology": t.rack_label}
    if pods <= pool.nodes_per_rack * t.racks_per_block:
        return {"kueue.x-k8s.io/podset-required-topology": t.block_label}
    return {"kueue.x-k8s.io/podset-preferred-topology": t.block_label}


def _priority(w: WorkloadSpec) -> str:
    if w.kind.serves:
        return "serving"
    return "training" if w.kind.trains else "batch"


def _app_labels(w: WorkloadSpec, g: PodGroup) -> dict[str, str]:
    """The pods' name (the InferencePool selects the workload's serving pods by it; a RAG
    query encoder is an app of its own) and, where a workload has several kinds of pod,
    their component."""
    name = f"{w.name}-{g.role}" if g.role == "embed" else w.name
    labels = {"app.kubernetes.io/name": name}
    if g.role in COMPONENTS:
        labels["app.kubernetes.io/component"] = g.role
    return labels


def _pod_template(platform: Platform, w: WorkloadSpec, pool: PoolFacts, g: PodGroup, *,
                  gang: int) -> Obj:
    """One pod of group ``g``; ``gang`` is how many pods Kueue admits together (a
    Deployment's pods are each a workload of their own)."""
    serving = _priority(w) == "serving"
    per_pod = g.gpus
    labels = _app_labels(w, g)
    if serving:
        labels["aiplat.io/serving"] = "true"
    container: Obj = {
        "name": "main",
        "image": SERVE_IMAGE if serving else TRAIN_IMAGE,
        "resources": {},
        "securityContext": {**restricted_security_context(), "runAsUser": 1000},
    }
    # POD_SHARE of allocatable, the rest left for DaemonSets; CPUs in whole cores where the
    # kubelet pins whole cores (plan.kubelet: the simulator's jobs ask the same)
    cpu = pod_cpus(pool.spec, per_pod)
    mem = pod_memory_gib(pool.spec, per_pod)
    requests: dict[str, Any] = {"cpu": str(cpu), "memory": f"{mem}Gi"}
    # Limits equal to requests: Guaranteed QoS, which the kubelet's static CPU and memory
    # managers need to pin the pod, and never a default limit below the request.
    container["resources"]["limits"] = {"cpu": str(cpu), "memory": f"{mem}Gi"}
    spec: Obj = {}
    if pool.gpu is not None:
        mig = pool.spec.sharing.mig_layout
        if pool.gpu_mode == "device-plugin":
            res = f"nvidia.com/mig-{mig[0]}" if mig else "nvidia.com/gpu"
            requests[res] = str(per_pod)  # as stored: JobSet keeps what it is given
            container["resources"]["limits"][res] = str(per_pod)
        else:
            if mig:
                template = f"{pool.name}-mig-{mig[0]}"
            elif per_pod == 2:
                template = f"{pool.name}-gpu-pair"
            else:  # render_tenants.claim_templates renders one for each pod size
                template = f"{pool.name}-gpu-{per_pod}"
            spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": template}]
            container["resources"]["claims"] = [{"name": "gpus"}]
    container["resources"]["requests"] = requests
    networks: Obj = {}
    if w.kind.trains and gang > 1 and pool.rdma:
        networks = _rdma(platform, w, pool, container)
    if serving:
        container["ports"] = [{"name": "http", "containerPort": SERVING_PORT}]
    spec.update({
        "priorityClassName": f"aiplat-{'training' if w.kind.trains else _priority(w)}",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": POOL_LABEL, "operator": "In", "values": [pool.name]}]}]}}},
        "tolerations": [toleration(t.key, t.value, t.effect.value) for t in pool.taints],
        "containers": [container],
    })
    if not serving:
        spec["restartPolicy"] = "Never"  # a Job's pods (a Deployment's must be Always)
    # NCCL and PyTorch data loaders use /dev/shm; the container runtime's default is 64 MiB.
    shm = f"{max(1, min(64, mem // 4))}Gi"
    spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}}]
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if serving:
        # The server answers /health once the model is loaded: minutes for a 70B model, so
        # a generous startup budget, then readiness that takes a stuck replica out of the pool.
        probe = {"httpGet": {"path": "/health", "port": "http"}}
        container["startupProbe"] = {**probe, "periodSeconds": 10, "failureThreshold": 180}
        container["readinessProbe"] = {**probe, "periodSeconds": 5, "failureThreshold": 3}
        attach_model(platform, w, spec, container, g,
                     model_cache_pvc=_model_cache_class(platform) is not None,
                     local_disk=_disk_per_pod(pool, per_pod))
    meta: Obj = {"labels": labels}
    ann = {**topology_annotation(pool, gang), **networks}
    if ann:
        meta["annotations"] = ann
    return {"metadata": meta, "spec": spec}


def _disk_per_pod(pool: PoolFacts, per_pod: int) -> bool:
    """Whether every pod of ``per_pod`` GPUs that fits a node can have a local NVMe disk of
    its own (the local static provisioner's one volume per disk)."""
    disks = pool.spec.node.nvme.count if pool.spec.node.nvme else 1
    return max(1, pool.gpus_per_node) // max(1, per_pod) <= disks


def _rdma(platform: Platform, w: WorkloadSpec, pool: PoolFacts, container: Obj) -> Obj:
    """A gang across nodes on an RDMA fabric: the HCAs (RDMA shared device plugin) and
    NCCL told to use them. IPC_LOCK (NCCL pins its buffers) only where the tenant's Pod
    Security level admits it: 'restricted' and 'baseline' refuse the capability, so there
    the container runtime's memlock limit must be unlimited (lint says so). Returns the
    pod's annotations: Multus attaches its rails' networks where the tree has them
    (``render_rdma.rail_names``; the NADs are the tenant's, rendered for the same pools)."""
    res = container["resources"]
    res["requests"][RDMA_RESOURCE] = "1"
    res["limits"][RDMA_RESOURCE] = "1"
    env = [{"name": "NCCL_IB_HCA", "value": "mlx5"},
           {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
           {"name": "NCCL_DEBUG", "value": "WARN"}]
    if pool.rdma == "roce":
        env.append({"name": "NCCL_IB_GID_INDEX", "value": "3"})  # RoCE v2 GID
    container["env"] = env
    tenant = next((t for t in platform.tenants if t.name == w.tenant), None)
    if tenant is not None and tenant.pod_security == "privileged":
        container["securityContext"]["capabilities"] = {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    rails = rail_names(platform, pool.name)
    return {MULTUS_NETWORKS: ",".join(rails)} if rails else {}


def _model_cache_class(platform: Platform) -> StorageClassSpec | None:
    """The class of each tenant's ``model-cache`` PVC: the first file or object class."""
    return next((sc for sc in platform.storage.classes if sc.tier in ("file", "object")), None)


def render_workloads(platform: Platform, pools: list[PoolFacts],
                     sized: dict[str, WorkloadPlan]) -> dict[str, list[Obj]]:
    """Per workload, the pods the plan sized (``plan.pods``): a Deployment per group of
    serving replicas, a JobSet for a training gang across nodes, a Job otherwise."""
    by_name = {p.name: p for p in pools}
    scales = {s.workload: s for s in serving_scales(
        platform, list(sized.values()), {p.name: (p.nodes, p.gpus_per_node) for p in pools})}
    objs: list[Obj] = []
    for w in platform.workloads:
        size = sized[w.name]
        pool = by_name[size.pool]
        for g in pod_groups(size, pool.gpus_per_node, mig=bool(pool.spec.sharing.mig_layout)):
            objs += _workload_objects(platform, w, pool, g)
            scale = scales.get(w.name)
            if scale is not None and g.role == scale.role and not pool.spec.sharing.mig_layout:
                objs += [autoscaler(scale, w.name), *scrape(platform, w, g)]
    return {"workloads/examples.yaml": objs} if objs else {}


# vLLM across nodes runs on a Ray cluster the leader heads (vLLM's multi-node serving and
# LWS's vLLM example); the leader then serves with the ray executor. The vLLM arguments stay
# positional parameters of the script ("$@"), never part of its text.
RAY_PORT = 6379
LEADER_SCRIPT = (f"ray start --head --port={RAY_PORT} && "
                 'exec vllm serve "$@" --distributed-executor-backend ray')
WORKER_SCRIPT = f'exec ray start --block --address="$LWS_LEADER_ADDRESS:{RAY_PORT}"'


def _leader_worker_set(platform: Platform, w: WorkloadSpec, pool: PoolFacts, g: PodGroup, *,
                       name: str, labels: dict[str, str]) -> Obj:
    """A serving group whose replica spans ``pods_per_replica`` nodes: a LeaderWorkerSet of
    ``replicas`` groups (Kueue admits each group whole). The leader serves; the workers hold
    the other GPUs of the replica in its Ray cluster and load their share of the weights."""
    leader = _pod_template(platform, w, pool, g, gang=g.pods_per_replica)
    worker = _pod_template(platform, w, pool, g, gang=g.pods_per_replica)
    main = leader["spec"]["containers"][0]
    main["command"] = ["/bin/sh", "-c", LEADER_SCRIPT, "vllm"]
    wmain = worker["spec"]["containers"][0]
    wmain["command"] = ["/bin/sh", "-c", WORKER_SCRIPT]
    wmain.pop("args", None)
    for key in ("ports", "startupProbe", "readinessProbe"):
        wmain.pop(key, None)
    # not an endpoint: the InferencePool and the metrics Service select the leaders only
    worker["metadata"]["labels"].pop("aiplat.io/serving", None)
    worker["metadata"]["labels"]["app.kubernetes.io/name"] = f"{name}-worker"
    worker["metadata"]["labels"]["app.kubernetes.io/component"] = "worker"
    return obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", name, w.tenant,
               labels=labels, spec={
                   "replicas": g.replicas,
                   "leaderWorkerTemplate": {
                       "size": g.pods_per_replica,
                       # a lost worker breaks the replica's Ray cluster: restart it whole
                       "restartPolicy": "RecreateGroupOnPodRestart",
                       "leaderTemplate": leader, "workerTemplate": worker}})


def _workload_objects(platform: Platform, w: WorkloadSpec, pool: PoolFacts,
                      g: PodGroup) -> list[Obj]:
    labels = {"kueue.x-k8s.io/queue-name": w.tenant,
              "kueue.x-k8s.io/priority-class": _priority(w)}
    # prefill, decode and the encoder run beside the workload's own pods, under their own name
    name = f"{w.name}-{g.role}" if g.role in COMPONENTS else w.name
    if _priority(w) == "serving":
        sel = _app_labels(w, g)
        if g.pods_per_replica > 1:  # a replica spans nodes: one leader and its workers
            return [_leader_worker_set(platform, w, pool, g, name=name, labels=labels)]
        out = [obj("apps/v1", "Deployment", name, w.tenant, labels=labels, spec={
            "replicas": g.pods, "selector": {"matchLabels": sel},
            "template": _pod_template(platform, w, pool, g, gang=1)})]
        if g.pods >= 2:  # one replica may go at a time; a single replica must be drainable
            out.append(obj("policy/v1", "PodDisruptionBudget", name, w.tenant, spec={
                "maxUnavailable": 1, "selector": {"matchLabels": sel}}))
        if g.role == "embed":  # the RAG service embeds its queries here
            out.append(obj("v1", "Service", name, w.tenant, labels=sel, spec={
                "selector": sel, "ports": [{"name": "http", "port": SERVING_PORT,
                                            "targetPort": "http"}]}))
        return out
    # A preemption or a drained node (pod condition DisruptionTarget) is not the job's
    # fault: it does not count against backoffLimit, so one eviction does not fail a run
    # of days; a real failure of a pod still does.
    job_spec = {"parallelism": g.pods, "completions": g.pods, "completionMode": "Indexed",
                "backoffLimit": 0, "podFailurePolicy": {"rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget",
                                                             "status": "True"}]}]},
                "template": _pod_template(platform, w, pool, g, gang=g.pods)}
    if g.pods > 1 and w.kind.trains:
        # A failed worker restarts the whole gang (from its last checkpoint), a few times.
        return [obj("jobset.x-k8s.io/v1alpha2", "JobSet", name, w.tenant, labels=labels, spec={
            "failurePolicy": {"maxRestarts": 3},
            "replicatedJobs": [{"name": "workers", "replicas": 1,
                                "template": {"spec": job_spec}}]})]
    # No suspend: true here. Kueue's webhook suspends queued Jobs and JobSets on creation; a
    # rendered suspend would, on the next apply, take the field back from Kueue and stop
    # every running job.
    return [obj("batch/v1", "Job", name, w.tenant, labels=labels, spec=job_spec)]
