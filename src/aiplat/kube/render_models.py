"""How a serving pod gets its model: the weights mounted the Kubernetes way.

Three ways, chosen once per platform (``model_mount``):

- ``image-volume``: the ModelPack artifact in the registry is a pod volume
  (``volumes[].image``). The kubelet has it from Kubernetes 1.35 by default (ImageVolume:
  alpha 1.31, beta off 1.33-1.34, beta on 1.35, GA 1.36; k8s.io/kubernetes
  pkg/features/kube_features.go), but the runtime must mount an OCI *artifact*, not just a
  runnable image: CRI-O does from 1.33 (cri-o/cri-o#9062, ``[crio.image]
  oci_artifact_mount_support``, on by default); containerd mounts runnable images only
  (containerd/containerd#11381, open). ``auto`` takes it only when the target minor has the
  gate on by default and every approved runtime is CRI-O >= 1.33: on 1.33-1.34 the gate would
  have to be switched on in every kubelet and the API server, which the tree does not do.
  The kubelet does not check signatures: an admission policy (cosign's policy-controller,
  Kyverno verifyImages) has to; the init container does it itself.
- ``init-container``: ``aiplat model pull REF --policy`` into the pod's own cache volume (a
  generic ephemeral volume on the spec's ``cacheClass``, or on the local-nvme class, which
  binds on the pod's node, when the node has a disk for each such pod; else an emptyDir), then
  ``--link`` a stable path at the snapshot. Not a hostPath shared by the node's pods: Pod
  Security 'restricted' (the tenants' level) refuses hostPath volumes.
- no model store in the spec: the tenant's ``model-cache`` PVC (pre-populated, read-only)
  when ``storage/`` renders one.

Either way the vLLM container gets the model path, its name, the tensor-parallel size (the
pod's GPUs) and the context length as arguments (the image's entrypoint is ``vllm serve``).
"""

from __future__ import annotations

import math
import re

from aiplat import __version__
from aiplat.kube.objects import Obj, obj, restricted_security_context
from aiplat.plan.pods import PodGroup
from aiplat.spec.models import ModelStoreSpec, Platform, WorkloadSpec

MODELS_DIR = "/models"
TRUST_CONFIGMAP = "aiplat-model-trust"
TRUST_DIR = "/etc/aiplat/trust"
IMAGE_VOLUME_DEFAULT_MINOR = 35  # ImageVolume beta and on by default (GA 1.36)
CRIO_ARTIFACT_MOUNTS = (1, 33)  # CRI-O mounts OCI artifacts as image volumes
PULLER_RESOURCES = {"cpu": "2", "memory": "4Gi"}


def model_mount(platform: Platform) -> str:
    """image-volume, init-container, or pvc (no model store in the spec)."""
    store = platform.storage.model_store
    if store is None:
        return "pvc"
    if store.mount != "auto":
        return store.mount
    minor = int(platform.kubernetes.version.split(".")[1])
    runtimes = [e.container_runtime for e in platform.versions.approved if e.container_runtime]
    artifacts = bool(runtimes) and all(_mounts_artifacts(r) for r in runtimes)
    return "image-volume" if minor >= IMAGE_VOLUME_DEFAULT_MINOR and artifacts else "init-container"


def _mounts_artifacts(runtime: str) -> bool:
    m = re.match(r"^\s*(cri-?o)\s+v?(\d+)\.(\d+)", runtime, re.IGNORECASE)
    return m is not None and (int(m.group(2)), int(m.group(3))) >= CRIO_ARTIFACT_MOUNTS


def model_name(w: WorkloadSpec) -> str:
    """The repository name of the workload's model (the workload's own for an inline shape)."""
    return (w.model.name or w.name).lower()


def model_reference(store: ModelStoreSpec, name: str) -> str:
    """The artifact of repository ``name`` (``model_name``): pinned in the spec, else latest."""
    return store.references.get(name) or f"{store.registry}/{name}:latest"


def puller_image(store: ModelStoreSpec) -> str:
    host = store.registry.split("/", 1)[0]
    return store.puller_image or f"{host}/aiplat/aiplat:{__version__}"


def trust_policy(store: ModelStoreSpec) -> str:
    """The TrustPolicy `aiplat model pull --policy` reads: the store's repositories need a
    signature by one of the spec's keys."""
    return trust_policy_text(store.signing_keys, [f"{store.registry}/*"])


def trust_policy_text(keys: dict[str, str], signed: list[str],
                      unsigned: tuple[str, ...] | list[str] = ()) -> str:
    """A TrustPolicy: ``signed`` repository patterns need a signature by any of ``keys``
    (name -> PEM public key), then ``unsigned`` ones need none; anything else is refused."""
    lines = ["apiVersion: aiplat/v1alpha1", "kind: TrustPolicy", "keys:" if keys else "keys: {}"]
    for name, pem in sorted(keys.items()):
        lines += [f"  {name}:", "    publicKey: |"]
        lines += [f"      {line}" for line in pem.strip().splitlines()]
    lines.append("rules:")
    for pattern in signed:
        lines += [f"  - repositories: ['{pattern}']", "    require: signed",
                  f"    keys: [{', '.join(sorted(keys))}]"]
    for pattern in unsigned:
        lines += [f"  - repositories: ['{pattern}']", "    require: none"]
    return "\n".join(lines) + "\n"


def trust_configmaps(platform: Platform) -> list[Obj]:
    """One ConfigMap per tenant that serves, when the init container checks signatures."""
    store = platform.storage.model_store
    if store is None or not store.signing_keys or model_mount(platform) != "init-container":
        return []
    tenants = sorted({w.tenant for w in platform.workloads if w.kind.serves})
    return [obj("v1", "ConfigMap", TRUST_CONFIGMAP, t, data={"policy.yaml": trust_policy(store)})
            for t in tenants]


def attach_model(platform: Platform, w: WorkloadSpec, spec: Obj, container: Obj,
                 g: PodGroup, *, model_cache_pvc: bool, local_disk: bool) -> None:
    """Mount the model group ``g`` serves into the pod ``spec`` and point vLLM's args at it.
    ``local_disk``: each pod of this size a node holds can have one of its NVMe disks (a
    local static provisioner publishes one volume per disk), so the cache may be a local
    volume; else each pod caches in an emptyDir."""
    name = g.model.lower() if g.role == "embed" else model_name(w)
    path = f"{MODELS_DIR}/{name}"
    how = model_mount(platform)
    store = platform.storage.model_store
    volumes, mounts = spec.setdefault("volumes", []), container.setdefault("volumeMounts", [])
    if how == "image-volume" and store is not None:
        volumes.append({"name": "model", "image": {"reference": model_reference(store, name),
                                                   "pullPolicy": "IfNotPresent"}})
        mounts.append({"name": "model", "mountPath": path, "readOnly": True})
    elif how == "init-container" and store is not None:
        volumes.append(_cache_volume(platform, store, g.weight_bytes, local=local_disk))
        mounts.append({"name": "model", "mountPath": MODELS_DIR, "readOnly": True})
        spec["initContainers"] = [_puller(store, name, path)]
        # The puller runs as uid 1000; a fresh volume is root's: fsGroup makes it writable.
        spec["securityContext"] = {"fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch"}
        if store.signing_keys:
            volumes.append({"name": "trust", "configMap": {"name": TRUST_CONFIGMAP}})
            spec["initContainers"][0]["volumeMounts"].append(
                {"name": "trust", "mountPath": TRUST_DIR, "readOnly": True})
    elif model_cache_pvc:
        volumes.append({"name": "model", "persistentVolumeClaim": {
            "claimName": "model-cache", "readOnly": True}})
        mounts.append({"name": "model", "mountPath": MODELS_DIR, "readOnly": True})
    container["args"] = _vllm_args(w, g, path, name)


def _vllm_args(w: WorkloadSpec, g: PodGroup, path: str, name: str) -> list[str]:
    """``vllm serve`` with the replica's planned layout. The query encoder runs vLLM's
    pooling runner (an embedding model: no generation, no KV cache to size)."""
    args = [path, "--served-model-name", name, "--port", "8000"]
    if g.role == "embed":
        return [*args, "--runner", "pooling"]
    args += ["--tensor-parallel-size", str(g.tensor_parallel)]
    if g.pipeline_parallel > 1:
        args += ["--pipeline-parallel-size", str(g.pipeline_parallel)]
    if w.slo.context_length:
        args += ["--max-model-len", str(w.slo.context_length)]
    return args


def _cache_volume(platform: Platform, store: ModelStoreSpec, weight_bytes: float, *,
                  local: bool) -> Obj:
    # The weights once (snapshot files are hard links to the cached blobs) + 10% + 1 GiB for
    # the config, tokenizer and the partial download of a resumed pull.
    gib = max(1, math.ceil(weight_bytes * 1.1 / 2**30) + 1)
    # The spec's cache class as given; the local-nvme class (a static provisioner's one
    # volume per disk) only where each pod can have a disk.
    cls = store.cache_class or (next(
        (c.name for c in platform.storage.classes if c.tier == "local-nvme"), None)
        if local else None)
    if cls is None:
        return {"name": "model", "emptyDir": {"sizeLimit": f"{gib}Gi"}}
    return {"name": "model", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
        "resources": {"requests": {"storage": f"{gib}Gi"}}}}}}


def _puller(store: ModelStoreSpec, name: str, path: str) -> Obj:
    cmd = ["aiplat", "model", "pull", model_reference(store, name), "--cache",
           f"{MODELS_DIR}/cache", "--link", path, "--quiet"]
    if store.signing_keys:
        cmd += ["--policy", f"{TRUST_DIR}/policy.yaml"]
    return {"name": "model-pull", "image": puller_image(store), "command": cmd,
            "resources": {"requests": dict(PULLER_RESOURCES), "limits": dict(PULLER_RESOURCES)},
            "securityContext": {**restricted_security_context(), "runAsUser": 1000},
            "volumeMounts": [{"name": "model", "mountPath": MODELS_DIR}]}
