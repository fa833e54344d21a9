"""Timing alternatives (``aiplat.kueue.timing``): a decision that depends on the cycle in
which an eviction completes is shown with its other outcome, and each outcome is one the real
Kueue reached. The data: one snapshot the lab's Kueue v0.19.2 decided two ways in four runs
(``tests/data/kueue_timing/README.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_inprocess import run

from aiplat.kueue import timing
from aiplat.kueue.cycle import Outcome, Replay
from aiplat.kueue.snapshot import parse

DATA = Path(__file__).resolve().parents[1] / "data" / "kueue_timing"
SNAPSHOT = DATA / "seed12-snapshot.json"


def _objects() -> list[dict[str, Any]]:
    return list(json.loads(SNAPSHOT.read_text())["items"])


def _kueue_runs() -> list[dict[str, tuple[bool, dict[str, Any], dict[str, int]]]]:
    runs = json.loads((DATA / "seed12-kueue.json").read_text())["runs"]
    return [{n: (o["admitted"], o["flavors"], o["counts"]) for n, o in r.items()}
            for r in runs]


def _decided(rows: list[Outcome] | dict[str, Outcome]) -> dict[str, Any]:
    """The replay's rows in the recorded runs' terms: admitted, flavors, partial counts."""
    items = rows.values() if isinstance(rows, dict) else rows
    return {o.workload.split("/", 1)[1]: (o.decision == "admitted", o.flavors, o.counts)
            for o in items}


def test_the_replay_and_its_alternative_are_the_two_outcomes_kueue_reached() -> None:
    r = Replay(parse(_objects(), "seed12"))
    rows = r.run()
    kueue = _kueue_runs()
    assert len({json.dumps(k, sort_keys=True) for k in kueue}) == 2  # Kueue varied
    assert len(r.alternatives) == 1
    alt = r.alternatives[0]
    assert alt.victims == ["default/s12-w07"] and alt.later == 1
    mine, other = _decided(rows), _decided(alt.outcomes)
    assert [run_ == mine for run_ in kueue] == [True, True, False, True]
    assert [run_ == other for run_ in kueue] == [False, False, True, False]
    # only the workloads whose decision the eviction's cycle changes carry it
    shown = {o.workload: o.alternatives for o in rows if o.alternatives}
    assert sorted(shown) == ["default/s12-w02", "default/s12-w04"]
    assert shown["default/s12-w04"] == [{
        "decision": "admitted", "flavors": {"ps0": {"cpu": "s12-f2", "memory": "s12-f2"}},
        "counts": {"ps0": 2},
        "when": "if the eviction of default/s12-w07 completes a cycle later"}]


def test_table_and_json_show_the_alternative() -> None:
    code, out, err = run("sim", "replay", str(SNAPSHOT), "-o", "json")
    assert code == 0, err
    rows = {r["workload"]: r for r in json.loads(out)}
    assert rows["default/s12-w02"]["timingAlternatives"][0]["flavors"]["ps0"]["cpu"] == "s12-f2"
    assert "timingAlternatives" not in rows["default/s12-w03"]
    code, out, err = run("sim", "replay", str(SNAPSHOT))
    assert code == 0, err
    assert "if the eviction of default/s12-w07" in " ".join(out.split())


def test_a_fixed_number_of_cycles_makes_no_alternative() -> None:
    r = Replay(parse(_objects(), "seed12"))
    r.run(40)
    assert r.alternatives == [] and r.timing is not None and not r.timing.copies


def test_past_the_limit_the_replay_says_how_many_it_did_not_make(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "MAX_FORKS", 0)
    r = Replay(parse(_objects(), "seed12"))
    r.run()
    assert r.alternatives == [] and r.timing is not None and r.timing.not_made == 1
    code, _out, err = run("sim", "replay", str(SNAPSHOT))
    assert code == 0 and "1 more timing alternative(s) not computed" in err
