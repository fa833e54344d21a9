"""Decisions that depend on the cycle in which an eviction completes: ``sim replay``'s
timing alternatives.

Kueue marks a victim Evicted at once; its quota comes back only when its job controller
has stopped the pods, many cycles later (Kueue runs a cycle every ~10 ms while a preemptor
waits). The replay completes the evictions when the cycles are quiet: the heads' state
repeats (:meth:`Replay.until_quiet`). Where it repeats with a period of more than one cycle
(a waiting head's flavor scan resumes where the last cycle left it and goes round its
flavors: f1, f2, f1, ...), the evictions may complete in any state of that period, and
what is admitted then, and on which flavors, is that state's. The real Kueue v0.19.2 does
exactly that on the lab cluster: partial-admission seed 12 admitted a workload on
(f1, f2) in 3 runs and on (f2, f1) in 4, following the parity of the cycles its victim's
eviction took.

So at such a quiet point the replay goes on in copies, one per other state of the period:
each runs that many more cycles, completes the evictions there and replays to the end.
A workload whose decision differs in a copy carries that decision as an alternative (table
and JSON say which eviction and how many cycles later); each copy's whole outcome is kept
(:attr:`Replay.alternatives`: the differential test holds the real Kueue's run against
the replay's outcome or one of these). A copy forks no further, and a replay makes at most
:data:`MAX_FORKS` (each copy costs the snapshot's size again): past that the outcome says
how many were not made (``not_made``). ``sim run`` (its own world, with eviction times) never forks.
Pure: no I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiplat.kueue.cycle import Outcome, Replay

MAX_FORKS = 8


@dataclass
class Alternative:
    """The outcome when ``victims``' evictions complete ``later`` cycles after the
    replay's own choice."""

    victims: list[str]
    later: int
    replay: Replay  # the copy: its evictions completed there, run to its end by Forks.finish

    @property
    def outcomes(self) -> dict[str, Outcome]:
        return self.replay.outcomes

    @property
    def when(self) -> str:
        cycles = "a cycle" if self.later == 1 else f"{self.later} cycles"
        return f"if the eviction of {', '.join(self.victims)} completes {cycles} later"


def decision(o: Outcome) -> tuple[object, ...]:
    """What an outcome decides: admitted, preempted or pending, the flavors, the counts."""
    return (o.decision, o.flavors, o.counts)


class Forks:
    """The copies one replay made at its quiet points with evictions due."""

    def __init__(self) -> None:
        self.copies: list[Alternative] = []
        self.not_made = 0

    def fork(self, r: Replay, period: int) -> None:
        """``r`` is about to complete its evictions in a state that recurs every
        ``period`` cycles: a copy for each of the other states."""
        for later in range(1, period):
            if len(self.copies) >= MAX_FORKS:
                self.not_made += period - later
                return
            r.timing = None  # the copy forks no further (and does not copy the others)
            try:
                alt = copy.deepcopy(r)
            finally:
                r.timing = self
            for _ in range(later):
                alt.step(alt.queues.heads(alt.inactive))
            victims = sorted(alt.evicting)
            alt.world.evictions_quiet(list(alt.evicting))
            self.copies.append(Alternative(victims, later, alt))

    def finish(self, rows: list[Outcome]) -> list[Alternative]:
        """Run every copy to the end; the alternatives whose outcome differs from
        ``rows`` (the replay's), which carry them per workload."""
        mine = {o.workload: o for o in rows}
        out = []
        for alt in self.copies:
            theirs = alt.replay.run()
            changed = [o for o in theirs if decision(o) != decision(mine[o.workload])]
            if not changed:
                continue
            out.append(alt)
            for o in changed:
                seen = [a for a in mine[o.workload].alternatives
                        if (a["decision"], a.get("flavors", {}), a.get("counts", {}))
                        == decision(o)]
                if not seen:
                    mine[o.workload].alternatives.append(_row(o, alt))
        return out


def _row(o: Outcome, alt: Alternative) -> dict[str, object]:
    row: dict[str, object] = {"decision": o.decision, "when": alt.when}
    if o.flavors:
        row["flavors"] = o.flavors
    if o.counts:
        row["counts"] = o.counts
    return row


__all__ = ["MAX_FORKS", "Alternative", "Forks", "decision"]
