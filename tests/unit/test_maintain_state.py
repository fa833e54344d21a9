"""The maintenance run's state machine (issue #42): each node pending -> cordoned -> drained
-> applied -> gated -> done, or failed -> rolled-back; the run saved as JSON after every
step resumes at exactly the step it had not finished; the lease keeps a second run out;
what reaches a shell is quoted."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.maintain.plan import Change, plan
from aiplat.maintain.run import apply_with_command, condition_gate, evictable
from aiplat.maintain.state import (
    ALLOWED,
    LeaseHeldError,
    Options,
    RunState,
    TransitionError,
    acknowledge,
    advance,
    blocking,
    current_batch,
    holder_id,
    mark_applied,
    new_run,
    resume_point,
    stopped,
    summary,
    take_lease,
)
from aiplat.plan.resolve import resolve
from aiplat.spec import example_text, parse_platform


def _run(spec: str = "platform.yaml", count: int = 6) -> RunState:
    data = yaml.safe_load(example_text())
    data["pools"][0]["count"] = count
    platform = parse_platform(yaml.safe_dump(data), "t.yaml", load_catalog())
    pool = next(p for p in resolve(platform, load_catalog()).pools if p.name == "h100")
    p = plan(platform, pool, Change("driver", "580.95.05"), max_unavailable=2)
    entries = {e.driver: e.name for e in platform.versions.approved}
    return new_run(p.to_dict(), run_id="mnt-1", now=1000.0, options=Options(spec=spec),
                   previous={"h100-0": "580.95.05"}, rollback_entry=entries.get)


def _walk(state: RunState, name: str, to: str) -> RunState:
    order = ["cordoned", "drained", "applied", "gated", "done"]
    for phase in order[:order.index(to) + 1]:
        state = advance(state, name, phase)  # type: ignore[arg-type]
    return state


def test_a_node_walks_the_line_and_the_run_moves_batch_by_batch() -> None:
    s = _run()
    assert [n.batch for n in s.nodes] == [0, 1, 1, 2, 2, 3]
    assert resume_point(s) == (0, "cordon", ["h100-0"])
    s = _walk(s, "h100-0", "done")
    assert current_batch(s) == 1
    assert resume_point(s) == (1, "cordon", ["h100-1", "h100-2"])
    assert s.node("h100-0").phase == "done"
    assert s.events[-1] == "h100-0: gated -> done"


@pytest.mark.parametrize(("start", "to"), [("pending", "drained"), ("pending", "done"),
                                           ("cordoned", "applied"), ("drained", "done"),
                                           ("done", "pending"), ("rolled-back", "done")])
def test_a_skipped_step_is_refused(start: str, to: str) -> None:
    s = _run()
    if start != "pending":
        s = _walk(s, "h100-0", start) if start != "rolled-back" else advance(
            advance(advance(s, "h100-0", "cordoned"), "h100-0", "failed"),
            "h100-0", "rolled-back")
    with pytest.raises(TransitionError, match="is not a step"):
        advance(s, "h100-0", to)  # type: ignore[arg-type]


def test_every_phase_has_its_edges_and_only_rolled_back_is_final() -> None:
    assert [p for p, nxt in ALLOWED.items() if not nxt] == ["rolled-back"]


def test_resume_point_is_the_batchs_earliest_unfinished_step() -> None:
    """A run killed in batch 1 after h100-1 drained and before h100-2 did: resume drains
    h100-2 only, then applies both."""
    s = _walk(_run(), "h100-0", "done")
    s = advance(advance(s, "h100-1", "cordoned"), "h100-2", "cordoned")
    s = advance(s, "h100-1", "drained")
    again = RunState.from_json(s.to_json())  # what the ConfigMap gives back
    assert again == s
    assert resume_point(again) == (1, "drain", ["h100-2"])
    again = advance(again, "h100-2", "drained")
    assert resume_point(again) == (1, "apply", ["h100-1", "h100-2"])


def test_a_failed_node_stops_the_run_until_acknowledged() -> None:
    s = _walk(_run(), "h100-0", "done")
    for n in ("h100-1", "h100-2"):
        s = _walk(s, n, "applied")
    s = advance(s, "h100-1", "failed", reason="health gate failed: AiplatNodeHealthy=False")
    s = advance(s, "h100-1", "rolled-back", reason="rolled back")
    assert not stopped(s)  # h100-2 finishes its batch first
    assert resume_point(s) == (1, "gate", ["h100-2"])
    s = _walk_from(s, "h100-2", ["gated", "done"])
    assert [n.name for n in blocking(s)] == ["h100-1"]
    assert stopped(s)  # no later batch starts
    s = acknowledge(s, ["h100-1"])
    assert not stopped(s) and resume_point(s) == (2, "cordon", ["h100-3", "h100-4"])
    with pytest.raises(Exception, match="not failed"):
        acknowledge(s, ["h100-3"])


def _walk_from(s: RunState, name: str, phases: list[str]) -> RunState:
    for p in phases:
        s = advance(s, name, p)  # type: ignore[arg-type]
    return s


def test_applied_by_the_admin_only_from_drained() -> None:
    s = _walk(_run(), "h100-0", "drained")
    s = mark_applied(s, "h100-0", 1005.0)
    assert s.node("h100-0").phase == "applied"
    with pytest.raises(Exception, match="not drained"):
        mark_applied(s, "h100-0", 1006.0)
    with pytest.raises(Exception, match="is not in run"):
        mark_applied(s, "h100-99", 1006.0)


def test_lease_keeps_a_second_live_run_out_and_frees_a_dead_or_expired_one() -> None:
    s = take_lease(_run(), "host-a/10", 1000.0, alive=lambda h: True)
    with pytest.raises(LeaseHeldError, match=r"held by host-a/10.*aiplat maintain resume"):
        take_lease(s, "host-a/11", 1010.0, alive=lambda h: True)
    assert take_lease(s, "host-a/11", 1010.0, alive=lambda h: False).lease.holder == "host-a/11"  # type: ignore[union-attr]
    assert take_lease(s, "host-b/1", 1061.0, alive=lambda h: True).lease.holder == "host-b/1"  # type: ignore[union-attr]
    assert take_lease(s, "host-a/10", 1010.0, alive=lambda h: True).lease is not None
    assert holder_id("we$ird;host", 7) == "we_ird_host/7"


def test_rollback_command_names_the_previous_versions_entry_quoted() -> None:
    s = _run(spec="my spec;$(reboot).yaml")
    n0 = s.node("h100-0")
    assert n0.command.startswith("aiplat node prepare 'my spec;$(reboot).yaml' ")
    assert shlex.split(n0.command)[3] == "my spec;$(reboot).yaml"
    assert n0.rollback_command.endswith("--entry r580-k8s134")  # previous 580.95.05's entry
    assert s.node("h100-1").rollback_command == ""  # previous version unknown: by hand


@pytest.mark.parametrize("node", ["h100-0", "a;reboot", "$(id)", "x' y", "-rf"])
def test_apply_with_gets_the_node_as_one_word(node: str) -> None:
    cmd = apply_with_command("./prepare.sh --fast", node)
    assert shlex.split(cmd) == ["./prepare.sh", "--fast", node]


def test_hostile_version_or_node_never_reaches_the_plan() -> None:
    with pytest.raises(Exception, match="is not a version"):
        Change.parse("driver=1;reboot")
    s = _run()
    with pytest.raises(Exception, match="is not in run"):
        s.node("h100-0;reboot")


def test_state_json_round_trip_and_summary() -> None:
    s = _walk(_run(), "h100-0", "done")
    s = advance(advance(s, "h100-1", "cordoned"), "h100-1", "drained", seconds=2.5)
    data = json.loads(s.to_json())
    assert data["nodes"][1]["seconds"] == {"drain": 2.5}
    assert RunState.from_json(json.dumps(data)) == s
    out = summary(s)
    assert out["phases"] == {"done": 1, "drained": 1, "pending": 4}
    assert out["serial_s"] == 2.5
    with pytest.raises(ValueError):
        RunState.from_json(json.dumps({**data, "surprise": 1}))


def _node(cond: dict[str, Any] | None) -> dict[str, Any]:
    return {"status": {"conditions": [cond] if cond else []}}


def test_condition_gate_wants_a_verdict_newer_than_the_change() -> None:
    since = 1_700_000_000.4  # 2023-11-14T22:13:20Z
    old = {"type": "AiplatNodeHealthy", "status": "True", "lastHeartbeatTime":
           "2023-11-14T22:13:19Z", "lastTransitionTime": "2023-11-14T22:00:00Z"}
    assert condition_gate(_node(None), since)[0] is None
    assert condition_gate(_node(old), since)[0] is None
    fresh = {**old, "lastHeartbeatTime": "2023-11-14T22:13:20Z"}
    assert condition_gate(_node(fresh), since)[0] is True
    bad = {**fresh, "status": "False", "reason": "ChecksFailed", "message": "xid 79"}
    ok, why = condition_gate(_node(bad), since)
    assert ok is False and "xid 79" in why


def test_drain_leaves_daemonset_mirror_and_finished_pods() -> None:
    ds = {"metadata": {"ownerReferences": [{"kind": "DaemonSet"}]}, "status": {}}
    mirror = {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}
    done = {"metadata": {}, "status": {"phase": "Succeeded"}}
    kueue = {"metadata": {"annotations": {"kueue.x-k8s.io/workload": "job-a"},
                          "ownerReferences": [{"kind": "Job"}]}, "status": {"phase": "Running"}}
    assert [evictable(p) for p in (ds, mirror, done, kueue)] == [False, False, False, True]
