"""The cycle's steps are reached only through its declared extension points (issue #39): a
class outside ``kueue/cycle.py`` that extends ``Replay`` overrides no private method of it,
and only ``World``'s and ``Steps``' public ones; no class extends another module's private
class (as ``tas_world`` once extended ``preempt._Search``)."""

from __future__ import annotations

import ast
from pathlib import Path

from aiplat.kueue.cycle import Replay, Steps, World

SRC = Path(__file__).resolve().parents[2] / "src" / "aiplat"
CYCLE = SRC / "kueue" / "cycle.py"
DECLARED = {n for proto in (World, Steps) for n in vars(proto)
            if not n.startswith("_") and callable(vars(proto)[n])}


def _base_name(b: ast.expr) -> str:
    if isinstance(b, ast.Attribute):
        return b.attr
    return b.id if isinstance(b, ast.Name) else ""


def _classes() -> list[tuple[Path, ast.ClassDef]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        out += [(path, n) for n in ast.walk(ast.parse(path.read_text()))
                if isinstance(n, ast.ClassDef)]
    return out


def test_the_declared_hooks_are_replay_methods() -> None:
    assert {"nominated", "preemption_fits", "processing", "processed", "cycle_done",
            "unplaceable", "evict"} <= DECLARED
    assert all(callable(getattr(Replay, n)) for n in DECLARED)


def test_no_replay_subclass_overrides_a_private_step() -> None:
    replays = {"Replay"}
    classes = _classes()
    grew = True
    while grew:  # subclasses of subclasses too
        grew = False
        for path, c in classes:
            if path != CYCLE and c.name not in replays \
                    and any(_base_name(b) in replays for b in c.bases):
                replays.add(c.name)
                grew = True
    found = replays - {"Replay"}
    assert "TasReplay" in found
    bad = []
    for path, c in classes:
        if path == CYCLE or c.name not in found:
            continue
        for f in c.body:
            if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            name = f.name
            if name.startswith("__") or not hasattr(Replay, name):
                continue  # a dunder, or its own method
            if name.startswith("_") or name not in DECLARED:
                bad.append(f"{path.relative_to(SRC)}: {c.name}.{name}")
    assert bad == []


def test_no_class_extends_another_modules_private_class() -> None:
    bad = [f"{path.relative_to(SRC)}: {c.name}({ast.unparse(b)})"
           for path, c in _classes() for b in c.bases
           if isinstance(b, ast.Attribute) and b.attr.startswith("_")
           and not b.attr.startswith("__")]
    assert bad == []
