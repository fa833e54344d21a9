"""``aiplat kube validate`` on upstream files as a new user runs it (issue #40, "read
Kubernetes as Kubernetes reads it"): Go (RE2) patterns, generateName, each served version's
rules, server and webhook defaults, kubectl's namespace placement, FILE/DIR/- input, and a
JobSet's pod templates against the target version's PodSpec.

The files are under tests/data/upstream/PROJECT/validate/ (PROVENANCE.md: tag, commit, path)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.cli.main import main

UPSTREAM = Path(__file__).parents[1] / "data" / "upstream"
KUEUE, JOBSET, DRA = (UPSTREAM / p / "validate" for p in ("kueue", "jobset",
                                                           "k8s-dra-driver-gpu"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``aiplat ARGV``; never a traceback."""
    try:
        code = main(argv)
    except SystemExit as e:  # the commands that exit 1 themselves
        code = int(e.code or 0)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out, out.err


def issues(argv: list[str], capsys: pytest.CaptureFixture[str],
           code: int | None = None) -> list[dict[str, Any]]:
    """The issues of ``aiplat kube validate ARGV -o json`` (one version)."""
    got, out, err = run(["kube", "validate", *argv, "-o", "json"], capsys)
    if code is not None:
        assert got == code, out + err
    [result] = json.loads(out)
    return list(result["issues"])


def errors(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(i["path"], i["message"]) for i in found if i["severity"] == "error"]


def write(tmp_path: Path, *objects: dict[str, Any], name: str = "f.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return path


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# -- 1. Go (RE2) patterns ------------------------------------------------------------------


def test_admission_check_with_parameters_is_read_with_go_patterns(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's AdmissionCheck CRD has ``^(?i)[a-z]...`` on parameters.kind: Python's re
    died on it ("global flags not at the start")."""
    assert issues([str(KUEUE / "sample-admission-check.yaml")], capsys, code=0) == []


def test_a_go_pattern_still_refuses_what_it_does_not_match(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check, config = docs(KUEUE / "sample-admission-check.yaml")
    check["spec"]["parameters"]["kind"] = "9-Not-A-Kind"
    found = errors(issues([str(write(tmp_path, check, config))], capsys, code=1))
    assert [p for p, _m in found] == ["spec.parameters.kind"]
    assert "does not match '^(?i)[a-z]" in found[0][1]
    check["spec"]["parameters"]["kind"] = "PROVISIONINGREQUESTCONFIG"  # (?i): any case
    assert errors(issues([str(write(tmp_path, check, config))], capsys)) == []


@pytest.mark.parametrize(("strategy", "ok"), [("WARN", True), ("abort", True),
                                              ("maybe", False)])
def test_prometheus_rule_partial_response_strategy(
        strategy: str, ok: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The packaged PrometheusRule CRD's ``^(?i)(abort|warn)?$`` (a Thanos ruler field)."""
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "monitoring"},
            "spec": {"groups": [{"name": "g", "partial_response_strategy": strategy,
                                 "rules": [{"alert": "A", "expr": "up == 0"}]}]}}
    found = errors(issues([str(write(tmp_path, rule))], capsys, code=0 if ok else 1))
    assert [p for p, _m in found] == ([] if ok else ["spec.groups[0].partial_response_strategy"])


def test_a_crd_whose_pattern_go_refuses_is_an_input_error_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A look-ahead: Python's re takes it, Go's regexp (and so the API server) does not."""
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "string", "pattern": "^(?=[0-9])[0-9a-z]+$"}}}}}
    write(crd_dir, {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "widgets.example.com"},
                    "spec": {"group": "example.com", "scope": "Namespaced",
                             "names": {"kind": "Widget", "plural": "widgets"},
                             "versions": [{"name": "v1", "served": True, "storage": True,
                                           "schema": {"openAPIV3Schema": schema}}]}})
    obj = write(tmp_path, {"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w"}, "spec": {"size": "1x"}})
    code, _out, err = run(["kube", "validate", str(obj), "--crd-dir", str(crd_dir)], capsys)
    assert code == 2
    assert "CustomResourceDefinition widgets.example.com version v1 at " \
           "openAPIV3Schema.properties.spec.properties.size.pattern" in err
    assert "not a Go (RE2) regular expression" in err and "fix:" in err


# -- 2. generateName -------------------------------------------------------------------------


def test_generate_name_is_not_a_missing_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's sample Job has generateName only: the server names it at create."""
    found = issues([str(KUEUE / "sample-job.yaml")], capsys, code=0)
    assert errors(found) == []
    [note] = found
    assert note["ref"] == "Job/default/sample-job-*"
    assert note["path"] == "metadata.name" and "'sample-job-'" in note["message"]
    assert "kubectl create" in note["message"] and "apply" in note["message"]


@pytest.mark.parametrize(("meta", "path"), [
    ({"generateName": "Sample_Job-"}, "metadata.generateName"),
    ({}, "metadata.name"),
])
def test_a_bad_generate_name_or_none_at_all_is_an_error(
        meta: dict[str, str], path: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    [job] = docs(KUEUE / "sample-job.yaml")
    job["metadata"] = {**{k: v for k, v in job["metadata"].items() if k != "generateName"},
                       **meta}
    found = errors(issues([str(write(tmp_path, job))], capsys, code=1))
    assert [p for p, _m in found] == [path]


def test_a_long_generate_name_is_cut_by_the_server_not_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [job] = docs(KUEUE / "sample-job.yaml")
    job["metadata"]["generateName"] = "a" * 300 + "-"
    assert errors(issues([str(write(tmp_path, job))], capsys, code=0)) == []


# -- 3. each served version's rules; versions no longer served ------------------------------


@pytest.mark.parametrize(("name", "version"), [("gpu-test1-v1beta1.yaml", "1.33"),
                                               ("gpu-test1-v1.yaml", "1.34")])
def test_dra_quickstart_claims_of_each_version_pass(
        name: str, version: str, capsys: pytest.CaptureFixture[str]) -> None:
    """v1beta1 requests name deviceClassName directly (no ``exactly``), v1 under exactly."""
    assert errors(issues([str(DRA / name), "--k8s-version", version], capsys, code=0)) == []


def test_a_beta_version_a_default_server_leaves_off_names_the_ga_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Kubernetes 1.24 on enables no new beta API by default: a 1.34+ API server refuses
    resource.k8s.io/v1beta1 ("the server does not serve ResourceClaimTemplate in
    resource.k8s.io/v1beta1"); on 1.33, with no GA version yet, it is a warning."""
    found = errors(issues([str(DRA / "gpu-test1-v1beta1.yaml")], capsys, code=1))
    assert [p for p, _m in found] == ["apiVersion"]
    assert "--runtime-config=resource.k8s.io/v1beta1=true" in found[0][1]
    assert "move to resource.k8s.io/v1," in found[0][1]
    [note] = issues([str(DRA / "gpu-test1-v1beta1.yaml"), "--k8s-version", "1.33"], capsys,
                    code=0)
    assert note["severity"] == "warning" and "only where the cluster enables it" in \
        note["message"]


def _v1beta1_template() -> dict[str, Any]:
    return next(d for d in docs(DRA / "gpu-test1-v1beta1.yaml")
                if d["kind"] == "ResourceClaimTemplate")


@pytest.mark.parametrize("version", ["1.33", "1.35"])
def test_dra_v1beta1_request_with_both_forms_names_v1beta1_fields(
        version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rct = _v1beta1_template()
    rct["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"] = [
        {"name": "any", "deviceClassName": "gpu.nvidia.com"}]
    found = errors(issues([str(write(tmp_path, rct)), "--k8s-version", version], capsys,
                          code=1))
    assert [f for f in found if f[0] != "apiVersion"] == [("spec.spec.devices.requests[0]",
                      "give deviceClassName (with its selectors, allocationMode, count) or "
                      "firstAvailable, not both and not neither (resource.k8s.io/v1beta1)")]


def test_dra_v1beta1_first_available_alone_passes_and_exactly_is_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rct = _v1beta1_template()
    rct["spec"]["spec"]["devices"]["requests"][0] = {
        "name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.nvidia.com"}]}
    path = str(write(tmp_path, rct))
    assert errors(issues([path, "--k8s-version", "1.33"], capsys, code=0)) == []
    rct["spec"]["spec"]["devices"]["requests"][0] = {
        "name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
    found = errors(issues([str(write(tmp_path, rct)), "--k8s-version", "1.33"], capsys,
                          code=1))
    assert any("'exactly' was unexpected" in m for _p, m in found), found


def test_dra_v1beta2_keeps_the_exactly_rule(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    rct = next(d for d in docs(DRA / "gpu-test1-v1.yaml") if d["kind"] == "ResourceClaimTemplate")
    rct["apiVersion"] = "resource.k8s.io/v1beta2"
    v133 = ["--k8s-version", "1.33"]
    assert errors(issues([str(write(tmp_path, rct)), *v133], capsys, code=0)) == []
    del rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    found = errors(issues([str(write(tmp_path, rct)), *v133], capsys, code=1))
    assert ("spec.spec.devices.requests[0]",
            "give exactly one of 'exactly' and 'firstAvailable'") in found


def test_a_removed_api_version_is_an_error_naming_the_one_to_move_to(
        capsys: pytest.CaptureFixture[str]) -> None:
    """resource.k8s.io/v1alpha2 (Kubernetes 1.26 to 1.30) is served by no supported
    release: the API server refuses it ("no matches for kind")."""
    found = issues([str(DRA / "sharing-demo-claims-v1alpha2.yaml")], capsys, code=1)
    assert len(found) == 4 and {i["severity"] for i in found} == {"error"}
    assert all(i["path"] == "apiVersion" and "move to resource.k8s.io/v1," in i["message"]
               for i in found)


def test_kueue_v1beta1_objects_of_an_older_release_pass(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = KUEUE / "single-clusterqueue-setup-v0.13.0.yaml"
    assert {d["apiVersion"] for d in docs(path)} == {"kueue.x-k8s.io/v1beta1"}
    assert errors(issues([str(path)], capsys, code=0)) == []


# -- 4. defaults the server and the webhooks set --------------------------------------------


def test_jobset_failure_policy_rules_are_named_by_its_webhook(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The JobSet webhook names an unnamed rule failurePolicyRule<i> before the CRD's
    required check; the example also leaves restartPolicy to the webhook."""
    assert errors(issues([str(JOBSET / "failjobset-action.yaml")], capsys, code=0)) == []


def test_lint_reads_the_jobset_as_its_webhook_leaves_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lint's reader applies the same defaults: an unnamed failure-policy rule was an input
    error (exit 2) there while validate passed it."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("pools: []\n")
    code, out, err = run(["kube", "lint", str(JOBSET / "failjobset-action.yaml"),
                          "--inventory", str(inventory), "-o", "json"], capsys)
    assert code == 0, out + err
    assert [f for f in json.loads(out) if f["severity"] == "error"] == []


def test_a_jobset_failure_policy_rule_of_the_wrong_shape_is_still_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [js] = docs(JOBSET / "failjobset-action.yaml")
    js["spec"]["failurePolicy"]["rules"][0]["action"] = "Explode"
    found = errors(issues([str(write(tmp_path, js))], capsys, code=1))
    assert [p for p, _m in found] == ["spec.failurePolicy.rules[0].action"]


def test_kueue_configuration_file_is_not_an_api_object(
        capsys: pytest.CaptureFixture[str]) -> None:
    found = issues([str(KUEUE / "controller_manager_config.yaml")], capsys, code=0)
    assert errors(found) == []
    [note] = found
    assert "configuration file, not an API object" in note["message"]


# -- 5. namespace placement ------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "ns"), [([], "default"), (["-n", "research"], "research"),
                                          (["--namespace", "batch"], "batch")])
def test_objects_without_namespace_are_placed_as_kubectl_places_them(
        argv: list[str], ns: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [js] = docs(JOBSET / "paralleljobs.yaml")  # no namespace in the file
    assert "namespace" not in js["metadata"]
    js["spec"]["bogus"] = 1
    found = issues([str(write(tmp_path, js)), *argv], capsys, code=1)
    assert {i["ref"] for i in found} == {f"JobSet/{ns}/paralleljobs"}


def test_cluster_scoped_objects_stay_without_namespace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cq = next(d for d in docs(KUEUE / "single-clusterqueue-setup-v0.13.0.yaml")
              if d["kind"] == "ClusterQueue")
    cq["spec"]["bogus"] = 1
    lq = next(d for d in docs(KUEUE / "single-clusterqueue-setup-v0.13.0.yaml")
              if d["kind"] == "LocalQueue")
    del lq["metadata"]["namespace"]
    lq["spec"]["bogus"] = 1
    found = issues([str(write(tmp_path, cq, lq)), "-n", "team-a"], capsys, code=1)
    assert sorted({i["ref"] for i in found}) == ["ClusterQueue/cluster-queue",
                                                 "LocalQueue/team-a/user-queue"]


def test_a_bad_namespace_option_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(["kube", "validate", str(KUEUE / "sample-job.yaml"), "-n", "Bad_NS"],
                          capsys)
    assert code == 2 and "--namespace 'Bad_NS'" in err and "fix:" in err


# -- 6. FILE, DIR or - -----------------------------------------------------------------------


def test_validate_reads_a_directory_a_file_and_stdin_alike(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    by_dir = issues([str(DRA)], capsys, code=1)
    by_file = [i for f in sorted(DRA.glob("*.yaml"))
               for i in issues([str(f)], capsys)]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        (DRA / "sharing-demo-claims-v1alpha2.yaml").read_bytes())))
    by_stdin = issues(["-"], capsys, code=1)
    # The directory also holds the same objects twice (v1beta1 and v1 of one demo).
    assert [i["message"] for i in by_dir if "defined 2 times" not in i["message"]] == [
        i["message"] for i in by_file]
    assert any("defined 2 times" in i["message"] for i in by_dir)
    assert [i["message"] for i in by_stdin] == [i["message"] for i in by_dir
                                                if "v1alpha2" in i["file"]]
    assert {i["file"] for i in by_stdin} == {"-"}


@pytest.mark.parametrize("command", ["validate", "lint"])
def test_a_path_that_is_not_there_is_an_input_error(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["kube", command, str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and out == ""
    assert "nope.yaml: does not exist (fix: give a manifest FILE, a DIR" in err


def test_lint_reads_a_manifest_file_and_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("pools: []\n")
    path = KUEUE / "single-clusterqueue-setup-v0.13.0.yaml"
    code, by_file, err = run(["kube", "lint", str(path), "--inventory", str(inventory),
                              "-o", "json"], capsys)
    assert code in (0, 1) and "error:" not in err, err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    _code, by_stdin, _err = run(["kube", "lint", "-", "--inventory", str(inventory),
                                 "-o", "json"], capsys)
    assert json.loads(by_file) == json.loads(by_stdin)


# -- 7. a JobSet's pod templates against the target version's PodSpec ----------------------


def test_jobset_pod_templates_are_checked_against_the_target_podspec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pod-level resources came in Kubernetes 1.32; JobSet's CRD (built on a newer release)
    takes them, a 1.31 API server's Job does not."""
    [js] = docs(JOBSET / "paralleljobs.yaml")
    js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["resources"] = {
        "limits": {"cpu": "1"}}
    path = str(write(tmp_path, js))
    assert errors(issues([path, "--k8s-version", "1.34"], capsys, code=0)) == []
    found = errors(issues([path, "--k8s-version", "1.31"], capsys, code=1))
    assert [p for p, _m in found] == [
        "spec.replicatedJobs[1].template.spec.template.spec"]
    assert "'resources' was unexpected" in found[0][1] and "1.31's PodSpec" in found[0][1]


# -- what the webhooks refuse beyond their CRDs ---------------------------------------------


def test_kueue_refuses_on_flavors_naming_a_flavor_the_queue_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's own provisioning example, with onFlavors naming a flavor it does not have
    (its minimal-cq example does so; Kueue v0.19's webhook answers "Unsupported value")."""
    cq = next(d for d in docs(KUEUE / "sample-admission-check.yaml")
              if d["kind"] == "AdmissionCheck")
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
             "metadata": {"name": "cq"},
             "spec": {"namespaceSelector": {}, "resourceGroups": [
                 {"coveredResources": ["cpu"], "flavors": [
                     {"name": "default-flavor", "resources": [
                         {"name": "cpu", "nominalQuota": 9}]}]}],
                 "admissionChecksStrategy": {"admissionChecks": [
                     {"name": cq["metadata"]["name"], "onFlavors": ["default-flavor"]}]}}}
    assert errors(issues([str(write(tmp_path, queue))], capsys, code=0)) == []
    queue["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] = ["spot"]
    found = errors(issues([str(write(tmp_path, queue))], capsys, code=1))
    assert [p for p, _m in found] == [
        "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]"]
    assert "'spot'" in found[0][1] and "['default-flavor']" in found[0][1]


@pytest.mark.parametrize(("change", "path"), [
    ({"rules": [{"action": "RestartJob"}]}, "spec.failurePolicy.rules[0].action"),
    ({"restartStrategy": "InPlaceRestart"}, "spec.failurePolicy.restartStrategy"),
])
def test_jobset_refuses_actions_behind_its_alpha_gates(
        change: dict[str, Any], path: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    [js] = docs(JOBSET / "failjobset-action.yaml")
    js["spec"]["failurePolicy"].update(change)
    found = errors(issues([str(write(tmp_path, js))], capsys, code=1))
    assert [p for p, _m in found] == [path]
    assert "feature gate (alpha, off by default)" in found[0][1]


# -- hostile shapes reach the defaults and the template checks without a traceback --------


@pytest.mark.parametrize("spec", [
    {"replicatedJobs": 5},
    {"replicatedJobs": [5, {"template": 3}]},
    [1],
    {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": 7}}}}],
     "volumeClaimPolicies": 3, "failurePolicy": {"rules": 4}},
    {"network": 5, "failurePolicy": 3, "startupPolicy": 2},
])
def test_a_jobset_of_the_wrong_shape_is_reported_not_a_crash(
        spec: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "x"}, "spec": spec}
    assert errors(issues([str(write(tmp_path, js))], capsys, code=1))


def test_lint_runs_without_an_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    """An upstream file brings no node inventory: lint still judges what needs none."""
    code, out, err = run(["kube", "lint", str(JOBSET / "paralleljobs.yaml"), "-o", "json"],
                         capsys)
    assert code == 0 and err == "", out + err
    assert "--inventory" in " ".join(f["fix"] for f in json.loads(out))


def test_a_crd_whose_schema_has_requests_and_limits_is_not_read_as_quantities(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's Workload CRD embeds a pod template's schema: its ``requests`` and ``limits``
    properties hold a description and a type, not quantities (40 false errors on Kueue
    v0.19.2's config/components/crd/bases; the cut below keeps the part that drew them)."""
    resources = {"type": "object", "properties": {
        "limits": {"description": "Limits describes the maximum amount of compute resources "
                                  "allowed.", "type": "object",
                   "additionalProperties": {"anyOf": [{"type": "integer"},
                                                      {"type": "string"}],
                                            "x-kubernetes-int-or-string": True}},
        "requests": {"description": "Requests describes the minimum amount of compute "
                                    "resources required.", "type": "object"}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {
                                      "type": "object", "properties": {"spec": {
                                          "type": "object",
                                          "properties": {"resources": resources}}}}}}]}}
    assert errors(issues([str(write(tmp_path, crd))], capsys, code=0)) == []


# -- the tree's own CRDs -------------------------------------------------------------------


def test_custom_resources_are_checked_against_the_crds_in_the_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The NVIDIA DRA driver's ComputeDomain CRD beside its demo: the demo is checked, not
    'no schema'."""
    tree = DRA / "computedomain"
    assert issues([str(tree)], capsys, code=0) == []
    crd, objects = (tree / "resource.nvidia.com_computedomains.yaml",
                    docs(tree / "channel-injection.yaml"))
    objects[0]["spec"]["numNodes"] = "one"
    (tmp_path / crd.name).write_text(crd.read_text())
    write(tmp_path, *objects)
    found = errors(issues([str(tmp_path)], capsys, code=1))
    assert [p for p, _m in found] == ["spec.numNodes"]


def test_a_crd_in_the_tree_with_a_pattern_go_refuses_is_an_issue_not_an_exit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crd = docs(DRA / "computedomain" / "resource.nvidia.com_computedomains.yaml")[0]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["numNodes"]["pattern"] = "^(?=1)"
    found = errors(issues([str(write(tmp_path, crd))], capsys, code=1))
    assert len(found) == 1 and "not a Go (RE2) regular expression" in found[0][1]


@pytest.mark.parametrize("command", ["validate", "lint"])
def test_an_explicit_namespace_refuses_an_object_of_another_as_kubectl_does(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's sample Job says namespace default: `kubectl create -n research` refuses it."""
    path = str(KUEUE / "sample-job.yaml")
    code, out, err = run(["kube", command, path, "-n", "research"], capsys)
    assert code == 2 and out == ""
    assert "Job/default/sample-job-* is in namespace 'default', not 'research'" in err
    assert run(["kube", command, path, "-n", "default"], capsys)[0] == 0
