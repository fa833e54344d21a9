"""why-pending's one answer: what the object walk found, told with Kueue's decision.

The walk (:mod:`aiplat.kube.pending`) asks for Kueue's decision (:class:`NextCycles`, the
replay of Kueue's cycle over the same objects) at the step that found the cause, and each
step tells it its own way:

- quota (:func:`at_quota`): the verdict is Kueue's. A workload the replay admits is
  admitted on its next cycle or a later one, or after a requeue, naming whom it preempts;
  one it keeps pending though every resource fits gets Kueue's reason (another head first, a
  StrictFIFO head, no candidates to preempt); one short of quota keeps the figures of the
  limit that caps it. What the replay does not model (topology, partial admission, admission
  checks) is named where it could turn the answer around.
- a cause beside quota (:func:`besides`: a held or inactive queue, no flavor that suits the
  pods, a topology domain too small, victims still holding quota, an admitted workload's
  pods): the walk's cause stands, with the replay's decision as evidence ("on quota alone"
  where the replay admits it).

Without a decision (the walk alone, ``decide=None``) every step gives the walk's finding; when
the replay cannot read the objects, its error is evidence. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

DECISIVE = ("topologyRequest", "topologyName")
"""What the replay does not model that can turn its quota answer around (TAS)."""


@dataclass(frozen=True)
class NextCycles:
    """The replay's outcome for one workload."""

    decision: str  # admitted | pending | preempted
    cycle: int | None  # the replay cycle that admits it (None: admitted before)
    flavors: dict[str, dict[str, str]]
    victims: list[str]  # workloads it preempts, with Kueue's reason
    pending: str  # active | inadmissible, when pending
    reason: str
    message: str
    evaluated: bool  # Kueue already tried it and keeps it among the inadmissible
    next_cycle: str  # what the very next cycle does: admitted | preempting | pending
    not_modelled: list[str]  # what the replay skips that concerns this workload
    counts: dict[str, int] = field(default_factory=dict)  # pods admitted, when partial
    asked: dict[str, int] = field(default_factory=dict)  # each pod set's count
    unknown: str = ""  # the replay cannot decide it: what it does not model (kueue.unknown)
    depends_on: list[str] = field(default_factory=list)  # unknown workloads it depends on
    unknown_why: str = ""  # why it is unknown, when not for a rule the replay lacks

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": f"unknown ({self.unknown})" if self.unknown
                               else self.decision, "nextCycle": self.next_cycle}
        if self.unknown:
            out["onQuotaAlone"] = self.decision
            if self.depends_on:
                out["dependsOn"] = self.depends_on
            if self.unknown_why:
                out["unknownWhy"] = self.unknown_why
        if self.cycle is not None:
            out["cycle"] = self.cycle
        if self.flavors:
            out["flavors"] = self.flavors
        if self.counts:
            out["counts"] = self.counts
        if self.victims:
            out["preempts"] = self.victims
        if self.decision != "admitted":
            out |= {"pending": self.pending, "reason": self.reason, "message": self.message}
        if self.not_modelled:
            out["notReplayed"] = self.not_modelled
        return out

    def flavor_text(self) -> str:
        return "; ".join(f"{ps}: " + ", ".join(f"{r}={f}" for r, f in fl.items())
                         for ps, fl in self.flavors.items())

    def partial_text(self) -> str:
        """`` with 8 of 30 pods (partial admission)``, or "" for a full admission."""
        if not self.counts:
            return ""
        parts = [f"{n} of {self.asked.get(ps, n)}" for ps, n in self.counts.items()]
        if len(parts) == 1:
            return f" with {parts[0]} pods (partial admission)"
        named = [f"{ps} {x}" for ps, x in zip(self.counts, parts, strict=True)]
        return f" with {', '.join(named)} pods (partial admission)"

    def decisive(self) -> list[str]:
        """What the replay does not model that decides this workload."""
        out = [n for n in self.not_modelled if any(d in n for d in DECISIVE)]
        if self.unknown and not out:
            deps = f" of {', '.join(self.depends_on)}" if self.depends_on else ""
            out = [f"{self.unknown}{deps}"]
        return out


Decide = Callable[[str], NextCycles]
"""``namespace/name`` -> Kueue's decision for that workload; raises InputError when the
objects are not something the replay reads."""
Asked = NextCycles | str | None
"""What the walk got when it asked: the decision, why the replay could not run, or None
(the walk alone)."""


@dataclass(frozen=True)
class Explanation:
    object: str
    code: str
    reason: str
    evidence: list[str] = field(default_factory=list)
    kueue: NextCycles | None = None
    replay_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": self.object, "code": self.code,
                               "reason": self.reason, "evidence": self.evidence}
        if self.kueue is not None:
            out["replay"] = self.kueue.as_dict()
        elif self.replay_error:
            out["replay"] = {"error": self.replay_error}
        return out


Step = Literal["admitted", "queue", "blocker", "victims", "quota"]


def besides(e: Explanation, k: Asked, step: Step) -> Explanation:
    """A cause the walk found at ``step``: it stands, with Kueue's decision as evidence.
    ``admitted``: Kueue admitted the workload already; ``queue``: a held or inactive queue;
    ``blocker``: another cause outside quota; ``victims``: evicted workloads still hold the
    quota; ``quota``: short of quota, and the replay agrees."""
    if k is None:
        return e
    if isinstance(k, str):
        return dataclasses.replace(e, evidence=[*e.evidence, _no_replay(k)], replay_error=k)
    line = replay_line(k)
    if k.decision == "admitted" and step == "victims":
        line += " once the victims release their quota"
    elif k.decision == "admitted" and step in ("queue", "blocker"):
        skipped = f"; the replay does not model {'; '.join(k.not_modelled)}" \
            if k.not_modelled else ""
        if step == "queue":
            skipped += ("; the replay reads the queues' specs, not the conditions Kueue "
                        "set: admitted once the queue is active")
        line += f" — on quota alone{skipped}"
    return dataclasses.replace(e, evidence=[*e.evidence, line], kueue=k)


def at_quota(e: Explanation, k: Asked, cohort: str | None) -> Explanation:
    """The quota step (``e``: the walk's figures, "Fits" or the limit that caps it): the
    verdict is Kueue's."""
    if k is None:
        return e
    fits = e.code == "Fits"
    if isinstance(k, str) and fits:
        return Explanation(e.object, "QuotaAvailable", "quota is available per resource; "
                           f"{_no_replay(k)}, so whether Kueue's cycle admits it is not known",
                           e.evidence, replay_error=k)
    if isinstance(k, str) or (k.decision != "admitted" and not fits):
        return besides(e, k, "quota")
    if k.decision != "admitted":
        return _kept_pending(e, k)
    decisive = k.decisive()
    if fits and decisive:
        return Explanation(e.object, "QuotaAvailable",
                           "quota is available and the replay admits it, but it does not "
                           f"model {'; '.join(decisive)}: check those", [replay_line(k),
                                                                         *e.evidence], k)
    a = _admits(e, k, cohort)
    caveat = ([f"the replay does not model {'; '.join(decisive)}: Kueue may still refuse it "
               "there"] if decisive else [])
    return dataclasses.replace(a, evidence=[*a.evidence, *caveat])


def _no_replay(error: str) -> str:
    return f"the replay of Kueue's cycle could not run: {error}"


def replay_line(k: NextCycles) -> str:
    if k.unknown:
        deps = f" of {', '.join(k.depends_on)}" if k.depends_on else ""
        return (f"replay of Kueue's cycle: unknown ({k.unknown}{deps}: "
                f"{k.unknown_why or 'not modelled'}); on "
                f"quota alone: {_quota_line(k)}")
    return f"replay of Kueue's cycle: {_quota_line(k)}"


def _quota_line(k: NextCycles) -> str:
    if k.decision == "admitted":
        when = (f"admitted at cycle {k.cycle}" if k.cycle is not None else "already admitted")
        return (f"{when}{k.partial_text()} ({k.flavor_text()})"
                + (f", preempting {', '.join(k.victims)}" if k.victims else ""))
    return (f"stays pending ({k.pending}): {k.reason}"
            + (f": {k.message}" if k.message else ""))


def _why_not_yet(k: NextCycles, cohort: str | None) -> str:
    """Why a workload the replay admits is pending in the snapshot."""
    if k.evaluated:
        where = f"in the tree of cohort {cohort}" if cohort else "in its ClusterQueue"
        return ("Kueue tried it before and keeps it among the inadmissible workloads: it "
                f"retries only on a requeue (quota released {where}, a change to its "
                "queues)")
    if k.next_cycle == "admitted":
        return "Kueue's scheduler has not run a cycle since the state allowed it"
    return (f"{k.cycle - 1 if k.cycle else 0} earlier cycle(s) go first (other queues' "
            "heads, preemptions)")


def _admits(e: Explanation, k: NextCycles, cohort: str | None) -> Explanation:
    """The replay admits a workload the snapshot shows pending."""
    flavors = sorted({f for fl in k.flavors.values() for f in fl.values()})
    pre = f", after preempting {', '.join(k.victims)}" if k.victims else ""
    when = "its next cycle" if k.next_cycle == "admitted" else (
        f"a later cycle (cycle {k.cycle} of the replay)")
    return Explanation(e.object, "WouldPreempt" if k.victims else "WouldAdmit",
                       f"Kueue admits it on {when} in flavor {', '.join(flavors)}"
                       f"{k.partial_text()}{pre}; "
                       f"still pending because {_why_not_yet(k, cohort)}",
                       [replay_line(k), *e.evidence], k)


def _kept_pending(e: Explanation, k: NextCycles) -> Explanation:
    """Every resource fits, the replay keeps it pending: Kueue's reason."""
    code = {"Pending": "BehindQueueHead", "Inactive": "Inactive"}.get(k.reason, k.reason)
    return Explanation(e.object, code or "Pending",
                       f"Kueue keeps it pending ({k.pending}): {k.message or k.reason}",
                       [replay_line(k), *(x + " (per resource, without the cycle)"
                                          if x.endswith("— fits") else x
                                          for x in e.evidence)], k)


__all__ = ["Asked", "Decide", "Explanation", "NextCycles", "at_quota", "besides",
           "replay_line"]
