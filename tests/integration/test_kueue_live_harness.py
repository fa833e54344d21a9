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


def _wl(name: str, uid: str, rv: int, evicted_by: str | None = None) -> dict[str, Any]:
    conds = [{"type": "QuotaReserved", "status": "True"}]
    if evicted_by is not None:
        conds.append({"type": "Evicted", "status": "True", "reason": "Preempted",
                      "message": f"Preempted to accommodate a workload (UID: {evicted_by}, "
                                 "JobUID: UNKNOWN) due to prioritization in the ClusterQueue"
                      if evicted_by else "The ClusterQueue is stopped"})
    return {"metadata": {"name": name, "uid": uid, "resourceVersion": str(rv)},
            "status": {"conditions": conds}}


def test_a_cycles_evictions_are_all_listed_once_a_preemptor_was_written_after_them() -> None:
    """Kueue writes a cycle's evictions before any head's status: the preemptor's newer
    resource version shows the listing holds all of them (victims a poll apart let Kueue
    schedule between them, partial seed 5)."""
    victim = _wl("v", "uid-v", 10, evicted_by="uid-p")
    assert not kueue_live._cycle_listed([victim, _wl("p", "uid-p", 9)])
    assert kueue_live._cycle_listed([victim, _wl("p", "uid-p", 11)])
    assert not kueue_live._cycle_listed([victim])  # its preemptor not listed yet
    # an eviction no preemptor made (its queue stopped) waits for nobody
    assert kueue_live._cycle_listed([_wl("s", "uid-s", 12, evicted_by="")])


def test_a_run_is_held_against_one_of_the_replays_outcomes_as_a_whole() -> None:
    """The snapshot Kueue v0.19.2 decided two ways (tests/data/kueue_timing): each run
    agrees with the replay's outcome or with its timing alternative, whole; a run that
    mixed the two would differ."""
    data = Path(__file__).resolve().parents[1] / "data" / "kueue_timing"
    objs = json.loads((data / "seed12-snapshot.json").read_text())["items"]
    runs = json.loads((data / "seed12-kueue.json").read_text())["runs"]
    r, rows = kueue_live.replay(objs, "seed 12", tas=False)
    sim = {o.workload.split("/", 1)[1]: kueue_live.decided(o) for o in rows}

    def result(kueue: dict[str, Any]) -> kueue_live.Result:
        return kueue_live.Result(
            12, {n: (o["admitted"], o["flavors"], o["counts"]) for n, o in kueue.items()},
            sim, placed=kueue_live.placed(rows), alternatives=kueue_live.alternatives(r))

    results = [result(k) for k in runs]
    assert [res.differences() for res in results] == [[], [], [], []]
    assert [res.world for res in results] == [0, 0, 1, 0]
    mixed = {**runs[0], "s12-w04": runs[2]["s12-w04"]}
    assert len(result(mixed).differences()) == 1
