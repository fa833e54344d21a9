"""Fair sharing's dominant resource share and the head tournament, as Kueue computes them.

``drs`` (``pkg/cache/scheduler/fair_sharing.go``): per resource name, what a node uses above
its subtree quota (summed over flavors), × 1000 ÷ what its parent could lend of that
resource (``potentialAvailable`` summed over the root's flavors); the largest ratio,
divided by the node's weight. A root has share 0; a parent with nothing to lend gives a
ratio of 0 (never infinite); weight 0 while borrowing sorts after every weighted share,
ties among those by the unweighted ratio (``CompareDRS``).

``tournament`` (``pkg/scheduler/fair_sharing_iterator.go``): the heads of one cohort tree
play off bottom-up; at each cohort every child's candidate is compared by the share of the
child (its ClusterQueue, or the child cohort) with the candidate's usage added —
non-borrowing first, then lower share, higher priority, older. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from aiplat.kueue.quota import Node, Tree
from aiplat.kueue.snapshot import FR

Key = tuple[bool, float]
T = TypeVar("T")


def drs(tree: Tree, node: Node, extra: dict[FR, int] | None = None) -> tuple[Key, bool]:
    """(comparable share, borrowing) of ``node`` with ``extra`` added to its usage."""
    if node.parent is None:
        return (False, 0.0), False
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        b = (extra or {}).get(fr, 0) + node.usage.get(fr, 0) - quota
        if b > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + b
    if not borrowed:
        return (False, 0.0), False
    root = node.root()
    lendable: dict[str, int] = {}
    for fr in root.subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + tree.potential(node.parent, fr)
    ratio = 0.0
    for res, b in borrowed.items():
        lr = lendable.get(res, 0)
        if lr > 0:
            ratio = max(ratio, b * 1000.0 / lr)
    if ratio == 0:
        return (False, 0.0), True
    if node.weight == 0:
        return (True, ratio), True
    return (False, ratio / node.weight), True


def drs_share(tree: Tree, node: Node) -> Key:
    return drs(tree, node)[0]


def tournament(tree: Tree, root: Node, heads: dict[str, T],
               usage: Callable[[T], dict[FR, int]],
               tie: Callable[[T], tuple[object, ...]]) -> T | None:
    """The winning head of ``root``'s tree: ``heads`` by ClusterQueue name, ``usage`` of an
    entry's assignment, ``tie`` its (−priority, timestamp) order."""
    values: dict[tuple[str, int], tuple[bool, Key]] = {}
    with tree.on_snapshot():  # the shares are computed on the cycle's snapshot
        for cq in root.cluster_queues():
            if cq.name not in heads:
                continue
            extra = usage(heads[cq.name])
            tree.add_usage(cq, extra)
            node: Node = cq
            for anc in cq.ancestors():
                # at each cohort, the child on the head's path is compared: its share, and
                # (FairSharingPrioritizeNonBorrowing) whether it borrows what the head asks
                share, _ = drs(tree, node)
                borrows = any(v > 0 and node.usage.get(fr, 0) > node.subtree.get(fr, 0)
                              for fr, v in extra.items())
                values[(anc.name, id(heads[cq.name]))] = (borrows, share)
                node = anc
            tree.remove_usage(cq, extra)

    def play(cohort: Node) -> T | None:
        cands: list[T] = []
        for child in cohort.children:
            if not child.is_cq:
                got = play(child)
                if got is not None:
                    cands.append(got)
        cands += [heads[c.name] for c in cohort.children if c.is_cq and c.name in heads]
        if not cands:
            return None

        def key(e: T) -> tuple[object, ...]:
            b, share = values[(cohort.name, id(e))]
            return (b, share, *tie(e))
        best = cands[0]
        for cur in cands[1:]:
            if key(cur) < key(best):
                best = cur
        return best

    return play(root)

