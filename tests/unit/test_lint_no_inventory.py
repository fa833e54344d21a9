"""``kube lint`` without a node inventory (issue #40): an upstream file brings no inventory,
and judging it against another cluster's pools (the built-in example's) made every flavor
"select no pool" and every vendor resource "provided by no pool". Without one, lint runs every
rule that reads only the tree; those that compare with nodes or devices judge nothing, and one
info line says so. Upstream files: tests/data/upstream/*/PROVENANCE.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aiplat.kube.lint import lint

UP = Path(__file__).parent.parent / "data" / "upstream"
KUEUE = UP / "kueue" / "v0.19.2"
Obj = dict[str, Any]


def docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_no_inventory_runs_the_tree_rules_and_says_what_it_skipped() -> None:
    objs = docs(KUEUE / "resource-flavor-taints.yaml") + docs(KUEUE / "sample-hami.yaml") \
        + docs(KUEUE / "sample-queues.yaml")
    got = lint(objs, None)
    assert [f for f in got if f.severity == "error"] == [], got
    notes = [f for f in got if f.source == "inventory"]
    assert [(f.severity, f.message.split(":")[0]) for f in notes] == [
        ("info", "node-dependent checks not run")], got
    assert "--inventory" in notes[0].message + notes[0].fix


def test_tree_rules_still_find_their_errors_without_inventory() -> None:
    objs = docs(KUEUE / "quick-start-setup.yaml")
    cq = next(o for o in objs if o["kind"] == "ClusterQueue")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "missing"
    assert "clusterqueue-flavor" in {f.source for f in lint(objs, None)
                                     if f.severity == "error"}
