"""Every lint rule has a test on a mistaken tree (issue #18's "done when"), checked
mechanically: each place in ``aiplat/kube/lint/`` that makes a ``Finding`` is reached
by some seeded mistake, and every rule id those places use is seeded.

The seeds are the tables of ``test_kube_lint`` and ``test_kube_lint_classes`` (each: the
rendered example with one mistake, and the rule and object lint must name) and the extra
ones below for the branches those tables miss. While the seeds are linted, each lint
module's ``finding`` records the line it is called from; a ``finding(...)`` call that is
never made is a class no test shows.
"""

from __future__ import annotations

import ast
import copy
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_kube_lint
import test_kube_lint_classes
import yaml
from test_kube_lint import clean, find

from aiplat.findings import Finding
from aiplat.kube import lint
from aiplat.kube.inventory import Inventory
from aiplat.kube.lint.base import finding

LINT = Path(importlib.import_module("aiplat.kube.lint").__file__ or "").parent
MODULES = sorted(LINT.rglob("*.py"))  # the package: its runner, its base and every rule module
Obj = dict[str, Any]
Seed = Callable[[list[Obj], Inventory], None]
Site = tuple[str, int, int]  # file, first and last line of the finding(...) call


def finding_sites() -> dict[Site, str]:
    """Every ``finding(severity, "rule", ...)`` call in the lint modules -> its rule id."""
    out: dict[Site, str] = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "finding":
                rule = node.args[1]
                assert isinstance(rule, ast.Constant), (path, node.lineno)
                site = (_relative(path), node.lineno, node.end_lineno or node.lineno)
                out[site] = str(rule.value)
    return out


def _relative(path: Path | str) -> str:
    return str(Path(path).relative_to(LINT))


def _module(path: Path) -> str:
    parts = path.relative_to(LINT.parent).with_suffix("").parts
    return "aiplat.kube." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def rule_ids() -> set[str]:
    return set(finding_sites().values())


# --- seeds for branches the tables do not reach ------------------------------------------


def namespace_selector_selects_nothing(o: list[Obj], _inv: Inventory) -> None:
    cq = find(o, "ClusterQueue", "research")
    cq["spec"]["namespaceSelector"] = {"matchLabels": {"aiplat.io/tenant": "nobody"}}


def namespace_selector_admits_every_namespace(o: list[Obj], _inv: Inventory) -> None:
    find(o, "ClusterQueue", "research")["spec"]["namespaceSelector"] = {}


def lending_limit_without_cohort(o: list[Obj], _inv: Inventory) -> None:
    spec = find(o, "ClusterQueue", "batch")["spec"]
    spec.pop("cohortName", None)
    for rg in spec["resourceGroups"]:
        for fl in rg["flavors"]:
            for r in fl["resources"]:
                r.pop("borrowingLimit", None)
            fl["resources"][0]["lendingLimit"] = fl["resources"][0]["nominalQuota"]


def cluster_admin_for_an_unplaced_group(o: list[Obj], _inv: Inventory) -> None:
    o.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
              "metadata": {"name": "ops"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                          "name": "cluster-admin"},
              "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                            "name": "platform-ops"}]})


def rbac_without_namespace(o: list[Obj], _inv: Inventory) -> None:
    rbac = "rbac.authorization.k8s.io"
    o.append({"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": "pods"},
              "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]})
    for name, kind, role in (("pods", "Role", "pods"), ("view", "ClusterRole", "view")):
        o.append({"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {"name": name},
                  "roleRef": {"apiGroup": rbac, "kind": kind, "name": role},
                  "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "ml-team"}]})


def bootstrap_rbac_widened(o: list[Obj], _inv: Inventory) -> None:
    rbac = "rbac.authorization.k8s.io"
    o.append({"apiVersion": f"{rbac}/v1", "kind": "ClusterRole",
              "metadata": {"name": "system:basic-user"},
              "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
    o.append({"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding",
              "metadata": {"name": "cluster-admin"},
              "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cluster-admin"},
              "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "ml-team"}]})


def operator_role_for_a_tenant_group(o: list[Obj], _inv: Inventory) -> None:
    rbac = "rbac.authorization.k8s.io"
    for kind, ns in (("ClusterRoleBinding", None), ("RoleBinding", "kube-system")):
        o.append({"apiVersion": f"{rbac}/v1", "kind": kind,
                  "metadata": {"name": "operator", **({"namespace": ns} if ns else {})},
                  "roleRef": {"apiGroup": rbac, "kind": "ClusterRole",
                              "name": "some-operator-manager"},
                  "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "research"}]})


def cluster_role_defined_twice(o: list[Obj], _inv: Inventory) -> None:
    o.append(copy.deepcopy(find(o, "ClusterRole", "aiplat-node-agent")))


def kueue_configuration_left_out(o: list[Obj], _inv: Inventory) -> None:
    """No Configuration in the tree (the release's is read) and a queued PyTorchJob, which
    Kueue v0.19's shipped configuration does not enable."""
    o[:] = [x for x in o if "controller_manager_config.yaml" not in (x.get("data") or {})]
    o.append({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
              "metadata": {"name": "p", "namespace": "research",
                           "labels": {"kueue.x-k8s.io/queue-name": "research"}}})


def deviceclasses_left_to_the_driver(o: list[Obj], _inv: Inventory) -> None:
    """The tree brings no DeviceClass (a DRA driver's chart installs them)."""
    o[:] = [x for x in o if x.get("kind") != "DeviceClass"]


def every_flavor_tainted(o: list[Obj], _inv: Inventory) -> None:
    """A nodeTaint on every ResourceFlavor that no pod tolerates: Kueue assigns no flavor."""
    for fl in o:
        if fl.get("kind") == "ResourceFlavor":
            fl["spec"]["nodeTaints"] = [{"key": "seed", "value": "x", "effect": "NoExecute"}]


def vgpu_cores_transformed(o: list[Obj], _inv: Inventory) -> None:
    """HAMi-style: a pod asks for a per-vGPU resource no pool publishes, which Kueue's
    Configuration transforms into a quota-only total."""
    cm = find(o, "ConfigMap", "kueue-manager-config", "kueue-system")
    cfg = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    cfg.setdefault("resources", {})["transformations"] = [
        {"input": "example.com/vgpu-cores", "strategy": "Replace",
         "outputs": {"example.com/total-vgpu-cores": "1"}}]
    cm["data"]["controller_manager_config.yaml"] = yaml.safe_dump(cfg)
    job = find(o, "Job", "nightly-eval", "batch")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "example.com/vgpu-cores"] = "30"


def _rdma_config(o: list[Obj]) -> Obj:
    return find(o, "ConfigMap", "rdma-shared-device-plugin", "nvidia-network-operator")


def rdma_plugin_publishes_another_name(o: list[Obj], _inv: Inventory) -> None:
    cm = _rdma_config(o)
    cm["data"]["config.json"] = cm["data"]["config.json"].replace(
        "rdma_shared_device_a", "hca_shared_devices_a")


def rdma_plugin_config_not_json(o: list[Obj], _inv: Inventory) -> None:
    cm = _rdma_config(o)
    cm["data"]["config.json"] = cm["data"]["config.json"].rstrip()[:-1]  # the last brace


def mig_label_names_a_missing_config(o: list[Obj], inv: Inventory) -> None:
    """The h100 nodes publish MIG devices and name config 'h100-typo'; the tree's MIG
    Manager ConfigMap defines all-disabled and h100 only."""
    import dataclasses

    o.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "aiplat-mig-config", "namespace": "gpu-operator"},
        "data": {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "h100": [{"devices": "all", "mig-enabled": True,
                      "mig-devices": {"1g.10gb": 7}}]}})}})
    inv.pools[:] = [dataclasses.replace(
        p, labels={**p.labels, "nvidia.com/mig.config": "h100-typo"},
        capacity={**p.capacity, "nvidia.com/mig-1g.10gb": 8 * p.nodes})
        if p.name == "h100" else p for p in inv.pools]


def clusterqueue_resources_out_of_order(o: list[Obj], _inv: Inventory) -> None:
    """Kueue's webhook: a flavor's resources must follow coveredResources' order."""
    find(o, "ClusterQueue", "batch")["spec"]["resourceGroups"][0]["flavors"][0][
        "resources"].reverse()


def job_min_parallelism_not_a_number(o: list[Obj], _inv: Inventory) -> None:
    find(o, "Job", "nightly-eval", "batch")["metadata"]["annotations"] = {
        "kueue.x-k8s.io/job-min-parallelism": "half"}


def no_inventory(_o: list[Obj], _inv: Inventory) -> None:
    """The tree linted without an inventory (``_inventory`` passes None for this seed)."""


def volcano_job(o: list[Obj], _inv: Inventory) -> None:
    """Another group's Job (Volcano's): no rule reads it as batch/v1's, one note says so."""
    o.append({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
              "metadata": {"name": "gang", "namespace": "research"},
              "spec": {"minAvailable": 2, "tasks": []}})


def selector_for_an_operators_pods(o: list[Obj], _inv: Inventory) -> None:
    """A NetworkPolicy for pods a custom resource aiplat has no schema for makes (KubeRay's
    agent-sandbox sample): not judged, one note says so."""
    o.append({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
              "metadata": {"name": "runtime", "namespace": "research"},
              "spec": {"podTemplate": {"metadata": {"labels": {"app": "runtime-pool"}}}}})
    o.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "runtime-egress", "namespace": "research"},
              "spec": {"podSelector": {"matchLabels": {"app": "runtime-pool"}},
                       "policyTypes": ["Egress"], "egress": [{}]}})


def rayjob_queued_to_kueue(o: list[Obj], _inv: Inventory) -> None:
    """A custom resource aiplat has no schema for, queued to Kueue: said not checked."""
    o.append({"apiVersion": "ray.io/v1", "kind": "RayJob",
              "metadata": {"name": "sweep", "namespace": "research",
                           "labels": {"kueue.x-k8s.io/queue-name": "research"}},
              "spec": {"entrypoint": "python train.py"}})


def _inventory(seed: Seed, inv: Inventory) -> Inventory | None:
    return None if seed is no_inventory else inv


EXTRA: list[tuple[Seed, str]] = [
    (namespace_selector_selects_nothing, "namespace-selector"),
    (namespace_selector_admits_every_namespace, "namespace-selector"),
    (lending_limit_without_cohort, "quota-without-cohort"),
    (cluster_admin_for_an_unplaced_group, "rbac-cluster-grant"),
    (rbac_without_namespace, "rbac-namespace-unset"),
    (bootstrap_rbac_widened, "rbac-bootstrap"),
    (operator_role_for_a_tenant_group, "rbac-cluster-grant"),
    (operator_role_for_a_tenant_group, "rbac-system-namespace"),
    (cluster_role_defined_twice, "duplicate-object"),
    (kueue_configuration_left_out, "kueue-config"),
    (kueue_configuration_left_out, "kueue-managed"),
    (deviceclasses_left_to_the_driver, "claim-deviceclass"),
    (every_flavor_tainted, "flavor-node-taints"),
    (vgpu_cores_transformed, "resource-unserved"),
    (rdma_plugin_publishes_another_name, "rdma-publisher"),
    (rdma_plugin_config_not_json, "rdma-publisher"),
    (mig_label_names_a_missing_config, "mig-config-label"),
    (clusterqueue_resources_out_of_order, "kueue-queue-webhook"),
    (job_min_parallelism_not_a_number, "kueue-job-webhook"),
    (no_inventory, "inventory"),
    (volcano_job, "unread-kind"),
    (rayjob_queued_to_kueue, "unread-kind"),
    (selector_for_an_operators_pods, "selector-matches"),
]


def _seeds() -> list[tuple[str, Seed, str]]:
    out = [(s.__name__, s, rule) for s, rule, *_ in test_kube_lint.SEEDED]
    out += [(s.__name__, s, rule) for s, rule, *_ in test_kube_lint_classes.SEEDED]
    out += [(s.__name__, s, rule) for s, rule in EXTRA]
    return out


def test_every_rule_id_is_seeded() -> None:
    seeded = {rule for _n, _s, rule in _seeds()}
    assert rule_ids() - seeded == set()
    assert seeded - rule_ids() == set()  # a table naming a rule the code no longer has


def test_every_finding_site_is_reached_by_a_seeded_mistake(
        monkeypatch: pytest.MonkeyPatch) -> None:
    called: set[tuple[str, int]] = set()

    def recording(*args: Any, **kwargs: Any) -> Finding:
        caller = sys._getframe(1)
        called.add((_relative(caller.f_code.co_filename), caller.f_lineno))
        return finding(*args, **kwargs)

    for path in MODULES:
        module = importlib.import_module(_module(path))
        if hasattr(module, "finding"):
            monkeypatch.setattr(module, "finding", recording)
    base_objs, base_inv = clean()
    for _name, seed, _rule in _seeds():
        objs, inv = copy.deepcopy(base_objs), copy.deepcopy(base_inv)
        seed(objs, inv)
        lint(objs, _inventory(seed, inv))
    missed = {site: rule for site, rule in finding_sites().items()
              if not any(f == site[0] and site[1] <= line <= site[2] for f, line in called)}
    assert not missed, missed


def test_the_extra_seeds_are_found() -> None:
    for seed, rule in EXTRA:
        objs, inv = clean()
        seed(objs, inv)
        hits = [f for f in lint(objs, _inventory(seed, inv)) if f.source == rule]
        assert hits and all(h.message and h.fix for h in hits), seed.__name__
