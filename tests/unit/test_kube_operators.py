"""What the operators consuming the tree are told (issue #41): one owner for the driver and
the toolkit, the GPU Operator's upgrade policy, MIG Manager's node label and config, and the
RDMA shared device plugin behind every ``rdma/`` request."""

from __future__ import annotations

import json
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import render
from aiplat.kube.facts import MIG_CONFIG_LABEL, POOL_LABEL, RDMA_RESOURCE
from aiplat.kube.lint.objects import selector_matches
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform


def platform_from(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def _files(edit: Any = None) -> dict[str, str]:
    return render(platform_from(edit), load_catalog()).files()


def _values(files: dict[str, str], chart: str) -> dict[str, Any]:
    data = yaml.safe_load(files[f"cluster/{chart}/values.yaml"])
    assert isinstance(data, dict)
    return data


def _operator_owns(data: dict[str, Any]) -> None:
    data["kubernetes"]["components"] = {"driver": "operator", "toolkit": "operator"}


def test_host_owned_driver_and_toolkit_are_off_in_the_operator() -> None:
    """node prepare installs both by default: the operator must not install them again."""
    files = _files()
    values = _values(files, "gpu-operator")
    # No upgrade controller for a driver the operator does not own (the chart's default
    # autoUpgrade: true would mark every GPU node for it).
    assert values["driver"] == {"enabled": False, "upgradePolicy": {"autoUpgrade": False}}
    assert values["toolkit"] == {"enabled": False}
    # The DRA driver finds a host-installed driver under the host's root.
    assert _values(files, "dra-driver")["nvidiaDriverRoot"] == "/"


def test_operator_owned_driver_gets_version_and_upgrade_policy() -> None:
    files = _files(_operator_owns)
    values = _values(files, "gpu-operator")
    driver = values["driver"]
    assert driver["enabled"] is True and driver["version"] == "580.95.05"
    assert values["toolkit"] == {"enabled": True}
    policy = driver["upgradePolicy"]
    assert policy["autoUpgrade"] is True
    assert policy["maxParallelUpgrades"] == 1
    assert isinstance(policy["maxUnavailable"], int) and policy["maxUnavailable"] >= 1
    # Every GPU pod of the tree has an emptyDir (/dev/shm): without deleteEmptyDir the
    # controller would never get past pod deletion.
    assert policy["gpuPodDeletion"]["deleteEmptyDir"] is True
    assert policy["drain"]["deleteEmptyDir"] is True
    assert _values(files, "dra-driver")["nvidiaDriverRoot"] == "/run/nvidia/driver"


def _selector(text: str) -> dict[str, Any]:
    """The two forms the policy uses, 'key' and '!key', as a LabelSelector."""
    exprs = [{"key": t[1:], "operator": "DoesNotExist"} if t.startswith("!")
             else {"key": t, "operator": "Exists"} for t in text.split(",")]
    return {"matchExpressions": exprs}


def test_upgrade_waits_for_admitted_batch_pods_but_not_for_serving() -> None:
    """waitForCompletion selects the pods Kueue admitted (it labels them with their PodSet)
    that can finish: batch and training, never serving replicas (they never complete)."""
    platform = platform_from(_operator_owns)
    rendered = render(platform, load_catalog())
    policy = yaml.safe_load(rendered.files()["cluster/gpu-operator/values.yaml"])[
        "driver"]["upgradePolicy"]
    wait = _selector(policy["waitForCompletion"]["podSelector"])
    templates = {}
    for o in rendered.objects():
        spec = o.get("spec") or {}
        tmpl = (spec.get("template") or
                ((spec.get("replicatedJobs") or [{}])[0].get("template", {}).get("spec", {})
                 .get("template")))
        queued = "kueue.x-k8s.io/queue-name" in (o["metadata"].get("labels") or {})
        if o["kind"] in ("Job", "JobSet", "Deployment") and tmpl and queued:
            templates[o["metadata"]["name"]] = tmpl["metadata"]["labels"]
    kinds = {w.name: w.kind for w in platform.workloads}
    # a RAG service's query encoder is a Deployment of its own
    assert {n.removesuffix("-embed") for n in templates} == set(kinds)
    for name, labels in templates.items():
        admitted = {**labels, "kueue.x-k8s.io/podset": "main"}
        serving = kinds[name.removesuffix("-embed")].value in ("online-inference", "rag")
        assert selector_matches(wait, admitted) is not serving, name
    # A training job gets its checkpoint interval to reach the next checkpoint.
    interval = max(w.checkpoint.interval_minutes for w in platform.workloads if w.kind.trains)
    assert policy["waitForCompletion"]["timeoutSeconds"] == round(interval * 60)


def test_operator_driver_with_secure_boot_is_a_spec_error() -> None:
    def edit(data: dict[str, Any]) -> None:
        _operator_owns(data)
        data["pools"][0]["node"]["checks"] = {"secureBoot": "required"}

    try:
        platform_from(edit)
    except Exception as e:
        assert "secureBoot" in str(getattr(e, "at", "")) or "Secure Boot" in str(e)
        assert "components.driver: host" in (getattr(e, "hint", "") or str(e))
    else:
        raise AssertionError("the operator's driver on a Secure Boot pool was accepted")


def _mig(data: dict[str, Any]) -> None:
    data["pools"][0]["sharing"] = {"strategy": "mig",
                                   "migLayout": ["3g.40gb", "2g.20gb", "2g.20gb"]}


def test_mig_pool_nodes_carry_the_config_mig_manager_applies() -> None:
    files = _files(_mig)
    patch = yaml.safe_load(files["cluster/nodes/h100/node-patch.yaml"])
    assert patch["metadata"]["labels"][MIG_CONFIG_LABEL] == "h100"
    script = files["cluster/nodes/label-and-taint.sh"]
    assert f"{MIG_CONFIG_LABEL}=h100" in script
    # The config the label names exists, with the pool's layout on every GPU.
    cm = next(d for d in yaml.safe_load_all(files["cluster/gpu-operator-config.yaml"])
              if d["metadata"]["name"] == "aiplat-mig-config")
    configs = yaml.safe_load(cm["data"]["config.yaml"])["mig-configs"]
    assert configs["h100"] == [{"devices": "all", "mig-enabled": True,
                                "mig-devices": {"3g.40gb": 1, "2g.20gb": 2}}]
    assert _values(files, "gpu-operator")["migManager"]["config"]["default"] == "all-disabled"
    # A pool that is not MIG is left to the default.
    l40s = yaml.safe_load(files["cluster/nodes/l40s/node-patch.yaml"])
    assert MIG_CONFIG_LABEL not in l40s["metadata"]["labels"]


def test_every_rdma_request_is_published_on_its_pool() -> None:
    """The training gang requests rdma/rdma_shared_device_a: the plugin that publishes it
    runs on that pool's nodes, tolerates their taints, and its config names the resource."""
    platform = platform_from()
    objs = render(platform, load_catalog()).objects()
    ds = next(o for o in objs if o["kind"] == "DaemonSet"
              and o["metadata"]["name"] == "rdma-shared-device-plugin")
    pod = ds["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    cm = next(o for o in objs if o["kind"] == "ConfigMap"
              and o["metadata"]["name"] == "rdma-shared-device-plugin")
    config = json.loads(cm["data"]["config.json"])
    published = {f"{c['resourcePrefix']}/{c['resourceName']}" for c in config["configList"]}
    assert published == {RDMA_RESOURCE}
    assert config["configList"][0]["selectors"]["linkTypes"] == ["infiniband"]
    requesting = []
    for o in objs:
        text = json.dumps(o)
        if RDMA_RESOURCE in text and o["kind"] in ("Job", "JobSet", "Deployment"):
            requesting.append(o)
            # Kueue's ResourceFlavor puts the pod on its pool's nodes at admission.
            pool = next(w.pool for w in platform.workloads if w.name == o["metadata"]["name"])
            assert selector_matches({"matchExpressions": terms[0]["matchExpressions"]},
                                    {POOL_LABEL: pool})
            spec = platform.pool(pool)
            assert spec is not None
            for t in spec.taints:
                assert any(tol.get("key") == t.key for tol in pod["tolerations"])
    assert requesting, "the example's training gang asks for RDMA"


def test_no_rdma_plugin_without_rdma_nics() -> None:
    def edit(data: dict[str, Any]) -> None:
        for p in data["pools"]:
            p["node"]["nics"] = [n for n in p["node"]["nics"] if n["type"] != "infiniband"]

    files = _files(edit)
    assert "cluster/rdma-device-plugin.yaml" not in files
