"""The maintenance executor: the I/O edge that walks a run's state (``state.py``) on a cluster.

The run lives in the ConfigMap ``aiplat-system/aiplat-maintenance`` (created if missing),
written after every transition with the resourceVersion read last, so two writers cannot
both win; its lease (holder ``host/pid``, renewed on every write and every few seconds of a
wait) keeps a second run out. A holder on this host whose process is gone (``kill -9``)
frees the lease at once; another host's holder only when its lease runs out.

Each batch goes step by step, all its nodes together (``state.resume_point``):

- cordon: ``spec.unschedulable`` true, the run's id as an annotation;
- drain: every pod on the node but DaemonSet and mirror pods, finished ones left, goes
  through the Eviction API (policy/v1), which honours PodDisruptionBudgets: a 429 is retried
  until ``--deadline``, then the node fails naming the budget. Kueue-managed pods are
  evicted the same way, never deleted: the Job controller replaces them and Kueue keeps
  the workload admitted (with topology-aware scheduling it moves the assignment off the
  cordoned node);
- apply, through the component's owner: host-owned, ``--apply-with CMD`` runs ``CMD NODE``
  (the node quoted; the version and the node's node-prepare command in the environment)
  and exit 0 means applied; without it the run waits for ``resume --applied NODE``.
  Operator-owned, the ``nvidia.com/gpu-driver-upgrade.skip`` label is removed (the node
  marked as cordoned before the upgrade, so the controller leaves it cordoned for the
  gate) and ``nvidia.com/gpu-driver-upgrade-state`` followed to ``upgrade-done``;
- gate: a pluggable check (``Gate``); the default reads the node agent's condition
  ``AiplatNodeHealthy`` and wants a verdict newer than the apply; then, where given,
  ``--gate-with CMD`` runs ``CMD NODE`` (the admin's own check, e.g. ``aiplat node baseline
  compare`` of the pool's recorded baseline on the node) and exit 0 passes; then, where
  given, ``--validate-queue`` runs a validation Job through Kueue on the node, asking for
  every GPU it published at cordon (``validate.py``), and its completion passes;
- uncordon, recording the version on the node (``maintain.aiplat.io/<kind>-version``).

A batch not started yet waits for a maintenance window (the spec's, kept in the run's
options): outside every window the run is left ``waiting`` with the next opening and the fix.

A failed step rolls the node back (host: the previous version's command; operator: the
skip label set again), leaves it cordoned with the reason as an annotation, and stops the
rollout after its batch. Kubernetes calls ``Api`` lacks (merge patch, the Eviction
subresource, a field-selected pod list, a PUT with a precondition) are small helpers here on
``Api._request`` and ``Api.path``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from aiplat.errors import InputError
from aiplat.kube.apply import Api, ApiError
from aiplat.maintain import validate
from aiplat.maintain.plan import SKIP_LABEL
from aiplat.maintain.state import (
    AFTER,
    RunState,
    Step,
    advance,
    batch_started,
    current_batch,
    hold,
    holder_id,
    log,
    release,
    renew,
    resume_point,
    set_status,
    stopped,
    take_lease,
)
from aiplat.maintain.windows import Window, closed_reason
from aiplat.node.checks import CONDITION_TYPE
from aiplat.shell import quote

Obj = dict[str, Any]
NAMESPACE = "aiplat-system"
CONFIGMAP = "aiplat-maintenance"
KEY = "run.json"
RUN_ANNOTATION = "maintain.aiplat.io/run"
REASON_ANNOTATION = "maintain.aiplat.io/reason"
UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
# k8s-operator-libs (pkg/upgrade/consts.go): a node carrying it when the controller finishes
# goes to upgrade-done still cordoned; without it the controller uncordons the node itself.
INITIAL_UNSCHEDULABLE = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
MERGE = "application/merge-patch+json"
_CM: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE}}


class LeaseLostError(InputError):
    """The run's ConfigMap changed under this process (exit 2)."""


def version_annotation(kind: str) -> str:
    return f"maintain.aiplat.io/{kind}-version"


# --- calls Api lacks -------------------------------------------------------------------

def _node_ref(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def merge_patch(api: Api, obj: Obj, patch: Obj) -> Obj:
    """A JSON merge patch (RFC 7386): ``None`` removes a key."""
    r = api._request("PATCH", api.path(obj), content=json.dumps(patch),
                     headers={"Content-Type": MERGE})
    if r.status_code >= 400:
        raise ApiError(f"PATCH {api.path(obj)}: {_message(r)}")
    return dict(r.json())


def get_node(api: Api, name: str) -> Obj:
    node = api.get(_node_ref(name))
    if node is None:
        raise ApiError(f"node {name} is gone from the cluster (fix: `aiplat maintain "
                       f"rollback {name}` drops it from the run, or bring it back)")
    return node


def pods_on(api: Api, node: str) -> list[Obj]:
    r = api._request("GET", "/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node}"})
    if r.status_code >= 400:
        raise ApiError(f"listing the pods on {node}: {_message(r)}")
    return list(r.json().get("items", []))


def evictable(pod: Obj) -> bool:
    """What a drain moves: not a DaemonSet's pod (it belongs on every node), not a static
    pod's mirror, not a pod that already finished."""
    meta = pod.get("metadata") or {}
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
        return False
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def evict(api: Api, pod: Obj) -> tuple[str, str]:
    """POST the pod's Eviction: ("evicted" | "gone" | "blocked", message). A 429 is the
    disruption budget saying not now; its cause names the budget."""
    meta = pod["metadata"]
    ns, name = meta["namespace"], meta["name"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns}}
    r = api._request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", json=body)
    if r.status_code in (200, 201):
        return "evicted", ""
    if r.status_code == 404:
        return "gone", ""
    if r.status_code == 429:
        return "blocked", _budget(r, ns)
    raise ApiError(f"evicting pod {ns}/{name}: {_message(r)}")


def _budget(r: Any, ns: str) -> str:
    try:
        body = r.json()
    except ValueError:
        return "a PodDisruptionBudget refuses the eviction"
    causes = ((body.get("details") or {}).get("causes")) or []
    said = "; ".join(str(c.get("message")) for c in causes if c.get("message"))
    return f"namespace {ns}: {said or body.get('message', 'a PodDisruptionBudget refuses')}"


def _message(r: Any) -> str:
    try:
        return str(r.json().get("message"))
    except ValueError:
        return f"HTTP {r.status_code}: {r.text[:300]}"


# --- the store --------------------------------------------------------------------------

def load(api: Api) -> tuple[RunState | None, str | None]:
    """The run in the ConfigMap and the resourceVersion it was read at."""
    cm = api.get(_CM)
    if cm is None:
        return None, None
    version = cm["metadata"].get("resourceVersion")
    text = (cm.get("data") or {}).get(KEY)
    if not text:
        return None, version
    try:
        return RunState.from_json(text), version
    except ValueError as e:
        raise InputError(f"ConfigMap {NAMESPACE}/{CONFIGMAP}: {KEY} is not a maintenance run "
                         f"({str(e).splitlines()[0]}) (fix: look at it with kubectl; delete "
                         "it only when no run is in progress)") from e


def save(api: Api, state: RunState, version: str | None) -> str:
    """Write the run; ``version`` is the resourceVersion it was read at (None: create).
    A conflict means another process wrote it since: this one has lost the run."""
    cm: Obj = {**_CM, "metadata": {**_CM["metadata"],
                                   "labels": {"app.kubernetes.io/managed-by": "aiplat"}},
               "data": {KEY: state.to_json()}}
    if version is None:
        if not api.exists("v1", "Namespace", NAMESPACE):
            api.create_or_get({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": NAMESPACE}})
        r = api._request("POST", api.path(cm, named=False), json=cm)
    else:
        cm["metadata"]["resourceVersion"] = version
        r = api._request("PUT", api.path(cm), json=cm)
    if r.status_code == 409:
        raise LeaseLostError(f"ConfigMap {NAMESPACE}/{CONFIGMAP} was changed by another process "
                        f"while run {state.run_id} held it (fix: `aiplat maintain status` shows "
                        "who runs it now)")
    if r.status_code >= 400:
        raise ApiError(f"writing {NAMESPACE}/{CONFIGMAP}: {_message(r)}")
    return str(r.json()["metadata"]["resourceVersion"])


# --- the world the executor acts on -----------------------------------------------------

@dataclass(frozen=True)
class Result:
    """One ``--apply-with`` command's end."""

    code: int
    seconds: float
    tail: str = ""


# node -> (shell command, extra environment); returns when every command has ended.
Runner = Callable[[dict[str, tuple[str, dict[str, str]]], float], dict[str, Result]]


class Gate(Protocol):
    def __call__(self, node: Obj, since: float) -> tuple[bool | None, str]:
        """(True: healthy, False: failed, None: no verdict since ``since`` yet; why)."""
        ...


def _epoch(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def condition_gate(node: Obj, since: float) -> tuple[bool | None, str]:
    """The node agent's verdict (``AiplatNodeHealthy``), if it is newer than the change
    (to the second: the API keeps whole seconds)."""
    cond = next((c for c in (node.get("status") or {}).get("conditions") or []
                 if c.get("type") == CONDITION_TYPE), None)
    if cond is None:
        return None, f"no {CONDITION_TYPE} condition (is the node agent running?)"
    at = max(_epoch(cond.get("lastHeartbeatTime")), _epoch(cond.get("lastTransitionTime")))
    if at < int(since):
        return None, f"{CONDITION_TYPE} not checked since the change"
    why = f"{CONDITION_TYPE}={cond.get('status')} {cond.get('reason', '')}: " \
          f"{cond.get('message', '')}".strip()
    return cond.get("status") == "True", why


@dataclass
class Edge:
    api: Api
    emit: Callable[[str], None]
    runner: Runner | None = None
    gate: Gate = condition_gate
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    poll_s: float = 0.5
    me: str = field(default_factory=lambda: holder_id(_hostname(), os.getpid()))


def _hostname() -> str:
    return os.uname().nodename


def alive(holder: str) -> bool:
    """Whether a lease holder may still run: another host's always (until its lease runs
    out); on this host, whether its process exists."""
    host, _, pid = holder.rpartition("/")
    if host != holder_id(_hostname(), 0).rpartition("/")[0]:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


@dataclass
class Session:
    """The run being executed and the ConfigMap version it was last written at."""

    edge: Edge
    state: RunState
    version: str | None
    saved_at: float = 0.0

    def save(self) -> None:
        now = self.edge.clock()
        self.state = renew(self.state, now)
        self.version = save(self.edge.api, self.state, self.version)
        self.saved_at = now

    def tick(self) -> None:
        """Renew the lease during a long wait."""
        lease = self.state.lease
        if lease is not None and self.edge.clock() - self.saved_at > lease.seconds / 4:
            self.save()

    def move(self, name: str, to: Any, **kw: Any) -> None:
        self.state = advance(self.state, name, to, **kw)
        self.edge.emit(f"{self.state.run_id} {self.state.events[-1]}")
        self.save()

    def note(self, line: str) -> None:
        self.state = log(self.state, line)
        self.edge.emit(f"{self.state.run_id} {line}")


# --- the steps ----------------------------------------------------------------------------

def _cordon(s: Session, names: list[str]) -> None:
    for n in names:
        node = merge_patch(s.edge.api, _node_ref(n), {
            "metadata": {"annotations": {RUN_ANNOTATION: s.state.run_id}},
            "spec": {"unschedulable": True}})
        s.move(n, "cordoned", devices=validate.gpu_devices(node))


def drain_nodes(s: Session, names: list[str], on_drained: Callable[[str, float, list[str]],
                                                                   None]) -> dict[str, str]:
    """Evict until each node holds no movable pod; returns the nodes that did not empty by
    the deadline, with why (the budget that refused, or the pods still terminating)."""
    api, clock = s.edge.api, s.edge.clock
    start = clock()
    deadline = start + s.state.options.deadline_s
    left = list(names)
    blocked: dict[str, str] = {}
    evicted: dict[str, list[str]] = {n: [] for n in names}
    while left:
        for n in list(left):
            pods = [p for p in pods_on(api, n) if evictable(p)]
            for p in pods:
                if p["metadata"].get("deletionTimestamp"):
                    continue
                what, why = evict(api, p)
                pod = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                if what == "evicted":
                    evicted[n].append(pod)
                    s.note(f"{n}: evicted {pod}")
                elif what == "blocked":
                    blocked[n] = f"pod {pod}: {why}"
            if not pods:
                left.remove(n)
                on_drained(n, clock() - start, evicted[n])
        if not left:
            break
        if clock() > deadline:
            out = {}
            for n in left:
                still = [f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                         for p in pods_on(api, n) if evictable(p)]
                out[n] = (f"not drained within --deadline {s.state.options.deadline_s:g} s: "
                          + (blocked.get(n) or f"pods still terminating: {', '.join(still)}"))
            return out
        s.tick()
        s.edge.sleep(s.edge.poll_s)
    return {}


def _drain(s: Session, names: list[str]) -> None:
    def drained(n: str, seconds: float, pods: list[str]) -> None:
        # The gate wants a verdict formed after this moment: the change starts now.
        s.move(n, "drained", seconds=seconds, evicted=pods, changed_at=s.edge.clock())

    for n, why in drain_nodes(s, names, drained).items():
        fail(s, n, why)


def _env(s: Session, name: str, action: str) -> dict[str, str]:
    node = s.state.node(name)
    rollback = action == "rollback"
    return {"AIPLAT_NODE": name, "AIPLAT_ACTION": action, "AIPLAT_RUN": s.state.run_id,
            "AIPLAT_KIND": s.state.kind,
            "AIPLAT_VERSION": node.previous if rollback else s.state.version,
            "AIPLAT_COMMAND": node.rollback_command if rollback else node.command}


def apply_with_command(template: str, node: str) -> str:
    """The admin's ``--apply-with`` as written (their shell), the node one quoted word."""
    return f"{template} {quote(node)}"


def _apply(s: Session, names: list[str]) -> None:
    if s.state.owner == "operator":
        _apply_operator(s, names)
        return
    template = s.state.options.apply_with
    if not template or s.edge.runner is None:
        for n in names:
            s.note(f"{n}: drained and waiting: run on the node `{s.state.node(n).command}`, "
                   f"then `aiplat maintain resume --applied {n}`")
        s.state = set_status(s.state, "waiting")
        return
    commands = {n: (apply_with_command(template, n), _env(s, n, "apply")) for n in names}
    for n in names:
        cmd = commands[n][0]
        s.note(f"{n}: apply: {cmd}")
    results = s.edge.runner(commands, s.state.options.deadline_s)
    for n in names:
        r = results.get(n, Result(-1, 0.0, "not run"))
        if r.code == 0:
            s.move(n, "applied", seconds=r.seconds)
        else:
            fail(s, n, f"--apply-with exited {r.code}: {r.tail.strip()[-300:]}")


def _apply_operator(s: Session, names: list[str]) -> None:
    """Release the nodes to the GPU Operator's upgrade controller and follow its state
    label: done once it has left ``upgrade-done`` and come back (a node the controller
    has not taken yet still shows the last upgrade's ``upgrade-done``).

    The controller records a node as cordoned before its upgrade only when it finds it so
    as it marks it ``upgrade-required`` (``ProcessDoneOrUnknownNodes``); a node marked
    when the ClusterPolicy changed, before this run cordoned it, would be uncordoned by
    the controller before aiplat's gate. The annotation, set with the release, keeps it
    cordoned until ``_uncordon`` (the controller removes it at upgrade-done)."""
    api = s.edge.api
    for n in names:
        merge_patch(api, _node_ref(n), {"metadata": {
            "labels": {SKIP_LABEL: None}, "annotations": {INITIAL_UNSCHEDULABLE: "true"}}})
        s.note(f"{n}: released to the upgrade controller ({SKIP_LABEL} removed)")
    seen: set[str] = set()

    def settled(n: str, elapsed: float) -> bool:
        st = (get_node(api, n)["metadata"].get("labels") or {}).get(UPGRADE_STATE, "")
        if st == "upgrade-failed":
            fail(s, n, f"{UPGRADE_STATE}=upgrade-failed (fix: the driver pod's logs on "
                 "the node, `kubectl -n gpu-operator logs`)", changed=True)
            return True
        if st == "upgrade-done" and n in seen:
            s.move(n, "applied", seconds=elapsed)
            return True
        if st and st != "upgrade-done":
            seen.add(n)
        return False

    deadline = s.state.options.deadline_s
    _follow(s, names, deadline, settled, lambda n: (
        f"the upgrade controller did not finish within --deadline {deadline:g} s (fix: is "
        f"driver.version {s.state.version} set in the ClusterPolicy?)"), changed=True)


def _gate(s: Session, names: list[str]) -> None:
    timeout = s.state.options.gate_timeout_s
    why: dict[str, str] = {}
    healthy: dict[str, float] = {}  # node -> seconds to the agent's verdict

    def settled(n: str, elapsed: float) -> bool:
        verdict, why[n] = s.edge.gate(get_node(s.edge.api, n), s.state.node(n).changed_at)
        if verdict is True:
            healthy[n] = elapsed
        elif verdict is False:
            fail(s, n, f"health gate failed: {why[n]}")
        return verdict is not None

    _follow(s, names, timeout, settled, lambda n: (
        f"health gate: no healthy verdict within --gate-timeout {timeout:g} s "
        f"({why.get(n, '')})"))
    if healthy and s.state.options.gate_with:
        healthy = _gate_with(s, healthy)
    if healthy and s.state.options.validate_queue:
        healthy = _validate(s, healthy)
    for n, seconds in healthy.items():
        s.move(n, "gated", seconds=seconds)


def _gate_with(s: Session, healthy: dict[str, float]) -> dict[str, float]:
    """The admin's ``--gate-with`` on the nodes the agent found healthy, all at once; the
    nodes it passed, with the gate's seconds so far."""
    assert s.edge.runner is not None
    commands = {n: (apply_with_command(s.state.options.gate_with, n), _env(s, n, "gate"))
                for n in healthy}
    for n, (cmd, _vars) in commands.items():
        s.note(f"{n}: gate: {cmd}")
    results = s.edge.runner(commands, s.state.options.gate_timeout_s)
    passed = {}
    for n, seconds in healthy.items():
        r = results.get(n, Result(-1, 0.0, "not run"))
        if r.code == 0:
            passed[n] = seconds + r.seconds
        else:
            fail(s, n, f"health gate: --gate-with exited {r.code}: {r.tail.strip()[-300:]}")
    return passed


def _validate(s: Session, healthy: dict[str, float]) -> dict[str, float]:
    """The validation Job through Kueue on each node (``validate.py``), all at once; the
    nodes whose Job completed. Each Job is deleted once judged."""
    o, api = s.state.options, s.edge.api
    namespace, _, queue = o.validate_queue.partition("/")
    jobs: dict[str, Obj] = {}
    passed: dict[str, float] = {}
    for n in healthy:  # the cordon traded for the validation's taint (validate.py says why)
        merge_patch(api, _node_ref(n), {"spec": {
            "unschedulable": None, "taints": validate.taints(get_node(api, n), True)}})
        devices = s.state.node(n).devices
        j = validate.job(n, s.state.run_id, queue, namespace, devices,
                         image=o.validate_image or validate.DEFAULT_IMAGE,
                         deadline_s=o.gate_timeout_s)
        if api.get(j) is None:  # a resumed run finds the one it made
            api.create(j)
        jobs[n] = j
        asks = ", ".join(f"{k}={v}" for k, v in devices.items())
        s.note(f"{n}: gate: validation Job {namespace}/{j['metadata']['name']} in queue "
               f"{queue}, asking {asks or 'no GPU (none published at cordon)'}")
    why: dict[str, str] = {}

    def settled(n: str, elapsed: float) -> bool:
        ok, why[n] = validate.verdict(*_validation_state(api, jobs[n]))
        if ok is not None:
            api.delete(jobs[n], propagation="Background")
        if ok is True:
            passed[n] = healthy[n] + elapsed
        elif ok is False:
            _recordon(api, n)
            fail(s, n, f"health gate: {why[n]}")
        return ok is not None

    def late(n: str) -> str:
        api.delete(jobs[n], propagation="Background")
        _recordon(api, n)
        return (f"health gate: the validation Job did not complete within --gate-timeout "
                f"{o.gate_timeout_s:g} s ({why.get(n, '')})")

    _follow(s, list(healthy), o.gate_timeout_s, settled, late)
    return passed


def _recordon(api: Api, name: str) -> None:
    merge_patch(api, _node_ref(name), {"spec": {
        "unschedulable": True, "taints": validate.taints(get_node(api, name), False)}})


def _validation_state(api: Api, j: Obj) -> tuple[Obj | None, Obj | None, list[Obj]]:
    """The Job, its Kueue Workload (owned by the Job) and its pods, as they stand."""
    live = api.get(j)
    if live is None:
        return None, None, []
    ns, uid = j["metadata"]["namespace"], live["metadata"].get("uid")
    workload = next((w for w in api.objects("kueue.x-k8s.io/v1beta2", "Workload", ns)
                     if any(r.get("uid") == uid
                            for r in w["metadata"].get("ownerReferences") or [])), None)
    r = api._request("GET", f"/api/v1/namespaces/{ns}/pods",
                     params={"labelSelector": f"job-name={j['metadata']['name']}"})
    pods = list(r.json().get("items", [])) if r.status_code < 400 else []
    return live, workload, pods


def _follow(s: Session, names: list[str], timeout: float,
            settled: Callable[[str, float], bool], late: Callable[[str], str], *,
            changed: bool | None = None) -> None:
    """Ask ``settled(node, seconds so far)`` about each node, every poll, until each has
    settled (it moved or failed the node itself); past ``timeout`` fail the rest with
    ``late(node)``'s reason (``changed`` as :func:`fail` takes it)."""
    clock = s.edge.clock
    start = clock()
    left = list(names)
    while left:
        left = [n for n in left if not settled(n, clock() - start)]
        if left and clock() - start > timeout:
            for n in left:
                fail(s, n, late(n), changed)
            return
        if left:
            s.tick()
            s.edge.sleep(s.edge.poll_s)


def _uncordon(s: Session, names: list[str]) -> None:
    for n in names:
        merge_patch(s.edge.api, _node_ref(n), {
            "metadata": {"annotations": {RUN_ANNOTATION: None, REASON_ANNOTATION: None,
                                         version_annotation(s.state.kind): s.state.version}},
            "spec": {"unschedulable": None,
                     "taints": validate.taints(get_node(s.edge.api, n), False)}})
        s.move(n, "done")


STEP_DO: dict[Step, Callable[[Session, list[str]], None]] = {
    "cordon": _cordon, "drain": _drain, "apply": _apply, "gate": _gate,
    "uncordon": _uncordon}
assert set(STEP_DO) == set(AFTER)


def roll_back_node(s: Session, name: str) -> tuple[str, str | None]:
    """Put the previous version back through the owner: (what was done, the version the
    node runs now when known, for its annotation)."""
    node = s.state.node(name)
    if s.state.owner == "operator":
        merge_patch(s.edge.api, _node_ref(name), {"metadata": {"labels": {SKIP_LABEL: "true"}}})
        return (f"{SKIP_LABEL}=true set again (the controller leaves the node; set "
                f"driver.version back to {node.previous or 'the previous version'} to "
                "downgrade it)"), None
    if not node.rollback_command:
        return (f"no approved entry has the previous {s.state.kind} "
                f"{node.previous or '(unknown)'}: roll it back by hand"), None
    if s.edge.runner is None or not s.state.options.apply_with:
        return f"roll back on the node: `{node.rollback_command}`", None
    cmd = apply_with_command(s.state.options.apply_with, name)
    r = s.edge.runner({name: (cmd, _env(s, name, "rollback"))}, s.state.options.deadline_s)
    res = r.get(name, Result(-1, 0.0, "not run"))
    if res.code == 0:
        return f"rolled back to {node.previous}", node.previous
    return f"rollback command exited {res.code}: {res.tail.strip()[-200:]}", None


def _mark(s: Session, name: str, reason: str, version: str | None) -> None:
    """The reason on the node, and its version annotation only where it is known."""
    merge_patch(s.edge.api, _node_ref(name), {"metadata": {"annotations": {
        REASON_ANNOTATION: reason[:1000], version_annotation(s.state.kind): version}}})


def fail(s: Session, name: str, reason: str, changed: bool | None = None) -> None:
    """A step failed: roll the node back if it changed, leave it cordoned, say why.
    ``changed`` where the phase does not tell (a node released to the upgrade controller
    is still ``drained`` until the controller is done with it)."""
    if changed is None:
        changed = s.state.node(name).phase in ("applied", "gated")
    s.move(name, "failed", reason=reason)
    if changed:
        done, version = roll_back_node(s, name)
        _mark(s, name, f"{reason}; {done}", version)
    else:
        done = "nothing was changed on it"
        merge_patch(s.edge.api, _node_ref(name), {"metadata": {"annotations": {
            REASON_ANNOTATION: f"{reason}; {done}"[:1000]}}})
    s.move(name, "rolled-back", reason=f"{reason}; {done}; left cordoned")


def execute(s: Session) -> RunState:
    """Walk the run from where it stands to done, waiting, or failed; saves each step."""
    e = s.edge
    s.state = take_lease(s.state, e.me, e.clock(), alive)
    s.state = set_status(s.state, "running")
    s.save()
    if s.state.owner == "operator" and not s.state.options.operator_labelled:
        for n in s.state.nodes:
            if n.phase == "pending":
                merge_patch(e.api, _node_ref(n.name),
                            {"metadata": {"labels": {SKIP_LABEL: "true"}}})
        s.note(f"{SKIP_LABEL}=true on the pool's nodes: the controller takes them batch by "
               "batch")
        s.state = s.state.model_copy(update={"options": s.state.options.model_copy(
            update={"operator_labelled": True})})
        s.save()
    try:
        while True:
            point = resume_point(s.state)
            if stopped(s.state):
                s.state = set_status(s.state, "failed")
                return s.state
            if point is None:
                s.state = set_status(s.state, "done", e.clock())
                return s.state
            b, step, names = point
            if step == "cordon" and not batch_started(s.state, b):
                why = closed_reason([Window(w.name, w.schedule, w.hours)
                                     for w in s.state.options.windows], e.clock())
                if why is not None:  # a started batch is finished, a new one waits
                    s.state = hold(s.state, why)
                    return s.state
            if s.state.batch != b:
                s.state = s.state.model_copy(update={"batch": b})
                e.emit(f"{s.state.run_id} batch {b}: {', '.join(names)}")
            STEP_DO[step](s, names)
            if s.state.status == "waiting":
                return s.state
    finally:
        s.state = release(s.state)
        s.save()


def rollback(s: Session, names: list[str] | None) -> RunState:
    """``maintain rollback [NODE]``: the named node, or every node the run has touched, in
    reverse order. A node only cordoned or drained goes back to pending, uncordoned; a
    changed one is drained if it took work again, rolled back, and left cordoned."""
    e = s.edge
    s.state = take_lease(s.state, e.me, e.clock(), alive)
    s.save()
    try:
        targets = names or [n.name for n in reversed(s.state.nodes)
                            if n.phase not in ("pending", "rolled-back")]
        for name in targets:
            node = s.state.node(name)
            if node.phase in ("cordoned", "drained"):
                merge_patch(e.api, _node_ref(name), {"metadata": {"annotations": {
                    RUN_ANNOTATION: None}}, "spec": {"unschedulable": None}})
                s.move(name, "pending", reason="put back by maintain rollback")
                continue
            if node.phase in ("pending", "rolled-back"):
                s.note(f"{name}: {node.phase}, nothing to roll back")
                continue
            merge_patch(e.api, _node_ref(name), {"spec": {"unschedulable": True}})
            if node.phase == "done":
                left = drain_nodes(s, [name], lambda *_a: None)
                if left:
                    s.note(f"{name}: {left[name]} (rolled back anyway)")
            else:
                s.move(name, "failed", reason="maintain rollback")
            done, version = roll_back_node(s, name)
            _mark(s, name, f"rolled back on request; {done}", version)
            s.move(name, "rolled-back", reason=f"rolled back on request; {done}; left "
                   f"cordoned (fix: check it, then `kubectl uncordon {name}`)",
                   acknowledged=True)
        if current_batch(s.state) is None or all(
                n.phase in ("pending", "rolled-back") for n in s.state.nodes):
            s.state = set_status(s.state, "rolled-back", e.clock())
        return s.state
    finally:
        s.state = release(s.state)
        s.save()
