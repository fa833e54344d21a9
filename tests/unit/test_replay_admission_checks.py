"""AdmissionChecks as Kueue v0.19 keeps them: a workload the cycle reserves quota for in a
ClusterQueue with checks is not Admitted until every check that applies to its flavors is
Ready (Admitted False, "The workload has not all checks ready"); a ClusterQueue that names
a missing or inactive AdmissionCheck is inactive (AdmissionCheckNotFound /
AdmissionCheckInactive) and admits nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from test_sched_replay import API, cq, rf, run, wl

from aiplat.cli.main import cli

Obj = dict[str, Any]


def _check(name: str, active: bool = True) -> Obj:
    o: Obj = {"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": name},
              "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}
    if active:
        o["status"] = {"conditions": [{"type": "Active", "status": "True", "reason": "Active",
                                       "message": "The admission check is active",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return o


def _queue(**strategy: Any) -> list[Obj]:
    rules = [{"name": "prov", **strategy}]
    return [rf("f0"), rf("f1"),
            *cq("q", [(["cpu"], [("f0", {"cpu": 1}), ("f1", {"cpu": 4})])],
                admissionChecksStrategy={"admissionChecks": rules})]


def test_reserved_quota_waits_for_the_checks() -> None:
    out = run([*_queue(), _check("prov"), wl("w", "q", (1, {"cpu": "1"}))])["w"]
    assert out.decision == "reserved"
    assert out.flavors == {"ps0": {"cpu": "f0"}}
    assert out.reason == "UnsatisfiedChecks"
    assert "prov" in out.message and "not all checks ready" in out.message


def test_a_check_on_other_flavors_does_not_apply() -> None:
    objs = [*_queue(onFlavors=["f1"]), _check("prov"), wl("w", "q", (1, {"cpu": "1"}))]
    assert run(objs)["w"].decision == "admitted"
    objs.append(wl("x", "q", (1, {"cpu": "2"})))  # f0 is too small: f1, which the check runs on
    assert run(objs)["x"].decision == "reserved"


def test_an_admitted_workload_with_all_checks_ready_is_admitted() -> None:
    w = wl("w", "q", (1, {"cpu": "1"}), admitted={"ps0": {"cpu": "f0"}})
    w["status"]["admissionChecks"] = [{"name": "prov", "state": "Ready", "message": ""}]
    assert run([*_queue(), _check("prov"), w])["w"].decision == "admitted"
    w["status"]["admissionChecks"][0]["state"] = "Pending"
    out = run([*_queue(), _check("prov"), w])["w"]
    assert (out.decision, out.reason) == ("reserved", "UnsatisfiedChecks")


def test_a_missing_or_inactive_check_keeps_the_queue_inactive() -> None:
    other = _check("other")
    out = run([*_queue(), other, wl("w", "q", (1, {"cpu": "1"}))])["w"]
    assert (out.decision, out.reason) == ("pending", "Inactive")
    assert "AdmissionCheck prov not found" in out.message
    out = run([*_queue(), _check("prov", active=False), wl("w", "q", (1, {"cpu": "1"}))])["w"]
    assert (out.decision, out.reason) == ("pending", "Inactive")
    assert "AdmissionCheck prov inactive" in out.message


def test_v1beta1_admission_checks_list() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 1})])], admissionChecks=["prov"]),
            _check("prov"), wl("w", "q", (1, {"cpu": "1"}))]
    objs[1]["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert run(objs)["w"].decision == "reserved"


def test_without_any_admission_check_in_the_snapshot_the_queue_is_unknown() -> None:
    """The snapshot holds no AdmissionCheck at all: missing or not captured cannot be told."""
    from aiplat.kueue.snapshot import parse
    from aiplat.kueue.unknown import decide

    rows = decide(parse([*_queue(), wl("w", "q", (1, {"cpu": "1"}))], "t"))[1]
    assert rows[0].shown == "unknown (admissionChecks)"


def test_cli_reads_admission_checks_through_kueues_schema(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump_all([*_queue(), _check("prov"),
                                     wl("w", "q", (1, {"cpu": "1"}))]))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)[0]
    assert (row["decision"], row["reason"]) == ("reserved", "UnsatisfiedChecks")
