"""A run admitted whole that needs more GPUs than the always-on serving leaves free on its
pool never starts: the plan says so (it used to say only "jobs will queue"), and the lab
agrees (tests/integration/test_cluster_live.py: nightly-eval stays pending on the cohort's
l40s quota while docs-search runs)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_tree_agree import _build, _set


def _never(plan):  # type: ignore[no-untyped-def]
    return [f for f in plan.all_findings if "never starts" in f.message]


def test_the_examples_nightly_eval_never_starts_beside_the_always_on_serving() -> None:
    _, plan, _ = _build()
    found = _never(plan)
    assert [f.subject for f in found] == ["workload nightly-eval"]
    assert "needs 23 GPUs at once" in found[0].message
    assert "hold 12 of pool l40s's 24: at most 12 are ever free" in found[0].message
    assert "grow the pool to ≥ 9 nodes" in found[0].fix


def test_a_run_that_fits_beside_the_serving_is_not_flagged() -> None:
    _, plan, _ = _build(_set("slo.completionHours", 24, name="nightly-eval"))
    w = next(w for w in plan.workloads if w.name == "nightly-eval")
    assert w.gpus <= 12
    assert _never(plan) == []
