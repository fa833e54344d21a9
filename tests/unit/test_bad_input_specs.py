"""Specs that used to validate and then crash or hang ``plan`` (issue 22): each is now a
spec error at its field, or plans."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import InputError, SpecError
from aiplat.ops.matrix import check_matrix, matrix_document
from aiplat.plan import build_plan
from aiplat.sched.platform import platform_jobs
from aiplat.sched.synthetic import MAX_JOBS, Profile, generate
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

EXAMPLE: dict[str, Any] = yaml.safe_load(example_text())


def _with(path: list[str | int], value: object) -> str:
    doc = copy.deepcopy(EXAMPLE)
    cur: Any = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return yaml.safe_dump(doc, sort_keys=False)


def _dup_versions() -> str:
    doc = copy.deepcopy(EXAMPLE)
    doc["versions"]["approved"].append(copy.deepcopy(doc["versions"]["approved"][0]))
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize("text, field, words", [
    (_dup_versions(), "versions.approved[1].name", "already used by entry 0"),
    (_with(["tenants", 0, "quota", "h100", "borrowingLimit"], 1e308),
     "tenants[0].quota.h100.borrowingLimit", "out of range"),
    (_with(["tenants", 0, "quota", "h100", "gpus"], 9.2e18), "tenants[0].quota.h100.gpus",
     "out of range"),
    (_with(["kubernetes", "kueueVersion"], "V0.19.2"), "kubernetes.kueueVersion", "not a valid"),
    (_with(["tenants", 0, "weight"], 1e-300), "tenants[0].weight", "too small to divide by"),
    (_with(["storage", "classes", 1, "capacityTB"], 1e308), "storage.classes[1].capacityTB",
     "out of range"),
    (_with(["workloads", 0, "parallelism", "globalBatch"], 10**300),
     "workloads[0].parallelism.globalBatch", "out of range"),
    (_with(["workloads", 4, "slo", "promptTokens"], 10**15), "workloads[4].slo.promptTokens",
     "out of range"),
    (_with(["workloads", 0, "data", "tokens"], 1e308), "workloads[0].data.tokens",
     "out of range"),
    (_with(["workloads", 2, "slo", "queriesPerSecond"], 1e300),
     "workloads[2].slo.queriesPerSecond", "out of range"),
    (_with(["site", "electricityPricePerKWh"], 1e308), "site.electricityPricePerKWh",
     "out of range"),
    (_with(["pools", 0, "node", "gpu", "count"], True), "pools[0].node.gpu.count",
     "true is not a number"),
    (_with(["workloads", 0, "slo", "targetDays"], 1e-300), "workloads[0].slo.targetDays",
     "out of range"),
])
def test_spec_refuses_what_plan_cannot_plan(text: str, field: str, words: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_platform(text, "p.yaml")
    (issue,) = e.value.issues
    assert issue.path == field and words in issue.message, str(issue)
    assert issue.line is not None


def test_bools_stay_bools_and_numbers_stay_numbers() -> None:
    p = parse_platform(_with(["kubernetes", "fairSharing"], False), "p.yaml")
    assert p.kubernetes.fair_sharing is False
    assert parse_platform(_with(["tenants", 0, "weight"], 0), "p.yaml").tenants[0].weight == 0


def test_a_63_character_entry_name_renders_the_matrix() -> None:
    a, b = "r" * 63, "r" * 62 + "s"
    doc = copy.deepcopy(EXAMPLE)
    first = doc["versions"]["approved"][0]
    doc["versions"]["approved"] = [first | {"name": a}, first | {"name": b}]
    platform = parse_platform(yaml.safe_dump(doc), "p.yaml")
    ids = [s.id for s in matrix_document(check_matrix(platform, date(2026, 1, 1))).sections]
    entry_ids = [i for i in ids if i.startswith("entry-")]
    assert len(entry_ids) == 2 and len(set(entry_ids)) == 2
    assert all(len(i) <= 64 for i in entry_ids)


def _platform(text: str) -> Platform:
    return parse_platform(text, "p.yaml")


def test_the_simulator_refuses_unbounded_job_counts() -> None:
    # The largest prompt a spec allows, on a batch workload: a pod per request batch.
    text = _with(["workloads", 4, "slo", "outputTokens"], 10_485_760)
    platform = _platform(text)
    plan = build_plan(platform, load_catalog())
    with pytest.raises(InputError, match=f"the simulator takes at most {MAX_JOBS:,}"):
        platform_jobs(platform, plan, 0)
    p = Profile("w", "t", "pool", gpus=8, gpus_per_node=8, run_hours=1.0,
                runs_per_month=1e9, shape="replicas")
    with pytest.raises(InputError, match="workload w: "):
        generate([p], seed=0)
    ok = Profile("w", "t", "pool", gpus=8, gpus_per_node=8, run_hours=1.0, runs_per_month=30)
    assert len(generate([ok], seed=0)) > 0


def test_an_approved_version_without_a_number_is_refused_at_load() -> None:
    """Found by the property suite's 10-minute run: `versions.approved[].kueue` of junk
    validated, then `matrix show` crashed comparing it (no version number)."""
    import yaml

    from aiplat.errors import SpecError
    from aiplat.spec import EXAMPLE, example_text, parse_platform

    doc = yaml.safe_load(example_text())
    # A component name only where the field names one of several (containerRuntime): in
    # 'kueue 0.19' it said nothing, and a name is what node prepare would install (issue 38).
    for bad in ("junk", ">=,<", "containerd latest", "kueue 0.19"):
        doc["versions"]["approved"][0]["kueue"] = bad
        with pytest.raises(SpecError, match=r"versions\.approved\[0\]\.kueue: .* not a version"):
            parse_platform(yaml.safe_dump(doc), EXAMPLE)
    for good in ("0.19.2", ">=0.14,<0.20", "v0.19.2"):
        doc["versions"]["approved"][0]["kueue"] = good
        parse_platform(yaml.safe_dump(doc), EXAMPLE)
