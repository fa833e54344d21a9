"""Acceptance (pure core): the record, the criteria, the statistics and the comparison.

``aiplat accept run`` composes the other capabilities' checks into one acceptance record.
This module holds everything that decides; :mod:`aiplat.ops.acceptance_run` does the I/O
(inventory, Podman, registry, probes) and hands plain results here. So every verdict can be
tested on constructed data, and a recorded JSON record can be re-evaluated or compared later.

Suites and their criteria (ids are stable: ``accept compare`` matches on them):

- function: ``function.inventory`` (the node is what the spec's pool says: CPUs, memory, GPU
  count and model), ``function.node-checks``, ``function.cdi-verify``, ``function.manifests``
  (render + validate + lint clean);
- performance: one criterion per measured metric against a floor (``--min`` or the spec),
  e.g. ``performance.model-pull`` in MiB/s; ``performance.baseline`` compares the node baseline
  with a recorded one when given;
- isolation: ``isolation.devices`` (each container sees only its devices, none without a
  request), ``isolation.network`` (static evaluation of the rendered NetworkPolicies: no
  ordered pair of tenant namespaces may talk), ``isolation.quotas`` (each namespace's
  ResourceQuota admits what its ClusterQueue can admit, and one exists);
- repeatability: ``repeatability.cv.<metric>`` (coefficient of variation of N runs under a
  threshold) and ``repeatability.baseline.<metric>`` (against a recorded acceptance record:
  one-sided Mann-Whitney U, exact for small samples, plus a bootstrap interval of the ratio
  of medians; a regression is flagged when the drop is significant *and* larger than the
  tolerance, so noise alone cannot fail a run and a small but real drift cannot either).

Every metric is "higher is better" (throughputs), which keeps the tests one-sided.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import permutations
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from aiplat.fieldnames import camel, camel_key
from aiplat.kube.lint.objects import selector_matches
from aiplat.kube.quantity import QuantityError, parse_quantity

SCHEMA: Literal["aiplat.io/acceptance/v1"] = "aiplat.io/acceptance/v1"
SUITES = ("function", "performance", "isolation", "repeatability")
Status = Literal["pass", "fail", "warn", "skip"]


class AccModel(BaseModel):
    # Written with the spec's spelling (camelCase aliases, ``fieldnames.camel_key``); built in
    # code by the Python names.
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=camel_key,
                              validate_by_name=True, validate_by_alias=True)


class Criterion(AccModel):
    id: str
    suite: str
    title: str
    status: Status
    expected: str = ""
    observed: str = ""
    evidence: list[str] = []


class Measurement(AccModel):
    unit: str
    samples: list[float]
    method: str = ""

    @property
    def median(self) -> float:
        return float(np.median(self.samples)) if self.samples else math.nan

    @property
    def cv(self) -> float:
        return coefficient_of_variation(self.samples)


class Record(AccModel):
    schema_version: Literal["aiplat.io/acceptance/v1"] = SCHEMA
    started_at: str
    finished_at: str
    seconds: float
    platform: str
    pool: str
    spec_file: str
    suites: list[str]
    runs: int
    matrix: dict[str, Any] = Field(description="the approved entry this node matches")
    fingerprint: dict[str, Any]
    criteria: list[Criterion]
    measurements: dict[str, Measurement] = {}
    notes: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        """One spelling in memory, whoever made the record: names in the matrix entry and the
        fingerprint in camelCase, as a record written before aiplat's JSON was camelCase
        (``started_at``, ``cpu_model``) is read; the measurement names (data) as they are."""
        return camel(data, data_maps=("measurements",)) if isinstance(data, dict) else data

    @property
    def status(self) -> Literal["pass", "fail", "incomplete"]:
        """fail: a criterion failed; incomplete: one was skipped (never accepted silently)."""
        statuses = {c.status for c in self.criteria}
        return "fail" if "fail" in statuses else "incomplete" if "skip" in statuses else "pass"

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("pass", "fail", "warn", "skip"), 0)
        for c in self.criteria:
            out[c.status] += 1
        return out

    def dump(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True)
        data["status"] = self.status
        data["counts"] = self.counts()
        for name, m in self.measurements.items():
            data["measurements"][name] |= {"median": round(m.median, 3), "cv": round(m.cv, 4)}
        return data


def load_record(text: str, name: str = "acceptance record") -> Record:
    """A record from its JSON text; ``InputError`` for bad JSON or a wrong shape (a
    ``ValidationError`` for wrong fields, which the CLI reports field by field)."""
    from aiplat import inputs

    what = "an acceptance record (acceptance.json)"
    data = inputs.mapping(inputs.parse_json(text, name, what), name, what,
                          "pass acceptance.json from `aiplat accept run -w DIR`")
    for key in ("status", "counts"):
        data.pop(key, None)
    measurements = data.get("measurements") or {}
    if isinstance(measurements, dict):
        for m in measurements.values():
            if isinstance(m, dict):
                m.pop("median", None)
                m.pop("cv", None)
    return Record.model_validate(data)


def parse_suites(text: str) -> list[str]:
    from aiplat.errors import InputError

    suites = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in suites if s not in SUITES]
    if bad or not suites:
        raise InputError(f"--suite {text!r}: unknown suite {', '.join(bad) or '(none)'} "
                         f"(fix: a comma-separated list of {', '.join(SUITES)})")
    return [s for s in SUITES if s in suites]


# ------------------------------------------------------------------------------ statistics


def coefficient_of_variation(samples: Sequence[float]) -> float:
    """Sample standard deviation over the mean (0 for fewer than two samples).

    >>> round(coefficient_of_variation([9.0, 10.0, 11.0]), 3)
    0.1
    """
    if len(samples) < 2:
        return 0.0
    a = np.asarray(samples, dtype=float)
    mean = float(a.mean())
    return float(a.std(ddof=1) / mean) if mean else math.inf


def _ranks(values: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Ranks from 1, ties get their average rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_v = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _exact_u_cdf(u: float, n1: int, n2: int) -> float:
    """P(U <= u) under H0 without ties: counts of rank arrangements (Mann & Whitney 1947)."""
    # f[i][j][k]: arrangements of i x's and j y's with U = k; recurrence on the largest value.
    max_u = n1 * n2
    f = np.zeros((n1 + 1, n2 + 1, max_u + 1))
    f[:, 0, 0] = 1
    f[0, :, 0] = 1
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            # largest is an x: it beats all j y's (adds j); else a y, adds nothing.
            f[i, j, j:] += f[i - 1, j, :max_u + 1 - j]
            f[i, j, :] += f[i, j - 1, :]
    total = f[n1, n2].sum()
    return float(f[n1, n2, :math.floor(u + 1e-9) + 1].sum() / total)


def mann_whitney_less(current: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """One-sided Mann-Whitney U test that ``current`` tends to be smaller than ``baseline``.

    Returns (U of current, p). Exact distribution when there are no ties and both samples
    are small (n1*n2 <= 400); otherwise the normal approximation with tie correction and
    continuity correction.
    """
    x = np.asarray(current, dtype=float)
    y = np.asarray(baseline, dtype=float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return math.nan, 1.0
    ranks = _ranks(np.concatenate([x, y]))
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ties = len(np.unique(np.concatenate([x, y]))) < n1 + n2
    if not ties and n1 * n2 <= 400:
        return u, _exact_u_cdf(u, n1, n2)
    n = n1 + n2
    _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - float((counts ** 3 - counts).sum()) / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (u - n1 * n2 / 2 + 0.5) / math.sqrt(var)
    return u, 0.5 * math.erfc(-z / math.sqrt(2))


def bootstrap_ratio(current: Sequence[float], baseline: Sequence[float], *,
                    rounds: int = 2000, level: float = 0.95,
                    seed: int = 0) -> tuple[float, float, float]:
    """Ratio of medians current/baseline and its percentile bootstrap interval."""
    x = np.asarray(current, dtype=float)
    y = np.asarray(baseline, dtype=float)
    rng = np.random.default_rng(seed)
    xs = np.median(rng.choice(x, size=(rounds, len(x))), axis=1)
    ys = np.median(rng.choice(y, size=(rounds, len(y))), axis=1)
    ratios = xs / ys
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(np.median(x) / np.median(y)), float(lo), float(hi)


class Regression(AccModel):
    metric: str
    unit: str
    ratio: float
    low: float
    high: float
    u: float
    p: float
    tolerance: float
    regressed: bool


def regression_test(metric: str, current: Measurement, baseline: Measurement,
                    tolerance: float, alpha: float = 0.05) -> Regression:
    """Flag a regression: significantly lower (Mann-Whitney U, one-sided, ``alpha``) and the
    ratio of medians below ``1 - tolerance``."""
    u, p = mann_whitney_less(current.samples, baseline.samples)
    ratio, lo, hi = bootstrap_ratio(current.samples, baseline.samples)
    return Regression(metric=metric, unit=current.unit, ratio=ratio, low=lo, high=hi, u=u, p=p,
                      tolerance=tolerance, regressed=p < alpha and ratio < 1 - tolerance)


def repeatability_criteria(measurements: Mapping[str, Measurement], max_cv: float,
                           baseline: Record | None, tolerance: float, *, alpha: float = 0.05,
                           cv_for: Mapping[str, float] | None = None) -> list[Criterion]:
    """CV per metric under ``max_cv`` (or its ``cv_for`` override), then each metric against
    ``baseline`` (an earlier record) with :func:`regression_test`."""
    out = []
    for name, m in measurements.items():
        cv = m.cv
        limit = (cv_for or {}).get(name, max_cv)
        out.append(Criterion(
            id=f"repeatability.cv.{name}", suite="repeatability",
            title=f"{name}: coefficient of variation over {len(m.samples)} runs",
            status="fail" if len(m.samples) < 2 or cv > limit else "pass",
            expected=f"CV <= {limit:.0%} over >= 2 runs", observed=f"CV {cv:.1%}",
            evidence=[f"samples ({m.unit}): {', '.join(f'{s:,.1f}' for s in m.samples)}"]))
    if baseline is None:
        return out
    for name, m in measurements.items():
        b = baseline.measurements.get(name)
        if b is None:
            out.append(Criterion(
                id=f"repeatability.baseline.{name}", suite="repeatability",
                title=f"{name} against the recorded baseline", status="warn",
                observed="not in the baseline record",
                expected="the baseline measured the same metric"))
            continue
        r = regression_test(name, m, b, tolerance, alpha)
        out.append(Criterion(
            id=f"repeatability.baseline.{name}", suite="repeatability",
            title=f"{name} against the recorded baseline",
            status="fail" if r.regressed else "pass",
            expected=f"no drop beyond {tolerance:.0%} that is significant at p < {alpha}",
            observed=f"median ratio {r.ratio:.3f} (95% bootstrap {r.low:.3f}–{r.high:.3f}), "
                     f"Mann-Whitney U {r.u:g}, one-sided p {r.p:.4f}",
            evidence=[f"baseline ({b.unit}): {', '.join(f'{s:,.1f}' for s in b.samples)}",
                      f"current ({m.unit}): {', '.join(f'{s:,.1f}' for s in m.samples)}"]))
    return out


def performance_criteria(measurements: Mapping[str, Measurement],
                         floors: Mapping[str, tuple[float, str]]) -> list[Criterion]:
    """One criterion per metric: the median must reach its floor (value, where it came from);
    metrics without a floor pass with the measured value recorded."""
    out = []
    for name, m in measurements.items():
        floor = floors.get(name)
        med = m.median
        status: Status = "pass" if floor is None or med >= floor[0] else "fail"
        out.append(Criterion(
            id=f"performance.{name}", suite="performance", title=f"{name} ({m.method})",
            status=status,
            expected=f">= {floor[0]:,.1f} {m.unit} ({floor[1]})" if floor else "recorded",
            observed=f"median {med:,.1f} {m.unit} of {len(m.samples)} runs"))
    return out


# ------------------------------------------------------------------------------ inventory


def inventory_criterion(*, spec_cpus: int, spec_memory_gib: int, spec_gpus: int,
                        spec_gpu_model: str | None, cpus: int | None, memory_kib: int | None,
                        gpus: int, gpu_names: Sequence[str],
                        memory_slack: float = 0.08) -> Criterion:
    """The node is what the pool says. Memory may be short by ``memory_slack`` (firmware and
    kernel reservations); CPUs count logical CPUs or physical cores."""
    problems, seen = [], []
    seen.append(f"CPUs {cpus}")
    if cpus is None or cpus < spec_cpus:
        problems.append(f"CPUs {cpus} < {spec_cpus}")
    mem_gib = memory_kib / 2**20 if memory_kib else 0.0
    seen.append(f"memory {mem_gib:.1f} GiB")
    if mem_gib < spec_memory_gib * (1 - memory_slack):
        problems.append(f"memory {mem_gib:.1f} GiB < {spec_memory_gib} GiB - "
                        f"{memory_slack:.0%}")
    seen.append(f"GPUs {gpus}")
    if gpus != spec_gpus:
        problems.append(f"GPUs {gpus} != {spec_gpus}")
    if spec_gpu_model and gpus:
        key = spec_gpu_model.split("-")[0].lower()
        off = [n for n in gpu_names if key not in n.lower()]
        if off:
            problems.append(f"GPU model {', '.join(sorted(set(off)))} is not {spec_gpu_model}")
    return Criterion(
        id="function.inventory", suite="function", title="inventory matches the spec's pool",
        status="fail" if problems else "pass",
        expected=f"CPUs >= {spec_cpus}, memory ~{spec_memory_gib} GiB, {spec_gpus} GPUs"
                 + (f" {spec_gpu_model}" if spec_gpu_model else ""),
        observed="; ".join(problems) if problems else ", ".join(seen))


# ------------------------------------------------------------------ network isolation (static)

Obj = Mapping[str, Any]


def _peer_reaches(peer: Obj, own_ns: str, other_ns: str,
                  ns_labels: Mapping[str, Mapping[str, str]]) -> str | None:
    """Could this peer match some pod in ``other_ns``? Returns why, or None."""
    if "ipBlock" in peer:
        cidr = (peer.get("ipBlock") or {}).get("cidr", "")
        try:
            if ipaddress.ip_network(cidr, strict=False).prefixlen == 0:
                return f"ipBlock {cidr} covers every pod address"
        except ValueError:
            return f"ipBlock {cidr!r} is unreadable"
        return None
    nsel = peer.get("namespaceSelector")
    if nsel is None:
        return None if other_ns != own_ns else "podSelector in the same namespace"
    if selector_matches(nsel, ns_labels.get(other_ns, {})):
        return f"namespaceSelector {dict(nsel)} selects {other_ns}"
    return None


def _policy_types(policy: Obj) -> list[str]:
    """``policyTypes``, or Kubernetes' default: Ingress, plus Egress when egress rules exist."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _direction(policies: Iterable[Obj], ns: str, other: str, kind: Literal["Ingress", "Egress"],
               ns_labels: Mapping[str, Mapping[str, str]]) -> tuple[bool, str]:
    """(allowed, why) for traffic of direction ``kind`` between ``ns``'s pods and ``other``."""
    key, peers = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    applying = [p for p in policies if (p.get("metadata") or {}).get("namespace") == ns
                and kind in _policy_types(p)]
    isolating = [p for p in applying if not ((p.get("spec") or {}).get("podSelector") or {})]
    if not isolating:
        return True, f"no {kind.lower()} policy selects every pod in {ns}"
    for p in applying:
        for i, rule in enumerate((p.get("spec") or {}).get(key) or []):
            name = (p.get("metadata") or {}).get("name")
            rule_peers = rule.get(peers)
            if not rule_peers:
                return True, f"NetworkPolicy {ns}/{name} {key}[{i}] allows any peer"
            for peer in rule_peers:
                why = _peer_reaches(peer, ns, other, ns_labels)
                if why:
                    return True, f"NetworkPolicy {ns}/{name} {key}[{i}]: {why}"
    denier = (isolating[0].get("metadata") or {}).get("name")
    return False, f"{kind.lower()} of {ns} denied by {denier}"


def network_isolation(objects: Sequence[Obj], tenants: Sequence[str]) -> Criterion:
    """For every ordered pair of tenant namespaces (A, B): can a pod in A reach a pod in B?
    Kubernetes needs both A's egress and B's ingress to allow it."""
    policies = [o for o in objects if o.get("kind") == "NetworkPolicy"]
    ns_labels: dict[str, dict[str, str]] = {}
    for o in objects:
        if o.get("kind") == "Namespace":
            n = (o.get("metadata") or {}).get("name", "")
            ns_labels[n] = {"kubernetes.io/metadata.name": n,
                            **((o.get("metadata") or {}).get("labels") or {})}
    for t in tenants:
        ns_labels.setdefault(t, {"kubernetes.io/metadata.name": t})
    leaks, evidence = [], []
    for a, b in permutations(tenants, 2):
        eg, why_e = _direction(policies, a, b, "Egress", ns_labels)
        ing, why_i = _direction(policies, b, a, "Ingress", ns_labels)
        if eg and ing:
            leaks.append(f"{a} -> {b}: {why_e}; {why_i}")
            evidence.append(f"{a} -> {b}: ALLOWED ({why_e}; {why_i})")
        else:
            evidence.append(f"{a} -> {b}: denied ("
                            + "; ".join(w for ok, w in ((eg, why_e), (ing, why_i)) if not ok)
                            + ")")
    pairs = len(tenants) * (len(tenants) - 1)
    return Criterion(
        id="isolation.network", suite="isolation",
        title="tenant network policies deny cross-tenant traffic (static, rendered policies)",
        status="fail" if leaks else ("pass" if pairs else "skip"),
        expected=f"all {pairs} ordered tenant pairs denied",
        observed="; ".join(leaks) if leaks else f"{pairs} of {pairs} pairs denied",
        evidence=evidence)


def quota_coverage(objects: Sequence[Obj], lint_findings: Sequence[str]) -> Criterion:
    """Each tenant namespace with a LocalQueue has a ResourceQuota, and (from kube lint's
    ``resourcequota-admits`` rule) it admits what the ClusterQueue can admit."""
    def _q(v: Any) -> float:
        try:
            return float(parse_quantity(str(v)))
        except QuantityError:
            return math.nan

    cqs = {(o.get("metadata") or {}).get("name"): o for o in objects
           if o.get("kind") == "ClusterQueue"}
    quotas: dict[str, dict[str, Any]] = {}
    for o in objects:
        if o.get("kind") == "ResourceQuota":
            quotas.setdefault((o.get("metadata") or {}).get("namespace", ""), {}).update(
                (o.get("spec") or {}).get("hard") or {})
    problems, evidence = list(lint_findings), []
    for lq in (o for o in objects if o.get("kind") == "LocalQueue"):
        ns = (lq.get("metadata") or {}).get("namespace", "")
        cq = cqs.get((lq.get("spec") or {}).get("clusterQueue"))
        if cq is None:
            continue
        admits: dict[str, float] = {}
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for fl in group.get("flavors") or []:
                for r in fl.get("resources") or []:
                    admits[r["name"]] = admits.get(r["name"], 0.0) + _q(
                        r.get("nominalQuota", 0)) + _q(r.get("borrowingLimit", 0))
        hard = quotas.get(ns)
        if hard is None:
            problems.append(f"namespace {ns}: LocalQueue but no ResourceQuota")
            continue
        shown = ", ".join(f"{k} {v:g}" for k, v in admits.items())
        evidence.append(f"{ns}: ClusterQueue {(cq.get('metadata') or {}).get('name')} admits "
                        f"{shown or 'nothing'}; ResourceQuota hard "
                        + ", ".join(f"{k}={v}" for k, v in hard.items()))
    return Criterion(
        id="isolation.quotas", suite="isolation", title="quotas cover what queues admit",
        status="fail" if problems else "pass",
        expected="every queued namespace has a ResourceQuota >= ClusterQueue nominal + "
                 "borrowing", observed="; ".join(problems) or f"{len(evidence)} namespaces",
        evidence=evidence)


# ------------------------------------------------------------------------------ compare


class CriterionChange(AccModel):
    id: str
    before: str | None
    after: str | None
    detail: str = ""


class MetricChange(AccModel):
    metric: str
    unit: str
    before: float | None
    after: float | None
    ratio: float | None


class RecordDiff(AccModel):
    status: tuple[str, str]
    criteria: list[CriterionChange]
    metrics: list[MetricChange]
    fingerprint: dict[str, tuple[Any, Any]]
    matrix: tuple[str | None, str | None]
    suites_only: tuple[list[str], list[str]] = ([], [])  # run in A only, in B only

    @property
    def regressed(self) -> bool:
        return any(c.after == "fail" and c.before != "fail" for c in self.criteria)


def compare_records(a: Record, b: Record) -> RecordDiff:
    """What changed from run ``a`` to run ``b``: criteria statuses (of the suites both ran),
    metric medians, environment fingerprint and matrix entry."""
    both = set(a.suites) & set(b.suites)
    ca = {c.id: c for c in a.criteria if c.suite in both}
    cb = {c.id: c for c in b.criteria if c.suite in both}
    changes = []
    for cid in [*ca, *(k for k in cb if k not in ca)]:
        sa = ca[cid].status if cid in ca else None
        sb = cb[cid].status if cid in cb else None
        if sa != sb:
            changes.append(CriterionChange(id=cid, before=sa, after=sb,
                                           detail=cb[cid].observed if cid in cb else ""))
    metrics = []
    for name in [*a.measurements, *(k for k in b.measurements if k not in a.measurements)]:
        ma, mb = a.measurements.get(name), b.measurements.get(name)
        va = ma.median if ma else None
        vb = mb.median if mb else None
        known = mb or ma
        metrics.append(MetricChange(metric=name, unit=known.unit if known else "",
                                    before=va, after=vb,
                                    ratio=vb / va if va and vb is not None else None))
    keys = sorted(set(a.fingerprint) | set(b.fingerprint))
    fp = {k: (a.fingerprint.get(k), b.fingerprint.get(k)) for k in keys
          if a.fingerprint.get(k) != b.fingerprint.get(k) and k not in ("started_at",)}
    return RecordDiff(status=(a.status, b.status), criteria=changes, metrics=metrics,
                      fingerprint=fp,
                      matrix=(a.matrix.get("matched"), b.matrix.get("matched")),
                      suites_only=([s for s in a.suites if s not in both],
                                   [s for s in b.suites if s not in both]))
