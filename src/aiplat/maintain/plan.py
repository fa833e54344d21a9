"""A rolling maintenance decided before it runs: which nodes of a pool change, in which
batches, and what each node goes through.

The change (driver, toolkit, kernel, firmware, Kubernetes) goes through its owner: the
driver and toolkit through ``kubernetes.components`` (the GPU Operator's upgrade controller,
or node prepare on the host), the kernel, firmware and Kubernetes node packages always
through the host. Never the operator's pods by hand (gpu-operator#901): where the operator
owns the component, this plan decides which nodes the controller may take next, by the
``nvidia.com/gpu-driver-upgrade.skip`` label it honours, and the controller does the rest.

Order and batches:

- nodes in physical order, as ``cluster/nodes/label-and-taint.sh`` numbers them: rack by
  rack, block by block (``nodesPerRack``, ``racksPerBlock``), named ``<pool>-<i>`` unless
  the admin lists the real names (in that same order);
- a canary first, alone: the first node; nothing else moves until its gate passed;
- then batches of at most ``maxUnavailable`` nodes (default: the pool's planned spare nodes,
  at least one, so the pool keeps its planned capacity), walking block by block: a batch
  never takes every node of a block (a topology-aware gang sized to a block keeps a block it
  can wait for), and it stays within one block where it can, so the other blocks stay whole.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from aiplat.errors import InputError
from aiplat.plan.resolve import ResolvedPool
from aiplat.shell import sh
from aiplat.spec.models import Platform

Kind = Literal["driver", "toolkit", "kernel", "firmware", "kubernetes"]
KINDS: tuple[Kind, ...] = ("driver", "toolkit", "kernel", "firmware", "kubernetes")
SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+~:-]{0,63}$")
_NODE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class Change:
    kind: Kind
    version: str

    @staticmethod
    def parse(text: str) -> Change:
        """``KIND=VERSION`` as ``--change`` takes it."""
        kind, sep, version = text.partition("=")
        if not sep or kind not in KINDS:
            raise InputError(f"--change {text!r}: not KIND=VERSION (fix: one of "
                             f"{', '.join(k + '=VERSION' for k in KINDS)}, e.g. "
                             "driver=580.105.08)")
        if not _VERSION.match(version):
            raise InputError(f"--change {text!r}: {version!r} is not a version (fix: letters, "
                             "digits and . + ~ : -, e.g. 580.105.08)")
        return Change(kind, version)


@dataclass(frozen=True)
class NodeStep:
    step: str  # cordon | drain | apply | gate | uncordon
    what: str
    command: str = ""


@dataclass(frozen=True)
class Batch:
    index: int
    canary: bool
    nodes: list[str]
    blocks: list[str]


@dataclass(frozen=True)
class MaintenancePlan:
    pool: str
    change: Change
    owner: Literal["operator", "host"]
    max_unavailable: int
    batches: list[Batch]
    steps: list[NodeStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _owner(platform: Platform, change: Change) -> Literal["operator", "host"]:
    if change.kind in ("driver", "toolkit"):
        return getattr(platform.kubernetes.components, change.kind)  # type: ignore[no-any-return]
    return "host"


def _blocks(pool: ResolvedPool, names: list[str]) -> list[tuple[str, list[str]]]:
    """(block, its nodes in order), as the label script assigns racks and blocks."""
    per_block = pool.nodes_per_rack * pool.spec.topology.racks_per_block
    out: dict[str, list[str]] = {}
    for i, n in enumerate(names):
        out.setdefault(f"{pool.name}-block-{i // per_block}", []).append(n)
    return list(out.items())


def _batches(blocks: list[tuple[str, list[str]]], size: int) -> list[Batch]:
    """Canary, then batches of at most ``size`` within a block, never a whole block (a block
    of one node goes alone, the only way to change it)."""
    out: list[Batch] = []
    first_block, first = blocks[0]
    out.append(Batch(0, True, [first[0]], [first_block]))
    for block, nodes in blocks:
        rest = [n for n in nodes if n != first[0]]
        cap = max(1, min(size, len(nodes) - 1))
        for i in range(0, len(rest), cap):
            out.append(Batch(len(out), False, rest[i:i + cap], [block]))
    return out


FIELDS = {"driver": "driver", "toolkit": "container_toolkit", "kubernetes": "kubernetes",
          "kernel": "kernel", "firmware": "firmware"}


def approved_entry(platform: Platform, change: Change) -> str | None:
    """The versions.approved entry that names this version exactly (node prepare installs
    from one); None for a kernel or firmware only approved as a range. A driver, toolkit or
    Kubernetes version no entry approves is refused: maintenance rolls approved
    combinations only."""
    for e in platform.versions.approved:
        if getattr(e, FIELDS[change.kind]) == change.version:
            return e.name
    if change.kind in ("kernel", "firmware"):
        return None
    names = ", ".join(f"{e.name} ({getattr(e, FIELDS[change.kind])})"
                      for e in platform.versions.approved) or "none"
    raise InputError(f"--change {change.kind}={change.version}: no versions.approved entry "
                     f"has {change.kind} {change.version} (approved: {names}) (fix: add an "
                     "entry with it, check it with `aiplat matrix check`, then plan again)")


def _steps(platform: Platform, pool: str, change: Change,
           owner: Literal["operator", "host"]) -> list[NodeStep]:
    # "$NODE": the node of the batch, filled in by the shell; spec strings are quoted by sh.
    drain = 'kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data --timeout=3600s'
    steps = [NodeStep("cordon", "stop new pods on the node", 'kubectl cordon "$NODE"'),
             NodeStep("drain", "Kueue-admitted jobs finish by the deadline or are evicted "
                      "through the API (PDBs honoured), so Kueue requeues and readmits them",
                      drain)]
    if owner == "operator":
        steps.append(NodeStep(
            "apply", f"release the node to the GPU Operator's upgrade controller for "
            f"{change.kind} {change.version}: the others keep {SKIP_LABEL}=true; follow "
            "nvidia.com/gpu-driver-upgrade-state to upgrade-done",
            f'kubectl label node "$NODE" {SKIP_LABEL}-'))
    else:
        entry = approved_entry(platform, change)
        steps.append(NodeStep(
            "apply", f"node prepare with the approved entry {entry or 'ENTRY'}, then reboot"
            + ("" if entry else f" ({change.kind} {change.version} within its range)"),
            sh("aiplat node prepare SPEC --pool {pool} --entry {entry}", pool=pool,
               entry=entry or "ENTRY")))
    steps += [NodeStep("gate", "the node agent's verdict (node check against the pool's "
                       "expectations), then --gate-with where given (e.g. a baseline "
                       "compare on the node), then --validate-queue's Job through Kueue on "
                       "the node's GPUs where given; a failure stops the rollout and rolls "
                       "the node back",
                       sh("aiplat node check SPEC --pool {pool} --matrix", pool=pool)),
              NodeStep("uncordon", "the node takes work again", 'kubectl uncordon "$NODE"')]
    return steps


def plan(platform: Platform, pool: ResolvedPool, change: Change, *,
         nodes: list[str] | None = None, max_unavailable: int | None = None
         ) -> MaintenancePlan:
    names = list(nodes) if nodes else [f"{pool.name}-{i}" for i in range(pool.nodes)]
    bad = next((n for n in names if not _NODE.match(n)), None)
    if bad is not None:
        raise InputError(f"--nodes: {bad!r} is not a node name (fix: lower-case letters, "
                         "digits, '-' and '.', as `kubectl get nodes` shows them)")
    if len(set(names)) != len(names):
        raise InputError("--nodes names a node twice (fix: list each node once, in rack "
                         "order)")
    if max_unavailable is not None and max_unavailable < 1:
        raise InputError("--max-unavailable must be at least 1 (fix: 1 rolls node by node)")
    size = max_unavailable or max(1, pool.spares.spare_nodes)
    owner = _owner(platform, change)
    approved_entry(platform, change)  # refused before anything is planned
    notes = []
    if max_unavailable is None:
        notes.append(f"batches of {size}: the pool's planned spare nodes (--max-unavailable "
                     "to change)")
    if owner == "operator":
        notes.append(f"before the canary, label every node of the pool {SKIP_LABEL}=true, then "
                     f"set driver.version {change.version} in the GPU Operator values; each "
                     "batch removes the label from its nodes")
    return MaintenancePlan(pool.name, change, owner, size,
                           _batches(_blocks(pool, names), size),
                           _steps(platform, pool.name, change, owner), notes)
