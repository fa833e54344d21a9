"""GPU accounting: GPU-hours per tenant, and slice-hours weighted by compute fraction.

Pure: records come in as parsed JSON/CSV rows and a time window; sums come out. Three
sources give ``Allocation`` records:

- plain records (the simulator's output, or any export): ``tenant, start, end, count,
  profile`` where ``profile`` is empty for whole GPUs, a MIG profile (``3g.40gb``) or
  ``shared`` for a time-slicing/MPS replica;
- a cluster snapshot of pods (``kubectl get pods -A -o json``): limits of ``nvidia.com/gpu``,
  ``nvidia.com/mig-<profile>`` and ``nvidia.com/gpu.shared``; start ``status.startTime``,
  end the last container's ``finishedAt`` or the window's end while running;
- DRA ResourceClaims (``kubectl get resourceclaims -A -o json``): allocated devices named
  ``gpu-<minor>`` or ``gpu-<minor>-mig-<profile>-…``; start is the claim's creation, end its
  deletion or the window's end (a claim holds its device from allocation to deletion).

Weights: a whole GPU is 1; a MIG instance of ``<g>g`` is g/7 of the SMs; a shared replica is
1/replicas. ``gpu_hours`` counts whole GPUs held, ``slice_hours`` instance-hours of slices
(MIG or replicas), ``weighted_gpu_hours`` both in GPU equivalents — the figure to charge.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiplat.errors import InputError
from aiplat.text import shown


class AccountingError(InputError, ValueError):
    """A record that cannot be read; the message names it and the field."""


@dataclass(frozen=True)
class Allocation:
    tenant: str
    start: datetime
    end: datetime
    count: float
    profile: str = ""  # "" whole GPU, MIG profile, or "shared"

    def __post_init__(self) -> None:
        # A tenant is a namespace or a label value and a profile a MIG profile's name: none
        # holds a control or format character. Refused here, whichever reader made it, so no
        # report (table, CSV, JSON) carries an escape sequence to a terminal.
        for what, text in (("tenant", self.tenant), ("profile", self.profile)):
            if not text.isprintable():
                raise AccountingError(f"{what} '{shown(text)}' holds a control or format "
                                      "character (fix: a namespace or label value)")


@dataclass(frozen=True)
class TenantUsage:
    tenant: str
    allocations: int
    gpu_hours: float
    slice_hours: float
    weighted_gpu_hours: float


def parse_time(v: object, where: str) -> datetime:
    if isinstance(v, datetime):
        t = v
    elif isinstance(v, int | float):
        t = datetime.fromtimestamp(v, UTC)
    elif isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError as e:
            raise AccountingError(f"{where}: '{v}' is not an ISO 8601 time") from e
    else:
        raise AccountingError(f"{where}: missing time")
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def fraction(profile: str, replicas: int = 1) -> float:
    if not profile:
        return 1.0
    if profile == "shared":
        return 1.0 / max(1, replicas)
    m = re.match(r"^(\d)g\.", profile)
    if not m:
        raise AccountingError(f"unknown profile '{profile}' (expected e.g. 3g.40gb or shared)")
    return int(m.group(1)) / 7


MAX_COUNT = 100_000
"""The most GPUs one allocation record may hold."""


def from_records(rows: Iterable[Mapping[str, Any]], source: str = "records") -> list[Allocation]:
    out = []
    for i, r in enumerate(rows):
        where = f"{source}[{i}]"
        try:
            tenant = str(r["tenant"])
            raw = r.get("count", r.get("gpus", 1))
            if isinstance(raw, bool):  # `count: true` is not one GPU
                raise TypeError(f"count {raw!r} is not a number")
            count = float(raw)
        except (KeyError, TypeError, ValueError) as e:
            raise AccountingError(f"{where}: needs tenant and count ({e!r})") from e
        if not 0 < count <= MAX_COUNT:  # also refuses NaN and infinity
            raise AccountingError(f"{where}: count {count:g} must be above 0 and at most "
                                  f"{MAX_COUNT:,} GPUs")
        start = parse_time(r.get("start"), f"{where}.start")
        end = parse_time(r.get("end"), f"{where}.end")
        if end < start:
            raise AccountingError(f"{where}: end {end.isoformat()} is before start")
        out.append(Allocation(tenant, start, end, count, str(r.get("profile") or "")))
    return out


def read_csv(text: str, source: str = "csv") -> list[Allocation]:
    return from_records(list(csv.DictReader(io.StringIO(text))), source)


_MIG_RES = re.compile(r"^nvidia\.com/mig-(\d+g\.\d+gb)$")
_DRA_MIG = re.compile(r"^gpu-\d+-mig-(\d+g\.\d+gb)-")


def from_pods(snapshot: Mapping[str, Any], until: datetime,
              tenant_label: str | None = None) -> list[Allocation]:
    out = []
    for i, pod in enumerate(snapshot.get("items", [])):
        meta = pod.get("metadata", {})
        status = pod.get("status", {})
        if not status.get("startTime"):
            continue  # never ran
        labels = meta.get("labels", {}) or {}
        tenant = str(labels.get(tenant_label) if tenant_label and tenant_label in labels
                     else meta.get("namespace", "default"))
        start = parse_time(status["startTime"], f"pods[{i}].status.startTime")
        finished = [cs.get("state", {}).get("terminated", {}).get("finishedAt")
                    for cs in status.get("containerStatuses", []) or []]
        done = [parse_time(f, f"pods[{i}] finishedAt") for f in finished if f]
        end = max(done) if done and len(done) == len(finished) else until
        for c in pod.get("spec", {}).get("containers", []) or []:
            for res, qty in (c.get("resources", {}).get("limits", {}) or {}).items():
                n = float(qty)
                if res == "nvidia.com/gpu":
                    out.append(Allocation(tenant, start, end, n))
                elif res == "nvidia.com/gpu.shared":
                    out.append(Allocation(tenant, start, end, n, "shared"))
                elif (m := _MIG_RES.match(res)) is not None:
                    out.append(Allocation(tenant, start, end, n, m.group(1)))
    return out


def from_claims(snapshot: Mapping[str, Any], until: datetime) -> list[Allocation]:
    out = []
    for i, claim in enumerate(snapshot.get("items", [])):
        meta = claim.get("metadata", {})
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
                   ).get("results", []) or []
        if not results:
            continue
        start = parse_time(meta.get("creationTimestamp"), f"claims[{i}].creationTimestamp")
        end = parse_time(meta["deletionTimestamp"], f"claims[{i}].deletionTimestamp") \
            if meta.get("deletionTimestamp") else until
        tenant = str(meta.get("namespace", "default"))
        for r in results:
            dev = str(r.get("device", ""))
            m = _DRA_MIG.match(dev)
            out.append(Allocation(tenant, start, end, 1.0, m.group(1) if m else ""))
    return out


def summarize(allocs: Sequence[Allocation], since: datetime | None = None,
              until: datetime | None = None, replicas: int = 1) -> list[TenantUsage]:
    """Per tenant sums over the window [since, until] (each allocation clipped to it)."""
    acc: dict[str, list[float]] = {}
    for a in allocs:
        s = max(a.start, since) if since else a.start
        e = min(a.end, until) if until else a.end
        hours = max(0.0, (e - s).total_seconds() / 3600)
        row = acc.setdefault(a.tenant, [0, 0.0, 0.0, 0.0])
        row[0] += 1
        if a.profile:
            row[2] += hours * a.count
        else:
            row[1] += hours * a.count
        row[3] += hours * a.count * fraction(a.profile, replicas)
    return [TenantUsage(t, int(r[0]), round(r[1], 4), round(r[2], 4), round(r[3], 4))
            for t, r in sorted(acc.items())]


def to_csv(usage: Sequence[TenantUsage]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["tenant", "allocations", "gpu_hours", "slice_hours", "weighted_gpu_hours"])
    for u in usage:
        w.writerow([u.tenant, u.allocations, u.gpu_hours, u.slice_hours, u.weighted_gpu_hours])
    return buf.getvalue()
