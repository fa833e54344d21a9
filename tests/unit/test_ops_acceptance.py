"""``aiplat.ops.acceptance``: statistics, criteria, static isolation checks, records, compare.

Pure: constructed samples and the rendered example manifests, no host access.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from aiplat.catalog import load_catalog
from aiplat.cli.handover import accept_group
from aiplat.kube.lint.base import Context
from aiplat.kube.lint.rules.admission import resourcequota_admits
from aiplat.kube.render import render
from aiplat.ops.acceptance import (
    Criterion,
    Measurement,
    Record,
    bootstrap_ratio,
    coefficient_of_variation,
    compare_records,
    inventory_criterion,
    load_record,
    mann_whitney_less,
    network_isolation,
    parse_suites,
    performance_criteria,
    quota_coverage,
    regression_test,
    repeatability_criteria,
)
from aiplat.ops.acceptance_report import acceptance_document, diff_lines
from aiplat.report import render_html, render_markdown
from aiplat.spec import EXAMPLE, example_text, parse_platform


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    platform = parse_platform(example_text(), EXAMPLE, load_catalog())
    return render(platform, load_catalog()).objects()


TENANTS = ["research", "serving", "batch"]


# ------------------------------------------------------------------------------ statistics


def test_cv() -> None:
    assert coefficient_of_variation([10.0, 10.0, 10.0]) == 0.0
    assert coefficient_of_variation([5.0]) == 0.0
    assert coefficient_of_variation([9.0, 10.0, 11.0]) == pytest.approx(0.1)


def test_mann_whitney_exact_values() -> None:
    # Complete separation of 5 vs 5: only 1 of C(10,5)=252 arrangements is as extreme.
    u, p = mann_whitney_less([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert u == 0 and p == pytest.approx(1 / 252)
    u, p = mann_whitney_less([6, 7, 8, 9, 10], [1, 2, 3, 4, 5])
    assert u == 25 and p == pytest.approx(1.0)
    # One swap: U=1, two arrangements with U <= 1.
    u, p = mann_whitney_less([1, 2, 3, 4, 6], [5, 7, 8, 9, 10])
    assert u == 1 and p == pytest.approx(2 / 252)
    # Symmetric null: P(U <= 12) for 5 vs 5 is exactly one half.
    _, p = mann_whitney_less([1, 4, 5, 8, 9], [2, 3, 6, 7, 10])
    assert p == pytest.approx(0.5)


def test_mann_whitney_ties_use_normal_approximation() -> None:
    u, p = mann_whitney_less([1, 1, 2, 2, 3], [2, 3, 3, 4, 4])
    assert u == pytest.approx(3.0)  # 2 and 3 tie: half a pair each
    assert 0.01 < p < 0.1
    _, p_same = mann_whitney_less([1.0] * 5, [1.0] * 5)
    assert p_same == 1.0


def test_bootstrap_interval_contains_ratio() -> None:
    rng = np.random.default_rng(1)
    base = list(100 + rng.normal(0, 2, 7))
    cur = list(80 + rng.normal(0, 2, 7))
    ratio, lo, hi = bootstrap_ratio(cur, base)
    assert lo <= ratio <= hi
    assert lo > 0.7 and hi < 0.9


def _m(samples: list[float], unit: str = "MiB/s") -> Measurement:
    return Measurement(unit=unit, samples=samples, method="test")


def test_regression_flagged_only_when_significant_and_large() -> None:
    base = _m([100, 102, 98, 101, 99])
    assert regression_test("x", _m([70, 71, 69, 72, 70]), base, 0.10).regressed
    # Same distribution: not flagged.
    assert not regression_test("x", _m([99, 101, 100, 98, 102]), base, 0.10).regressed
    # Significantly lower but within tolerance (5% < 10%): not flagged.
    small = regression_test("x", _m([95, 96, 94, 95.5, 94.5]), base, 0.10)
    assert small.p < 0.05 and not small.regressed
    # A large drop in one noisy run only is not significant.
    noisy = regression_test("x", _m([60, 101, 99, 102, 100]), base, 0.10)
    assert not noisy.regressed


def _record(measurements: dict[str, Measurement], criteria: list[Criterion] | None = None,
            **kw: Any) -> Record:
    data: dict[str, Any] = {
        "started_at": "2026-11-29T18:00:00Z", "finished_at": "2026-11-29T18:00:05Z",
        "seconds": 5.0, "platform": "lab", "pool": "lab", "spec_file": "lab.yaml",
        "suites": ["performance", "repeatability"], "runs": 5,
        "matrix": {"matched": "lab-k8s134", "entry": {"name": "lab-k8s134", "kernel": ">=6.1"},
                   "observed": {"kernel": "6.18.44"}},
        "fingerprint": {"kernel": "6.18.44", "cpus_available": 2},
        "criteria": criteria or [], "measurements": measurements} | kw
    return Record.model_validate(data)


def test_repeatability_cv_and_regressed_baseline() -> None:
    cur = {"model.pull": _m([300, 310, 305, 298, 302]), "disk": _m([100, 150, 60, 120, 90])}
    crit = repeatability_criteria(cur, 0.15, None, 0.10)
    status = {c.id: c.status for c in crit}
    assert status == {"repeatability.cv.model.pull": "pass", "repeatability.cv.disk": "fail"}
    relaxed = repeatability_criteria(cur, 0.15, None, 0.10, cv_for={"disk": 0.5})
    assert all(c.status == "pass" for c in relaxed)
    # A deliberately regressed baseline: the node "used to be" 1.5x faster.
    baseline = _record({k: _m([s * 1.5 for s in m.samples]) for k, m in cur.items()})
    crit = repeatability_criteria(cur, 0.5, baseline, 0.10)
    flagged = {c.id for c in crit if c.status == "fail"}
    assert "repeatability.baseline.model.pull" in flagged
    # Against itself nothing is flagged.
    same = repeatability_criteria(cur, 0.5, _record(cur), 0.10)
    assert all(c.status == "pass" for c in same)
    missing = repeatability_criteria(cur, 0.5, _record({}), 0.10)
    assert {c.status for c in missing if "baseline" in c.id} == {"warn"}


def test_performance_floor() -> None:
    crit = performance_criteria({"model.pull": _m([100, 110, 90])},
                                {"model.pull": (200.0, "--min")})
    assert crit[0].status == "fail" and ">= 200.0 MiB/s" in crit[0].expected
    assert performance_criteria({"model.pull": _m([100.0])}, {})[0].status == "pass"


def test_inventory_criterion() -> None:
    ok = inventory_criterion(spec_cpus=2, spec_memory_gib=24, spec_gpus=0, spec_gpu_model=None,
                             cpus=2, memory_kib=23 * 2**20 + 2**19, gpus=0, gpu_names=[])
    assert ok.status == "pass"
    bad = inventory_criterion(spec_cpus=112, spec_memory_gib=2048, spec_gpus=8,
                              spec_gpu_model="H100-SXM-80GB", cpus=112,
                              memory_kib=2048 * 2**20, gpus=7,
                              gpu_names=["NVIDIA A100-SXM4-80GB"] * 7)
    assert bad.status == "fail"
    assert "GPUs 7 != 8" in bad.observed and "is not H100-SXM-80GB" in bad.observed


def test_parse_suites() -> None:
    assert parse_suites("isolation,function") == ["function", "isolation"]
    with pytest.raises(Exception, match="unknown suite"):
        parse_suites("function,speed")


# ------------------------------------------------------------------------------ isolation


def test_rendered_policies_isolate_tenants(objects: list[dict[str, Any]]) -> None:
    c = network_isolation(objects, TENANTS)
    assert c.status == "pass", c.observed
    assert c.observed == "6 of 6 pairs denied"


def _policies_without(objects: list[dict[str, Any]], ns: str, name: str) -> list[Any]:
    return [o for o in objects if not (o["kind"] == "NetworkPolicy"
                                       and o["metadata"]["namespace"] == ns
                                       and o["metadata"]["name"] == name)]


def test_leaking_policy_is_caught(objects: list[dict[str, Any]]) -> None:
    leaky = copy.deepcopy(objects)
    leaky.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "allow-all-namespaces", "namespace": "serving"},
                  "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                           "ingress": [{"from": [{"namespaceSelector": {}}]}]}})
    c = network_isolation(leaky, TENANTS)
    # Ingress into serving is open, but every egress policy of the others isolates them.
    assert c.status == "pass"
    assert any(e.startswith("research -> serving: denied (egress of research denied")
               for e in c.evidence)
    # Removing default-deny is not enough: allow-dns still selects every pod for egress.
    assert network_isolation(_policies_without(leaky, "research", "default-deny"),
                             TENANTS).status == "pass"
    leaky.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "allow-egress-anywhere", "namespace": "research"},
                  "spec": {"podSelector": {"matchLabels": {"app": "x"}},
                           "policyTypes": ["Egress"], "egress": [{}]}})
    c = network_isolation(leaky, TENANTS)
    assert c.status == "fail"
    assert "research -> serving" in c.observed
    assert any(e.startswith("research -> serving: ALLOWED") for e in c.evidence)


def test_ip_block_everything_leaks(objects: list[dict[str, Any]]) -> None:
    leaky = copy.deepcopy(objects)
    for o in leaky:
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "allow-same-namespace":
            o["spec"]["ingress"] = [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]
            o["spec"]["egress"] = [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]
    c = network_isolation(leaky, TENANTS)
    assert c.status == "fail" and "0.0.0.0/0 covers every pod address" in c.observed


def test_quotas_cover_queues(objects: list[dict[str, Any]]) -> None:
    def lint(objs: list[dict[str, Any]]) -> list[str]:
        rendered = render(parse_platform(example_text(), EXAMPLE, load_catalog()),
                          load_catalog())
        return [f"{f.subject}: {f.message}" for f in resourcequota_admits(
            Context(objs, rendered.inventory))]

    assert quota_coverage(objects, lint(objects)).status == "pass"
    without = [o for o in objects if not (o["kind"] == "ResourceQuota"
                                          and o["metadata"]["namespace"] == "batch")]
    c = quota_coverage(without, lint(without))
    assert c.status == "fail" and "batch: LocalQueue but no ResourceQuota" in c.observed
    small = copy.deepcopy(objects)
    for o in small:
        if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "research":
            for k in o["spec"]["hard"]:
                if "gpu" in k:
                    o["spec"]["hard"][k] = "1"
    c = quota_coverage(small, lint(small))
    assert c.status == "fail" and "ResourceQuota/research" in c.observed


# ------------------------------------------------------------------------------ records


def test_record_round_trip_compare_and_report(tmp_path: Path) -> None:
    crit_a = [Criterion(id="function.inventory", suite="function", title="t", status="pass"),
              Criterion(id="repeatability.cv.x", suite="repeatability", title="t",
                        status="pass")]
    a = _record({"x": _m([100, 101, 99])}, crit_a)
    crit_b = [crit_a[0], crit_a[1].model_copy(update={"status": "fail", "observed": "CV 40%"})]
    b = _record({"x": _m([50, 90, 40])}, crit_b,
                fingerprint={"kernel": "6.19.1", "cpus_available": 2})
    again = load_record(json.dumps(a.dump()))
    assert again == a and a.dump()["status"] == "pass"
    d = compare_records(a, b)
    assert d.regressed and d.status == ("pass", "fail")
    lines = diff_lines(d)
    assert "criterion repeatability.cv.x: pass -> fail (CV 40%)" in lines
    assert "environment kernel: 6.18.44 -> 6.19.1" in lines
    assert any(line.startswith("metric x: 100.0 -> 50.0 MiB/s x0.500") for line in lines)
    assert not compare_records(b, a).regressed
    only_function = _record({}, [crit_a[0]], suites=["function"])
    d = compare_records(a, only_function)
    assert d.criteria == []
    assert d.suites_only == (["performance", "repeatability"], ["function"])
    assert "suites run only in A: performance, repeatability (not compared)" in diff_lines(d)
    skipped = _record({}, [crit_a[0].model_copy(update={"status": "skip"})])
    assert skipped.status == "incomplete"
    doc = acceptance_document(b)
    html = render_html(doc)
    assert "FAIL" in html and "lab-k8s134" in render_markdown(doc)
    (tmp_path / "a.json").write_text(json.dumps(a.dump()))
    (tmp_path / "b.json").write_text(json.dumps(b.dump()))
    r = CliRunner()
    res = r.invoke(accept_group, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert res.exit_code == 1 and "status: pass -> fail" in res.output
    res = r.invoke(accept_group, ["compare", str(tmp_path / "b.json"), str(tmp_path / "a.json"),
                                  "-o", "json"])
    assert res.exit_code == 0 and json.loads(res.output)["regressed"] is False
    res = r.invoke(accept_group, ["report", str(tmp_path / "b.json"), "-w", str(tmp_path)])
    assert res.exit_code == 0 and (tmp_path / "acceptance.html").exists()


def test_handover_section_links_matrix_and_last_acceptance() -> None:
    from datetime import date

    from aiplat.ops.acceptance_report import handover_section
    from aiplat.ops.matrix import check_matrix

    platform = parse_platform(example_text(), EXAMPLE, load_catalog())
    m = check_matrix(platform, date(2026, 11, 29))
    links = {"matrix": "matrix/matrix.html", "runbook": "runbook/runbook.html",
             "monitoring": "monitoring/aiplat-rules.yaml",
             "acceptance": "acceptance/acceptance.html"}
    none = handover_section(m, None, links)
    assert "no acceptance run recorded yet" in none.tables[0].rows[1][2]
    assert none.tables[0].rows[1][3] == ""  # no link to a report that does not exist yet
    rec = _record({"x": _m([1.0, 1.1])})
    sec = handover_section(m, rec, links)
    rows = {r[0]: r for r in sec.tables[0].rows}
    # Statuses in a cell of their own (the report shows them as badges), files as links.
    assert rows["version matrix"][1:3] == ["pass", "1 approved entry"]
    assert rows["acceptance"][1] == "pass"
    assert rows["acceptance"][2].startswith("on 2026-11-29T18:00:00Z")
    hrefs = {k: getattr(r[3], "href", None) for k, r in rows.items()}
    assert hrefs == {"version matrix": "matrix/matrix.html",
                     "acceptance": "acceptance/acceptance.html",
                     "runbook": "runbook/runbook.html",
                     "monitoring rules": "monitoring/aiplat-rules.yaml"}


OLD_RECORD = Path(__file__).parents[1] / "fixtures" / "snake_case_files" / "acceptance.json"


def test_a_record_written_before_camel_case_is_read_compared_and_reported(
        tmp_path: Path) -> None:
    """acceptance.json files on users' disks from before issue #45 spell fields in snake_case
    (``started_at``, ``spec_file``, the fingerprint's ``cpu_model``; the fixture was written
    by that version's ``Record.dump``): `accept compare` of an old record with a new one
    shows what changed, not every renamed key, and `accept report` reads the old one. The
    fixture's criteria are constructed (a real run needs root on a GPU node)."""
    text = OLD_RECORD.read_text()
    assert '"started_at"' in text and '"cpu_model"' in text  # the old spelling
    old = load_record(text, str(OLD_RECORD))
    assert old.started_at == "2026-12-06T02:05:00Z" and old.spec_file == "platform.yaml"
    assert "cpuModel" in old.fingerprint and "containerToolkit" in old.matrix["entry"]
    assert set(old.measurements) == {"model.pull", "disk.read"}  # data keys as they were
    new = tmp_path / "new.json"
    new.write_text(json.dumps(old.dump(), indent=2) + "\n")
    data = json.loads(new.read_text())
    assert {"schemaVersion", "startedAt", "specFile"} <= set(data)
    assert load_record(new.read_text()) == old
    d = compare_records(old, load_record(new.read_text()))
    assert d.fingerprint == {} and not d.regressed
    r = CliRunner()
    res = r.invoke(accept_group, ["compare", str(OLD_RECORD), str(new)])
    assert res.exit_code == 0, res.output
    assert "environment" not in res.output  # no key reported changed by its spelling
    res = r.invoke(accept_group, ["report", str(OLD_RECORD), "-w", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "r580-k8s134" in (tmp_path / "r" / "acceptance.md").read_text()
