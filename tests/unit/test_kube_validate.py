"""``aiplat kube validate``: what each layer of checking catches, and the CEL extensions.

Every test breaks one thing in an otherwise valid object and asserts the exact place."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aiplat.kube import CrdIndex, cel, load_crds, validate_objects
from aiplat.kube.crds import index_crds
from aiplat.kube.quantity import QuantityError, parse_quantity

SHARED = Path(__file__).parents[2].parent / "shared"

DEVICE = {
    "name": "gpu-0",
    "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
                   "driverVersion": {"version": "580.95.5"},
                   "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}},
    "capacity": {"memory": {"value": "81559Mi"}},
}
DRIVER = "gpu.nvidia.com"


@pytest.fixture(scope="module")
def crds() -> CrdIndex:
    return load_crds(SHARED / "schemas")


def claim_template(**request: Any) -> dict[str, Any]:
    req = request or {"exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount",
                                  "count": 1}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "research"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", **req}]}}}}


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "serving"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                                           "resources": {"requests":
                                                                         {"cpu": "1"}}}]}}}}


def local_queue() -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "research", "namespace": "research"},
            "spec": {"clusterQueue": "research"}}


def issues(obj: dict[str, Any], crds: CrdIndex, version: str = "1.34") -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in validate_objects([("f.yaml", obj)], version, crds).issues]


def test_valid_objects_have_no_issues(crds: CrdIndex) -> None:
    for o in (claim_template(), deployment(), local_queue()):
        assert issues(o, crds) == []


def test_builtin_unknown_field_is_an_error(crds: CrdIndex) -> None:
    o = deployment()
    o["spec"]["replicaz"] = 2
    found = issues(o, crds)
    assert found and found[0][0] == "spec" and "replicaz" in found[0][1]


def test_builtin_wrong_type_is_an_error(crds: CrdIndex) -> None:
    o = deployment()
    o["spec"]["replicas"] = "two"
    assert any(p == "spec.replicas" for p, _ in issues(o, crds))


def test_dra_v1_before_1_34_is_refused_naming_the_served_version(crds: CrdIndex) -> None:
    """Kubernetes 1.33 serves resource.k8s.io up to v1beta2: its API server refuses v1."""
    res = validate_objects([("f", claim_template())], "1.33", crds)
    assert [(i.severity, i.path) for i in res.issues] == [("error", "apiVersion")]
    assert "move to resource.k8s.io/v1beta2" in res.issues[0].message


def test_crd_unknown_field_and_type(crds: CrdIndex) -> None:
    o = local_queue()
    o["spec"]["clusterQueu"] = "x"
    assert any("clusterQueu" in m for _p, m in issues(o, crds))
    o = local_queue()
    o["spec"]["clusterQueue"] = 5
    assert any(p == "spec.clusterQueue" for p, _ in issues(o, crds))


def test_crd_unserved_version_is_an_error(crds: CrdIndex) -> None:
    o = local_queue()
    o["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    found = issues(o, crds)
    assert [p for p, _m in found] == ["apiVersion"]
    assert found[0][1].startswith("kueue.x-k8s.io/v1alpha1 is not served by the CRD "
                                  "(served: v1beta1, v1beta2) (fix: move to "
                                  "kueue.x-k8s.io/v1beta2")


def test_custom_resource_without_crd_is_a_warning_not_a_pass() -> None:
    res = validate_objects([("f", local_queue())], "1.34", CrdIndex(), packaged=False)
    assert [i.severity for i in res.issues] == ["warning"] and res.ok
    unknown = {**local_queue(), "apiVersion": "example.com/v1", "kind": "Widget"}
    res = validate_objects([("f", unknown)], "1.34", CrdIndex())  # no packaged CRD either
    assert [i.severity for i in res.issues] == ["warning"] and res.ok
    assert "nor in aiplat's CRDs or --crd-dir" in res.issues[0].message


def test_packaged_crds_check_custom_resources_without_a_crd_dir() -> None:
    o = local_queue()
    assert validate_objects([("f", o)], "1.34", CrdIndex()).issues == []
    o["spec"]["clusterQueueTypo"] = "batch"
    res = validate_objects([("f", o)], "1.34", CrdIndex())
    assert [(i.severity, i.path) for i in res.issues] == [("error", "spec")]
    assert "'clusterQueueTypo' was unexpected" in res.issues[0].message


def test_names_must_be_dns_1123(crds: CrdIndex) -> None:
    o = deployment()
    o["metadata"]["name"] = "Web_App"
    assert ("metadata.name" in [p for p, _ in issues(o, crds)])
    o = local_queue()
    o["metadata"]["name"] = "a.b"  # LocalQueue names are labels, no dots
    assert "metadata.name" in [p for p, _ in issues(o, crds)]


def test_bad_quantity_in_requests(crds: CrdIndex) -> None:
    o = deployment()
    o["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1.5cores"
    paths = [p for p, _ in issues(o, crds)]
    assert "spec.template.spec.containers[0].resources.requests.cpu" in paths


def test_exactly_and_first_available_are_one_of(crds: CrdIndex) -> None:
    both = claim_template(exactly={"deviceClassName": "gpu"},
                          firstAvailable=[{"name": "a", "deviceClassName": "gpu"}])
    assert ("spec.spec.devices.requests[0]",
            "give exactly one of 'exactly' and 'firstAvailable'") in issues(both, crds)


def test_first_available_limits_and_names(crds: CrdIndex) -> None:
    nine = claim_template(firstAvailable=[{"name": f"o{i}", "deviceClassName": "gpu"}
                                          for i in range(9)])
    assert any("allowed 1 to 8" in m for _p, m in issues(nine, crds))
    dup = claim_template(firstAvailable=[{"name": "o", "deviceClassName": "gpu"}] * 2)
    assert any("duplicate sub-request" in m for _p, m in issues(dup, crds))


def test_allocation_mode_and_count(crds: CrdIndex) -> None:
    o = claim_template(exactly={"deviceClassName": "gpu", "allocationMode": "All", "count": 2})
    assert any("only allowed with allocationMode ExactCount" in m for _p, m in issues(o, crds))
    o = claim_template(exactly={"deviceClassName": "gpu", "allocationMode": "Some"})
    assert any("not ExactCount or All" in m for _p, m in issues(o, crds))
    o = claim_template(exactly={"deviceClassName": "gpu", "count": 0})
    assert any("count must be ≥ 1" in m for _p, m in issues(o, crds))


def test_constraint_must_name_a_request(crds: CrdIndex) -> None:
    o = claim_template()
    o["spec"]["spec"]["devices"]["constraints"] = [
        {"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert any("names request 'gpus'" in m for _p, m in issues(o, crds))


def test_deviceclass_cel_is_checked(crds: CrdIndex) -> None:
    dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
          "metadata": {"name": "gpu"},
          "spec": {"selectors": [{"cel": {"expression": "device.driver == "}}]}}
    assert any("does not parse" in m for _p, m in issues(dc, crds))
    dc["spec"]["selectors"][0]["cel"]["expression"] = (
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80GiB')) >= 0")
    assert any("80GiB" in m for _p, m in issues(dc, crds))


def test_pod_claim_references(crds: CrdIndex) -> None:
    o = deployment()
    spec = o["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpus"}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    msgs = [m for _p, m in issues(o, crds)]
    assert any("exactly one of resourceClaimName" in m for m in msgs)
    assert any("uses claim 'gpu'" in m for m in msgs)


def test_unsupported_version_is_refused(crds: CrdIndex) -> None:
    with pytest.raises(ValueError, match="not supported"):
        validate_objects([("f", deployment())], "1.99", crds)


def test_crd_index_is_strict_but_keeps_preserved_fields() -> None:
    crd = {"kind": "CustomResourceDefinition", "spec": {
        "group": "x.io", "names": {"kind": "Thing"}, "versions": [{
            "name": "v1", "served": True, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "a": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                             "properties": {"b": {"type": "string"}}}}}}}}}]}}
    index = index_crds([("crd.yaml", crd)])
    ok = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"},
          "spec": {"a": "1", "free": {"anything": 1}}}
    assert issues(ok, index) == []
    bad = copy.deepcopy(ok)
    bad["spec"]["z"] = 1
    assert issues(bad, index)


# ------------------------------------------------------------------ CEL with k8s extensions


def test_quantity_parsing() -> None:
    assert parse_quantity("1.5Gi") == 1.5 * 2**30
    assert parse_quantity("500m") == parse_quantity("0.5")
    assert parse_quantity("1e3") == 1000
    with pytest.raises(QuantityError):
        parse_quantity("1.5cores")


@pytest.mark.parametrize(("expr", "expected"), [
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) < 0", True),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) > 0", True),
    ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('81559Mi'))", False),
    ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('100G'))", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('580.95.5')) == 0",
     True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('575.0.0'))", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.major() == 580", True),
    ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", True),
    ("isQuantity('4Gi') && !isQuantity('4GB') && isSemver('1.2.3') && !isSemver('1.02.3')",
     True),
    ("quantity('1Gi').add(quantity('1Gi')).compareTo(quantity('2Gi')) == 0", True),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
     False),
])
def test_cel_kubernetes_extensions(expr: str, expected: bool) -> None:
    assert cel.check(expr) == []
    assert cel.evaluate(expr, DRIVER, DEVICE) is expected


def test_cel_runtime_errors_are_errors_not_false() -> None:
    with pytest.raises(cel.CelError, match="evaluation failed"):
        cel.evaluate("device.attributes['gpu.nvidia.com'].cliqueID == 'a'", DRIVER, DEVICE)
    with pytest.raises(cel.CelError, match="not bool"):
        cel.evaluate("device.driver", DRIVER, DEVICE)
    with pytest.raises(cel.CelError, match="compareTo"):
        cel.evaluate("quantity('1').compareTo(semver('1.0.0')) == 0", DRIVER, DEVICE)


def test_cel_static_check_finds_unknowns() -> None:
    problems = cel.check("node.name == 'x' && device.foo() && quantity('1x') == 1")
    assert any("unknown variable 'node'" in p for p in problems)
    assert any("unknown function 'foo'" in p for p in problems)
    assert any("quantity('1x')" in p for p in problems)
    assert cel.check("device.driver == ") and "does not parse" in cel.check("(")[0]
    # Macro variables are not free variables.
    assert cel.check("cel.bind(a, device.attributes['gpu.nvidia.com'], a.type == 'gpu')") == []
    assert cel.check("['a', 'b'].exists(v, v == device.driver)") == []
    assert cel.check("['a'].all(v, w == 'a')") == ["unknown variable 'w' (DRA selectors see "
                                                   "only 'device')"]
    assert cel.check("'" + "a" * 11000 + "' == device.driver")[0].startswith("longer than")
