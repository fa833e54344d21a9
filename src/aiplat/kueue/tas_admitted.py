"""An admitted Workload's ``podSetAssignments[].topologyAssignment`` as the TAS usage it
holds (``totalRequestsFromAdmission`` and ``InternalSeqFrom`` of Kueue v0.19): v1beta1's
``domains``, or v1beta2's ``slices`` (each level's values universal or prefix + root +
suffix, the pod counts universal or individual). Pure; a malformed assignment is a
``ValueError`` naming the field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiplat.kueue.tas_model import AdmittedDomain


def admitted_domains(flavors: Iterable[str], assignment: Mapping[str, Any],
                     requests: Mapping[str, int],
                     where: str = "topologyAssignment") -> tuple[AdmittedDomain, ...]:
    """The usage one pod set's assignment holds in each TAS flavor of ``flavors`` (the pod
    set assignment's ``flavors`` values: Kueue charges each distinct one); ``requests``:
    one pod's (the pod set template's PodRequests)."""
    levels = tuple(str(v) for v in _list(assignment, "levels", where))
    out = []
    for values, count in _domains(assignment, len(levels), where):
        out += [AdmittedDomain(f, levels, values, count, requests) for f in sorted(set(flavors))]
    return tuple(out)


def _domains(ta: Mapping[str, Any], nlevels: int,
             where: str) -> list[tuple[tuple[str, ...], int]]:
    if "domains" in ta:  # v1beta1
        return [(tuple(str(v) for v in _list(d, "values", f"{where}.domains[{i}]")),
                 _int(d.get("count"), f"{where}.domains[{i}].count"))
                for i, d in enumerate(_list(ta, "domains", where))]
    out = []
    for i, s in enumerate(_list(ta, "slices", where)):
        at = f"{where}.slices[{i}]"
        n = _int(s.get("domainCount"), f"{at}.domainCount")
        per_level = _list(s, "valuesPerLevel", at)
        if len(per_level) != nlevels:
            raise ValueError(f"{at}.valuesPerLevel: {len(per_level)} entries for "
                             f"{nlevels} levels")
        counts = s.get("podCounts") or {}
        for j in range(n):
            values = tuple(_value(lv, j, f"{at}.valuesPerLevel[{k}]")
                           for k, lv in enumerate(per_level))
            out.append((values, _count(counts, j, f"{at}.podCounts")))
    return out


def _value(level: Mapping[str, Any], j: int, where: str) -> str:
    if level.get("universal") is not None:
        return str(level["universal"])
    ind = level.get("individual") or {}
    roots = _list(ind, "roots", f"{where}.individual")
    if j >= len(roots):
        raise ValueError(f"{where}.individual.roots: {len(roots)} roots, domain {j} asked")
    return f"{ind.get('prefix') or ''}{roots[j]}{ind.get('suffix') or ''}"


def _count(counts: Mapping[str, Any], j: int, where: str) -> int:
    if counts.get("universal") is not None:
        return _int(counts["universal"], f"{where}.universal")
    individual = _list(counts, "individual", where)
    if j >= len(individual):
        raise ValueError(f"{where}.individual: {len(individual)} counts, domain {j} asked")
    return _int(individual[j], f"{where}.individual[{j}]")


def _list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(value, list):
        raise ValueError(f"{where}.{key}: a list is required")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: a non-negative integer is required, not {value!r}")
    return value
