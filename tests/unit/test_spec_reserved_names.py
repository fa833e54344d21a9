"""Names that cannot escalate (issue 38): a tenant is a namespace whose groups may create
pods, so a tenant named after a namespace Kubernetes, aiplat or an operator runs in, or a
group Kubernetes assigns itself, is refused when the spec is loaded, with line and fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.kube.render import render
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import reserved_namespace


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any]) -> tuple[
        int, str]:
    spec = tmp_path / "platform.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    code = main(["spec", "validate", str(spec)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", ["kube-system", "kube-public", "default", "aiplat-system",
                                  "gpu-operator", "kueue-system", "monitoring", "kube-anything",
                                  "aiplat-gateway", "envoy-gateway-system", "calico-system",
                                  "argocd", "tigera-operator", "openshift-config",
                                  # the red team's third round: add-ons' default namespaces
                                  "linkerd", "linkerd-viz", "kyverno", "external-secrets",
                                  "vault", "prometheus", "kubeflow", "knative-serving",
                                  "cilium-secrets", "nvidia-gpu-operator",
                                  "gpu-operator-resources",
                                  # round 8: more operators' default namespaces
                                  "kserve", "argo", "argo-rollouts", "runai",
                                  "kai-scheduler", "falco"])
def test_a_tenant_named_after_a_system_namespace_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    doc = yaml.safe_load(example_text())
    doc["tenants"][0]["name"] = name
    code, err = _validate(tmp_path, capsys, doc)
    assert code == 2
    assert re.search(rf"platform\.yaml:\d+:\d+: tenants\[0\]\.name: '{name}' is a namespace "
                     r"Kubernetes, aiplat or an operator runs in.*\(fix: name the tenant", err)
    assert "Traceback" not in err


@pytest.mark.parametrize(("field", "group"), [
    ("users", "system:authenticated"), ("users", "system:unauthenticated"),
    ("admins", "system:masters"), ("users", "system:serviceaccounts:kube-system"),
    ("users", "team\nsystem:masters"),
])
def test_a_group_kubernetes_assigns_is_refused_as_a_tenant_subject(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, group: str) -> None:
    doc = yaml.safe_load(example_text())
    doc["tenants"][1][field] = ["serving", group]
    code, err = _validate(tmp_path, capsys, doc)
    assert code == 2
    assert re.search(rf"platform\.yaml:\d+:\d+: tenants\[1\]\.{field}\[1\]: ", err), err
    assert "(fix: " in err


def test_ordinary_names_still_load() -> None:
    doc = yaml.safe_load(example_text())
    doc["tenants"][0]["name"] = "kubeflow-team"  # 'kube' without the dash is a team's word
    doc["tenants"][0]["users"] = ["oidc:ml-team", "ml team (EU)"]
    for w in doc["workloads"]:
        if w["tenant"] == "research":
            w["tenant"] = "kubeflow-team"
    parse_platform(yaml.safe_dump(doc), "ok.yaml")


def test_every_namespace_the_tree_uses_besides_the_tenants_is_reserved() -> None:
    """The reserved list covers what aiplat itself renders: a new system namespace in a
    renderer that is not reserved would let a tenant of that name take it over."""
    platform = parse_platform(example_text(), "example")
    tree = render(platform, load_catalog())
    tenants = {t.name for t in platform.tenants}
    used = {o["metadata"]["namespace"] for objs in tree.manifests.values() for o in objs
            if o.get("metadata", {}).get("namespace")}
    used |= {o["metadata"]["name"] for objs in tree.manifests.values() for o in objs
             if o.get("kind") == "Namespace"}
    system = used - tenants
    assert system, "the example renders system namespaces (aiplat-system, monitoring, ...)"
    assert {n for n in system if not reserved_namespace(n)} == set()


@pytest.mark.parametrize(("where", "char"), [
    (("metadata", "description"), "\x1b"), (("tenants", 0, "description"), "\u202e"),
    (("tenants", 0, "users", 0), "\x9b"), (("workloads", 0, "name"), "\x00"),
    (("tenants", 0, "name"), "\u2028"),
])
def test_spec_text_with_a_control_or_format_character_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: tuple[str | int, ...],
        char: str) -> None:
    """It would reach a script, a manifest, the runbook or a terminal raw (the red team's
    third round: the runbook and report kept an escape sequence from a description)."""
    doc = yaml.safe_load(example_text())
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = f"ab{char}c"
    code, err = _validate(tmp_path, capsys, doc)
    assert code == 2, err
    path = ".".join(str(k) for k in where).replace(".0", "[0]")
    assert f"{path}: 'ab" in err and f"(U+{ord(char):04X})" in err, err
    assert char not in err and "Traceback" not in err
