"""The tree applied the way Argo CD or Flux applies it, on the lab's API server (issue #45):
ordered by sync wave, as one owned set (kubectl's ApplySet labels), twice, then rendered
again from a spec without tenant ``batch`` into the same folder and applied with prune.

Holds: the first apply runs wave by wave (operators' configuration before the platform) and
nothing is refused; the second changes nothing; ``-d`` rewrote the folder without
``tenants/batch``; the prune deletes exactly what the new tree no longer renders (the
tenant's Namespace, LocalQueue, ResourceQuota, LimitRange, RBAC, ClusterQueue ...) and
they are gone from the API server; every other member of the set is still there, and one
more apply changes nothing. What it cannot show: Argo CD's or Flux's own controllers (they
are not in the lab); the waves and dependsOn they read are the ones checked here and in
``tests/unit/test_kube_gitops.py``. The examples stay out (opt-in), so no GPU pod runs.

Needs the components built (``aiplat lab cluster build``); fails, not skips, in CI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from examplelab import example_lab
from test_cluster_live import _aiplat, _eventually

from aiplat.kube.apply import label
from aiplat.kube.applyset import PART_OF, ApplySet
from aiplat.kube.render import SYNC_WAVE
from aiplat.kube.tree import read_tree
from aiplat.spec import example_text

Obj = dict[str, Any]


def _tree(path: Path) -> dict[str, Obj]:
    return {label(o): o for _f, o in read_tree(path)[0]}


def _apply(env: dict[str, str], tree: Path, *extra: str) -> list[Obj]:
    cp = _aiplat(env, "kube", "apply", str(tree), "--prune", "-o", "json", *extra)
    outcomes = json.loads(cp.stdout)
    assert cp.returncode == 0, [o for o in outcomes if "refused" in o["action"]]
    return list(outcomes)


APPLIED = ("created", "configured", "unchanged")  # not the pod probe's "pods ..." notes


def _changed(outcomes: list[Obj]) -> list[Obj]:
    return [o for o in outcomes if o["action"] != "unchanged"
            and not o["action"].startswith("pods ")]


def test_applied_in_waves_twice_and_a_removed_tenant_is_pruned(tmp_path: Path) -> None:
    with example_lab(tmp_path, "gitops") as lab:
        tree = tmp_path / "kube"
        _aiplat(lab.env, "kube", "render", "-d", str(tree), check=True)
        first = _tree(tree)

        applied = _apply(lab.env, tree)
        waves = [int(first[o["object"]]["metadata"]["annotations"][SYNC_WAVE])
                 for o in applied if o["action"] in APPLIED]
        assert len(waves) == len(first) and waves == sorted(waves), waves
        assert waves[0] == -1 and waves[-1] == 0  # cluster/ first, no example applied

        again = _apply(lab.env, tree, "--diff")
        assert _changed(again) == [], "\n".join(o.get("diff", "") for o in _changed(again))

        spec = yaml.safe_load(example_text())
        spec["tenants"] = [t for t in spec["tenants"] if t["name"] != "batch"]
        spec["workloads"] = [w for w in spec["workloads"] if w["tenant"] != "batch"]
        (tmp_path / "fewer.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        _aiplat(lab.env, "kube", "render", str(tmp_path / "fewer.yaml"), "-d", str(tree),
                check=True)
        assert not (tree / "tenants" / "batch").exists()  # -d left nothing stale
        second = _tree(tree)
        removed = set(first) - set(second)
        assert {"Namespace batch", "LocalQueue batch/batch", "ClusterQueue batch"} <= removed
        assert any(r.startswith("ResourceQuota batch/") for r in removed), removed

        pruned = _apply(lab.env, tree)
        assert {o["object"] for o in pruned if o["action"] == "pruned"} == removed
        ours = f"{PART_OF}={ApplySet('aiplat').id}"

        def members() -> set[str]:
            kinds = {(o["apiVersion"], o["kind"]) for o in [*first.values()]}
            return {label(o) for av, k in kinds
                    for o in lab.api.objects(av, k, selector=ours)
                    if not (o.get("metadata") or {}).get("deletionTimestamp")}

        # Gone from the API server (a Namespace waits for its controller), the rest there.
        live = _eventually("the pruned objects are gone", lambda: (
            m := members()) and not (m & removed) and m, timeout=120)
        assert live == set(second)
        _eventually("Namespace batch is deleted (its controller empties it first)",
                    lambda: not lab.api.exists("v1", "Namespace", "batch"), timeout=120)
        final = _apply(lab.env, tree, "--diff")
        assert _changed(final) == [], "\n".join(o.get("diff", "") for o in _changed(final))
