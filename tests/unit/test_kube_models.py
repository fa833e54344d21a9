"""Serving pods mount their model the Kubernetes way (kube/render_models.py): which way for
which cluster, and that what the tree says is what `aiplat model pull` and vLLM accept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.artifacts.signing import parse_policy
from aiplat.catalog import load_catalog
from aiplat.cli.model import model as model_cli
from aiplat.kube.render import render
from aiplat.kube.render_models import model_mount
from aiplat.plan.resolve import resolve
from aiplat.spec.load import example_text, parse_platform
from aiplat.spec.models import Platform

Obj = dict[str, Any]


def platform_from(edit: Callable[[Obj], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def _target(version: str, runtime: str | None) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        d["kubernetes"]["version"] = version
        for e in d["versions"]["approved"]:
            e["kubernetes"] = version
            if runtime is None:
                e.pop("containerRuntime", None)
            else:
                e["containerRuntime"] = runtime
    return edit


@pytest.mark.parametrize(("version", "runtime", "want"), [
    ("1.34", "containerd 2.1", "init-container"),  # the example
    ("1.36", "containerd 2.2", "init-container"),  # containerd mounts runnable images only
    ("1.34", "cri-o 1.34", "init-container"),  # the ImageVolume gate is off by default
    ("1.35", "CRI-O 1.34.2", "image-volume"),
    ("1.36", "cri-o v1.33", "image-volume"),
    ("1.36", "cri-o 1.32", "init-container"),  # no artifact mounts before CRI-O 1.33
    ("1.36", None, "init-container"),  # a runtime nobody named is not assumed to mount them
])
def test_the_mount_follows_the_kubelet_gate_and_the_runtime(version: str, runtime: str | None,
                                                            want: str) -> None:
    assert model_mount(platform_from(_target(version, runtime))) == want


def _deployment(p: Platform, name: str = "assistant") -> Obj:
    objs = render(p, load_catalog()).manifests["workloads/examples.yaml"]
    return next(o for o in objs if o["metadata"]["name"] == name)


def test_image_volume_is_the_artifact_and_vllm_serves_its_path() -> None:
    p = platform_from(_target("1.36", "cri-o 1.34"))
    spec = _deployment(p)["spec"]["template"]["spec"]
    vol = next(v for v in spec["volumes"] if v["name"] == "model")
    assert vol == {"name": "model", "image": {
        "reference": "registry.ai.internal/models/llama-3-70b:latest",
        "pullPolicy": "IfNotPresent"}}
    main = spec["containers"][0]
    assert {"name": "model", "mountPath": "/models/llama-3-70b", "readOnly": True} in \
        main["volumeMounts"]
    assert main["args"][0] == "/models/llama-3-70b"
    tp = main["args"][main["args"].index("--tensor-parallel-size") + 1]
    assert tp == main["resources"]["limits"]["nvidia.com/gpu"]  # the pod's GPUs
    assert "initContainers" not in spec
    files = render(p, load_catalog()).manifests
    assert "tenants/serving/model-trust.yaml" not in files  # the kubelet checks no policy


def test_a_pinned_reference_and_an_explicit_mount_are_kept() -> None:
    def edit(d: Obj) -> None:
        d["storage"]["modelStore"]["mount"] = "image-volume"
        d["storage"]["modelStore"]["references"] = {
            "llama-3-70b": "registry.ai.internal/models/llama-3-70b@sha256:" + "a" * 64}
    spec = _deployment(platform_from(edit))["spec"]["template"]["spec"]
    vol = next(v for v in spec["volumes"] if v["name"] == "model")
    assert vol["image"]["reference"].endswith("@sha256:" + "a" * 64)


def test_init_container_pulls_with_the_trust_policy_the_tree_ships() -> None:
    p = platform_from()
    r = render(p, load_catalog())
    spec = _deployment(p)["spec"]["template"]["spec"]
    init = spec["initContainers"][0]
    cmd = init["command"]
    assert cmd[:4] == ["aiplat", "model", "pull", "registry.ai.internal/models/llama-3-70b:latest"]
    assert cmd[cmd.index("--link") + 1] == spec["containers"][0]["args"][0]
    # The ConfigMap's policy is one `aiplat model pull --policy` reads, with the spec's key,
    # for the store's repositories.
    cm = r.manifests["tenants/serving/model-trust.yaml"][0]
    policy = parse_policy(cm["data"]["policy.yaml"], "model-trust")
    assert set(policy.public_keys) == {"release"}
    decision = policy.decide("registry.ai.internal/models/llama-3-70b")
    assert decision.require_signature and len(decision.keys) == 1
    # The pod can write its cache (fsGroup) on the local NVMe class, sized for the weights.
    assert spec["securityContext"]["fsGroup"] == init["securityContext"]["runAsUser"]
    vol = next(v for v in spec["volumes"] if v["name"] == "model")
    claim = vol["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "fast-scratch"
    gib = int(claim["resources"]["requests"]["storage"].removesuffix("Gi"))
    assert 70.6e9 * 2 / 2**30 < gib < 70.6e9 * 2 * 1.25 / 2**30  # bf16 weights + headroom


def test_the_init_containers_command_is_one_the_cli_accepts() -> None:
    """Every option the tree passes exists (click would refuse an unknown one with exit 2)."""
    from click.testing import CliRunner

    cmd = _deployment(platform_from())["spec"]["template"]["spec"]["initContainers"][0]["command"]
    opts = [a for a in cmd[3:] if a.startswith("--")]
    help_text = CliRunner().invoke(model_cli, ["pull", "--help"]).output
    assert all(o in help_text for o in opts), opts


def test_without_a_model_store_serving_reads_the_model_cache_pvc() -> None:
    def edit(d: Obj) -> None:
        del d["storage"]["modelStore"]
    spec = _deployment(platform_from(edit))["spec"]["template"]["spec"]
    vol = next(v for v in spec["volumes"] if v["name"] == "model")
    assert vol["persistentVolumeClaim"] == {"claimName": "model-cache", "readOnly": True}


def test_bad_model_store_input_is_refused_with_the_field() -> None:
    from aiplat.errors import AiplatError

    def bad_key(d: Obj) -> None:
        d["storage"]["modelStore"]["signingKeys"] = {"release": "not a key"}

    def bad_class(d: Obj) -> None:
        d["storage"]["modelStore"]["cacheClass"] = "nope"

    for edit, words in ((bad_key, "signingKeys.release is not a PEM public key"),
                        (bad_class, "cacheClass 'nope' is not a storage class")):
        with pytest.raises(AiplatError, match=words):
            platform_from(edit)


def test_each_inference_pool_names_an_endpoint_picker_the_tree_runs() -> None:
    """The pool's endpointPickerRef is a Service in its namespace on the EPP's ext-proc port,
    selecting the picker's pods; the picker may read exactly its pool and the pods."""
    m = render(platform_from(), load_catalog()).manifests
    gw = m["serving/gateway.yaml"] + m["workloads/routes.yaml"]  # routes go with the examples
    cls = next(o for o in gw if o["kind"] == "GatewayClass")
    gateway = next(o for o in gw if o["kind"] == "Gateway")
    assert gateway["spec"]["gatewayClassName"] == cls["metadata"]["name"]
    assert cls["spec"]["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    epp = m["workloads/endpoint-pickers.yaml"]
    for pool in (o for o in gw if o["kind"] == "InferencePool"):
        ns, ref = pool["metadata"]["namespace"], pool["spec"]["endpointPickerRef"]
        svc = next(o for o in epp if o["kind"] == "Service" and o["metadata"]["name"] ==
                   ref["name"] and o["metadata"]["namespace"] == ns)
        assert ref["port"]["number"] in [p["port"] for p in svc["spec"]["ports"]]
        dep = next(o for o in epp if o["kind"] == "Deployment" and o["metadata"]["name"] ==
                   ref["name"])
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
        args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--pool-name") + 1] == pool["metadata"]["name"]
        assert args[args.index("--pool-namespace") + 1] == ns
        role = next(o for o in epp if o["kind"] == "Role" and o["metadata"]["name"] ==
                    ref["name"])
        assert {r for rule in role["rules"] for r in rule["resources"]} == {
            "pods", "inferencepools"}
        assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}


def _pretrain(p: Platform) -> Obj:
    objs = render(p, load_catalog()).manifests["workloads/examples.yaml"]
    js = next(o for o in objs if o["metadata"]["name"] == "domain-pretrain")
    return js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def test_a_gang_across_infiniband_nodes_gets_the_hcas_and_nccl_settings() -> None:
    from aiplat.kube.facts import RDMA_RESOURCE
    from aiplat.kube.render_kueue import kueue_configuration

    p = platform_from()
    c = _pretrain(p)["containers"][0]
    assert c["resources"]["requests"][RDMA_RESOURCE] == c["resources"]["limits"][RDMA_RESOURCE]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["NCCL_IB_HCA"] == "mlx5" and "NCCL_IB_GID_INDEX" not in env  # IB, not RoCE
    # research enforces 'restricted', which refuses IPC_LOCK: the pod does not ask for it.
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # Kueue would refuse the gang for a resource its ClusterQueue does not cover.
    from aiplat.kube.facts import pool_facts
    cfg = kueue_configuration(p, pool_facts(resolve(p, load_catalog())))
    assert cfg["resources"]["excludeResourcePrefixes"] == ["rdma/"]
    # The single-node fine-tune and the l40s pool (Ethernet only) get none of it.
    objs = render(p, load_catalog()).manifests["workloads/examples.yaml"]
    others = [o for o in objs if o["metadata"]["name"] != "domain-pretrain"]
    assert RDMA_RESOURCE not in yaml.safe_dump(others)


def test_a_privileged_tenant_gets_ipc_lock_for_nccl() -> None:
    def edit(d: Obj) -> None:
        d["tenants"][0]["podSecurity"] = "privileged"
    c = _pretrain(platform_from(edit))["containers"][0]
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
