"""Kueue objects a user hands in, held to Kueue's own schemas before anything reads them.

The one reader of Kueue objects (:func:`aiplat.kueue.snapshot.parse`) takes plain dicts
and trusts their types: a podSet ``count: one`` or a ``maxPriorityThreshold: high`` would
fail deep inside it (or inside the replay) with Python's words. The API server checks every
object against Kueue's CRD schema before it stores it; here the same schemas (the packaged
Kueue CRDs, ``kube.crds``, strict as ``kubectl apply`` is) check the objects first, so a wrong
type or an unknown field is named by file, object and field path.

Workloads are many (a cluster snapshot has thousands) and their pod templates make the
schema check cost about 1 ms each, more than the replay itself; so they are checked only
when reading fails, to name what failed. Values of the right type that Kueue refuses
(negative requests, a flavor's resources that differ from ``coveredResources``) are the
reader's own checks. Pure: no I/O (this sits above ``kube`` and ``sched`` to use both).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any, TypeVar

from aiplat.errors import InputError
from aiplat.kube.crds import packaged_crds
from aiplat.kube.defaults import without_nulls
from aiplat.kube.objects import ref
from aiplat.kube.schemas import OBJECT_META, Validator, field_path
from aiplat.kube.shape import problems, value_problems
from aiplat.kueue import tas_input
from aiplat.kueue.tas_input import TasCluster

Obj = dict[str, Any]
Item = tuple[str, Obj]  # (the file or source it came from, the object)
T = TypeVar("T")
GROUP = "kueue.x-k8s.io"
SHOWN = 10  # errors listed before "and N more"
_META = {"$ref": f"_definitions.json#/$defs/{OBJECT_META}"}
READ_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


@functools.cache
def _validator(api: str, kind: str) -> Any:
    schema = packaged_crds().schema(api, kind)
    # Kueue's patterns are Go RE2 (``^(?i)...``): read as the API server reads them
    return None if schema is None else Validator(schema)


def _ref(o: Obj) -> str:
    meta = o.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{o.get('kind')} {ns}{meta.get('name', '?')}"


def schema_errors(items: Iterable[Item], *, workloads: bool = True) -> list[str]:
    """``FILE: Kind ns/name at field: message`` for each object of Kueue's API group that
    its CRD schema refuses (Workloads only with ``workloads``). An apiVersion the CRDs do
    not serve is the reader's to refuse (it names the versions it reads)."""
    out = []
    for where, o in items:
        api, kind = str(o.get("apiVersion", "")), str(o.get("kind", ""))
        if api.rpartition("/")[0] != GROUP:
            continue
        # a CRD's schema leaves metadata open; the API server holds it to ObjectMeta
        out += [f"{where}: {_ref(o)} at {p}: {m}" for p, m in
                value_problems(o["metadata"], _META, "metadata")] if "metadata" in o else []
        if kind == "Workload" and not workloads:
            continue
        validator = _validator(api, kind)
        if validator is None:
            if not packaged_crds().knows(api, kind):  # a typo, not another version
                kinds = sorted({k for (g, _v, k) in packaged_crds().schemas if g == GROUP})
                out.append(f"{where}: {_ref(o)}: kind {kind!r} is not a kind of {GROUP} "
                           f"(Kueue v0.19 has {', '.join(kinds)})")
            continue
        errs = sorted(validator.iter_errors(o), key=lambda e: list(map(str, e.absolute_path)))
        for e in errs:
            at = field_path(e.absolute_path)
            out.append(f"{where}: {_ref(o)}{' at ' + at if at else ''}: {e.message[:200]}")
    return out


def without_map_nulls(node: Any) -> Any:
    """A copy without the nulls of maps: what the API server prunes from a custom resource
    (apiextensions' PruneNonNullableNullsWithoutDefaults); a null list item stays, for the
    CRD's schema to refuse as the server does."""
    if isinstance(node, dict):
        return {k: without_map_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [without_map_nulls(v) for v in node]
    return node


def _refuse(errors: list[str], failure: str = "",
            schemas: str = "Kueue v0.19's CRD schema") -> InputError:
    more = f"\n  ... and {len(errors) - SHOWN} more" if len(errors) > SHOWN else ""
    what = "Kueue objects" if schemas.startswith("Kueue") else "objects"
    return InputError(failure + f"{what} that the API server would refuse ({schemas}):\n  "
                      + "\n  ".join(errors[:SHOWN]) + more
                      + "\n(fix: correct each field as named; 'kubectl apply --dry-run=server'"
                      " tells the same)")


def read(items: list[Item], source: str, reader: Callable[[list[Obj]], T], fix: str) -> T:
    """``reader`` on the objects, after the schema check; when reading fails anyway, the
    Workloads are checked too and the failure names its object and field."""
    errors = schema_errors(items, workloads=False)
    if errors:
        raise _refuse(errors)
    try:
        return reader([o for _, o in items])
    except READ_ERRORS as e:
        failure = f"{source}: not the shape of Kueue objects ({type(e).__name__}: {e})"
        errors = schema_errors(items)
        if errors:
            raise _refuse(errors, failure + "; among the ") from None
        raise InputError(f"{failure} (fix: {fix})") from None


# ---------------------------------------------------------------- what sim replay reads

_REPLAY_READS = ("ConfigMap", "Node", "Pod", "Namespace", "ResourceClaimTemplate",
                 "Configuration")


def replayed(items: list[Item], source: str) -> tuple[list[Item], str | None]:
    """The objects the replay reads; other Kubernetes kinds in the snapshot (a why-pending
    folder's Pods and DeviceClasses, a rendered tree's Kustomization, anything `kubectl get
    all` adds) are left out with one note. A kind of Kueue's own API group it does not know
    stays in: the parser refuses it by name (a typo, not another component's object).
    Returns the kept objects and the note naming what was left out (None: nothing)."""
    kept, skipped = [], Counter[str]()
    for where, o in items:
        kind, api = str(o.get("kind") or ""), str(o.get("apiVersion") or "")
        if kind in _REPLAY_READS or api.split("/", maxsplit=1)[0].endswith("kueue.x-k8s.io"):
            kept.append((where, o))
        else:
            skipped[kind or "a document without kind"] += 1
    note = (f"{source}: not read by the replay: "
            + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))) if skipped else None
    return kept, note


_FIXES = {"Topology": "include 'kubectl get topologies.kueue.x-k8s.io -o json'",
          "Node": "include 'kubectl get nodes -o json' as nodes.json",
          "Pod": "include 'kubectl get pods -A -o json' as pods.json"}


def tas_missing(items: list[Item], *, pods_listed: bool) -> str | None:
    """What the snapshot lacks for topology-aware scheduling (None: nothing): its
    Topologies, its Nodes (their capacity) and its Pod list (what non-TAS pods take). The
    Pod list counts when it was read (``pods_listed``), even empty: an idle cluster's."""
    kinds = {str(o.get("kind")) for _, o in items}
    if pods_listed:
        kinds.add("Pod")
    lacks = next((k for k in _FIXES if k not in kinds), None)
    if lacks is None:
        return None
    what = "Topology" if lacks == "Topology" else f"{lacks} list"
    return f"no {what} in the snapshot (fix: {_FIXES[lacks]})"


def pods_listed(path: str, docs: Iterable[Any]) -> bool:
    """Is the file ``path`` a Pod list, even an empty one? ``kubectl get pods -o json``
    writes an untyped List: its name says it (the snapshot layout's pods.json), or the
    API's own PodList kind."""
    return PurePath(path).stem == "pods" or any(isinstance(d, dict) and d.get("kind") == "PodList"
                                            for d in docs)


def tas_cluster(items: list[Item], source: str, *, pods_listed: bool) -> TasCluster | None:
    """Topology-aware scheduling's inputs, when the objects can decide it (see
    :func:`tas_missing`); otherwise None: TAS workloads stay unknown rather than placed on a
    guessed capacity."""
    if tas_missing(items, pods_listed=pods_listed) is not None:
        return None
    # TAS reads the Nodes and Pods, which Kueue's schemas do not cover: Kubernetes' own,
    # nulls read as absent (as the API server decodes them); status may lack what the
    # controllers fill in, not hold a wrong type
    objs = [without_nulls(o) if o.get("kind") in ("Node", "Pod") else o for _, o in items]
    bad = [f"{where}: {ref(o)} at {p}: {m}" for where, o in items
           if o.get("kind") in ("Node", "Pod") for p, m in problems(o)
           if not (p.startswith("status") and m == "is required but missing")]
    if bad:
        raise _refuse(bad, schemas="Kubernetes' own schemas")
    cluster = tas_input.read(objs, source)
    untracked = [o for _, o in items if o.get("kind") == "Workload" and _untracked(cluster, o)]
    return None if untracked else cluster


def _untracked(cluster: TasCluster, wl: Obj) -> bool:
    """An admitted Workload TAS places without a topologyAssignment (not what Kueue writes):
    its pods' domains are unknown, so is every TAS capacity."""
    meta = wl.get("metadata") or {}
    tw = cluster.workloads.get(f"{meta.get('namespace', 'default')}/{meta.get('name')}")
    status = wl.get("status") or {}
    reserved = any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
                   for c in status.get("conditions") or [])
    if tw is None or not reserved or not status.get("admission"):
        return False
    uses = any(ps.explicit for ps in tw.podsets) or cluster.tas_only.get(tw.cluster_queue,
                                                                         False)
    return uses and not any(p.get("topologyAssignment")
                            for p in status["admission"].get("podSetAssignments") or [])


_OBJECT_FIELD = re.compile(r"^(?P<kind>[A-Z]\w+) (?P<name>[^\s:]+):? (?P<field>.+)$")


def grouped(lines: list[str], source: str, shown: int = 3) -> list[str]:
    """One warning per unreplayed field with the objects that carry it (a rendered tree's
    topology requests would otherwise be one line per workload), podSets[N] as podSets[*]."""
    groups: dict[str, list[str]] = {}
    for line in dict.fromkeys(lines):
        text = line.removeprefix(f"{source}: ")
        m = _OBJECT_FIELD.match(text)
        if m is None:
            groups.setdefault(text, [])
            continue
        field = re.sub(r"\[\d+\]", "[*]", m["field"])
        groups.setdefault(field, []).append(f"{m['kind']} {m['name']}")
    out = []
    for field, objects in groups.items():
        if not objects:
            out.append(field)
            continue
        more = f" and {len(objects) - shown} more" if len(objects) > shown else ""
        out.append(f"{field}: {', '.join(objects[:shown])}{more}")
    return out
