"""The live differential's own judgement of Kueue's state (``kueue_live``), on Workloads the
real Kueue v0.19.2 wrote on the lab control plane (recorded by ``bench/kueue_diff.py
--partial --dump``; provenance in the fixture). No cluster: these are the rules that decide
when a snapshot may be taken and when a run has an outcome to compare at all.

What the recording cannot show: whether a later Kueue writes other reasons (with its
UnadmittedWorkloadsExplicitStatus gate on, the scheduler writes Suspended where v0.19.2's
default writes Pending); the live differential itself runs on the lab's v0.19.2."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kueue_live
import pytest

from aiplat.kueue.scenarios import generate

pytestmark = pytest.mark.integration

REC = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
                  / "kueue-partial-unscheduled.json").read_text())


def _by_name(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs}


def test_only_the_schedulers_mark_counts_as_tried() -> None:
    """Snapshot of seed 12 with the gate closed: w01 carries the scheduler's requeue (reason
    Pending), w04 only the workload controller's (reason Inadmissible), both 'ClusterQueue
    s12-q3 is inactive'. The snapshot must wait for w04's."""
    wls = _by_name(REC["seed12_snapshot"])
    assert kueue_live._scheduler_marked(wls["s12-w01"])
    assert not kueue_live._scheduler_marked(wls["s12-w04"])
    bare = copy.deepcopy(wls["s12-w04"])
    bare["status"] = {}
    assert not kueue_live._scheduler_marked(bare)  # not seen by Kueue at all


def test_a_best_effort_queue_kueue_left_out_is_no_outcome() -> None:
    """Seed 1, run 2, after Kueue settled: s1-w01 (BestEffortFIFO s1-q3) was never tried;
    the StrictFIFO s1-q2 workloads behind their blocked head are not judged."""
    sc = generate(1, partial=True)
    final = REC["seed1_final"]
    assert kueue_live.never_scheduled(sc, final) == ["s1-w01"]
    # Once the scheduler has tried it (its requeue message replaces the controller's), the
    # run is judged on its outcome again.
    tried = copy.deepcopy(final)
    for w in tried:
        if w["metadata"]["name"] == "s1-w01":
            for c in w["status"]["conditions"]:
                if c["type"] == "QuotaReserved":
                    c["reason"] = "Pending"
                    c["message"] = "couldn't assign flavors to pod set ps0: ..."
    assert kueue_live.never_scheduled(sc, tried) == []
