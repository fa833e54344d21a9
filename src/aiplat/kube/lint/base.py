"""What every lint rule is made of: the ``Finding`` it returns, the ``Context`` it reads (the
tree's objects by kind and the pools' inventory) and the registry it joins with ``@rule``.

A rule is a pure function ``(Context) -> list[Finding]`` in a module of
``aiplat.kube.lint.rules``, registered where it is defined::

    @rule("flavor-taints", "pool taints are tolerated by the pool's flavors")
    def flavor_taints(ctx: Context) -> list[Finding]: ...

    @rule("namespace-selector", "the ClusterQueue selects its LocalQueues' namespaces",
          severities=("error", "warning"))
    def namespace_selector(ctx: Context) -> list[Finding]: ...

The name is the rule id its findings carry, ``severities`` the ones they may have, the doc
what it checks in one line. This module imports no rule module; ``aiplat.kube.lint.objects``
(the readers rules share) builds on it, the rule modules on both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiplat.findings import Finding, Severity
from aiplat.kube.inventory import Inventory, PoolInventory
from aiplat.text import shown

Obj = dict[str, Any]
SEVERITIES = ("error", "warning", "info")  # in the order findings are listed


def finding(severity: Severity, rule: str, obj: str, why: str, fix: str) -> Finding:
    """aiplat's one ``Finding`` as a lint rule makes it: ``rule`` is its source, ``obj`` the
    subject (``Kind/namespace/name``). Its text quotes the tree (names, namespaces, subjects),
    which may hold terminal escapes or bidi overrides (RBAC names are any path segment): they
    are kept escaped (``\\x1b``, ``\\u202e``) in every form the finding is printed in, JSON too."""
    return Finding(severity=severity, source=rule, subject=shown(obj), message=shown(why),
                   fix=shown(fix))


def name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def namespace(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace", ""))


class Context:
    """The tree a rule reads: its objects (shape-checked), by kind, the file each came from
    ("" when not read from files) and the pools (none when no inventory was given:
    ``inventory_known`` False); the target Kueue release (None: the spec's
    default) and Kueue's Helm values the tree holds (file, values: documents of no kind);
    ``unset_namespace``: ids of the objects that named no namespace (the reader placed them
    where kubectl's context likely would; a rule that must assume the worst asks
    ``namespace_unset``); ``unread``: (file, object, the groups aiplat reads its kind in) of
    the objects left out of ``objects``, another group's kind named like one rules read.
    ``cache`` keeps what rules derive from the tree once per lint (each key owned by one
    module)."""

    def __init__(self, objects: list[Obj], inventory: Inventory | None,
                 files: list[str] | None = None, *, kueue_version: str | None = None,
                 helm_values: list[tuple[str, Obj]] | None = None,
                 unset_namespace: set[int] | None = None,
                 unread: list[tuple[str, Obj, tuple[str, ...]]] | None = None) -> None:
        self.objects = objects
        self.unread = unread or []
        self.unset_namespace = unset_namespace or set()
        # No inventory: no pools, no devices; the rules that compare with them judge nothing.
        self.inventory_known = inventory is not None
        self.inventory = inventory or Inventory(pools=[])
        self.files = files or [""] * len(objects)
        self.kueue_version = kueue_version
        self.helm_values = helm_values or []
        self.cache: dict[str, Any] = {}
        self.by_kind: dict[str, list[Obj]] = defaultdict(list)
        for o in objects:
            self.by_kind[str(o.get("kind"))].append(o)

    def kind(self, kind: str) -> list[Obj]:
        return self.by_kind.get(kind, [])

    def namespace_unset(self, o: Obj) -> bool:
        """Did ``o`` name no namespace of its own (none now, or one the reader gave it)?"""
        meta = o.get("metadata")
        return id(o) in self.unset_namespace or not (isinstance(meta, dict)
                                                     and meta.get("namespace"))

    def names(self, kind: str) -> set[str]:
        return {name(o) for o in self.kind(kind)}

    def pool(self, name_: str) -> PoolInventory | None:
        return next((p for p in self.inventory.pools if p.name == name_), None)


Check = Callable[[Context], list[Finding]]


@dataclass(frozen=True)
class Rule:
    name: str  # the rule id of its findings
    doc: str  # what it checks, one line
    severities: tuple[str, ...]
    check: Check

    @property
    def where(self) -> str:
        return f"{self.check.__module__}.{self.check.__qualname__}"

    def run(self, ctx: Context) -> list[Finding]:
        """Its findings on ``ctx``; a finding under another rule id or severity than the
        rule declares is a mistake in the rule's code (every site is tested)."""
        findings = self.check(ctx)
        for f in findings:
            if f.source != self.name or f.severity not in self.severities:
                raise ValueError(f"lint rule {self.name} ({self.where}) made a {f.severity} "
                                 f"finding for rule {f.source} (fix: declare it in @rule(...) "
                                 "or correct the Finding)")
        return findings


_RULES: dict[str, Rule] = {}


def rule(name_: str, doc: str, *, severities: tuple[str, ...] = ("error",)
         ) -> Callable[[Check], Check]:
    """Register the decorated function as lint rule ``name_`` (returned unchanged, so it can
    still be called on a ``Context`` of its own)."""
    unknown = set(severities) - set(SEVERITIES)
    if unknown or not severities:
        raise ValueError(f"lint rule {name_}: severities {severities} (fix: some of {SEVERITIES})")

    def register(check: Check) -> Check:
        new = Rule(name_, doc, tuple(severities), check)
        known = _RULES.get(name_)
        if known is not None and known.where != new.where:
            raise ValueError(f"lint rule {name_} is registered twice: {known.where} and "
                             f"{new.where} (fix: give the new rule a name of its own)")
        _RULES[name_] = new  # the same function again (a module reloaded) replaces it
        return check

    return register


def registered() -> tuple[Rule, ...]:
    """Every registered rule, by name: the order they run in. (Findings are then sorted by
    severity, rule and object, so the order never shows in the output.)"""
    return tuple(sorted(_RULES.values(), key=lambda r: r.name))
