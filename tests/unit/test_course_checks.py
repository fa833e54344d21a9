"""Each exercise's check passes on a minimal correct result set and fails — naming the file
and what is wrong — when a result is missing or wrong. The results are written by hand in
the shapes the capabilities emit (the end-to-end test runs them for real)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from aiplat.course.exercises import (
    ACCEPT_CLEAN,
    ACCEPT_REGRESSED,
    EXERCISES,
    REGRESSION_ID,
    TREE_FACTS,
    exercise,
)


@dataclass
class DictFiles:
    files: Mapping[str, str]

    def text(self, rel: str) -> str | None:
        return self.files.get(rel)


LAB_STORE = "10.250.1.2:5000"
"""A lab on other subnets than the default one (the course names no address itself)."""


def j(data: Any) -> str:
    return json.dumps(data)


def _pull(warm: bool, seconds: float, downloaded: int) -> str:
    return j({"reference": f"{LAB_STORE}/course/mini:v1@sha256:aa", "digest": "sha256:aa",
              "warm": warm,
              "bytesDownloaded": downloaded, "seconds": seconds})


def _sim(share_a: float, share_b: float, waiting: int = 300) -> str:
    return j({"tenants": [
        {"name": "team-a", "weight": 1.0, "waiting": waiting, "obtainedShare": share_a},
        {"name": "team-b", "weight": 2.0, "waiting": waiting, "obtainedShare": share_b},
        {"name": "idle", "weight": 1.0, "waiting": 0, "obtainedShare": 0.0}]})


def _record(status: str, criteria: dict[str, str], matched: str | None = "lab-k8s134") -> str:
    return j({"status": status, "matrix": {"matched": matched},
              "criteria": [{"id": k, "status": v} for k, v in criteria.items()]})


GOOD: dict[str, str] = {
    "ex1/platform.yaml": "apiVersion: aiplat/v1alpha1\n",
    "ex1/plan/plan.json": j({
        "workloads": [{"kind": k} for k in ("pretrain", "lora", "online-inference", "rag")],
        "pools": [{"name": "h100", "nodes": 6, "spare_nodes": 1}],
        "facility": {"it_power_kw": 89.2},
        "roles": {"roles": [{"role": "control-plane"}], "zones": [{"name": "mgmt"}]},
        "deployment": {"recommendation": "kubernetes", "reasons": ["queues"]}}),
    "ex2/inventory.json": j({"host": {"kernel": "6.1.0"}}),
    "ex2/hgx-inventory.json": j({"pci": [{"kind": "gpu"}] * 8 + [{"kind": "bridge"}]}),
    "ex2/prepare.sh": "#!/bin/bash\nset -eu\n",
    "ex2/cdi/aiplat-example.com-acc.json": "{}",
    "ex2/cdi-verify.json": j([{"results": [{"device": "(no device)", "ok": True},
                                           {"device": "example.com/acc=0", "ok": True}]}]),
    "ex2/check.json": j({"status": "pass"}),
    "ex2/baseline.json": j({"metrics": {"cpu.sha256": {}}}),
    "ex3/kube/kustomization.yaml": "resources: []\n",
    **{rel: f"x\n{needle}\n" for rel, needle, _ in TREE_FACTS},
    "ex3/validate.json": j([{"version": "1.34", "errors": 0}]),
    "ex3/lint.json": j([{"severity": "warning"}]),
    "ex3/why-pending.json": j({"code": "TopologyDomainTooSmall"}),
    "ex3/kube/kueue/cohorts.yaml": "kind: Cohort\n",
    "ex3/kube/kueue/clusterqueues.yaml": "fairSharing:\n  weight: 2\n",
    "ex3/kube/tenants/research/quota.yaml": "kind: ResourceQuota\n",
    "ex3/apply.json": j([{"object": "Job serving/docs-search", "action": "created"}]),
    "ex3/cluster.json": j({"workloads": [
        {"owner": "Job/docs-search", "admitted": True,
         "pods": [{"node": "l40s-0", "devices": ["gpu-0", "gpu-1"]}]},
        {"owner": "Job/nightly-eval", "admitted": False, "reason": "insufficient", "pods": []}]}),
    "ex3/why-pending-live.json": j({"code": "QuotaExhausted",
                                    "evidence": ["Kueue: Pending: insufficient"]}),
    "ex4/queues-live.json": j({"kueue": {"queues": [{"name": "batch", "weightedShare": 334}]},
                               "workloads": [{"owner": "Job/borrow-eval", "admitted": True}]}),
    "ex4/sharing.json": j({"gpus": 3, "layouts": [{"gpus": 2}]}),
    "ex4/sim-fair.json": _sim(0.33, 0.67),
    "ex4/sim-classic.json": _sim(0.5, 0.5),
    "ex5/lab.json": j({"prefix": "blab", "registry": f"http://{LAB_STORE}"}),
    "ex5/pull-cold.json": _pull(False, 0.1, 16 << 20),
    "ex5/pull-warm.json": _pull(True, 0.01, 0),
    "ex5/bench.json": j({"figures": {w: {"seconds": 0.1} for w in ("cold", "warm", "load")}}),
    "ex6/pull-slow.json": _pull(False, 1.5, 16 << 20),
    "ex6/diagnose-fault.json": j({"causes": [{"kind": "slow-storage", "evidence": ["flat"]}]}),
    "ex6/diagnose-clear.json": j({"causes": []}),
    "ex7/matrix.json": j({"status": "pass"}),
    ACCEPT_CLEAN: _record("pass", {"function.inventory": "pass",
                                   "repeatability.cv.model.pull": "pass"}),
    "ex7/baseline/acceptance.html": "<html></html>",
    ACCEPT_REGRESSED: _record("fail", {REGRESSION_ID: "fail"}),
    "ex7/compare.json": j({"regressed": True}),
}


def problems(number: int, changes: Mapping[str, str | None] | None = None) -> list[str]:
    files = dict(GOOD)
    for rel, text in (changes or {}).items():
        if text is None:
            files.pop(rel, None)
        else:
            files[rel] = text
    return exercise(number).check(DictFiles(files))


@pytest.mark.parametrize("number", [ex.number for ex in EXERCISES])
def test_check_passes_on_correct_results(number: int) -> None:
    assert problems(number) == []


@pytest.mark.parametrize("number", [ex.number for ex in EXERCISES])
def test_check_fails_on_an_empty_course_naming_files(number: int) -> None:
    found = exercise(number).check(DictFiles({}))
    assert found, number
    assert all("ex" in p for p in found), found


@pytest.mark.parametrize("number", [ex.number for ex in EXERCISES])
def test_check_fails_on_each_missing_result(number: int) -> None:
    for rel in exercise(number).results:
        found = problems(number, {rel: None})
        assert any(rel in p for p in found), (rel, found)


@pytest.mark.parametrize("number, rel, text, expect", [
    (1, "ex1/plan/plan.json", j({"pools": []}), "no pool sized"),
    (1, "ex1/plan/plan.json", "{not json", "not JSON"),
    (2, "ex2/hgx-inventory.json", j({"pci": [{"kind": "gpu"}] * 7}), "found 7"),
    (2, "ex2/cdi-verify.json", j([{"results": [{"ok": True}, {"ok": False}]}]),
     "1 of 2 container checks"),
    (2, "ex2/check.json", j({"status": "fail"}), "node checks fail"),
    (2, "ex2/prepare.sh", "echo hi\n", "not a script"),
    (3, "ex3/validate.json", j([{"version": "1.34", "errors": 3}]), "3 validation errors"),
    (3, "ex3/lint.json", j([{"severity": "error"}]), "1 errors"),
    (3, "ex3/why-pending.json", j({"code": "QuotaExhausted"}), "no topology reason"),
    (3, "ex3/kube/cluster/deviceclasses.yaml", "kind: ConfigMap\n", "DeviceClasses missing"),
    (3, "ex3/apply.json", j([{"object": "Job batch/x", "action": "pods refused"}]),
     "refused ['Job batch/x']"),
    (3, "ex3/cluster.json", j({"workloads": [{"admitted": False, "pods": []}]}),
     "no admitted workload has pods on nodes"),
    (3, "ex3/cluster.json", j({"workloads": [{"admitted": True, "pods": [{"node": "n"}]}]}),
     "no DRA claim was allocated"),
    (3, "ex3/why-pending-live.json", j({"code": "QuotaExhausted", "evidence": []}),
     "no live reason"),
    (4, "ex4/queues-live.json", j({"kueue": {"queues": [{"name": "batch", "weightedShare": 0}]},
                                   "workloads": [{"owner": "Job/borrow-eval",
                                                  "admitted": True}]}), "weighted share is 0"),
    (4, "ex4/queues-live.json", j({"kueue": {"queues": []}, "workloads": []}),
     "borrowing job was not admitted"),
    (4, "ex4/sim-fair.json", _sim(0.3, 0.7, waiting=0), "no contention"),
    (4, "ex4/sim-classic.json", j({"tenants": [{"name": "research"}]}), "not a simulation"),
    (4, "ex3/kube/kueue/clusterqueues.yaml", "kind: ClusterQueue\n", "weight:"),
    (5, "ex5/pull-warm.json", _pull(True, 0.1, 100), "not served from the cache"),
    (5, "ex5/pull-cold.json", _pull(True, 0.1, 0), "not a cold pull"),
    (5, "ex5/pull-cold.json", j({"reference": "docker.io/x", "warm": False,
                                 "bytesDownloaded": 5, "digest": "sha256:aa"}),
     f"not pulled from the lab store {LAB_STORE}"),
    # The store is the lab's, read from its state: another lab's address is no pull from it.
    (5, "ex5/lab.json", j({"registry": "http://10.99.1.2:5000"}),
     "not pulled from the lab store 10.99.1.2:5000"),
    (5, "ex5/lab.json", j({"phase": "down"}), "ex5/lab.json: no model store"),
    (5, "ex5/bench.json", j({"figures": {"cold": {"seconds": 1}}}), "no measured warm"),
    (6, "ex6/pull-slow.json", _pull(False, 0.1, 16 << 20), "not slower"),
    (6, "ex6/diagnose-fault.json", j({"causes": [{"kind": "mtu", "evidence": ["x"]}]}),
     "expected 'slow-storage'"),
    (6, "ex6/diagnose-fault.json", j({"causes": []}), "first cause is None"),
    (6, "ex6/diagnose-clear.json", j({"causes": [{"kind": "slow-storage"}]}), "remains"),
    (7, ACCEPT_CLEAN, _record("fail", {"function.cdi-verify": "fail"}), "function.cdi-verify"),
    (7, ACCEPT_CLEAN, _record("pass", {"function.inventory": "pass"}),
     "no repeatability statistics"),
    (7, ACCEPT_CLEAN, _record("pass", {"repeatability.cv.x": "pass"}, matched=None),
     "matched no approved"),
    (7, ACCEPT_REGRESSED, _record("pass", {REGRESSION_ID: "pass"}), "was not caught"),
    (7, "ex7/compare.json", j({"regressed": False}), "no regression"),
    (7, "ex7/matrix.json", j({"status": "fail"}), "violates a fact"),
])
def test_check_fails_on_a_wrong_result(number: int, rel: str, text: str, expect: str) -> None:
    found = problems(number, {rel: text})
    assert any(expect in p for p in found), found


def test_fair_sharing_weights_are_checked_once_the_simulator_honours_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aiplat.course import exercises

    monkeypatch.setattr(exercises, "FAIR_SHARING_HONOURED", True)
    assert problems(4) == []
    found = problems(4, {"ex4/sim-fair.json": _sim(0.5, 0.5)})
    assert any("weights not honoured" in p for p in found), found


def test_exercise_1_reads_plan_json_in_either_spelling(tmp_path: Any) -> None:
    """`aiplat lab exercise 1 --check` on a real plan.json: one written before aiplat's JSON
    files were camelCase (``spare_nodes``, ``it_power_kw``; the fixture, from `aiplat plan`
    on the example) and one `aiplat plan` writes now (``spareNodes``, ``itPowerKw``); a plan
    without the power figure fails in either."""
    from pathlib import Path

    from aiplat.cli.main import main

    old = (Path(__file__).parents[1] / "fixtures" / "snake_case_files" / "plan.json").read_text()
    assert '"it_power_kw"' in old
    assert main(["plan", "-d", str(tmp_path / "plan")]) == 0
    new = (tmp_path / "plan" / "plan.json").read_text()
    assert '"itPowerKw"' in new and '"it_power_kw"' not in new
    for text, key in ((old, "it_power_kw"), (new, "itPowerKw")):
        assert problems(1, {"ex1/plan/plan.json": text}) == []
        data = json.loads(text)
        del data["facility"][key]
        assert problems(1, {"ex1/plan/plan.json": j(data)}) == ["plan.json: no power figure"]
