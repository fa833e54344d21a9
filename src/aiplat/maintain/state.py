"""A maintenance run's state, and every change to it as a pure function (issue #42).

Each node of the plan walks one line, one step at a time, and the run is saved after each
step, so a run killed anywhere resumes at the step it had not finished::

    pending --cordon--> cordoned --drain--> drained --apply--> applied --gate--> gated
        --uncordon--> done
    cordoned | drained | applied | gated --(a step failed)--> failed --> rolled-back
    done --(maintain rollback)--> rolled-back
    cordoned | drained --(maintain rollback: nothing changed yet)--> pending

A failed node is rolled back and left cordoned; the run then stops (``failed``) until the
admin acknowledges the node (``resume --skip NODE``) or rolls back the run. A host-owned
apply without ``--apply-with`` leaves the run ``waiting`` until ``resume --applied NODE``;
a batch due outside every maintenance window (``windows.py``) leaves it ``waiting`` too,
with the reason in ``RunState.wait``, until ``resume`` inside one.

The lease (holder, renew time) lives in the state, so the one ConfigMap that holds the run
is also its lock: a second run refuses while a live holder renews it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aiplat.errors import AiplatError, InputError
from aiplat.shell import quote

Phase = Literal["pending", "cordoned", "drained", "applied", "gated", "done", "failed",
                "rolled-back"]
Step = Literal["cordon", "drain", "apply", "gate", "uncordon"]
RunStatus = Literal["running", "waiting", "failed", "done", "rolled-back"]

STEPS: tuple[Step, ...] = ("cordon", "drain", "apply", "gate", "uncordon")
# The step a node in each phase takes next, and the phase it reaches.
STEP_FROM: dict[Phase, Step] = {"pending": "cordon", "cordoned": "drain", "drained": "apply",
                                "applied": "gate", "gated": "uncordon"}
AFTER: dict[Step, Phase] = {"cordon": "cordoned", "drain": "drained", "apply": "applied",
                            "gate": "gated", "uncordon": "done"}
ALLOWED: dict[Phase, frozenset[Phase]] = {
    "pending": frozenset({"cordoned"}),
    "cordoned": frozenset({"drained", "failed", "pending"}),
    "drained": frozenset({"applied", "failed", "pending"}),
    "applied": frozenset({"gated", "failed"}),
    "gated": frozenset({"done", "failed"}),
    "done": frozenset({"rolled-back"}),
    "failed": frozenset({"rolled-back"}),
    "rolled-back": frozenset(),
}
CHANGED: frozenset[Phase] = frozenset({"applied", "gated", "done", "failed"})
SETTLED: frozenset[Phase] = frozenset({"done", "rolled-back"})
EVENTS_KEPT = 200  # the ConfigMap holds the run; its log stays far below the 1 MiB limit
_HOLDER = re.compile(r"^[A-Za-z0-9._-]{1,200}/[0-9]{1,10}$")


class TransitionError(AiplatError):
    """A step asked of a node in a phase it cannot take (a bug or a hand-edited state)."""


class LeaseHeldError(InputError):
    """Another live run holds the maintenance lease (exit 2)."""


class NodeState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    batch: int
    phase: Phase = "pending"
    reason: str = ""
    previous: str = ""  # the version before the change, for the rollback
    command: str = ""  # host-owned: what node prepare runs on the node
    rollback_command: str = ""
    changed_at: float = 0.0  # when it was drained: the gate wants a verdict newer
    seconds: dict[str, float] = Field(default_factory=dict)  # step -> time it took
    evicted: list[str] = Field(default_factory=list)  # namespace/pod
    acknowledged: bool = False  # a failed node the admin let the run go past
    devices: dict[str, str] = Field(default_factory=dict)  # its GPUs at cordon: the validation


class Lease(BaseModel):
    model_config = ConfigDict(extra="forbid")

    holder: str  # host/pid
    renewed: float
    seconds: float = 60.0


class WindowOption(BaseModel):
    """One of the spec's maintenance windows, kept in the run so ``resume`` honours it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    schedule: str
    hours: float


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: str = "SPEC"
    windows: list[WindowOption] = Field(default_factory=list)  # none: any time
    apply_with: str = ""
    gate_with: str = ""  # the admin's own check after the agent's verdict: CMD NODE
    deadline_s: float = 3600.0
    gate_timeout_s: float = 600.0
    validate_queue: str = ""  # NAMESPACE/LOCALQUEUE: the gate's validation Job through Kueue
    validate_image: str = ""  # its container image ("": validate.DEFAULT_IMAGE)
    operator_labelled: bool = False  # the skip label is on every node of the pool


class RunState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    pool: str
    kind: str
    version: str
    owner: Literal["operator", "host"]
    plan: dict[str, object]
    nodes: list[NodeState]
    batch: int = 0
    status: RunStatus = "running"
    wait: str = ""  # why a waiting run waits, when not for `resume --applied`
    started: float
    finished: float = 0.0
    lease: Lease | None = None
    options: Options = Field(default_factory=Options)
    events: list[str] = Field(default_factory=list)

    def node(self, name: str) -> NodeState:
        for n in self.nodes:
            if n.name == name:
                return n
        raise InputError(f"node {name!r} is not in run {self.run_id} (fix: one of "
                         f"{', '.join(n.name for n in self.nodes)})")

    def to_json(self) -> str:
        return self.model_dump_json()

    @staticmethod
    def from_json(text: str) -> RunState:
        return RunState.model_validate_json(text)


def host_command(template: str, spec: str) -> str:
    """The plan's apply command for one node, with the spec path quoted in SPEC's place."""
    return template.replace("SPEC", quote(spec))


def new_run(plan: dict[str, object], *, run_id: str, now: float, options: Options,
            previous: dict[str, str] | None = None,
            rollback_entry: Callable[[str], str | None] | None = None) -> RunState:
    """A run of ``plan`` (``MaintenancePlan.to_dict()``) with every node pending.
    ``previous``: each node's version before the change; ``rollback_entry``: the approved
    entry that has a version (host-owned rollbacks go through node prepare too)."""
    previous = previous or {}
    change = dict(plan["change"])  # type: ignore[call-overload]
    owner = plan["owner"]
    steps = {s["step"]: s["command"] for s in plan["steps"]}  # type: ignore[attr-defined]
    nodes = []
    for b in plan["batches"]:  # type: ignore[attr-defined]
        for name in b["nodes"]:
            prev = previous.get(name, "")
            command = rollback = ""
            if owner == "host":
                command = host_command(steps["apply"], options.spec)
                entry = rollback_entry(prev) if (rollback_entry and prev) else None
                if entry:
                    rollback = host_command(steps["apply"].rsplit("--entry", 1)[0]
                                            + f"--entry {quote(entry)}", options.spec)
            nodes.append(NodeState(name=name, batch=b["index"], previous=prev,
                                   command=command, rollback_command=rollback))
    return RunState(run_id=run_id, pool=str(plan["pool"]), kind=str(change["kind"]),
                    version=str(change["version"]), owner=owner,
                    plan=plan, nodes=nodes, started=now, options=options)


def _with_node(state: RunState, node: NodeState, event: str) -> RunState:
    nodes = [node if n.name == node.name else n for n in state.nodes]
    return state.model_copy(update={"nodes": nodes,
                                    "events": [*state.events, event][-EVENTS_KEPT:]})


def log(state: RunState, event: str) -> RunState:
    return state.model_copy(update={"events": [*state.events, event][-EVENTS_KEPT:]})


def advance(state: RunState, name: str, to: Phase, *, reason: str = "",
            seconds: float | None = None, **fields: object) -> RunState:
    """``name`` moved to ``to``; refused unless ``ALLOWED`` has the edge. ``seconds``: how
    long the step took (kept per step for the summary and the bench)."""
    node = state.node(name)
    if to not in ALLOWED[node.phase]:
        raise TransitionError(f"node {name}: {node.phase} -> {to} is not a step of a "
                              f"maintenance run (allowed: {sorted(ALLOWED[node.phase])})")
    update: dict[str, object] = {"phase": to, **fields}
    if reason or to in ("failed", "rolled-back", "pending"):
        update["reason"] = reason
    if seconds is not None:
        step = next((s for s, p in AFTER.items() if p == to), to)
        update["seconds"] = {**node.seconds, step: round(seconds, 3)}
    moved = node.model_copy(update=update)
    return _with_node(state, moved, f"{name}: {node.phase} -> {to}"
                      + (f" ({reason})" if reason else ""))


def batch_nodes(state: RunState, index: int) -> list[NodeState]:
    return [n for n in state.nodes if n.batch == index]


def current_batch(state: RunState) -> int | None:
    """The first batch with a node not settled (done, or rolled back), None when all are."""
    for n in state.nodes:
        if n.phase not in SETTLED and not (n.phase == "failed" and n.acknowledged):
            return n.batch
    return None


def resume_point(state: RunState) -> tuple[int, Step, list[str]] | None:
    """Where the run goes on: the current batch, its earliest step still to take and the
    nodes that take it (a batch moves step by step, every node of it together)."""
    b = current_batch(state)
    if b is None:
        return None
    for step in STEPS:
        names = [n.name for n in batch_nodes(state, b)
                 if STEP_FROM.get(n.phase) == step]
        if names:
            return b, step, names
    return None  # only failed nodes left: the run is stopped, not resumable


def blocking(state: RunState) -> list[NodeState]:
    """Failed or rolled-back nodes the admin has not acknowledged: they stop the run."""
    return [n for n in state.nodes
            if n.phase in ("failed", "rolled-back") and not n.acknowledged]


def stopped(state: RunState) -> bool:
    """The rollout stops at a failed node once its batch has nothing else to do: the
    batch's other nodes finish their steps, no later batch starts."""
    bad = blocking(state)
    if not bad:
        return False
    point = resume_point(state)
    return point is None or point[0] > min(n.batch for n in bad)


def set_status(state: RunState, status: RunStatus, now: float | None = None) -> RunState:
    update: dict[str, object] = {"status": status}
    if status != "waiting":
        update["wait"] = ""
    if status in ("done", "rolled-back") and now is not None:
        update["finished"] = now
    b = current_batch(state)
    update["batch"] = b if b is not None else state.batch
    return log(state.model_copy(update=update), f"run {status}")


def hold(state: RunState, why: str) -> RunState:
    """The run waits before its next batch (outside every maintenance window): ``why``."""
    return log(set_status(state, "waiting").model_copy(update={"wait": why}), why)


def batch_started(state: RunState, batch: int) -> bool:
    return any(n.phase != "pending" for n in state.nodes if n.batch == batch)


def acknowledge(state: RunState, names: Iterable[str]) -> RunState:
    """The admin lets the run go past these failed nodes (they stay cordoned)."""
    for name in names:
        node = state.node(name)
        if node.phase not in ("failed", "rolled-back"):
            raise InputError(f"--skip {name}: the node is {node.phase}, not failed (fix: "
                             "skip only a node the run stopped at; `aiplat maintain status`)")
        state = _with_node(state, node.model_copy(update={"acknowledged": True}),
                           f"{name}: skipped by the admin ({node.reason})")
    return state


def mark_applied(state: RunState, name: str, now: float) -> RunState:
    """``resume --applied NODE``: the admin ran the node's command and it succeeded."""
    node = state.node(name)
    if node.phase != "drained":
        raise InputError(f"--applied {name}: the node is {node.phase}, not drained and "
                         "waiting for its command (fix: `aiplat maintain status` shows which "
                         "nodes wait)")
    return advance(state, name, "applied", reason="applied by the admin",
                   seconds=max(0.0, now - node.changed_at))


# --- the lease ------------------------------------------------------------------------

def holder_id(host: str, pid: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', host)[:200] or 'host'}/{pid}"


def lease_free(state: RunState, me: str, now: float, alive: Callable[[str], bool]) -> bool:
    """The lease is ours to take: none, ours, expired, or its holder is known dead."""
    lease = state.lease
    if lease is None or lease.holder == me:
        return True
    if now - lease.renewed > lease.seconds:
        return True
    return _HOLDER.match(lease.holder) is not None and not alive(lease.holder)


def take_lease(state: RunState, me: str, now: float, alive: Callable[[str], bool],
               seconds: float = 60.0) -> RunState:
    if not lease_free(state, me, now, alive):
        lease = state.lease
        assert lease is not None
        left = max(0.0, lease.seconds - (now - lease.renewed))
        raise LeaseHeldError(
            f"maintenance run {state.run_id} (pool {state.pool}, {state.kind} "
            f"{state.version}) is held by {lease.holder}, renewed {now - lease.renewed:.0f} s "
            f"ago (fix: wait for it, `aiplat maintain status` shows its progress; if that "
            f"process is gone, its lease runs out in {left:.0f} s, then run `aiplat "
            "maintain resume`)")
    return state.model_copy(update={"lease": Lease(holder=me, renewed=now, seconds=seconds)})


def renew(state: RunState, now: float) -> RunState:
    if state.lease is None:
        return state
    return state.model_copy(update={"lease": state.lease.model_copy(update={"renewed": now})})


def release(state: RunState) -> RunState:
    return state.model_copy(update={"lease": None})


# --- reading it -------------------------------------------------------------------------

def summary(state: RunState) -> dict[str, object]:
    """What ``status`` and the end of a run show: counts, each node, and the timing."""
    counts: dict[str, int] = {}
    for n in state.nodes:
        counts[n.phase] = counts.get(n.phase, 0) + 1
    end = state.finished or 0.0
    serial = sum(sum(v for k, v in n.seconds.items() if k in ("drain", "apply", "gate"))
                 for n in state.nodes)
    return {"run": state.run_id, "pool": state.pool, "change": f"{state.kind}={state.version}",
            "owner": state.owner, "status": state.status, "batch": state.batch,
            **({"waiting_for": state.wait} if state.wait else {}),
            "batches": len({n.batch for n in state.nodes}), "phases": counts,
            "wall_s": round(end - state.started, 3) if end else None,
            "serial_s": round(serial, 3),
            "nodes": [{"name": n.name, "batch": n.batch, "phase": n.phase,
                       "reason": n.reason, "seconds": n.seconds, "evicted": n.evicted,
                       **({"command": n.command} if n.command else {})}
                      for n in state.nodes]}
